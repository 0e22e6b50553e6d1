"""FP8 numbers on the host: the two formats, their codec, scaling, and the exact reference.

Hopper's tensor cores multiply two 8-bit floating-point formats (OCP FP8, as in CUDA's
``__nv_fp8_e4m3`` / ``__nv_fp8_e5m2``):

* **e4m3** — sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities; the one NaN per
  sign is exponent and mantissa all ones, so the largest value is 1.75 · 2⁸ = 448. Normals
  down to 2⁻⁶, subnormals down to 2⁻⁹.
* **e5m2** — sign, 5 exponent bits (bias 15), 2 mantissa bits: FP16's exponent with its
  mantissa cut to 2 bits, infinities and NaNs as in IEEE. Largest 1.75 · 2¹⁵ = 57344.

:func:`decode` turns bits into values by the formula (tests check it against ``ml_dtypes``
on all 256 codes); :func:`encode` rounds to nearest even through ``ml_dtypes`` after
*saturating* at ± the largest value (a cast alone turns 500 into NaN in e4m3).

Scaling, as production kernels do it: a tensor is stored as FP8 codes ``q`` and FP32 scales
``s`` with ``x ≈ s · q``. :func:`quantize` picks the scales so that each block's largest
magnitude lands on the format's largest value: one scale for the whole tensor
(``block=None``), or one per block — 1×128 for activations (a row's 128 consecutive k) and
128×128 for weights, as DeepGEMM does. :func:`dequantize` expands them back;
:func:`reference` is the float64 product of the dequantised operands, what a kernel's result
is compared with.

NumPy only: the same code runs with or without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The block shapes of block scaling: activations (A, M×K) and weights (Bᵀ, N×K).
ACT_BLOCK = (1, 128)
WEIGHT_BLOCK = (128, 128)


@dataclass(frozen=True)
class Format:
    """One FP8 format: bit fields and the ``ml_dtypes`` type that rounds to it."""
    name: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool         # e5m2: an all-ones exponent is inf/NaN; e4m3: only S.1111.111

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def numpy_type(self):
        import ml_dtypes

        return ml_dtypes.float8_e5m2 if self.ieee_specials else ml_dtypes.float8_e4m3fn

    @property
    def max(self) -> float:
        """The largest finite value."""
        top = 2 ** self.exponent_bits - 1 - (1 if self.ieee_specials else 0)
        frac = (2 ** self.mantissa_bits - (1 if self.ieee_specials else 2)) / 2 ** self.mantissa_bits
        return float(2.0 ** (top - self.bias) * (1 + frac))

    @property
    def min_normal(self) -> float:
        return float(2.0 ** (1 - self.bias))

    @property
    def min_subnormal(self) -> float:
        return float(2.0 ** (1 - self.bias - self.mantissa_bits))

    @property
    def unit(self) -> float:
        """Unit roundoff: half the gap between 1 and the next value."""
        return 2.0 ** -(self.mantissa_bits + 1)


FORMATS = {"e4m3": Format("e4m3", 4, 3, False), "e5m2": Format("e5m2", 5, 2, True)}


def get_format(name) -> Format:
    """The :class:`Format` called ``name`` (``"e4m3"`` or ``"e5m2"``); ValueError otherwise."""
    if isinstance(name, Format):
        return name
    if name not in FORMATS:
        raise ValueError(f"unknown FP8 format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


def decode(bits, fmt="e4m3") -> np.ndarray:
    """FP8 codes (uint8) → float64 values, by the bit fields:
    ``(−1)^s · 2^(e − bias) · (1 + f/2^m)``, subnormal ``(−1)^s · 2^(1 − bias) · f/2^m`` for
    e = 0; NaN (and e5m2's infinities) where the format says."""
    f = get_format(fmt)
    bits = np.asarray(bits)
    if bits.dtype != np.uint8:
        raise TypeError(f"FP8 codes must be uint8, got {bits.dtype}")
    b = bits.astype(np.int64)
    sign = np.where(b >> 7, -1.0, 1.0)
    e = (b >> f.mantissa_bits) & (2 ** f.exponent_bits - 1)
    man = (b & (2 ** f.mantissa_bits - 1)) / 2.0 ** f.mantissa_bits
    value = np.where(e == 0, 2.0 ** (1 - f.bias) * man, 2.0 ** (e - f.bias) * (1 + man))
    top = e == 2 ** f.exponent_bits - 1
    if f.ieee_specials:
        value = np.where(top, np.where(man == 0, np.inf, np.nan), value)
    else:
        value = np.where(top & (man == 1 - 2.0 ** -f.mantissa_bits), np.nan, value)
    return sign * value


def encode(x, fmt="e4m3") -> np.ndarray:
    """Values → FP8 codes (uint8), rounded to nearest even, saturated at ± the largest finite
    value (NaN stays NaN)."""
    f = get_format(fmt)
    x = np.asarray(x, dtype=np.float64)
    return np.clip(x, -f.max, f.max).astype(f.numpy_type).view(np.uint8)


def _expand(scales: np.ndarray, block, shape) -> np.ndarray:
    br, bc = block
    return np.repeat(np.repeat(scales, br, axis=0), bc, axis=1)[:shape[0], :shape[1]]


def _block_amax(x: np.ndarray, block) -> np.ndarray:
    br, bc = block
    rows, cols = x.shape
    pad = np.zeros((-(-rows // br) * br, -(-cols // bc) * bc))
    pad[:rows, :cols] = np.abs(x)
    return pad.reshape(pad.shape[0] // br, br, pad.shape[1] // bc, bc).max(axis=(1, 3))


def quantize(x, fmt="e4m3", block=None) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (2-D) → (FP8 codes, float32 scales) with ``x ≈ scale · decode(code)``.

    ``block=None``: one scale for the tensor, shape (1, 1). ``block=(br, bc)``: one scale per
    br×bc block, shape (⌈rows/br⌉, ⌈cols/bc⌉). Each scale is the block's largest magnitude
    over the format's largest value (1 for an all-zero block), rounded to float32 — the value
    the kernel multiplies by; the codes are ``x / scale`` rounded.
    """
    f = get_format(fmt)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"quantize takes a non-empty 2-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("quantize: the array holds NaN or infinity")
    if block is None:
        amax = np.array([[np.max(np.abs(x))]])
        block = x.shape
    else:
        amax = _block_amax(x, block)
    scales = np.where(amax > 0, amax / f.max, 1.0).astype(np.float32)
    codes = encode(x / _expand(scales.astype(np.float64), block, x.shape), f)
    return codes, scales


def dequantize(codes, scales, fmt="e4m3", block=None) -> np.ndarray:
    """float64 ``scale · decode(code)``, each scale expanded over its block (``block=None``:
    one scale, (1, 1))."""
    codes = np.asarray(codes)
    block = codes.shape if block is None else block
    return decode(codes, fmt) * _expand(np.asarray(scales, dtype=np.float64), block, codes.shape)


def reference(a, bt, sa, sb, fmt="e4m3", blocks: bool = False) -> np.ndarray:
    """The float64 product ``A · B`` of the dequantised operands: ``a`` (M×K codes, scales
    ``sa``) and ``bt`` (N×K codes of Bᵀ, scales ``sb``); per-tensor scales, or with
    ``blocks`` the 1×128 / 128×128 block scales."""
    a64 = dequantize(a, sa, fmt, ACT_BLOCK if blocks else None)
    b64 = dequantize(bt, sb, fmt, WEIGHT_BLOCK if blocks else None)
    return a64 @ b64.T


def bf16_bits_to_float32(bits) -> np.ndarray:
    """BF16 codes (uint16) → float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint32) << np.uint32(16)).view(np.float32)


def bf16_bits(x) -> np.ndarray:
    """float32 → BF16 codes (uint16), rounded to nearest even: the host's one BF16 rounding
    (:func:`lab.convert.bf16_bits` is the GPU's). A tie goes to the even code, a value past the
    largest BF16 becomes an infinity, a NaN the quiet NaN of its sign (``0x7FC0``/``0xFFC0``),
    as ``ml_dtypes.bfloat16`` does."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    out = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
           >> np.uint32(16)).astype(np.uint16)
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, ((bits >> np.uint32(16)) & np.uint32(0x8000)).astype(np.uint16)
                    | np.uint16(0x7FC0), out)


# ----------------------------------------------------------------------------- a model

#: k per FP8 wgmma instruction: one accumulation step of the tensor cores.
K_STEP = 32


def truncate(x: np.ndarray, lead: np.ndarray, keep_bits: int) -> np.ndarray:
    """``x`` cut toward zero to a multiple of ``2^(e − keep_bits)``, where ``2^e`` is the
    power of two at or below ``lead`` (elementwise; ``lead`` broadcasts): what an adder that
    aligns its addends to the largest and keeps ``keep_bits`` bits below it leaves of each."""
    lead = np.asarray(lead, dtype=np.float64)
    safe = np.where(lead > 0, lead, 1.0)
    quantum = np.exp2(np.floor(np.log2(safe)) - keep_bits)
    return np.where(lead > 0, np.trunc(x / quantum) * quantum, 0.0)


def emulate(a, bt, sa, sb, fmt="e4m3", *, promote: int = 0, keep_bits: int = 13,
            blocks: bool = False) -> np.ndarray:
    """A NumPy model of the FP8 kernels' arithmetic, for small M×N (it builds M×N×32 arrays):
    per 32-deep k-step the tensor cores add 32 exact products to the accumulator, each addend
    truncated to ``keep_bits`` bits below the largest of them, the sum rounded to FP32; with
    ``promote`` (a multiple of 32) the partial sums start again from zero every ``promote`` k
    and are added into FP32 accumulators (times the block scales with ``blocks``); per-tensor
    scales multiply the result at the end. ``keep_bits`` = 13 is what the H200 was measured
    to keep."""
    if promote % K_STEP:
        raise ValueError(f"promote must be a multiple of {K_STEP}, got {promote}")
    if blocks and promote != 128:
        raise ValueError("block scales are applied at a promotion every 128 k")
    da, db = decode(a, fmt), decode(bt, fmt)
    m, k = da.shape
    acc = np.zeros((m, db.shape[0]), dtype=np.float32)
    part = np.zeros_like(acc, dtype=np.float64)
    for k0 in range(0, k, K_STEP):
        prod = da[:, None, k0:k0 + K_STEP] * db[None, :, k0:k0 + K_STEP]     # exact
        lead = np.maximum(np.abs(part), np.abs(prod).max(axis=2, initial=0.0))
        total = truncate(part, lead, keep_bits) + truncate(prod, lead[..., None],
                                                           keep_bits).sum(axis=2)
        part = total.astype(np.float32).astype(np.float64)
        end = k0 + K_STEP
        if promote and (end % promote == 0 or end >= k):
            scale = 1.0
            if blocks:
                kb = k0 // 128
                scale = (np.float64(np.asarray(sa)[:, kb])[:, None]
                         * _expand(np.asarray(sb, np.float64)[:, kb:kb + 1], (128, 1),
                                   (db.shape[0], 1)).T)
            acc = (acc + (part * scale).astype(np.float32)).astype(np.float32)
            part[:] = 0.0
    if not promote:
        acc = part.astype(np.float32)
    if blocks:
        return acc.astype(np.float64)
    return acc.astype(np.float64) * float(np.float32(np.asarray(sa).ravel()[0])
                                          * np.float32(np.asarray(sb).ravel()[0]))
