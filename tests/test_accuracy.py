"""lab.accuracy (through bench, the face that re-exports it): the comparison fails a wrong
value, a NaN and a wrong shape and passes float32 BLAS; the bound is K·u at small K and grows like
√K past it; a bias of 84 units of FP32 rounding fails at every check shape; inputs are fresh,
nonzero and round-trip through BF16."""
import numpy as np
import pytest

import lab
from lab import bench
from lab.kernels import KernelSpec


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


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.uint16])
def test_a_poisoned_buffer_reads_as_nan_in_every_output_format(dtype):
    """(A plain ``np.full(shape, nan, uint16)`` would be zeros: BF16 outputs need the bits.)"""
    from lab.accuracy import poisoned, to_float64

    buf = poisoned((3, 5), dtype)
    assert buf.dtype == dtype and buf.shape == (3, 5)
    assert np.isnan(to_float64(buf)).all()
