"""The provider face: every way of computing C = A·B is reachable by name through bench.check
and bench.time; unknown names and unavailable providers are refused clearly, before anything is
launched. Library providers are exercised with fakes."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from lab import baselines, bench, device, libraries, providers, twins
from lab.kernels import KernelUnavailable, get_spec

SIMULATED = ("naive", "tiled8", "patch2")


def _numpy_launch(A, B, C):
    """C = A·B on the host, for fakes of GPU-only providers (float64, rounded to C's type)."""
    a = bench.to_float64(A.copy_to_host())
    b = bench.to_float64(B.copy_to_host())
    C.copy_to_device((a @ b).astype(C.dtype))


@pytest.fixture
def fake_library(monkeypatch):
    """A library provider that computes on the host, registered beside the real ones."""
    fake = providers.Provider("fake_lib", "host matmul", "library", "Triton", np.float16,
                              np.float32, lambda A, B, C: (lambda: _numpy_launch(A, B, C)),
                              lambda: None, describe=lambda m, n, k: "host")
    with providers.registered(fake):
        yield fake


def fake_timing(call, *, warmup=3, repeats=20, rotated=False):
    call(0)
    return bench.Timing(1.0, 0.9, 1.1, repeats, warmup, rotated, [1.0] * repeats)


# ----------------------------------------------------------------------------- the registry

def test_every_family_is_registered():
    names = providers.names()
    assert names[:3] == ["naive", "naive_swapped", "naive_literal"]
    fams = {providers.get(n).family for n in names}
    assert fams == {"numba", "cublas", "twin", "library"}
    assert {f"cublas_{k}" for k in baselines.KINDS} <= set(names)
    assert set(twins.TWINS) <= set(names)
    assert {"cublaslt_fp16", "cublaslt_fp32", "triton_fp16", "triton_fp32"} <= set(names)
    assert len(names) == len(set(names))
    for n in names:
        p = providers.get(n)
        assert p.layer in providers.LAYERS and p.dtype_name and p.title


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown provider 'no_such'") as info:
        bench.check("no_such", 4, 4, 4)
    for name in ("naive", "tc_fp16", "cublas_fp16", "s004_tiled16", "triton_fp16"):
        assert name in str(info.value)
    with pytest.raises(ValueError, match="unknown provider"):
        bench.time("no_such", 4, 4, 4)
    with pytest.raises(TypeError):
        providers.get(3)


@pytest.mark.skipif(device.GPU, reason="what the simulator cannot run")
def test_every_provider_is_reachable_by_name(monkeypatch):
    """Each name either checks correctly here or is refused with a line naming it, before any
    launch; bench.time never launches without a GPU."""
    launched = []
    monkeypatch.setattr(baselines, "launch", lambda *a: launched.append(a))
    monkeypatch.setattr(twins, "launch", lambda *a: launched.append(a))
    for name in providers.names():
        p = providers.get(name)
        why = p.reason()
        if why is None:
            assert not p.needs_gpu
            if name in SIMULATED:
                assert bench.check(name, 5, 3, 2).passed
        else:
            assert why.startswith(name), why
            with pytest.raises(KernelUnavailable, match=f"^{name} "):
                bench.check(name, 5, 3, 2)
        with pytest.raises(RuntimeError):
            bench.time(name, 5, 3, 2)
    assert not launched


@pytest.mark.skipif(device.GPU, reason="what the simulator cannot run")
def test_unavailable_provider_gives_its_reason_before_launch(monkeypatch):
    launched = []
    monkeypatch.setattr(baselines, "launch", lambda *a: launched.append(a))
    with pytest.raises(providers.ProviderUnavailable, match="cublas_fp16 needs a GPU"):
        bench.check("cublas_fp16", 9, 10, 7)
    with pytest.raises(providers.ProviderUnavailable, match="cublas_fp32 needs a GPU"):
        bench.time("cublas_fp32", 9, 10, 7)
    with pytest.raises(providers.ProviderUnavailable, match="triton_fp16 needs a GPU"):
        bench.time("triton_fp16", 9, 10, 7)
    with pytest.raises(KernelUnavailable, match="tc_fp16 needs a GPU"):
        bench.time("tc_fp16", 9, 10, 7)
    assert not launched


# ----------------------------------------------------------------------------- our kernels

@pytest.mark.parametrize("name", SIMULATED)
def test_our_kernels_through_the_face_on_odd_shapes(name):
    spec = get_spec(name)
    bm, bn, bk = spec.tile
    for shape in ((1, 1, 1), (bm + 1, bn + 1, bk + 1), (7, 3, 5)):
        verdict = bench.check(name, *shape)
        assert verdict.passed, verdict.line()
        assert verdict.kernel == name and verdict.dtype == "float32"
    from numba import cuda

    a, b = bench.random_inputs(9, 10, 7, np.float32)
    c = cuda.to_device(np.full((9, 10), np.nan, np.float32))
    providers.get(name).prepare(cuda.to_device(a), cuda.to_device(b), c)()
    assert bench.compare(c.copy_to_host(), a, b).passed


def test_code_paths():
    assert providers.get("tiled32").path(4097, 4097, 4097) == "one kernel, zero-padded tiles"
    assert providers.get("warptile_tuned").path(4096, 4096, 4096) == "16-byte kernel"
    assert providers.get("warptile_tuned").path(4104, 4104, 4104).startswith("bounds-checked")
    assert providers.get("tc_fp16").path(4096, 4096, 4096) == "no padding"
    assert providers.get("tc_fp16").path(1, 4096, 4096) == "pads to 128x4096x4096"
    assert get_spec("naive").code_path(5, 5, 5) == "one kernel, bounds checks in the kernel"
    assert providers.get("cublas_fp16").path(5, 5, 5) == "library's choice"
    assert providers.get("s004_tiled16").path(16, 16, 16) == "CUDA C twin of tiled16"


# ----------------------------------------------------------------------------- cuBLAS and twins

def test_cublas_and_twins_with_fakes(monkeypatch):
    monkeypatch.setattr(baselines, "available", lambda: list(baselines.KINDS))
    monkeypatch.setattr(baselines, "launch", lambda kind, A, B, C: _numpy_launch(A, B, C))
    monkeypatch.setattr(twins, "available", lambda: list(twins.TWINS))
    monkeypatch.setattr(twins, "launch", lambda name, A, B, C: _numpy_launch(A, B, C))
    v = bench.check("cublas_fp16", 9, 10, 7)
    assert v.passed and v.kernel == "cublas_fp16" and v.dtype == "float16"
    v = bench.check("cublas_bf16", 9, 10, 7)
    assert v.passed and v.dtype == "bfloat16"
    assert bench.check("s004_tiled16", 16, 16, 16).passed
    with pytest.raises(ValueError, match="multiples of 16"):
        bench.check("s004_tiled16", 17, 16, 16)

    monkeypatch.setattr(bench, "require_gpu", lambda what="": None)
    monkeypatch.setattr(bench, "time_gpu", fake_timing)
    row = bench.time("cublas_fp16_out16", 9, 10, 7)
    assert row["out_dtype"] == "float16" and row["dtype"] == "float16"
    assert row["tflops"] == pytest.approx(2 * 9 * 10 * 7 / 1e-3 / 1e12)
    row = bench.time("s004_tiled16", 16, 16, 16)
    assert list(row)[:3] == ["kernel", "twin_of", "m"] and row["twin_of"] == "tiled16"
    row = bench.time("naive", 9, 10, 7)
    assert list(row) == ["kernel", "m", "n", "k", "dtype", "median_ms", "min_ms", "max_ms",
                         "repeats", "warmup", "rotated", "tflops", "rel_frobenius",
                         "max_err_over_max_entry", "err_over_bound"]


def test_a_library_provider_through_the_face(fake_library, monkeypatch):
    assert "fake_lib" in providers.names() and "fake_lib" in providers.available("library")
    v = bench.check("fake_lib", 9, 10, 7)
    assert v.passed and v.kernel == "fake_lib" and v.dtype == "float16"
    monkeypatch.setattr(bench, "require_gpu", lambda what="": None)
    monkeypatch.setattr(bench, "time_gpu", fake_timing)
    row = bench.time("fake_lib", 9, 10, 7, rotate=True)
    assert row["out_dtype"] == "float32" and row["rotated"] is True


# ----------------------------------------------------------------------------- libraries

def test_library_reasons(monkeypatch):
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(libraries.importlib.util, "find_spec", lambda name: None)
    assert libraries.torch_reason() == "needs PyTorch (not installed)"
    assert libraries.triton_reason() == "needs PyTorch (not installed)"
    line = providers.get("triton_fp32").reason()
    assert line == "triton_fp32 needs PyTorch (not installed)"
    cutlass = libraries.cutlass_reason()
    assert "not installed" in cutlass and "92 MB" in cutlass and "can be sent" not in cutlass


def test_cublaslt_call_prefers_cublaslt_and_restores(monkeypatch):
    """With a fake torch: the call switches the preferred BLAS library to cuBLASLt around
    torch.mm, puts the previous one back, and turns TF32 and FP16 reductions off."""
    log = []
    state = {"lib": "cublas"}

    def prefer(backend=None):
        if backend is not None:
            log.append(("prefer", backend))
            state["lib"] = backend
        return state["lib"]

    matmul = types.SimpleNamespace(allow_fp16_reduced_precision_reduction=True,
                                   fp32_precision="tf32")
    torch = types.ModuleType("torch")
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
        preferred_blas_library=prefer, matmul=matmul))
    torch.as_tensor = lambda x, device=None: ("tensor", x)
    torch.mm = lambda a, b, out=None: log.append(("mm", state["lib"]))
    monkeypatch.setitem(sys.modules, "torch", torch)
    call = providers.get("cublaslt_fp16").prepare("A", "B", "C")
    call()
    assert log == [("prefer", "cublaslt"), ("mm", "cublaslt"), ("prefer", "cublas")]
    assert matmul.allow_fp16_reduced_precision_reduction is False
    assert matmul.fp32_precision == "ieee"


