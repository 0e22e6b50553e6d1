"""Checking and timing, the two halves of the method.

*Check* (:func:`check`, :func:`compare`): fresh random inputs (never zeros; the seed is kept so a
failure can be replayed with ``check(name, m, n, k, seed=...)``), the output poisoned with NaN
before the kernel runs, and a float64 reference ``R = A·B`` of the exact values the kernel was
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
(:func:`shapes_for`). The two older measures, the relative Frobenius error ``‖C − R‖ / ‖R‖`` and
``max|C − R| / max|R|``, are reported beside ``err_over_bound`` (the largest ratio of error to
bound; a pass is ≤ 1).

*Time* (:func:`time`, :func:`time_gpu`): CUDA events around each call after warm-up, at least
10 repeats, median with min and max; inputs either cache-hot (one buffer set) or rotated through
enough buffer sets to exceed the L2 cache, so each call starts with cold operands. Calls shorter
than the host's launch path are timed queued behind a busy kernel (:func:`time_queued`).

:func:`check` and :func:`time` take the name of any provider (:mod:`lab.providers`): one of our
kernels, ``cublas_<kind>``, a CUDA C twin or a library peer.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from lab import device

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
    ``bound`` (arrays of one shape): NaN, infinity or an unwritten element fails; else the
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


def compile_ahead(names=(), pairs=()) -> None:
    """Compile now, in one stretch, the kernels an experiment is about to launch: the
    ``(dispatcher, signature)`` pairs of the registered kernels ``names``
    (:attr:`lab.kernels.KernelSpec.compile`) and ``pairs``. In a process of ``measure --jobs
    N`` this stretch is spent off the GPU (:func:`lab.gpulock.off_gpu`), with one wait for the
    GPU after it instead of one after every kernel; elsewhere it only moves the compiles
    earlier. Nothing under the simulator. A pair that does not compile is left to its launch,
    which raises the error where the experiment reports it."""
    if device.SIMULATOR:
        return
    from lab.gpulock import off_gpu
    from lab.kernels import REGISTRY

    todo = [pair for name in names if name in REGISTRY for pair in REGISTRY[name].compile]
    with off_gpu():
        for dispatcher, signature in [*todo, *pairs]:
            try:
                dispatcher.compile(signature)
            except Exception:  # noqa: BLE001, S112 - the launch raises it again, reported there
                continue


def random_inputs(m: int, n: int, k: int, dtype, rng: np.random.Generator | None = None):
    """Fresh uniform(−1, 1) inputs in the kernel's dtype (bfloat16 travels as uint16 bits)."""
    rng = rng or np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    a = rng.uniform(-1.0, 1.0, size=(m, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(k, n)).astype(np.float32)
    return to_format(a, dtype), to_format(b, dtype)


def to_format(x: np.ndarray, dtype) -> np.ndarray:
    """float32 -> the kernel's input format (bfloat16: rounded to nearest even, as uint16 bits)."""
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


def new_seed() -> int:
    """A fresh seed for one check (from the OS), small enough to read and retype."""
    return int.from_bytes(os.urandom(4), "little")


def check(name: str, m: int, n: int, k: int, *, seed: int | None = None) -> CheckResult:
    """Run provider ``name`` (:mod:`lab.providers`: one of our kernels, ``cublas_<kind>``, a
    twin, a library) once on random inputs drawn from ``seed`` (fresh when None), its output
    poisoned with NaN, and compare with float64; the result carries the seed, so
    ``check(name, m, n, k, seed=s)`` replays it.

    An unknown name raises ValueError listing the known ones; a provider that cannot run here
    (or at this shape) raises :class:`lab.providers.ProviderUnavailable` (a
    :class:`lab.kernels.KernelUnavailable`) with its reason, before anything is allocated."""
    from lab import providers

    provider = providers.get(name)
    if provider.family == "numba":
        from lab.api import matmul
        from lab.kernels import KernelUnavailable, get_spec, runnable

        spec = get_spec(name)
        if spec.check is not None:                  # it checks more than A·B (FP8 scales)
            ok, why = runnable(spec)
            if not ok:
                raise KernelUnavailable(why)
            return spec.check(m, n, k, seed=seed)

        seed = new_seed() if seed is None else seed
        a, b = random_inputs(m, n, k, provider.dtype, np.random.default_rng(seed))
        out = matmul(a, b, kernel=name)
        return compare(out, a, b, kernel=name, seed=seed, dtype_name=provider.dtype_name)
    provider.require(m, n, k)
    from numba import cuda

    seed = new_seed() if seed is None else seed
    a, b = random_inputs(m, n, k, provider.dtype, np.random.default_rng(seed))
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=provider.out_dtype))
    provider.prepare(cuda.to_device(a), cuda.to_device(b), d_c)()
    cuda.synchronize()
    return compare(d_c.copy_to_host(), a, b, kernel=name, seed=seed,
                   tensor_cores=provider.tensor_cores, input_unit=provider.input_unit,
                   dtype_name=provider.dtype_name)


