"""The platform: the check catches what it must, matmul validates, results files validate,
the offline compiler reports, the CLI runs."""
import json
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

import lab
from lab import bench, compiler, device, model, results
from lab.kernels import KernelSpec

# ----------------------------------------------------------------- the check can fail

@cuda.jit
def _skip_last_element(A, B, C):
    row, col = cuda.grid(2)
    m, n = C.shape
    if row < m and col < n and not (row == m - 1 and col == n - 1):
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def _launch_skip(A, B, C):
    m, n = C.shape
    _skip_last_element[((m + 7) // 8, (n + 7) // 8), (8, 8)](A, B, C)


def _inputs(rng, m=9, n=7, k=5):
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    return a, b


def test_check_catches_wrong_result(rng):
    a, b = _inputs(rng)
    out = a @ b
    out[3, 4] += 1e-2
    verdict = bench.compare(out, a, b)
    assert not verdict.passed and verdict.err_over_bound > 1 and verdict.rel_frobenius > 1e-5


def test_check_catches_nan(rng):
    a, b = _inputs(rng)
    out = a @ b
    out[0, 0] = np.nan
    verdict = bench.compare(out, a, b)
    assert not verdict.passed and verdict.nonfinite == 1


def test_check_catches_a_wrong_shape(rng):
    a, b = _inputs(rng)
    verdict = bench.compare((a @ b)[:, :-1], a, b)
    assert not verdict.passed and "output shape" in verdict.reason


def test_check_catches_unwritten_element(monkeypatch):
    spec = KernelSpec("skip_last", "plants an unwritten element", np.float32, _launch_skip)
    monkeypatch.setitem(lab.REGISTRY, "skip_last", spec)
    verdict = bench.check("skip_last", 9, 10, 11)
    assert not verdict.passed
    assert verdict.nonfinite == 1 and "never written" in verdict.reason
    assert f"replay with seed={verdict.seed}" in verdict.line()


def test_check_passes_a_correct_result(rng):
    """float32 BLAS (blocked, FMA) is a correct kernel: within the bound at small and large K."""
    for k in (1, 2, 7, 64, 1000):
        a, b = _inputs(rng, 20, 30, k)
        verdict = bench.compare(a @ b, a, b)
        assert verdict.passed and 0 < verdict.err_over_bound <= 1, verdict.line()


def test_bound_is_tight_at_small_k_and_grows_like_sqrt_k():
    u = bench.UNIT
    assert bench.bound_factor(1) == u                        # one rounded product
    assert bench.bound_factor(16) == 16 * u                  # K·u up to K = LAMBDA²
    assert bench.bound_factor(64) == pytest.approx(bench.LAMBDA * 8 * u)
    assert bench.bound_factor(64, tensor_cores=True) == bench.TENSOR_CORE_FACTOR * \
        bench.bound_factor(64)
    assert bench.bound_factor(4, input_unit=2.0 ** -10) == 4 * u + 2.0 ** -9
    with pytest.raises(ValueError, match="positive"):
        bench.bound_factor(0)


def test_compare_refuses_a_reference_in_place_of_the_inputs(rng):
    a, b = _inputs(rng)
    with pytest.raises(TypeError, match=r"compare\(out, a, b\)"):
        bench.compare(a @ b, a.astype(np.float64) @ b.astype(np.float64), None)


def test_check_keeps_its_seed_and_replays(rng):
    first = bench.check("naive", 5, 6, 7)
    again = bench.check("naive", 5, 6, 7, seed=first.seed)
    assert first.seed is not None and again.seed == first.seed
    assert again.err_over_bound == first.err_over_bound and again.as_dict() == first.as_dict()


def test_random_inputs_are_fresh_and_nonzero():
    a1, b1 = bench.random_inputs(8, 8, 8, np.float32)
    a2, _ = bench.random_inputs(8, 8, 8, np.float32)
    assert np.count_nonzero(a1) == a1.size and np.count_nonzero(b1) == b1.size
    assert not np.array_equal(a1, a2)


def test_bfloat16_rounding_round_trips():
    x = np.array([1.0, -2.5, 3.140625, 1e-3], dtype=np.float32)
    bits = bench.to_format(x, np.uint16)
    back = bench.to_float64(bits)
    assert np.allclose(back, x, rtol=2 ** -8)


def test_matmul_returns_float32_of_the_output_shape(rng):
    a, b = _inputs(rng, 3, 5, 2)
    out = lab.matmul(a, b, kernel="naive")
    assert out.dtype == np.float32 and out.shape == (3, 5)


# ----------------------------------------------------------------- bad input

GOOD = np.ones((3, 4), np.float32)
GOOD_B = np.ones((4, 5), np.float32)


@pytest.mark.parametrize("a, b, exc, words", [
    ([[1.0]], GOOD_B, TypeError, "A must be a numpy.ndarray"),
    (GOOD, "x", TypeError, "B must be a numpy.ndarray"),
    (np.ones(3, np.float32), GOOD_B, ValueError, "A must be 2-dimensional"),
    (GOOD, np.ones((4, 5, 1), np.float32), ValueError, "B must be 2-dimensional"),
    (GOOD, np.ones((3, 5), np.float32), ValueError, "inner dimensions differ"),
    (GOOD.astype(np.float64), GOOD_B, ValueError, "takes float32 inputs"),
    (GOOD, GOOD_B.astype(np.int32), ValueError, "B is int32"),
    (np.ones((4, 3), np.float32).T, GOOD_B, ValueError, "A is not C-contiguous"),
    (np.ones((0, 4), np.float32), GOOD_B, ValueError, "empty dimension"),
    (GOOD, np.ones((4, 0), np.float32), ValueError, "empty dimension"),
])
def test_bad_input_is_named(a, b, exc, words, monkeypatch):
    launched = []
    spec = lab.get_spec("naive")
    monkeypatch.setitem(lab.REGISTRY, "naive", KernelSpec(
        "naive", spec.title, spec.dtype, lambda *x: launched.append(x)))
    with pytest.raises(exc, match=words):
        lab.matmul(a, b, kernel="naive")
    assert not launched, "nothing may be launched for bad input"


def test_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        lab.matmul(GOOD, GOOD_B, kernel="nope")


def test_every_registered_kernel_declares_the_contract():
    for name, spec in lab.REGISTRY.items():
        assert spec.name == name
        assert np.dtype(spec.dtype) in (np.float32, np.float16, np.uint16, np.uint8)
        if np.dtype(spec.dtype) == np.uint8:        # FP8 codes travel as bytes
            assert spec.dtype_name in ("float8_e4m3fn", "float8_e5m2"), name
        assert isinstance(spec.simulator, bool) and callable(spec.launch)


# ----------------------------------------------------------------- results store

def _good_file(tmp_path):
    data = results.thaw(results.load("roofline"))
    path = tmp_path / "h200" / "x.json"
    path.parent.mkdir()
    data["experiment"] = "x"
    return data, path


def test_every_committed_results_file_validates():
    """Every file of every GPU in the committed store passes the full schema (types, no NaN,
    provenance, derived fields, clocks, no copied rows) and names the GPU of its folder."""
    files = sorted(results.RESULTS_DIR.glob("*/*.json"))
    assert files
    for path in files:
        data = results.load_path(path, folder=path.parent.name)
        assert data["experiment"] == path.stem and data["rows"]


def test_corrupt_results_file_is_named(tmp_path):
    _, path = _good_file(tmp_path)
    path.write_text("{ not json")
    with pytest.raises(results.ResultsError, match=r"x\.json: not valid JSON"):
        results.load("x", root=tmp_path)


@pytest.mark.parametrize("field, pattern", [
    ("provenance.driver", r"x\.json: field 'provenance\.driver' is missing"),
    ("rows", r"x\.json: field 'rows' is missing"),
    ("rows.0.median_ms", r"x\.json: field 'rows\[0\]\.median_ms' is missing"),
])
def test_missing_field_is_named(tmp_path, field, pattern):
    data, path = _good_file(tmp_path)
    parts = field.split(".")
    target = data
    for p in parts[:-1]:
        target = target[int(p)] if p.isdigit() else target[p]
    del target[parts[-1]]
    path.write_text(json.dumps(data))
    with pytest.raises(results.ResultsError, match=pattern):
        results.load("x", root=tmp_path)


def test_save_refuses_a_bad_file(tmp_path):
    with pytest.raises(results.ResultsError, match="rows"):
        results.save("y", [], parameters={}, command="test", root=tmp_path)
    with pytest.raises(results.ResultsError, match=r"rows\[0\]\.median_ms"):
        results.save("y", [{"kernel": "k", "median_ms": float("nan"), "min_ms": 1.0,
                            "max_ms": 1.0}], parameters={}, command="test", root=tmp_path)
    assert not list(tmp_path.rglob("*.json"))


def test_save_then_load_round_trips(tmp_path):
    row = {"kernel": "k", "m": 2, "n": 3, "k": 4, "median_ms": np.float64(0.5),
           "min_ms": 0.4, "max_ms": 0.6, "tflops": 2 * 2 * 3 * 4 / 0.5e-3 / 1e12}
    prov = {**device.provenance(), "gpu": "Fake GPU"}
    results.save("z", [row], parameters={"n": 3}, command="test", root=tmp_path,
                 provenance=prov, gpu="fake-gpu")
    assert results.load("z", gpu="fake-gpu", root=tmp_path)["rows"][0]["median_ms"] == 0.5


# ----------------------------------------------------------------- model

def test_model_matches_the_seeds_formulas():
    assert model.flops(2, 3, 4) == 48
    assert model.naive_intensity(4) == 0.25 and model.naive_intensity(2) == 0.5
    assert model.ideal_intensity(1024, 1024, 1024) == pytest.approx(1024 / 6)
    assert model.tile_intensity(32) == 8 and model.tile_intensity(16) == 4
    assert model.smem_intensity(8) == 2 and model.smem_intensity(1) == 0.25
    assert model.ideal_intensity(1, 4096, 4096, 2) == pytest.approx(1.0, rel=1e-3)


# ----------------------------------------------------------------- compiler

def test_compiler_report_for_naive():
    rep = compiler.report("naive")[0]
    assert rep.registers > 0
    assert rep.spill_stores == 0 and rep.spill_loads == 0
    assert rep.mix.get("FFMA", 0) > 0 and rep.sass


# ----------------------------------------------------------------- CLI

def test_cli_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "lab", "list"], capture_output=True, text=True)
    assert out.returncode == 0 and "naive" in out.stdout


def test_cli_check_passes_a_correct_kernel(capsys):
    from lab.__main__ import main
    assert main(["check", "naive"]) == 0
    assert "all kernels passed" in capsys.readouterr().out
