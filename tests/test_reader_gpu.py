"""The book for the reader's GPU: with ``LAB_GPU`` set, chapters read that GPU's results tree,
and a missing experiment falls back to the H200 reference with a visible note; and a reader
whose GPU is not a Hopper, faked end to end (what runs, what lab.gemm picks, what the book says)."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys

import numpy as np
import pytest

import lab
from lab import bench, device, experiments, kernels, results
from lab.__main__ import main
from lab.accuracy import CheckResult
from lab.chapters import ch0, ch3
from lab.experiments import suite
from lab.kernels import KernelUnavailable


@pytest.fixture
def reader_tree(tmp_path, monkeypatch):
    """A results root holding the H200 reference and a copy of it as another GPU, "test-gpu",
    whose patch8 row is made twice as fast and whose roofline file is missing."""
    shutil.copytree(results.RESULTS_DIR / results.REFERENCE_GPU, tmp_path / "h200")
    mine = tmp_path / "test-gpu"
    shutil.copytree(results.RESULTS_DIR / results.REFERENCE_GPU, mine)
    path = mine / "patch_sweep.json"
    data = json.loads(path.read_text())
    row = next(r for r in data["rows"] if r["kernel"] == "patch8")
    for f in ("median_ms", "min_ms", "max_ms"):
        row[f] /= 2
    row["tflops"] *= 2
    row["pct_cublas"] *= 2
    path.write_text(json.dumps(data))
    for other in mine.glob("*.json"):               # every file names the GPU of its folder
        data = json.loads(other.read_text())
        data["provenance"].update(gpu="Test GPU", max_sm_clock_mhz=None)
        other.write_text(json.dumps(data))
    (mine / "roofline.json").unlink()
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setenv("LAB_GPU", "test-gpu")
    return row


def test_the_selected_gpu_reaches_a_chapter_table(reader_tree):
    text = repr(ch3.measured_table())
    assert f"{reader_tree['tflops']:.1f}" in text          # the changed value is on the page
    assert "lab/results/test-gpu/patch_sweep.json" in text or "test-gpu/patch_sweep.json" in text
    assert "Test GPU" in text


def test_a_missing_experiment_falls_back_to_the_reference_with_a_note(reader_tree):
    line = results.source_line("roofline")
    assert "h200/roofline.json" in line
    assert "No roofline results for test-gpu" in line
    assert "No roofline results for test-gpu" in repr(ch0.roof_table())  # built from the H200 file


def test_without_lab_gpu_the_reference_is_read(monkeypatch):
    monkeypatch.delenv("LAB_GPU", raising=False)
    assert results.selected_gpu() == results.REFERENCE_GPU
    assert "h200/patch_sweep.json" in results.source_line("patch_sweep")


def test_an_explicit_gpu_never_falls_back(reader_tree):
    with pytest.raises(results.ResultsMissing):
        results.load("roofline", "test-gpu")


# ----------------------------------------------------------------------------- a GPU not a Hopper
# A reader on an A100 (8.0), an RTX 4090 (8.9), a T4 (7.5) or a Blackwell (10.0, 12.0), faked
# end to end: what `lab check` runs and skips, what lab.gemm picks, what `measure all` leaves
# out, and what the book then says (the H200's files standing in, each marked).

GM = sys.modules["lab.gemm"]
#: Code built for sm_90a (wgmma, TMA, FP8 on the tensor cores): compute capability 9.0 only.
SM90A = {n for n in lab.REGISTRY if n.startswith(("wgmma_", "fp8_"))}
#: mma.sync m16n8k16 with ldmatrix and cp.async: compute capability 8.0 and newer.
MMA_SYNC = {n for n in lab.REGISTRY if n.startswith("tc_")}
#: The experiments `measure all` leaves out below or past Hopper (their kernels are sm_90a).
HOPPER_EXPERIMENTS = {"hopper", "hopper_profile", "hopper_past", "hopper_streamk",
                      "hopper_table", "streamk_trace", "fp8"}
READERS = {(7, 5): ("NVIDIA Tesla T4", 40), (8, 0): ("NVIDIA A100-SXM4-80GB", 108),
           (8, 9): ("NVIDIA GeForce RTX 4090", 128), (10, 0): ("NVIDIA B200", 148),
           (12, 0): ("NVIDIA RTX PRO 6000", 188)}
#: The fixture's GPUs: the readers' and a Hopper.
GPUS = {**READERS, (9, 0): ("NVIDIA H100 80GB HBM3", 132)}


@pytest.fixture
def on_gpu(monkeypatch):
    """``on_gpu(cc)``: this process believes it runs on the :data:`GPUS` GPU of capability
    ``cc`` (nothing can be launched: a launch would reach the simulator)."""
    def fake(cc):
        name, sms = GPUS[cc]
        prov = {**device.provenance(), "device_mode": "gpu", "gpu": name,
                "compute_capability": f"{cc[0]}.{cc[1]}", "sm_count": sms}
        monkeypatch.setattr(device, "SIMULATOR", False)
        monkeypatch.setattr(device, "GPU", True)
        monkeypatch.setattr(device, "MODE", "gpu")
        monkeypatch.setattr(device, "provenance", lambda: dict(prov))
        monkeypatch.setattr(kernels, "current_cc", lambda: cc)
        monkeypatch.setattr(GM, "_sm_count", lambda: sms)
        return name, sms
    return fake


def _expected_skips(cc) -> set[str]:
    return SM90A | (MMA_SYNC if cc < (8, 0) else set())


@pytest.mark.parametrize("cc", sorted(READERS))
def test_lab_check_skips_exactly_what_the_gpu_cannot_run(on_gpu, monkeypatch, capsys, cc):
    """`python -m lab check` on a non-Hopper GPU: every sm_90a kernel skipped with the line
    naming 9.0 and the GPU's capability (below 8.0 the mma.sync kernels too, naming 8.0), every
    other kernel checked, and the run passes."""
    on_gpu(cc)
    checked = []

    def fake_check(name, m, n, k, **_):
        checked.append(name)
        return CheckResult(name, (m, n, k), "x", 0.0, 0.0, 0.0, 1.0, 0, True)

    monkeypatch.setattr(bench, "check", fake_check)
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    assert f"CC {cc[0]}.{cc[1]}" in out.splitlines()[0]
    skipped = dict(re.findall(r"^(\S+)\s+skipped: (.*)$", out, re.M))
    want = _expected_skips(cc)
    assert set(skipped) == want
    here = f"this GPU is {cc[0]}.{cc[1]}"
    for name in SM90A:
        line = skipped[name]
        assert here in line and "sm_90a" in line, line
        assert line.startswith("needs compute capability 9.0" if cc < (9, 0)
                               else "runs on compute capability 9.0 only"), line
    for name in want - SM90A:
        assert skipped[name].startswith("needs compute capability 8.0 (mma.sync") and \
            here in skipped[name]
    assert set(checked) == set(lab.REGISTRY) - want
    assert f"all kernels passed ({len(lab.REGISTRY) - len(want)} checked, {len(want)} " \
           "skipped above)" in out


def _suite_shapes():
    return sorted({(s["m"], s["n"], s["k"]) for s in suite.shapes()})


@pytest.mark.parametrize("cc", sorted(READERS))
def test_lab_gemm_picks_only_kernels_the_gpu_runs(on_gpu, cc):
    """The dispatcher on the faked GPU (its capability and SMs read from the device), over the
    suite's shapes and the three input types: the kernel and every candidate the first call
    would time can run there; no wgmma off 9.0; mma.sync from 8.0; the SIMT kernel (16-bit
    widened to FP32) on 7.5."""
    _, sms = on_gpu(cc)
    assert GM._device_cc() == cc
    for m, n, k in _suite_shapes():
        for dtype in ("float16", "bfloat16", "float32"):
            for out in ({"float32", dtype}):
                c = lab.dispatch.choose(m, n, k, dtype, out, GM._device_cc(), GM._sm_count())
                for x in (c, *c.candidates):
                    assert kernels.runnable(x.kernel, cc)[0], (cc, m, n, k, dtype, x.kernel)
                    assert not x.kernel.startswith("wgmma_"), (cc, m, n, k, x.kernel)
                    if dtype == "float32":
                        assert x.kernel.startswith("warptile_tuned") and not x.widen
                    elif cc >= (8, 0):
                        assert x.kernel.startswith("tc_") and not x.widen, x.kernel
                    else:
                        assert x.kernel.startswith("warptile_tuned") and x.widen
    # through lab.gemm.explain, the device's capability and SMs, no cc passed
    a = np.zeros((4096, 4096), np.float16)
    choice = lab.gemm.explain(a, a)
    assert choice.cc == cc and choice.kernel == ("tc_fp16" if cc >= (8, 0) else "warptile_tuned")
    why = str(choice)
    assert ("has mma.sync (no wgmma)" in why) if cc >= (8, 0) else ("has no mma.sync" in why)


@pytest.mark.parametrize("cc", [(8, 0), (8, 9)])
def test_a_hopper_kernel_asked_for_by_name_is_refused_before_launch(on_gpu, monkeypatch, cc):
    on_gpu(cc)
    for name in ("wgmma_tma_fp16", "wgmma_table_bf16", "fp8_e4m3"):
        spec = lab.get_spec(name)
        monkeypatch.setitem(lab.REGISTRY, name, dataclasses.replace(
            spec, launch=lambda *a: pytest.fail("launched")))
        a = np.ones((8, 8), spec.dtype)
        with pytest.raises(KernelUnavailable, match=rf"{name} needs compute capability 9\.0 "
                                                    rf"\(sm_90a.*this GPU is {cc[0]}\.{cc[1]}"):
            lab.matmul(a, a, kernel=name)


@pytest.fixture
def reader_measured(tmp_path, monkeypatch, on_gpu):
    """``reader_measured(cc)``: the faked GPU's results folder as `measure all` leaves it there
    (the H200's files standing for its measurements, minus what it skips), selected with
    LAB_GPU; returns the folder name and the experiments skipped with their reasons."""
    def make(cc):
        name, sms = on_gpu(cc)
        for tool in experiments.TOOLS:
            monkeypatch.setitem(experiments.TOOLS, tool, lambda: None)
        skipped = {n: r for n in experiments.book_order()
                   if (r := experiments.skip_reason(n))}
        slug = device.gpu_slug(name)
        shutil.copytree(results.RESULTS_DIR / results.REFERENCE_GPU, tmp_path / "h200")
        mine = tmp_path / slug
        mine.mkdir()
        for path in sorted((results.RESULTS_DIR / results.REFERENCE_GPU).glob("*.json")):
            if path.stem in skipped:
                continue
            data = json.loads(path.read_text())
            data["provenance"].update(gpu=name, compute_capability=f"{cc[0]}.{cc[1]}",
                                      sm_count=sms, max_sm_clock_mhz=None)
            (mine / path.name).write_text(json.dumps(data))
        monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
        monkeypatch.setenv("LAB_GPU", slug)
        return slug, skipped
    return make


@pytest.mark.parametrize("cc", [(8, 0), (8, 9)])
def test_the_book_on_a_non_hopper_gpu_marks_the_h200_files_that_stand_in(reader_measured, cc):
    """`measure all` on 8.x skips the Hopper experiments, each with the line naming 9.0 and
    the GPU's capability; the chapters then read the GPU's own files where it has them and
    the H200's where it does not, with the note under the table."""
    from lab.chapters import ch5, ch7, ch7b

    slug, skipped = reader_measured(cc)
    assert set(skipped) == HOPPER_EXPERIMENTS
    for reason in skipped.values():
        assert "needs compute capability 9.0" in reason and f"is {cc[0]}.{cc[1]}" in reason
    note = f"No hopper results for {slug}: the H200 reference stands in."
    assert "h200/hopper.json" in results.source_line("hopper") and \
        note in results.source_line("hopper")
    assert note in repr(ch7.checks_table())
    assert f"No fp8 results for {slug}: the H200 reference stands in." in \
        repr(ch7b.speed_table())
    mine = repr(ch5.ladder_table())                    # measured there: its own file, no note
    assert f"{slug}/tensor_cores.json" in mine and "stands in" not in mine


def test_the_chapters_live_cells_name_the_capability_a_non_hopper_gpu_lacks(on_gpu, monkeypatch,
                                                                          capsys):
    """On an RTX 4090 the FP8 check says the kernels need 9.0 and the GPU is 8.9 (not that the
    simulator cannot run them); on a T4 chapter 5's check and timing say they need 8.0, and
    chapter 9's check names what it leaves out; in the simulator all stay as they were."""
    from lab.chapters import ch5, ch7b, ch9

    text = str(ch7b.check_here())
    assert "7 FP8 kernels not run here: they need a Hopper GPU (sm_90a); the CUDA simulator" \
        in text                                                     # the simulator's note
    assert ch5.check_here() is None and ch5.measure_here() is None
    assert capsys.readouterr().out == ""
    on_gpu((8, 9))
    text = str(ch7b.check_here())
    assert "7 FP8 kernels not run here: fp8_e4m3 needs compute capability 9.0 (sm_90a" in text
    assert "this GPU is 8.9" in text and "simulator" not in text
    on_gpu((7, 5))
    monkeypatch.setattr(bench, "check", lambda *a, **k: pytest.fail("checked on 7.5"))
    monkeypatch.setattr(bench, "time", lambda *a, **k: pytest.fail("timed on 7.5"))
    ch5.check_here()
    ch5.measure_here()
    out = capsys.readouterr().out.splitlines()
    assert out == [f"not run here: {n} needs compute capability 8.0 ({lab.get_spec(n).needs}); "
                   "this GPU is 7.5" for n in ("tc_naive_fp16", "tc_fp16", "tc_bf16")] + [
        f"not timed here: tc_fp16 needs compute capability 8.0 ({lab.get_spec('tc_fp16').needs})"
        "; this GPU is 7.5"]
    checked = []
    monkeypatch.setattr(bench, "check", lambda name, *shape: checked.append(name) or CheckResult(
        name, shape, "x", 0.0, 0.0, 0.0, 1.0, 0, True))
    ch9.check_here()
    out = capsys.readouterr().out
    assert re.search(r"^tc_fp16\s+not run here: tc_fp16 needs compute capability 8\.0", out,
                     re.M)
    assert "tc_fp16" not in checked and "warptile_tuned" in checked


def test_a_turing_gpu_skips_the_wmma_experiment_whose_rows_need_mma_sync(on_gpu, monkeypatch):
    """WMMA runs on 7.5, but the rows chapter 5 reads set it beside mma.sync: on a T4 the
    experiment is skipped with the line naming 8.0, not failed when it reaches tc_naive_fp16."""
    for tool in experiments.TOOLS:
        monkeypatch.setitem(experiments.TOOLS, tool, lambda: None)
    on_gpu((7, 5))
    reason = experiments.skip_reason("wmma")
    assert reason and reason.startswith("tc_naive_fp16 needs compute capability 8.0") and \
        reason.endswith("this GPU is 7.5")
    on_gpu((8, 0))
    assert experiments.skip_reason("wmma") is None


@pytest.mark.parametrize("cc", sorted(READERS))
def test_the_suite_checks_the_wgmma_variants_on_hopper_only(on_gpu, monkeypatch, tmp_path, cc):
    """The suite's first process checks lab.gemm's sm_90a variants; off 9.0 lab.gemm runs none
    of them, so none is compiled or launched there (the suite still times lab.gemm)."""
    from lab.kernels import wgmma

    on_gpu(cc)
    monkeypatch.setattr(wgmma, "launcher", lambda cfg: pytest.fail(f"built {cfg.label}"))
    path = tmp_path / "rows.jsonl"
    suite.check_variants(str(path))
    assert not path.exists()


def test_on_hopper_the_suite_still_checks_the_variants(on_gpu, monkeypatch, tmp_path):
    from lab.kernels import wgmma

    on_gpu((9, 0))

    class Built(Exception):
        pass

    def launcher(cfg):
        raise Built(cfg.label)

    monkeypatch.setattr(wgmma, "launcher", launcher)
    with pytest.raises(Built):
        suite.check_variants(str(tmp_path / "rows.jsonl"))
