"""What counts as correct: an output against the float64 product of its inputs.

:func:`compare` takes a kernel's output and the inputs it was given; :func:`lab.bench.check`
runs a provider on fresh random inputs (:func:`random_inputs`; never zeros; the seed is kept so a
failure can be replayed with ``check(name, m, n, k, seed=...)``), the output poisoned with NaN
before the kernel runs, against a float64 reference ``R = A·B`` of the exact values the kernel was
given. A NaN, an infinity or an element the kernel never wrote (still NaN) always fails.

Every other element must lie within an error bound that follows from how the kernel rounds::

    |C − R|  ≤  (c · u · min(K, λ·√K) + 2·u_in + u_out) · (|A|·|B|)  +  floor      (elementwise)

* ``|A|·|B|`` is the product of the absolute values: ``Σ_k |a_ik·b_kj|`` bounds how large the
  partial sums of element (i, j) can get, so rounding errors scale with it, not with ``|R|``.
* ``u = 2⁻²⁴`` is the unit roundoff of the FP32 accumulation — for every kernel here, the
  tensor-core ones too: 16-bit inputs are exact in the reference and their products are exact in
  FP32, so only the accumulation rounds.
* ``K·u`` is, to first order, the classical worst case of a K-term dot product in any summation
  order (``γ_K = K·u / (1 − K·u)``); it is tight at small K: at K = 1 the only error is one
  rounded product. Past ``K = λ²`` the bound grows like ``λ·√K·u`` instead, the growth of
  rounding errors that do not conspire (Higham & Mary, 2019). ``λ = 4``: with zero-mean inputs
  the largest error of a correct kernel stays within a few ``u·(|A|·|B|)`` whatever K — about 5
  in NumPy over millions of FP32 dot products up to K = 1025, at most 12.5 for any kernel on the
  H200 up to K = 4096 (docs/measurement-log.md) — so from K = 17 on the bound leaves a margin of
  three or more, growing with K.
* ``c = 1`` on CUDA cores (FFMA rounds to nearest). Tensor cores align the products to the
  largest exponent and truncate, an error up to about twice that of rounding per addition:
  ``c = 2`` for them (:data:`TENSOR_CORE_FACTOR`).
* ``u_in`` is the unit of a rounding of the inputs the reference does not see (TF32 tensor
  cores: ``2⁻¹⁰``, truncation), ``u_out`` that of a narrower output (FP16: ``2⁻¹¹``); both are 0
  for our kernels. ``floor`` is an absolute term for underflow: ``K`` FP32 subnormal units plus
  the output format's.

What the bound catches: at K = 1 any relative bias above ``c·u``; a bias of ×1.000005 (84 u)
fails at every simulator check shape (K ≤ 65), where correct kernels stay below a few u. At K in
the thousands no elementwise test can tell such a bias from rounding — ``|R|`` is then ~50×
smaller than ``|A|·|B|`` — which is why every kernel is also checked at small shapes
(:func:`lab.kernels.shapes_for`). The two older measures, the relative Frobenius error ``‖C − R‖ / ‖R‖`` and
``max|C − R| / max|R|``, are reported beside ``err_over_bound`` (the largest ratio of error to
bound; a pass is ≤ 1).

This module imports nothing of ``lab``: kernels use it for the checks of their own fused
epilogues, and :mod:`lab.bench` for every product check.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass

import numpy as np

from lab.fp8 import bf16_bits

#: Unit roundoff of the FP32 accumulation every kernel uses.
UNIT = 2.0 ** -24
#: Past K = LAMBDA², the bound grows like LAMBDA·√K instead of K.
LAMBDA = 4.0
#: c for tensor-core accumulation (truncating alignment) relative to FP32 FFMA (c = 1).
TENSOR_CORE_FACTOR = 2.0
#: Unit of the input rounding of TF32 tensor cores (10 stored bits, possibly truncated).
TF32_INPUT_UNIT = 2.0 ** -10


@dataclass
class CheckResult:
    """Outcome of comparing one output with its float64 reference.

    ``err_over_bound`` is the largest ``|C − R| / bound`` over the elements (pass: ≤ 1);
    ``tolerance`` the bound's factor on ``|A|·|B|`` at this K; ``seed`` replays the inputs of a
    :func:`check` (None when the caller supplied them).
    """
    kernel: str
    shape: tuple[int, int, int]
    dtype: str
    rel_frobenius: float
    max_err_over_max_entry: float
    err_over_bound: float
    tolerance: float
    nonfinite: int
    passed: bool
    reason: str = ""
    seed: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        m, n, k = self.shape
        if self.passed:
            verdict = "PASS"
        else:
            replay = f"; replay with seed={self.seed}" if self.seed is not None else ""
            verdict = f"FAIL ({self.reason}{replay})"
        return (f"{self.kernel:<22} {m}x{n}x{k:<8} rel.Frobenius {self.rel_frobenius:.1e}  "
                f"max-err/max-entry {self.max_err_over_max_entry:.1e}  "
                f"err/bound {self.err_over_bound:.2f}  {verdict}")


def bound_factor(k: int, *, tensor_cores: bool = False, input_unit: float = 0.0,
                 output_unit: float = 0.0) -> float:
    """The error bound's factor on ``|A|·|B|`` for a K-term product (see the module docstring)."""
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    c = TENSOR_CORE_FACTOR if tensor_cores else 1.0
    return c * UNIT * min(float(k), LAMBDA * math.sqrt(k)) + 2 * input_unit + output_unit