def test_triton_choice_reads_the_autotuner(monkeypatch):
    fake = types.ModuleType("lab.triton_gemm")
    fake.chosen = lambda precision, m, n, k: (f"{precision} 128x256x64" if m == 4096 else None)
    monkeypatch.setitem(sys.modules, "lab.triton_gemm", fake)
    import lab

    monkeypatch.setattr(lab, "triton_gemm", fake, raising=False)
    assert providers.get("triton_fp16").path(4096, 4096, 4096) == "fp16 128x256x64"
    assert "not yet tuned" in providers.get("triton_fp32").path(4097, 4097, 4097)


def test_libraries_experiment_plan_and_ratios(monkeypatch):
    from lab.experiments import libraries as exp

    with pytest.raises(RuntimeError, match="needs a GPU") if not device.GPU else _nothing():
        exp.plan()
    rows = [{"part": "time", "kernel": "cublas_fp16", "m": 8, "dtype": "float16",
             "tflops": 2.0},
            {"part": "time", "kernel": "tc_fp16", "m": 8, "dtype": "float16", "tflops": 1.0},
            {"part": "time", "kernel": "triton_fp32", "m": 8, "dtype": "float32",
             "tflops": 1.0},
            {"part": "check", "kernel": "tc_fp16", "m": 8}]
    exp.ratios(rows)
    assert [r.get("ratio_to_cublas") for r in rows] == [1.0, 0.5, None, None]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.skipif(device.GPU, reason="the dry run fakes the GPU parts")
