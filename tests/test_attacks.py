"""Regression tests for faults that once passed every check: each plants the fault and asserts
that the check, the validator or the input validation now refuses it."""
from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

import lab
from lab import bench, device, results
from lab.kernels import KernelSpec, KernelUnavailable


# ----------------------------------------------------------------------------- a dropped tail block

def _dropped_tail(spec: KernelSpec, axis: str):
    """The k04 launcher with the grid rounded down — ``max(1, m // BM)`` block rows (or
    ``max(1, n // BN)`` columns): the last, partial block row (column) is never launched."""
    from lab.kernels import k04_vectorized as k04

    cfg = spec.config
    fast, edges = k04.vectorized_kernel, k04.vectorized_edges_kernel

    def launch(A, B, C):
        m, n = C.shape
        kernel = fast if k04.tiles_fit(cfg, m, n, A.shape[1]) else edges
        rows = max(1, m // cfg.BM) if axis == "rows" else -(-m // cfg.BM)
        cols = max(1, n // cfg.BN) if axis == "cols" else -(-n // cfg.BN)
        kernel[(cols, rows), cfg.threads](A, B, C)

    return launch


@pytest.mark.parametrize("axis", ["rows", "cols"])
def test_a_dropped_tail_block_fails_the_check(monkeypatch, axis):
    spec = lab.get_spec("vectorized")
    bm, bn, bk = spec.tile
    monkeypatch.setitem(lab.REGISTRY, "vectorized",
                        dataclasses.replace(spec, launch=_dropped_tail(spec, axis)))
    shape = (bm + 1, bn + 1, bk + 1)
    assert shape in bench.shapes_for(spec, gpu=False)
    verdict = bench.check("vectorized", *shape)
    assert not verdict.passed and "never written" in verdict.reason
    assert verdict.nonfinite == (bn + 1 if axis == "rows" else bm + 1)


# ----------------------------------------------------------------------------- mixed edges

def _fails(name: str, shape) -> bool:
    """Whether the check of ``name`` at ``shape`` fails — wrong values, or (the simulator
    catches an out-of-bounds access) an IndexError."""
    try:
        return not bench.check(name, *shape).passed
    except IndexError:
        return True


@pytest.mark.parametrize("clause", ["m", "n", "k"])
def test_a_fast_path_that_forgets_a_dimension_fails_the_check(monkeypatch, clause):
    """k04's ``tiles_fit`` without one of its three clauses sends a shape ragged in that
    dimension alone to the unchecked 16-byte kernel; the mixed-edge check shape (round in the
    other two) catches it, and the real ``tiles_fit`` passes there."""
    from lab.kernels import k04_vectorized as k04

    spec = lab.get_spec("vectorized")
    bm, bn, bk = spec.tile
    axis = "mnk".index(clause)
    mixed = [s for s in bench.shapes_for(spec, gpu=False)
             if s[axis] % spec.tile[axis] and all(s[i] % spec.tile[i] == 0 for i in range(3)
                                                   if i != axis)]
    assert mixed, "no check shape is ragged in this dimension alone"
    assert not _fails("vectorized", mixed[0])
    real = k04.tiles_fit
    monkeypatch.setattr(k04, "tiles_fit", lambda cfg, m, n, k: real(
        cfg, *(t if i == axis else x for i, (x, t) in enumerate(zip((m, n, k), spec.tile)))))
    assert _fails("vectorized", mixed[0])


def test_a_split_k_slice_rounded_down_fails_the_check(monkeypatch):
    """``plan`` rounding the slice count down drops the last, partial slice; the check shape
    whose k-steps the slices do not divide catches it at kernel level."""
    from lab.kernels import splitk as sk

    name = "warptile_tuned_splitk"
    spec = lab.get_spec(name)
    bk, splits = spec.tile[2], spec.launch.splits
    partial = [s for s in bench.shapes_for(spec, gpu=False)
               if (-(-s[2] // bk)) % (sk.k_slices(s[2], bk, splits)[0] // bk)]
    assert partial, "no check shape leaves a partial split-K slice"
    real = sk.k_slices

    def rounded_down(k, bk_, splits_):
        chunk, _ = real(k, bk_, splits_)
        return chunk, -(-k // bk_) // (chunk // bk_)

    monkeypatch.setattr(sk, "k_slices", rounded_down)
    assert _fails(name, partial[0])


# ----------------------------------------------------------------------------- a small bias

def _numpy_kernel(scale: float):
    """A "kernel" that is float32 BLAS, its result multiplied by ``scale``."""
    def launch(A, B, C):
        C.copy_to_device((A.copy_to_host() @ B.copy_to_host()) * np.float32(scale))
    return launch


FP32_SHAPES = sorted({s for spec in lab.REGISTRY.values() if spec.dtype_name == "float32"
                      for s in bench.shapes_for(spec, gpu=False)})


def test_a_bias_of_84_ulp_fails_at_every_check_shape(monkeypatch):
    """×1.000005 (about 84 units of FP32 rounding) passed the old flat 1e-5 tolerance at every
    shape; against the K-scaled elementwise bound it fails at every simulator check shape of
    every FP32 kernel — and the same arithmetic without the bias passes."""
    for name, scale in (("biased", 1.000005), ("honest", 1.0)):
        monkeypatch.setitem(lab.REGISTRY, name, KernelSpec(name, name, np.float32,
                                                           _numpy_kernel(scale)))
    for shape in FP32_SHAPES:
        biased = bench.check("biased", *shape)
        honest = bench.check("honest", *shape)
        assert not biased.passed, biased.line()
        assert honest.passed, honest.line()


# ----------------------------------------------------------------------------- results files

@pytest.fixture
def store(tmp_path):
    """A copy of the committed patch_sweep file (timed rows with m, n, k, a cuBLAS row and
    pct_cublas) to corrupt."""
    src = results.path_for("patch_sweep")
    dst = tmp_path / "h200" / "patch_sweep.json"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    return dst


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _refused(path, pattern):
    with pytest.raises(results.ResultsError, match=pattern) as info:
        results.load_path(path)
    assert not isinstance(info.value, results.ResultsMissing)
    assert "patch_sweep.json" in str(info.value)


def test_the_committed_copy_is_valid(store):
    assert results.load_path(store)["rows"]


@pytest.mark.parametrize("field, value, pattern", [
    ("tflops", "24.7", r"rows\[0\]\.tflops' must be a finite non-negative number, got '24.7'"),
    ("tflops", True, r"rows\[0\]\.tflops' must be a finite non-negative number, got True"),
    ("median_ms", -1.0, r"rows\[0\]\.median_ms' must be a finite non-negative"),
    ("m", 2.5, r"rows\[0\]\.m' must be a positive integer"),
    ("m", 0, r"rows\[0\]\.m' must be a positive integer"),
    ("regs_ptxas", "32", r"rows\[0\]\.regs_ptxas' must be a non-negative integer"),
    ("checked", 1, r"rows\[0\]\.checked' must be true or false"),
    ("occupancy", 1.5, r"rows\[0\]\.occupancy' must be a number in \[0, 1\]"),
    ("kernel", None, r"rows\[0\]\.kernel' is null, but the file requires it"),
])
def test_a_mistyped_row_field_is_named(store, field, value, pattern):
    _edit(store, lambda d: d["rows"][0].__setitem__(field, value))
    _refused(store, pattern)


@pytest.mark.parametrize("spelling", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_are_refused_while_parsing(store, spelling):
    text = store.read_text()
    data = json.loads(text)
    old = json.dumps(data["rows"][0]["median_ms"])
    store.write_text(text.replace(old, spelling, 1))
    _refused(store, "not valid results JSON")


@pytest.mark.parametrize("field, value, pattern", [
    ("date", 5, r"provenance\.date' must be an ISO 8601 date string, got 5"),
    ("date", "last Tuesday", r"provenance\.date' must be an ISO 8601 date string"),
    ("compute_capability", 9.0, r"provenance\.compute_capability' must be a string like '9\.0'"),
    ("sm_count", "132", r"provenance\.sm_count' must be a positive integer"),
    ("gpu", None, r"provenance\.gpu' must be a string"),
])
def test_a_mistyped_provenance_field_is_named(store, field, value, pattern):
    _edit(store, lambda d: d["provenance"].__setitem__(field, value))
    _refused(store, pattern)


def test_schema_version_must_be_an_int_not_a_bool(store):
    _edit(store, lambda d: d.__setitem__("schema_version", True))
    _refused(store, r"field 'schema_version' must be an integer, got True")


def test_experiment_must_match_the_file_name(store):
    _edit(store, lambda d: d.__setitem__("experiment", "other"))
    _refused(store, r"field 'experiment' is 'other', but the file is named patch_sweep\.json")


def test_tflops_must_agree_with_the_shape_and_the_time(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("tflops", d["rows"][0]["tflops"] * 1.01))
    _refused(store, r"rows\[0\]\.tflops' is .*, but 2·m·n·k / median_ms gives")


def test_median_must_lie_between_min_and_max(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("min_ms", d["rows"][0]["max_ms"] * 2))
    _refused(store, r"rows\[0\]\.median_ms' is .*, outside min_ms")


def test_pct_cublas_must_agree_with_the_cublas_row(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("pct_cublas",
                                                    d["rows"][0]["pct_cublas"] * 1.01))
    _refused(store, r"rows\[0\]\.pct_cublas' is .*, but the cuBLAS row\(s\) of that shape say "
                    r"rows\[6\]")


def test_pct_cublas_must_agree_with_its_own_cublas_tflops(store):
    def change(d):
        row = d["rows"][0]
        row["cublas_tflops"] = 100 * row["tflops"] / row["pct_cublas"] * 1.01
    _edit(store, change)
    _refused(store, r"rows\[0\]\.pct_cublas' is .*, but 100·tflops / cublas_tflops gives")


def test_save_refuses_nan_and_wrong_types_before_writing(tmp_path):
    good = {"kernel": "k", "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}
    for bad in ({"tflops": float("nan")}, {"tflops": "fast"}, {"median_ms": np.float32("inf")}):
        with pytest.raises(results.ResultsError, match=r"rows\[0\]"):
            results.save("y", [{**good, **bad}], parameters={}, command="t", root=tmp_path)
    assert not list(tmp_path.rglob("*.json"))


# ----------------------------------------------------------------------------- corrupt vs missing

def test_a_missing_file_is_missing(tmp_path):
    with pytest.raises(results.ResultsMissing, match="no such results file"):
        results.load("patch_sweep", root=tmp_path)


def test_a_corrupt_file_is_an_error_not_missing(store):
    store.write_text(store.read_text()[:200])
    _refused(store, "not valid JSON")


# ----------------------------------------------------------------------------- inputs

def _spy(monkeypatch, name):
    launched = []
    spec = lab.get_spec(name)
    monkeypatch.setitem(lab.REGISTRY, name, dataclasses.replace(
        spec, launch=lambda *x: launched.append(x)))
    return launched


@pytest.mark.skipif(not device.SIMULATOR, reason="the simulator's refusal")
@pytest.mark.parametrize("name", [n for n, s in lab.REGISTRY.items() if not s.simulator])
def test_gpu_only_kernel_in_the_simulator_is_refused_clearly(monkeypatch, name):
    launched = _spy(monkeypatch, name)
    spec = lab.get_spec(name)
    a = bench.to_format(np.ones((4, 4), np.float32), spec.dtype)
    with pytest.raises(KernelUnavailable, match=rf"^{name} needs a GPU: the CUDA simulator cannot run "):
        lab.matmul(a, a, kernel=name)
    assert issubclass(KernelUnavailable, RuntimeError) and not launched


def test_big_endian_input_is_named(monkeypatch):
    launched = _spy(monkeypatch, "naive")
    a = np.ones((3, 4), dtype=">f4")
    b = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"A is big-endian \(>f4\), not this machine's byte order"):
        lab.matmul(a, b, kernel="naive")
    with pytest.raises(ValueError, match="B is big-endian"):
        lab.matmul(np.ones((3, 4), np.float32), np.ones((4, 2), ">f4"), kernel="naive")
    assert not launched


def test_masked_array_is_refused(monkeypatch):
    launched = _spy(monkeypatch, "naive")
    a = np.ma.masked_array(np.ones((3, 4), np.float32), mask=np.eye(3, 4, dtype=bool))
    with pytest.raises(TypeError, match="A is a numpy.ma.MaskedArray: its mask would be ignored"):
        lab.matmul(a, np.ones((4, 2), np.float32), kernel="naive")
    assert not launched