def _input_name(x: np.ndarray) -> str:
    return "bfloat16" if x.dtype == np.uint16 else x.dtype.name


def compare(out: np.ndarray, a: np.ndarray, b: np.ndarray, *, kernel: str = "?",
            seed: int | None = None, tensor_cores: bool | None = None,
            input_unit: float = 0.0, dtype_name: str | None = None) -> CheckResult:
    """Compare a kernel's output ``out`` (float32, or float16 for a half-precision output) with
    the float64 product of its inputs ``a`` and ``b`` (as given to the kernel: float32, float16,
    or bfloat16 bits in uint16), elementwise against the bound of the module docstring.

    ``tensor_cores`` defaults to True for 16-bit inputs; ``input_unit`` is the unit of an input
    rounding the kernel applies that the reference does not see (TF32: :data:`TF32_INPUT_UNIT`).
    NaN, infinity or an unwritten element always fails.
    """
    if b is None or getattr(a, "ndim", 0) != 2 or getattr(b, "ndim", 0) != 2:
        raise TypeError("compare(out, a, b): pass the kernel's two 2-D inputs (the reference and "
                        "the bound are computed from them)")
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k:
        raise ValueError(f"inner dimensions differ: a is {a.shape}, b is {b.shape}")
    shape = (m, n, k)
    dtype_name = dtype_name or _input_name(a)
    if tensor_cores is None:
        tensor_cores = a.dtype.itemsize == 2
    out = np.asarray(out)
    output_unit = float(np.finfo(out.dtype).eps) / 2 if out.dtype == np.float16 else 0.0
    factor = bound_factor(k, tensor_cores=tensor_cores, input_unit=input_unit,
                          output_unit=output_unit)
    if out.shape != (m, n):
        return CheckResult(kernel, shape, dtype_name, math.inf, math.inf, math.inf, factor, -1,
                           False, f"output shape {out.shape} != expected {(m, n)}", seed)
    out64 = out.astype(np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out64)))
    if nonfinite:
        return CheckResult(kernel, shape, dtype_name, math.inf, math.inf, math.inf, factor,
                           nonfinite, False, f"{nonfinite} element(s) NaN/inf or never written",
                           seed)
    a64, b64 = to_float64(a), to_float64(b)
    ref = a64 @ b64
    scale = np.abs(a64) @ np.abs(b64)
    floor = k * 2.0 ** -149
    if out.dtype == np.float16:
        floor += float(np.finfo(np.float16).smallest_subnormal)
    bound = factor * scale + floor
    diff = np.abs(out64 - ref)
    ratio = float(np.max(diff / bound))
    ref_norm = float(np.linalg.norm(ref))
    ref_max = float(np.max(np.abs(ref)))
    err_norm = float(np.linalg.norm(diff))
    rel = err_norm / ref_norm if ref_norm > 0 else err_norm
    mx = float(np.max(diff)) / ref_max if ref_max > 0 else float(np.max(diff))
    passed = ratio <= 1.0
    reason = "" if passed else (f"error {ratio:.1f}x the bound "
                                f"{factor / UNIT:.1f} u·(|A|·|B|)")
    return CheckResult(kernel, shape, dtype_name, rel, mx, ratio, factor, 0, passed, reason,
                       seed)



