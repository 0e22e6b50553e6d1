"""A reader whose GPU is an A100 (8.0), an RTX 3090 (8.6), an RTX 4090 (8.9), a T4 (7.5) or a
Blackwell workstation card (12.0), faked end to end on the CPU: what ``lab.gemm.explain`` picks
and says at a square, a decode (M = 1), an odd and a skinny long-K shape for FP16, BF16 and FP32
inputs; what ``python -m lab check`` checks and skips, kernel by kernel, with the count it
prints; and what the chapters' live cells print (chapter 5's check and timing, chapter 7b's FP8
check, chapter 9's check) instead of launching.

Every expectation is derived from the registry's ``min_cc``/``max_cc`` (never from
:func:`lab.kernels.runnable`, which is under test), so a kernel that runs on 9.0 alone (sm_90a)
picked or checked on another GPU fails here. ``tests/test_reader_gpu.py`` fakes the same readers
for ``measure all`` and the results trees the book then reads.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import lab
from lab import bench, device, dispatch, kernels
from lab.__main__ import main
from lab.accuracy import CheckResult

#: The faked GPUs: capability -> (name, SMs).
OTHERS = {(7, 5): ("NVIDIA Tesla T4", 40), (8, 0): ("NVIDIA A100-SXM4-80GB", 108),
          (8, 6): ("NVIDIA GeForce RTX 3090", 82), (8, 9): ("NVIDIA GeForce RTX 4090", 128),
          (12, 0): ("NVIDIA RTX PRO 6000 Blackwell", 188)}
GPUS = {**OTHERS, (9, 0): ("NVIDIA H100 80GB HBM3", 132)}
#: Code built for sm_90a: its spec's range ends at 9.0.
SM90A = {name for name, spec in lab.REGISTRY.items() if spec.max_cc == (9, 0)}


def fits(spec, cc) -> bool:
    """The registry's own answer: ``cc`` inside ``[min_cc, max_cc]``."""
    return spec.min_cc <= cc and (spec.max_cc is None or cc <= spec.max_cc)


def dotted(cc) -> str:
    return f"{cc[0]}.{cc[1]}"


@pytest.fixture
def on_gpu(monkeypatch):
    """``on_gpu(cc)``: this process believes it runs on the GPU of :data:`GPUS` with
    capability ``cc``, its capability and SM count read from the (faked) device; nothing can be
    launched (a launch would reach the simulator)."""
    def fake(cc):
        name, sms = GPUS[cc]
        prov = {**device.provenance(), "device_mode": "gpu", "gpu": name,
                "compute_capability": dotted(cc), "sm_count": sms}
        monkeypatch.setattr(device, "SIMULATOR", False)
        monkeypatch.setattr(device, "GPU", True)
        monkeypatch.setattr(device, "MODE", "gpu")
        monkeypatch.setattr(device, "provenance", lambda: dict(prov))
        monkeypatch.setattr(kernels, "current_cc", lambda: cc)
        monkeypatch.setattr("lab.kernels.wgmma.host._sm_count", lambda: sms)
        return name, sms
    return fake


@pytest.fixture
def checks(monkeypatch):
    """``bench.check`` and ``bench.time`` replaced by fakes that pass and record each call."""
    calls = {"check": [], "time": []}

    def check(name, m, n, k, **_):
        calls["check"].append((name, (m, n, k)))
        return CheckResult(name, (m, n, k), "x", 0.0, 0.0, 0.0, 1.0, 0, True)

    def time(name, m, n, k, **_):
        calls["time"].append((name, (m, n, k)))
        return {"median_ms": 1.0, "tflops": 2 * m * n * k / 1e9}

    monkeypatch.setattr(bench, "check", check)
    monkeypatch.setattr(bench, "time", time)
    return calls


# ----------------------------------------------------------------------------- lab.gemm's choice

SQUARE, DECODE, ODD, SKINNY = (4096, 4096, 4096), (1, 4096, 4096), (1000, 1030, 999), \
    (256, 256, 8192)
#: NumPy types ``lab.gemm`` reads as each input type (BF16: lab's uint16 bits).
HOST = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32}


def _explain(dtype, shape, out_dtype):
    """``lab.gemm.explain`` on host operands of ``shape``, for the device's capability and SMs
    (nothing passed): the GPU is read as a caller's process would read it."""
    m, n, k = shape
    a, b = np.empty((m, k), HOST[dtype]), np.empty((k, n), HOST[dtype])
    return lab.gemm.explain(a, b, out_dtype=out_dtype)


def _named(choice) -> list[str]:
    return [choice.kernel, *(c.kernel for c in choice.candidates)]