def test_libraries_experiment_dry_run(fake_library, monkeypatch):
    """run() end to end with simulator kernels standing in for ours and cuBLAS, the fake
    library provider beside them, and the profiler faked."""
    from lab import results
    from lab.experiments import libraries as exp

    monkeypatch.setattr(exp, "FP16", ("fake_lib",))
    monkeypatch.setattr(exp, "FP32", ("naive", "tiled8", "triton_fp32"))
    monkeypatch.setattr(exp, "REQUIRED", ("naive",))
    monkeypatch.setattr(exp, "SIZES", (9, 16))
    monkeypatch.setattr(exp, "CHECK_SHAPES", ((5, 3, 2),))
    monkeypatch.setattr(exp, "CUBLAS_OF", {"float16": "fake_lib", "float32": "naive"})
    monkeypatch.setattr(bench, "require_gpu", lambda what="": None)
    monkeypatch.setattr(bench, "time_gpu", fake_timing)
    monkeypatch.setattr(libraries, "torch_reason", lambda: None)
    monkeypatch.setattr(libraries, "kernels_launched", lambda call: ["fake_kernel"])
    monkeypatch.setattr(libraries, "torch_settings", lambda: {})
    out = exp.run(lambda it, **kw: it)
    rows = out["rows"]
    assert {r["kernel"] for r in rows if r["part"] == "check"} == {"fake_lib", "naive",
                                                                   "tiled8"}
    timed = [r for r in rows if r["part"] == "time"]
    assert [(r["kernel"], r["m"]) for r in timed] == [
        (k, n) for n in (9, 16) for k in ("fake_lib", "naive", "tiled8")]
    assert all(r["ratio_to_cublas"] is not None for r in timed)
    kernels = [r for r in rows if r["part"] == "kernels"]
    assert [r["kernel"] for r in kernels] == ["fake_lib", "fake_lib"]
    assert kernels[0]["launched"] == ["fake_kernel"]
    assert set(out["parameters"]["skipped"]) == {"triton_fp32"}
    results.validate({"schema_version": results.SCHEMA_VERSION, "experiment": "libraries",
                      "parameters": out["parameters"], "rows": rows, "command": "test",
                      "provenance": device.provenance(), "row_fields": out["row_fields"]})