def judge(out, ref, bound, *, kernel: str, shape: tuple, dtype_name: str, factor: float,
          seed: int | None = None, what: str = "the bound") -> CheckResult:
    """The verdict on ``out`` against a float64 reference ``ref`` and an elementwise
    ``bound`` (arrays of one shape), for checks whose reference is not a plain ``a @ b`` (the
    FP8 kernels' scaled operands): NaN, infinity or an unwritten element fails; else the
    largest ``|out − ref| / bound`` must be ≤ 1."""
    out64 = np.asarray(out, dtype=np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out64)))
    if nonfinite:
        return CheckResult(kernel, shape, dtype_name, math.inf, math.inf, math.inf, factor,
                           nonfinite, False, f"{nonfinite} element(s) NaN/inf or never written",
                           seed)
    diff = np.abs(out64 - ref)
    ratio = float(np.max(diff / bound))
    ref_norm, ref_max = float(np.linalg.norm(ref)), float(np.max(np.abs(ref)))
    rel = float(np.linalg.norm(diff)) / ref_norm if ref_norm > 0 else float(np.linalg.norm(diff))
    mx = float(np.max(diff)) / ref_max if ref_max > 0 else float(np.max(diff))
    passed = ratio <= 1.0
    return CheckResult(kernel, shape, dtype_name, rel, mx, ratio, factor, 0, passed,
                       "" if passed else f"error {ratio:.1f}x {what}", seed)


def random_inputs(m: int, n: int, k: int, dtype, rng: np.random.Generator | None = None):
    """Fresh uniform(−1, 1) inputs in the kernel's dtype (bfloat16 travels as uint16 bits)."""
    rng = rng or np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    a = rng.uniform(-1.0, 1.0, size=(m, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(k, n)).astype(np.float32)
    return to_format(a, dtype), to_format(b, dtype)


def to_format(x: np.ndarray, dtype) -> np.ndarray:
    """float32 -> the kernel's input format (bfloat16: rounded to nearest even, as uint16 bits)."""
    if np.dtype(dtype) == np.uint16:
        return bf16_bits(np.ascontiguousarray(x, dtype=np.float32))
    return np.ascontiguousarray(x.astype(dtype))


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer of NaN in the kernel's output format (bfloat16: the bits of its quiet
    NaN, 0x7FC0), so that any element a kernel fails to write reads back as NaN."""
    if np.dtype(dtype) == np.uint16:
        return np.full(shape, 0x7FC0, np.uint16)
    return np.full(shape, np.nan, dtype)


def to_float64(x: np.ndarray) -> np.ndarray:
    """The exact values a kernel sees, in float64 (bfloat16 bits expanded)."""
    if x.dtype == np.uint16:
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def new_seed() -> int:
    """A fresh seed for one check (from the OS), small enough to read and retype."""
    return int.from_bytes(os.urandom(4), "little")

