"""lab.convert: widening is exact, narrowing rounds to nearest even, BF16 keeps a NaN a NaN,
and a dtype neither kernel takes is refused (run under the simulator on a small odd shape);
the one BF16 rounding, on the host (lab.fp8.bf16_bits) and on the GPU (lab.convert.bf16_bits),
against ml_dtypes.bfloat16."""
import ml_dtypes
import numpy as np
import pytest

import lab  # noqa: F401  (device decided first)
from lab import convert
from lab.fp8 import bf16_bits as _bf16_bits
from numba import cuda

#: float32 bit patterns at the edges: ties (to even below, to even above), the largest float32
#: (rounds to infinity), the largest finite BF16, infinities, quiet and signalling NaNs of both
#: signs (one whose low bits would carry into the exponent), zeros and subnormals.
EDGES = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F7FFF,
                  0x7F7F8000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                  0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x00000000, 0x80000000, 0x00000001,
                  0x00008000, 0x00018000, 0x807FFFFF], np.uint32)


def _expected(bits: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return bits.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def test_host_rounding_is_ml_dtypes_on_every_kind_of_value():
    rng = np.random.default_rng(16)
    bits = np.concatenate([EDGES, rng.integers(0, 2**32, 200_000, dtype=np.uint64)
                           .astype(np.uint32)])            # every exponent, NaNs included
    got = _bf16_bits(bits.view(np.float32))
    assert got.dtype == np.uint16
    bad = np.flatnonzero(got != _expected(bits))
    assert bad.size == 0, [(hex(bits[i]), hex(got[i]), hex(_expected(bits)[i])) for i in bad[:5]]


def test_host_rounding_ties_to_even_overflows_to_infinity_and_keeps_nan():
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, np.finfo(np.float32).max, -np.inf, np.nan,
                  -np.nan], np.float32)
    assert [hex(v) for v in _bf16_bits(x)] == ["0x3f80", "0x3f82", "0x7f80", "0xff80",
                                               "0x7fc0", "0xffc0"]
    assert _bf16_bits(np.float32(2.5)).shape == ()        # a scalar stays a scalar


@cuda.jit
def _round_on_device(src, dst):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = convert.bf16_bits(src[i])


def test_device_rounding_is_the_hosts():
    rng = np.random.default_rng(17)
    bits = np.concatenate([EDGES, rng.integers(0, 2**32, 235, dtype=np.uint64)
                           .astype(np.uint32)])
    out = cuda.to_device(np.zeros(bits.size, np.uint16))
    _round_on_device[-(-bits.size // 64), 64](cuda.to_device(bits.view(np.float32)), out)
    assert np.array_equal(out.copy_to_host(), _expected(bits))


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