def shapes_for(spec, *, gpu: bool) -> list[tuple[int, int, int]]:
    """The (M, N, K) shapes a kernel is checked on, derived from its block tile (BM, BN, BK).

    Always (small enough for the simulator): 1×1×1; ``(BM+1, BN+1, BK+1)`` — a second block row
    and a second block column that hold one row/column each, a tail in every dimension and a
    second, partial k-step; ``(2·BM, BN, 2·BK)`` — round (the unchecked path where a kernel has
    one), two block rows, two full k-steps. With ``gpu=True`` also odd shapes just past two tiles
    (a third block row with three k-steps; a third block column with K inside one step; both at
    once) and two large ones, odd and round.
    """
    from lab.kernels import KernelSpec

    if not isinstance(spec, KernelSpec):
        raise TypeError(f"shapes_for takes a KernelSpec, got {type(spec).__name__}")
    if spec.tile is None:
        raise ValueError(f"kernel {spec.name!r} declares no block tile")
    bm, bn, bk = spec.tile
    shapes = [(1, 1, 1), (bm + 1, bn + 1, bk + 1), (2 * bm, bn, 2 * bk)]
    if gpu:
        shapes += [(2 * bm + 1, 3, 2 * bk + 1), (5, 2 * bn + 1, bk // 2 + 1),
                   (2 * bm + 1, 2 * bn + 1, 2 * bk + 1), (1000, 1030, 999), (1024, 1024, 1024)]
    return list(dict.fromkeys(shapes))


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


class Operands:
    """Device operands shared by every provider at one shape and dtype (one host draw per
    shape and dtype, so all providers at a shape see the same values), and output buffers
    by shape and dtype; :meth:`clear` frees them before the next shape."""

    def __init__(self, seed: int = 6):
        self.rng = np.random.default_rng(seed)
        self.ops: dict = {}
        self.outs: dict = {}

    def operands(self, m: int, n: int, k: int, dtype):
        from numba import cuda

        key = (m, n, k, np.dtype(dtype).str)
        if key not in self.ops:
            a, b = random_inputs(m, n, k, dtype, self.rng)
            self.ops[key] = (cuda.to_device(a), cuda.to_device(b))
        return self.ops[key]

    def output(self, m: int, n: int, dtype):
        from numba import cuda

        key = (m, n, np.dtype(dtype).str)
        if key not in self.outs:
            self.outs[key] = cuda.device_array((m, n), dtype=dtype)
        return self.outs[key]

    def clear(self) -> None:
        self.ops.clear()
        self.outs.clear()


def time(name: str, m: int, n: int, k: int, *, rotate: bool = False, warmup: int = 3,
         repeats: int = 20, check_first: bool = True) -> dict:
    """Check, then time provider ``name`` at one shape with CUDA events; a results row:
    kernel, m, n, k, dtype (out_dtype and twin_of where the provider is not one of our
    kernels), median/min/max ms, repeats, warmup, rotated, tflops and, when checked, the
    check's errors. ``rotate`` cycles through enough buffer sets to exceed the L2 cache.

    An unknown name raises ValueError, a provider that cannot run here
    :class:`lab.providers.ProviderUnavailable`, both before anything is launched; a failed
    check raises AssertionError before anything is timed."""
    from numba import cuda

    from lab import providers

    provider = providers.get(name)
    provider.require(m, n, k)
    require_gpu()
    verdict = check(name, m, n, k) if check_first else None
    if verdict is not None and not verdict.passed:
        raise AssertionError(f"{name} failed its check before timing: {verdict.line()}")
    per_set = (np.dtype(provider.dtype).itemsize * (m * k + k * n)
               + np.dtype(provider.out_dtype).itemsize * m * n)
    calls = []
    for _ in range(buffer_sets(per_set, rotate)):
        a, b = random_inputs(m, n, k, provider.dtype)
        calls.append(provider.prepare(cuda.to_device(a), cuda.to_device(b),
                                      cuda.device_array((m, n), dtype=provider.out_dtype)))
    timing = time_gpu(lambda i: calls[i % len(calls)](), warmup=warmup, repeats=repeats,
                      rotated=rotate)
    row = {"kernel": name}
    if provider.family == "twin":
        from lab import twins

        row["twin_of"] = twins.get_twin(name).twin_of
    row.update(m=m, n=n, k=k, dtype=provider.dtype_name)
    if provider.family != "numba":
        row["out_dtype"] = np.dtype(provider.out_dtype).name
    row.update(**timing.row(), tflops=timing.tflops(2.0 * m * n * k))
    if verdict is not None:
        row.update(rel_frobenius=verdict.rel_frobenius,
                   max_err_over_max_entry=verdict.max_err_over_max_entry,
                   err_over_bound=verdict.err_over_bound)
    return row


def time_kernel(kernel: str, m: int, n: int, k: int, *, rotate: bool = False,
                warmup: int = 3, repeats: int = 20, check_first: bool = True) -> dict:
    """:func:`time` under its older name (every provider is accepted)."""
    return time(kernel, m, n, k, rotate=rotate, warmup=warmup, repeats=repeats,
                check_first=check_first)


# ----------------------------------------------------------------------------- queued timing
# A call shorter than the host's launch path (tens of µs through CuPy or Numba) cannot be
# timed call by call: the GPU idles between the start event and the kernel while the host is
# still launching it, so the event pair measures the host. Queued timing first gives the GPU a
# busy kernel to chew on (a single thread running a dependent FMA chain for >= 1 ms), and
# records the start event, the batch of calls and the stop event while it runs: the calls then
# sit in the queue and execute back to back, and (stop - start) / batch is the GPU's own time
# per call, the small gaps between kernels included.

#: Defaults of :func:`time_queued`: calls per batch, batches, untimed calls, shortest spin.
QUEUE_BATCH = 20
QUEUE_BATCHES = 10
QUEUE_WARMUP = 3
SPIN_MIN_MS = 1.0


@functools.lru_cache(maxsize=1)
def _busy_kernel():
    from numba import cuda, float32, int32

    @cuda.jit
    def busy_kernel(iterations, out):
        """One thread, one dependent FMA chain: keeps the GPU occupied for a known time."""
        x = out[0]
        i = int32(0)
        while i < iterations:
            x = x * float32(0.9999999) + float32(1e-7)
            i += int32(1)
        out[0] = x
    return busy_kernel


class Spinner:
    """Launches a busy kernel for a requested number of milliseconds (calibrated once)."""

    CALIBRATION_ITERATIONS = 1 << 18

    def __init__(self):
        from numba import cuda

        self.out = cuda.to_device(np.ones(1, dtype=np.float32))
        t = time_gpu(lambda i: self.launch_iterations(self.CALIBRATION_ITERATIONS),
                     warmup=1, repeats=10)
        self.ms_per_iteration = t.median_ms / self.CALIBRATION_ITERATIONS

    def launch_iterations(self, iterations: int) -> None:
        _busy_kernel()[1, 1](np.int32(min(iterations, 2**31 - 1)), self.out)

    def launch(self, ms: float) -> None:
        self.launch_iterations(int(ms / self.ms_per_iteration) + 1)


def time_queued(call, *, spinner: Spinner, batch: int | None = None,
                batches: int | None = None, warmup: int | None = None,
                rotated: bool = False, spin_min_ms: float | None = None
                ) -> tuple[Timing, float]:
    """GPU time per call of ``call(i)`` with the launch path hidden: a :class:`Spinner` kernel
    runs while ``batch`` calls are queued between two events; ``batches`` such measurements,
    each divided by ``batch``, give median/min/max. Also returns the share of batches whose
    spin outlasted the host's enqueueing (1.0 = every batch ran back to back on the GPU)."""
    import time as clock

    from numba import cuda

    batch = batch or QUEUE_BATCH
    batches = batches or QUEUE_BATCHES
    warmup = QUEUE_WARMUP if warmup is None else warmup
    spin_min_ms = SPIN_MIN_MS if spin_min_ms is None else spin_min_ms
    for i in range(warmup):
        call(i)
    cuda.synchronize()
    t0 = clock.perf_counter()
    for i in range(batch):
        call(i)
    cuda.synchronize()
    spin_ms = max(spin_min_ms, 3e3 * (clock.perf_counter() - t0))
    per_call, covered = [], 0
    for b in range(batches):
        e_spin, e_start, e_stop = (cuda.event(timing=True) for _ in range(3))
        h0 = clock.perf_counter()
        e_spin.record()
        spinner.launch(spin_ms)
        e_start.record()
        for i in range(batch):
            call(b * batch + i)
        e_stop.record()
        host_ms = 1e3 * (clock.perf_counter() - h0)
        e_stop.synchronize()
        covered += cuda.event_elapsed_time(e_spin, e_start) > host_ms
        per_call.append(cuda.event_elapsed_time(e_start, e_stop) / batch)
    t = Timing(float(np.median(per_call)), float(min(per_call)), float(max(per_call)),
               batches, warmup, rotated, per_call)
    return t, covered / batches


def summarize(rows: Sequence[dict], keys: Sequence[str]) -> list[dict]:
    """Keep only ``keys`` of each row (for compact printed tables)."""
    return [{k: r.get(k) for k in keys} for r in rows]