@pytest.mark.parametrize("shape", [SQUARE, DECODE, ODD, SKINNY], ids=["square", "decode",
                                                                      "odd", "skinny"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_lab_gemm_picks_a_kernel_the_gpu_runs_and_says_why(on_gpu, cc, dtype, shape):
    _, sms = on_gpu(cc)
    m, n, k = shape
    for out_dtype in dict.fromkeys((dtype, "float32")):
        choice = _explain(dtype, shape, out_dtype)
        assert choice.cc == cc and (choice.m, choice.n, choice.k) == shape
        for name in _named(choice):
            spec = lab.get_spec(name)
            assert name not in SM90A, (cc, shape, dtype, name)
            assert spec.min_cc <= cc and fits(spec, cc), (cc, name, spec.min_cc, spec.max_cc)
            assert kernels.runnable(name) == (True, f"{name} runs on compute capability "
                                                    f"{dotted(cc)}")
        text = str(choice)
        why = "; ".join(choice.why)
        assert "\n  because " + why in text and why
        assert "wgmma" not in text.replace("(no wgmma)", ""), text    # never offered, even timed
        sixteen = dtype != "float32"
        if not sixteen:
            assert choice.kernel.startswith("warptile_tuned") and not choice.widen
            assert "FP32 inputs: the tuned SIMT kernel" in why
        elif cc < (8, 0):                      # Turing: no mma.sync m16n8k16
            assert choice.kernel.startswith("warptile_tuned") and choice.widen
            assert f"compute capability {dotted(cc)} has no mma.sync: 16-bit inputs widened " \
                   "to FP32" in why
            assert f"inputs widened {dtype} -> float32 first" in text
        elif m <= dispatch.SMALL_M:            # decode: the small-M mma.sync kernel
            assert choice.kernel == "tc_small_m_" + ("fp16" if dtype == "float16" else "bf16")
            assert f"M = {m} <= {dispatch.SMALL_M}: reading B" in why and f"on {sms} SMs" in why
        elif shape == SKINNY and dtype == "float16":
            assert choice.kernel == "tc_fp16_splitk" and choice.splits > 1
            assert f"would fill 4/{sms} SMs and K = {k} is long: split K into " \
                   f"{choice.splits} slices (mma.sync" in why
        else:
            assert choice.kernel == ("tc_fp16" if dtype == "float16" else "tc_bf16")
            assert f"compute capability {dotted(cc)} has mma.sync (no wgmma): chapter 5's " \
                   "tuned kernel" in why
            if shape == SKINNY:
                assert "split-K here is built for FP16 only" in why
        if out_dtype != "float32" and not choice.native_out:
            assert choice.narrow and f"float32 result narrowed to {out_dtype} after" in text


@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_a_capability_passed_to_explain_answers_for_that_gpu(cc):
    """Without a GPU (this process's simulator), ``explain(cc=...)`` answers for the named
    capability as the dispatcher does, and the answer holds no sm_90a kernel."""
    a = np.empty((1000, 999), np.float16)
    b = np.empty((999, 1030), np.float16)
    sms = OTHERS[cc][1]
    choice = lab.gemm.explain(a, b, cc=cc, sms=sms)
    assert choice == dispatch.choose(1000, 1030, 999, "float16", "float16", cc, sms)
    assert not set(_named(choice)) & SM90A


def test_on_hopper_the_same_calls_do_pick_sm90a_kernels(on_gpu):
    """The control: on a faked H100 the square and the decode shape reach the sm_90a kernels
    the tests above keep away from the other GPUs (so :data:`SM90A` is what a slip would pick)."""
    on_gpu((9, 0))
    square = _explain("float16", SQUARE, "float16")
    assert square.kernel in SM90A and "compute capability 9.0 has wgmma and TMA" in str(square)
    decode = _explain("bfloat16", DECODE, "bfloat16")
    assert set(_named(decode)) & SM90A


# ----------------------------------------------------------------------------- python -m lab check

@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_lab_check_checks_what_the_gpu_runs_and_skips_the_rest_by_name(on_gpu, checks, capsys,
                                                                       cc):
    name, sms = on_gpu(cc)
    assert main(["check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Running on {name} (CC {dotted(cc)}, {sms} SMs)."
    runs = {n for n, spec in lab.REGISTRY.items() if fits(spec, cc)}
    skips = set(lab.REGISTRY) - runs
    assert SM90A <= skips and runs                       # never a Hopper, never empty
    assert {n for n, _ in checks["check"]} == runs
    for kernel, spec in lab.REGISTRY.items():
        said = [line for line in lines if line.split()[0] == kernel]
        if kernel in runs:
            shapes = lab.kernels.shapes_for(spec, gpu=True)
            assert [s for n, s in checks["check"] if n == kernel] == shapes
            assert said == [f"{kernel:<22} {len(shapes)} shapes checked"]
            continue
        needs = (f"needs compute capability {dotted(spec.min_cc)}" if cc < spec.min_cc
                 else f"runs on compute capability {dotted(spec.min_cc)} only")
        assert said == [f"{kernel:<22} skipped: {needs} ({spec.needs}); this GPU is "
                        f"{dotted(cc)}"], said
    assert lines[-1] == f"all kernels passed ({len(runs)} checked, {len(skips)} skipped above)"


def test_lab_check_of_hopper_kernels_on_an_rtx_4090_checks_nothing_and_fails(on_gpu, checks,
                                                                              capsys):
    on_gpu((8, 9))
    assert main(["check", "wgmma_table_fp16", "fp8_e4m3"]) == 1
    out = capsys.readouterr()
    assert not checks["check"]
    assert re.search(r"^wgmma_table_fp16\s+skipped: needs compute capability 9\.0 \(sm_90a: "
                     r".*\); this GPU is 8\.9$", out.out, re.M)
    assert "nothing checked: all 2 requested kernel(s) were skipped" in out.err


# ----------------------------------------------------------------------------- the chapters' cells

@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_chapter_7b_names_the_capability_the_fp8_kernels_need(on_gpu, checks, cc):
    from lab.chapters import ch7b
    from lab.kernels.wgmma import fp8

    on_gpu(cc)
    text = repr(ch7b.check_here())
    first = lab.get_spec(next(iter(fp8.CONFIGS)))
    assert not checks["check"] and all(lab.get_spec(n).max_cc == (9, 0) for n in fp8.CONFIGS)
    needs = ("needs compute capability 9.0" if cc < (9, 0)
             else "runs on compute capability 9.0 only")
    assert text == (f"{len(fp8.CONFIGS)} FP8 kernels not run here: {first.name} {needs} "
                    f"({first.needs}); this GPU is {dotted(cc)}")


@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_chapter_5_checks_and_times_where_the_gpu_can_and_says_why_not(on_gpu, checks, capsys,
                                                                       cc):
    from lab.chapters import ch5
    from lab.chapters.ch5.s5_check import CHECK_SHAPES

    name, _ = on_gpu(cc)
    ch5.check_here()
    ch5.measure_here()
    out = capsys.readouterr().out.splitlines()
    ladder = ("tc_naive_fp16", "tc_fp16", "tc_bf16")
    tc_fp16 = lab.get_spec("tc_fp16")
    if fits(tc_fp16, cc):
        assert checks["check"] == [(n, s) for n in ladder for s in CHECK_SHAPES]
        assert checks["time"] == [("tc_fp16", (4096, 4096, 4096))]
        assert not any("not run here" in line or "not timed here" in line for line in out)
        assert out[-1].startswith(f"{name.removeprefix('NVIDIA ')} (now): tc_fp16 at 4096³")
    else:
        assert not checks["check"] and not checks["time"]
        assert out == [f"not run here: {n} needs compute capability "
                       f"{dotted(lab.get_spec(n).min_cc)} ({lab.get_spec(n).needs}); this GPU "
                       f"is {dotted(cc)}" for n in ladder] + [
            f"not timed here: tc_fp16 needs compute capability {dotted(tc_fp16.min_cc)} "
            f"({tc_fp16.needs}); this GPU is {dotted(cc)}"]


@pytest.mark.parametrize("cc", sorted(OTHERS), ids=dotted)
def test_chapter_9_checks_our_kernels_the_gpu_runs_and_names_the_rest(on_gpu, checks, capsys,
                                                                      cc):
    from lab.chapters import ch9
    from lab.chapters.ch9.common import FP16, FP32

    on_gpu(cc)
    ch9.check_here()
    out = capsys.readouterr().out
    checked = {n for n, _ in checks["check"]}
    left_out = dict(re.findall(r"^(\S+)\s+not run here: (.*)$", out, re.M))
    assert checked | set(left_out) == set(FP16 + FP32) and not checked & set(left_out)
    for kernel in (n for n in FP16 + FP32 if n in lab.REGISTRY):
        spec = lab.get_spec(kernel)
        if fits(spec, cc):
            assert kernel in checked
        else:
            assert left_out[kernel] == (f"{kernel} needs compute capability "
                                        f"{dotted(spec.min_cc)} ({spec.needs}); this GPU is "
                                        f"{dotted(cc)}")


@pytest.mark.parametrize("cc", [(8, 0), (8, 9)])
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (256, 256, 16384)])
def test_off_hopper_the_explanation_says_why_no_wgmma_kernel(cc, shape):
    """The small-M and split-K choices off 9.0 say that the GPU has no wgmma (so the Hopper
    kernels were not weighed), as the large-shape choice does."""
    m, n, k = shape
    a, b = np.zeros((m, k), np.float16), np.zeros((k, n), np.float16)
    choice = lab.gemm.explain(a, b, cc=cc, sms=132)
    assert f"{cc[0]}.{cc[1]} has mma.sync (no wgmma)" in str(choice)
