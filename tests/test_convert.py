"""lab.convert: widening is exact, narrowing rounds to nearest even, BF16 keeps a NaN a NaN,
and a dtype neither kernel takes is refused (run under the simulator on a small odd shape)."""
import numpy as np
import pytest

import lab  # noqa: F401  (device decided first)
from lab import convert
from numba import cuda


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> BF16 bits, in NumPy (NaN -> 0x7FC0)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    out[np.isnan(x)] = 0x7FC0
    return out


def test_widening_is_exact():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 7)).astype(np.float16)
    out = cuda.to_device(np.full((5, 7), np.nan, np.float32))
    convert.widen(cuda.to_device(x), out)
    assert np.array_equal(out.copy_to_host(), x.astype(np.float32))
    bits = _bf16_bits(rng.standard_normal((5, 7)).astype(np.float32))
    out = cuda.to_device(np.full((5, 7), np.nan, np.float32))
    convert.widen(cuda.to_device(bits), out)
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(out.copy_to_host(), want)


def test_narrowing_rounds_to_nearest_even_and_keeps_nan():
    # 1 + 2^-8 is halfway between two BF16 values: ties go to the even one (1.0);
    # 1 + 3·2^-8 rounds up to 1 + 2^-6.
    x = np.array([[1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, np.nan, 65504.0]], np.float32)
    out = cuda.to_device(np.zeros(x.shape, np.uint16))
    convert.narrow(cuda.to_device(x), out)
    got = out.copy_to_host()
    assert np.array_equal(got, _bf16_bits(x))
    assert got[0, 0] == 0x3F80 and got[0, 1] == 0x3F82 and got[0, 3] == 0x7FC0
    half = cuda.to_device(np.zeros(x.shape, np.float16))
    convert.narrow(cuda.to_device(x), half)
    h = half.copy_to_host()
    assert np.array_equal(h[~np.isnan(h)], x.astype(np.float16)[~np.isnan(x)])


def test_other_dtypes_are_refused():
    with pytest.raises(ValueError, match="FP16 or BF16"):
        convert.widen(cuda.to_device(np.zeros((2, 2), np.float32)),
                      cuda.to_device(np.zeros((2, 2), np.float32)))
    with pytest.raises(ValueError, match="FP16 or BF16"):
        convert.narrow(cuda.to_device(np.zeros((2, 2), np.float32)),
                       cuda.to_device(np.zeros((2, 2), np.float64)))
