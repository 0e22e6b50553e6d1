"""Checking and timing, the two halves of the method.

*Check* (:func:`check`, :func:`compare`): fresh random inputs (never zeros), a float64 reference,
the output poisoned with NaN before the kernel runs, and two error measures: the relative
Frobenius error ``‖C − R‖ / ‖R‖`` and ``max|C − R| / max|R|``. A NaN, an infinity or an element
the kernel never wrote (still NaN) always fails, whatever the tolerances.

*Time* (:func:`time_gpu`, :func:`time_kernel`): CUDA events around each call after warm-up,
at least 10 repeats, median with min and max; inputs either cache-hot (one buffer set) or rotated
through enough buffer sets to exceed the L2 cache, so each call starts with cold operands.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from lab import device

#: Tolerance on both error measures, by input dtype name.
TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}


@dataclass
class CheckResult:
    """Outcome of comparing one output with its float64 reference."""
    kernel: str
    shape: tuple[int, int, int]
    dtype: str
    rel_frobenius: float
    max_err_over_max_entry: float
    nonfinite: int
    tolerance: float
    passed: bool
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        m, n, k = self.shape
        verdict = "PASS" if self.passed else f"FAIL ({self.reason})"
        return (f"{self.kernel:<22} {m}x{n}x{k:<8} rel.Frobenius {self.rel_frobenius:.1e}  "
                f"max-err/max-entry {self.max_err_over_max_entry:.1e}  {verdict}")


def tolerance_for(dtype_name: str) -> float:
    try:
        return TOLERANCE[dtype_name]
    except KeyError:
        raise ValueError(f"no tolerance defined for input dtype {dtype_name!r}") from None


def compare(out: np.ndarray, ref: np.ndarray, *, dtype_name: str = "float32",
            kernel: str = "?", shape: tuple[int, int, int] | None = None) -> CheckResult:
    """Compare ``out`` with the float64 reference ``ref``; NaN/inf/unwritten always fail."""
    tol = tolerance_for(dtype_name)
    shape = shape or (ref.shape[0], ref.shape[1], -1)
    if out.shape != ref.shape:
        return CheckResult(kernel, shape, dtype_name, math.inf, math.inf, -1, tol, False,
                           f"output shape {out.shape} != expected {ref.shape}")
    out64 = np.asarray(out, dtype=np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out64)))
    if nonfinite:
        return CheckResult(kernel, shape, dtype_name, math.inf, math.inf, nonfinite, tol, False,
                           f"{nonfinite} element(s) NaN/inf or never written")
    diff = out64 - ref
    ref_norm = float(np.linalg.norm(ref))
    ref_max = float(np.max(np.abs(ref)))
    rel = float(np.linalg.norm(diff)) / ref_norm if ref_norm > 0 else float(np.linalg.norm(diff))
    mx = float(np.max(np.abs(diff))) / ref_max if ref_max > 0 else float(np.max(np.abs(diff)))
    passed = rel <= tol and mx <= tol
    reason = "" if passed else f"error above tolerance {tol:.0e}"
    return CheckResult(kernel, shape, dtype_name, rel, mx, 0, tol, passed, reason)


def random_inputs(m: int, n: int, k: int, dtype, rng: np.random.Generator | None = None):
    """Fresh uniform(−1, 1) inputs in the kernel's dtype (bfloat16 travels as uint16 bits)."""
    rng = rng or np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    a = rng.uniform(-1.0, 1.0, size=(m, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(k, n)).astype(np.float32)
    return to_format(a, dtype), to_format(b, dtype)


def to_format(x: np.ndarray, dtype) -> np.ndarray:
    """float32 -> the kernel's input format; bfloat16 is rounded to nearest even, stored as uint16."""
    if np.dtype(dtype) == np.uint16:
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
        return (rounded >> np.uint32(16)).astype(np.uint16)
    return np.ascontiguousarray(x.astype(dtype))


def to_float64(x: np.ndarray) -> np.ndarray:
    """The exact values a kernel sees, in float64 (bfloat16 bits expanded)."""
    if x.dtype == np.uint16:
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def check(kernel: str, m: int, n: int, k: int, *, seed: int | None = None) -> CheckResult:
    """Run ``kernel`` once on fresh random inputs and compare with float64."""
    from lab.api import matmul
    from lab.kernels import get_spec

    spec = get_spec(kernel)
    rng = np.random.default_rng(seed if seed is not None
                                else int.from_bytes(os.urandom(8), "little"))
    a, b = random_inputs(m, n, k, spec.dtype, rng)
    ref = to_float64(a) @ to_float64(b)
    out = matmul(a, b, kernel=kernel)
    return compare(out, ref, dtype_name=spec.dtype_name, kernel=kernel, shape=(m, n, k))


# ----------------------------------------------------------------------------- timing

@dataclass
class Timing:
    """Milliseconds per call over ``repeats`` timed calls (after ``warmup`` untimed ones)."""
    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int
    warmup: int
    rotated: bool
    samples_ms: list[float] = field(default_factory=list, repr=False)

    def tflops(self, flops: float) -> float:
        return flops / (self.median_ms * 1e-3) / 1e12

    def row(self) -> dict:
        return {"median_ms": self.median_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
                "repeats": self.repeats, "warmup": self.warmup, "rotated": self.rotated}


def require_gpu(what: str = "timing") -> None:
    if not device.GPU:
        raise RuntimeError(f"{what} needs a GPU; this session runs in mode {device.MODE!r}")


def time_gpu(call: Callable[[int], None], *, warmup: int = 3, repeats: int = 20,
             rotated: bool = False) -> Timing:
    """Time ``call(i)`` (i = 0, 1, 2, …) with CUDA events; median/min/max in ms."""
    require_gpu()
    if repeats < 10:
        raise ValueError(f"repeats must be >= 10 (got {repeats})")
    from numba import cuda

    for i in range(warmup):
        call(i)
    cuda.synchronize()
    starts = [cuda.event(timing=True) for _ in range(repeats)]
    stops = [cuda.event(timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        call(warmup + i)
        stops[i].record()
    stops[-1].synchronize()
    samples = [cuda.event_elapsed_time(s, e) for s, e in zip(starts, stops)]
    return Timing(float(np.median(samples)), float(min(samples)), float(max(samples)),
                  repeats, warmup, rotated, samples)


def buffer_sets(nbytes_per_set: int, rotate: bool, l2_bytes: int | None = None) -> int:
    """How many input sets to cycle through: 1 (cache-hot) or enough to exceed 2 × L2."""
    if not rotate:
        return 1
    l2 = l2_bytes or device.provenance()["l2_bytes"] or 60 * 2**20
    return max(2, math.ceil(2 * l2 / max(nbytes_per_set, 1)) + 1)


def time_kernel(kernel: str, m: int, n: int, k: int, *, rotate: bool = False,
                warmup: int = 3, repeats: int = 20, check_first: bool = True) -> dict:
    """Check then time a registered kernel at one shape; returns a results row."""
    from numba import cuda

    from lab.kernels import get_spec

    require_gpu()
    spec = get_spec(kernel)
    verdict = check(kernel, m, n, k) if check_first else None
    if verdict is not None and not verdict.passed:
        raise AssertionError(f"{kernel} failed its check before timing: {verdict.line()}")
    itemsize = np.dtype(spec.dtype).itemsize
    per_set = itemsize * (m * k + k * n) + 4 * m * n
    sets = []
    for _ in range(buffer_sets(per_set, rotate)):
        a, b = random_inputs(m, n, k, spec.dtype)
        sets.append((cuda.to_device(a), cuda.to_device(b),
                     cuda.device_array((m, n), dtype=np.float32)))
    timing = time_gpu(lambda i: spec.launch(*sets[i % len(sets)]),
                      warmup=warmup, repeats=repeats, rotated=rotate)
    flops = 2.0 * m * n * k
    row = {"kernel": kernel, "m": m, "n": n, "k": k, "dtype": spec.dtype_name,
           **timing.row(), "tflops": timing.tflops(flops)}
    if verdict is not None:
        row.update(rel_frobenius=verdict.rel_frobenius,
                   max_err_over_max_entry=verdict.max_err_over_max_entry)
    return row


def summarize(rows: Sequence[dict], keys: Sequence[str]) -> list[dict]:
    """Keep only ``keys`` of each row (for compact printed tables)."""
    return [{k: r.get(k) for k in keys} for r in rows]
