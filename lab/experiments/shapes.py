"""Experiment ``shapes`` (chapter 6): the library across shapes, and the shapes that run slowly.

cuBLAS (through :mod:`lab.baselines`) and our best kernels, one process run, rows told apart by
``part``:

* ``check`` — every implementation once against float64 before anything is timed: the Numba
  kernels at 1024³ and 1000×1030×999, cuBLAS at 1024³, 1025³ and 1028³ (three alignment
  classes), the skinny shape (1 and 64 × 4096 × 4096), and the four cuBLAS layouts at
  1000×1030×999 (a non-square shape catches a wrong leading dimension).
* ``size`` — square n³ from 128 to 8192 for cuBLAS FP32 (TF32 off), cuBLAS FP16 (FP32 out),
  ``warptile_tuned`` (FP32) and ``tc_fp16`` (FP16); cache-hot.
* ``alignment`` — n ∈ :data:`ALIGN_SIZES` (2048/2049 and 4088 … 4104) for the same four plus
  ``tiled32``, the control whose tiling cannot change with the shape; ``path`` says which code
  path of our kernels ran (:func:`path_of`). Cache-hot.
* ``shuffled`` — cuBLAS FP16 and FP32 at the alignment sizes again, :data:`ROUNDS` rounds, each
  in a fresh random order (``round``, ``position``), so an alignment effect cannot be drift.
* ``skinny`` — (M × 4096)·(4096 × 4096) FP16 for M in :data:`SKINNY_M` through cuBLAS and
  ``tc_fp16``, both cache-hot and rotated through enough buffer sets to exceed the L2 (the
  weight read then comes from HBM); ``weight_gbps`` = weight bytes / median time.
* ``size_queued``, ``skinny_queued`` — the short calls again (squares up to
  :data:`QUEUED_SIZES`, every skinny shape) timed by :func:`time_queued`: a batch of calls
  queued behind a busy kernel, so the host's launch path (tens of µs through CuPy or Numba,
  which per-call events would include whenever the kernel is shorter) is hidden and the row
  is the GPU's own time per call. Extra fields: timing="queued", batch, spin_covered (share
  of batches whose busy kernel outlasted the host's enqueueing; 1.0 expected).
* ``layout`` — cuBLAS FP16 4096³ with A and/or B stored transposed (``NN``, ``TN``, ``NT``,
  ``TT``: first letter A, second B, ``T`` = stored transposed), called through ``gemmEx``'s op
  flags (:func:`launch_layout`); steady state (3 warm-up calls, 20 timed).
* ``burst`` — the same four layouts in a short burst after the GPU idled ``BURST_IDLE_S``: no
  warm-up, 10 calls, ``first_ms`` the very first, ``burst_samples`` all ten; against
  ``layout`` it shows whether the clock moves between bursts (seed 004's T4 saw 2–3×).

Every timed row: part, kernel, impl ("cublas" | "numba"), m, n, k, dtype, out_dtype,
median_ms, min_ms, max_ms, repeats, rotated, tflops, gbps (ideal bytes / median time), path.
Check rows: part="check", kernel, m, n, k, dtype, rel_frobenius, max_err_over_max_entry,
tolerance, passed. The layout helpers are also usable on their own (:func:`launch_layout`,
:func:`check_layout`); they reuse :mod:`lab.baselines`' constants and CuPy handle.

Budget: ≈ 60–80 s of GPU time, most of it compiling the Numba kernels, cuBLAS FP32 and
``warptile_tuned`` at 8192³ (≈ 25 ms a call) and ``tiled32`` at the alignment sizes (≈ 17 ms a
call). Big sizes use 10 repeats, the rest 20.
"""
from __future__ import annotations

import functools
import time as _time

import numpy as np

from lab import baselines, bench, model
from numba import cuda, float32, int32  # noqa: E402  (after lab: simulator decided first)

CHAPTER = 6
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16",)
H200_SECONDS = 90  # estimate: the docstring's 60–80 s plus the queued parts

SIZES = (128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
ALIGN_SIZES = (2048, 2049, 4088, 4092, 4096, 4097, 4100, 4104)
SKINNY_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)
SKINNY_KN = 4096
LAYOUTS = ("NN", "TN", "NT", "TT")
LAYOUT_SIZE = 4096
ROUNDS = 3
SHUFFLE_SEED = 2026
BURST_IDLE_S = 0.5

#: Queued timing (:func:`time_queued`): square sizes and batch shape.
QUEUED_SIZES = (128, 256, 512, 768, 1024, 1536, 2048)
QUEUE_BATCH = 20
QUEUE_BATCHES = 10
QUEUE_WARMUP = 3
SPIN_MIN_MS = 1.0

#: What each part times: ("cublas", kind) or ("numba", registered kernel name).
SIZE_IMPLS = (("cublas", "fp32"), ("cublas", "fp16"), ("numba", "warptile_tuned"),
              ("numba", "tc_fp16"))
ALIGN_IMPLS = SIZE_IMPLS + (("numba", "tiled32"),)
SKINNY_IMPLS = (("cublas", "fp16"), ("numba", "tc_fp16"))
SHUFFLED_IMPLS = (("cublas", "fp16"), ("cublas", "fp32"))

#: Shapes every implementation is checked on before timing (M, N, K).
CHECK_SHAPES = ((1024, 1024, 1024), (1000, 1030, 999))
CUBLAS_CHECK_SHAPES = ((1024, 1024, 1024), (1025, 1025, 1025), (1028, 1028, 1028))
SKINNY_CHECK_M = (1, 64)
LAYOUT_CHECK_SHAPE = (1000, 1030, 999)

CUBLAS_OP_T = 1          # cublasOperation_t (cublas_api.h); CUBLAS_OP_N = 0 is in baselines
ROW_FIELDS = ("part", "kernel", "m", "n", "k", "dtype")


# ----------------------------------------------------------------------------- helpers

def label(impl) -> str:
    """The ``kernel`` field of a row: ``cublas_<kind>`` or the registered kernel's name."""
    return f"cublas_{impl[1]}" if impl[0] == "cublas" else impl[1]


def _dtypes(impl) -> tuple:
    if impl[0] == "cublas":
        kind = baselines.get_kind(impl[1])
        return np.dtype(kind.in_dtype), np.dtype(kind.out_dtype), kind.in_name
    from lab.kernels import get_spec

    spec = get_spec(impl[1])
    return np.dtype(spec.dtype), np.dtype(np.float32), spec.dtype_name


def _launcher(impl):
    if impl[0] == "cublas":
        kind = impl[1]
        return lambda A, B, C: baselines.launch(kind, A, B, C)
    from lab.kernels import get_spec

    return get_spec(impl[1]).launch


def path_of(kernel: str, m: int, n: int, k: int) -> str:
    """Which code path one of our kernels takes at M×N×K (no GPU needed).

    ``tiled32`` is one kernel for every shape (zero-padded shared tiles); ``warptile_tuned``
    switches to its bounds-checked twin unless M, N, K are tile multiples; ``tc_fp16`` pads A
    and B to its block tile in the launch.
    """
    from lab.kernels import get_spec

    if kernel.startswith("cublas"):
        return "library's choice"
    if kernel.startswith("tiled"):
        return "one kernel, zero-padded tiles"
    if kernel.startswith("warptile"):
        from lab.kernels.k04_vectorized import tiles_fit

        cfg = get_spec(kernel).launch.config
        return ("16-byte kernel" if tiles_fit(cfg, m, n, k)
                else f"bounds-checked twin ({cfg.BM}x{cfg.BN}x{cfg.BK} tile)")
    if kernel.startswith("tc_"):
        from lab.kernels.k07_tensor_core import round_up
        from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS

        cfg = RUNG_CONFIGS[kernel]
        mp, np_, kp = round_up(m, cfg.bm), round_up(n, cfg.bn), round_up(k, cfg.bk)
        return "no padding" if (mp, np_, kp) == (m, n, k) else f"pads to {mp}x{np_}x{kp}"
    return "?"


class _Inputs:
    """Device operands shared by every implementation at one shape and dtype (one host draw
    per shape, so all kernels at a shape see the same values), and output buffers."""

    def __init__(self, seed: int = 6):
        self.rng = np.random.default_rng(seed)
        self.ops: dict = {}
        self.outs: dict = {}

    def operands(self, m: int, n: int, k: int, dtype):
        key = (m, n, k, np.dtype(dtype).str)
        if key not in self.ops:
            a, b = bench.random_inputs(m, n, k, dtype, self.rng)
            self.ops[key] = (cuda.to_device(a), cuda.to_device(b))
        return self.ops[key]

    def output(self, m: int, n: int, dtype):
        key = (m, n, np.dtype(dtype).str)
        if key not in self.outs:
            self.outs[key] = cuda.device_array((m, n), dtype=dtype)
        return self.outs[key]

    def clear(self) -> None:
        self.ops.clear()
        self.outs.clear()


def _repeats(m: int, n: int, k: int) -> int:
    return 10 if 2.0 * m * n * k >= 2.0 * 6144 ** 3 else 20


def _row(part: str, impl, m: int, n: int, k: int, timing) -> dict:
    in_dt, out_dt, in_name = _dtypes(impl)
    ideal = model.ideal_bytes(m, n, k, in_dt.itemsize, out_dt.itemsize)
    return {"part": part, "kernel": label(impl), "impl": impl[0], "m": m, "n": n, "k": k,
            "dtype": in_name, "out_dtype": out_dt.name, **timing.row(),
            "tflops": timing.tflops(model.flops(m, n, k)),
            "gbps": ideal / (timing.median_ms * 1e-3) / 1e9,
            "path": path_of(label(impl), m, n, k)}


def _timer(queued):
    """Per-call event timing (``queued=None``) or :func:`time_queued` with this spinner."""
    if queued is None:
        return lambda call, repeats, rotated: (bench.time_gpu(call, repeats=repeats,
                                                              rotated=rotated), {})

    def timer(call, repeats, rotated):
        t, covered = time_queued(call, spinner=queued, rotated=rotated)
        return t, {"timing": "queued", "batch": QUEUE_BATCH, "spin_covered": covered}
    return timer


def _time_hot(part: str, impl, m: int, n: int, k: int, inputs: _Inputs,
              repeats: int | None = None, queued=None) -> dict:
    in_dt, out_dt, _ = _dtypes(impl)
    d_a, d_b = inputs.operands(m, n, k, in_dt)
    d_c = inputs.output(m, n, out_dt)
    launch = _launcher(impl)
    t, extra = _timer(queued)(lambda i: launch(d_a, d_b, d_c), repeats or _repeats(m, n, k),
                              False)
    return {**_row(part, impl, m, n, k, t), **extra}


@functools.lru_cache(maxsize=1)
def _l2_bytes() -> int:
    """The L2 size, read once (``device.provenance`` asks nvidia-smi on every call)."""
    return int(cuda.get_current_device().L2_CACHE_SIZE) or 60 * 2**20


def _time_rotated(part: str, impl, m: int, n: int, k: int, repeats: int = 20,
                  queued=None) -> dict:
    """Cycle through enough buffer sets (same values, distinct buffers) to exceed 2 × L2."""
    in_dt, out_dt, _ = _dtypes(impl)
    a, b = bench.random_inputs(m, n, k, in_dt)
    per_set = in_dt.itemsize * (m * k + k * n) + out_dt.itemsize * m * n
    sets = [(cuda.to_device(a), cuda.to_device(b), cuda.device_array((m, n), dtype=out_dt))
            for _ in range(bench.buffer_sets(per_set, True, _l2_bytes()))]
    launch = _launcher(impl)
    t, extra = _timer(queued)(lambda i: launch(*sets[i % len(sets)]), repeats, True)
    return {**_row(part, impl, m, n, k, t), **extra, "buffer_sets": len(sets)}


# ----------------------------------------------------------------------------- queued timing
# A call shorter than the host's launch path (tens of µs through CuPy or Numba) cannot be
# timed call by call: the GPU idles between the start event and the kernel while the host is
# still launching it, so the event pair measures the host. Queued timing first gives the GPU a
# busy kernel to chew on (a single thread running a dependent FMA chain for ≥ 1 ms), and
# records the start event, the batch of calls and the stop event while it runs: the calls then
# sit in the queue and execute back to back, and (stop − start) / batch is the GPU's own time
# per call, the small gaps between kernels included.

@cuda.jit
def busy_kernel(iterations, out):
    """One thread, one dependent FMA chain: keeps the GPU occupied for a known time."""
    x = out[0]
    i = int32(0)
    while i < iterations:
        x = x * float32(0.9999999) + float32(1e-7)
        i += int32(1)
    out[0] = x


class Spinner:
    """Launches :func:`busy_kernel` for a requested number of milliseconds (calibrated once)."""

    CALIBRATION_ITERATIONS = 1 << 18

    def __init__(self):
        self.out = cuda.to_device(np.ones(1, dtype=np.float32))
        t = bench.time_gpu(lambda i: self.launch_iterations(self.CALIBRATION_ITERATIONS),
                           warmup=1, repeats=10)
        self.ms_per_iteration = t.median_ms / self.CALIBRATION_ITERATIONS

    def launch_iterations(self, iterations: int) -> None:
        busy_kernel[1, 1](np.int32(min(iterations, 2**31 - 1)), self.out)

    def launch(self, ms: float) -> None:
        self.launch_iterations(int(ms / self.ms_per_iteration) + 1)


def time_queued(call, *, spinner: Spinner, batch: int | None = None,
                batches: int | None = None, warmup: int | None = None,
                rotated: bool = False) -> tuple[bench.Timing, float]:
    """GPU time per call of ``call(i)`` with the launch path hidden: a :class:`Spinner` kernel
    runs while ``batch`` calls are queued between two events; ``batches`` such measurements,
    each divided by ``batch``, give median/min/max. Also returns the share of batches whose
    spin outlasted the host's enqueueing (1.0 = every batch ran back to back on the GPU)."""
    import time as clock

    batch = batch or QUEUE_BATCH
    batches = batches or QUEUE_BATCHES
    warmup = QUEUE_WARMUP if warmup is None else warmup
    for i in range(warmup):
        call(i)
    cuda.synchronize()
    t0 = clock.perf_counter()
    for i in range(batch):
        call(i)
    cuda.synchronize()
    spin_ms = max(SPIN_MIN_MS, 3e3 * (clock.perf_counter() - t0))
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
    t = bench.Timing(float(np.median(per_call)), float(min(per_call)), float(max(per_call)),
                     batches, warmup, rotated, per_call)
    return t, covered / batches


# ----------------------------------------------------------------------------- layouts

def launch_layout(layout: str, A, B, C, kind: str = "fp16") -> None:
    """Row-major ``C = op(A) · op(B)`` through ``cublasGemmEx`` with its op flags.

    ``layout`` is two letters, A's then B's: ``N`` = stored as used (A is M×K, B is K×N),
    ``T`` = stored transposed (A as K×M, B as N×K), all C-contiguous. cuBLAS is column-major,
    so the call computes Cᵀ (N×M) = op(B-storage) · op(A-storage): a row-major K×N B is the
    column-major N×K matrix Bᵀ (no op, ld = N); a row-major N×K B is column-major K×N, which
    needs op T (ld = K). Likewise for A with ld K (as used) or M (transposed).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    spec = baselines.get_kind(kind)
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    m, n = C.shape
    k = A.shape[0] if a_t else A.shape[1]
    if (B.shape[1] if b_t else B.shape[0]) != k:
        raise ValueError(f"layout {layout}: shapes do not chain: A {A.shape}, B {B.shape}")
    if (A.shape[1] if a_t else A.shape[0]) != m or (B.shape[0] if b_t else B.shape[1]) != n:
        raise ValueError(f"layout {layout}: C {C.shape} does not match A {A.shape}, "
                         f"B {B.shape}")
    for name, x, want in (("A", A, spec.in_dtype), ("B", B, spec.in_dtype),
                          ("C", C, spec.out_dtype)):
        if np.dtype(x.dtype) != np.dtype(want) or not x.is_c_contiguous():
            raise ValueError(f"layout {layout}: {name} must be C-contiguous "
                             f"{np.dtype(want).name}")
    call = gemm_arguments(layout, m, n, k)
    cupy, cublas = baselines._cupy()
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, baselines.CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, baselines.CUBLAS_DEFAULT_MATH)
    cublas.gemmEx(handle, call["op_first"], call["op_second"], call["m"], call["n"], call["k"],
                  baselines._ONE.ctypes.data, baselines._ptr(B), spec.in_cuda, call["ld_first"],
                  baselines._ptr(A), spec.in_cuda, call["ld_second"],
                  baselines._ZERO.ctypes.data, baselines._ptr(C), spec.out_cuda, call["ld_out"],
                  spec.compute, baselines.CUBLAS_GEMM_DEFAULT)


def gemm_arguments(layout: str, m: int, n: int, k: int) -> dict:
    """The column-major ``gemm`` arguments for row-major ``C = op(A)·op(B)`` stored as
    ``layout``: the first cuBLAS operand is B's storage, the second A's (pure arithmetic,
    tested against a NumPy model of column-major ``gemm`` in ``tests/test_shapes.py``)."""
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    return {"op_first": CUBLAS_OP_T if b_t else baselines.CUBLAS_OP_N,
            "op_second": CUBLAS_OP_T if a_t else baselines.CUBLAS_OP_N,
            "m": n, "n": m, "k": k, "ld_first": k if b_t else n,
            "ld_second": m if a_t else k, "ld_out": n}


def _layout_operands(layout: str, a: np.ndarray, b: np.ndarray):
    """Host A (M×K) and B (K×N) stored as ``layout`` asks (transposed copies for ``T``)."""
    a_store = np.ascontiguousarray(a.T) if layout[0] == "T" else a
    b_store = np.ascontiguousarray(b.T) if layout[1] == "T" else b
    return a_store, b_store


def check_layout(layout: str, m: int, n: int, k: int, kind: str = "fp16"):
    """One call of :func:`launch_layout` on fresh inputs against float64 (CheckResult)."""
    spec = baselines.get_kind(kind)
    a, b = bench.random_inputs(m, n, k, spec.in_dtype)
    a_s, b_s = _layout_operands(layout, a, b)
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=spec.out_dtype))
    launch_layout(layout, cuda.to_device(a_s), cuda.to_device(b_s), d_c, kind)
    cuda.synchronize()
    result = bench.compare(d_c.copy_to_host(), a, b, dtype_name=spec.in_name,
                           kernel=f"cublas_{kind}_{layout}")
    return result


# ----------------------------------------------------------------------------- run

def _check_row(verdict, part: str = "check") -> dict:
    m, n, k = verdict.shape
    if not verdict.passed:
        raise AssertionError(f"check failed before timing: {verdict.line()}")
    return {"part": part, "kernel": verdict.kernel, "m": m, "n": n, "k": k,
            "dtype": verdict.dtype, "rel_frobenius": verdict.rel_frobenius,
            "max_err_over_max_entry": verdict.max_err_over_max_entry,
            "tolerance": verdict.tolerance, "passed": verdict.passed}


def _checks(progress) -> list[dict]:
    rows = []
    numba_kernels = sorted({i[1] for i in ALIGN_IMPLS + SKINNY_IMPLS if i[0] == "numba"})
    kinds = sorted({i[1] for i in ALIGN_IMPLS + SKINNY_IMPLS + SHUFFLED_IMPLS
                    if i[0] == "cublas"})
    jobs = [("numba", name, s) for name in numba_kernels for s in CHECK_SHAPES]
    jobs += [("cublas", kind, s) for kind in kinds for s in CUBLAS_CHECK_SHAPES]
    jobs += [(what, name, (m, SKINNY_KN, SKINNY_KN)) for what, name in SKINNY_IMPLS
             for m in SKINNY_CHECK_M]
    jobs += [("layout", layout, LAYOUT_CHECK_SHAPE) for layout in LAYOUTS]
    for what, name, shape in progress(jobs, desc="checks"):
        if what == "numba":
            verdict = bench.check(name, *shape)
        elif what == "cublas":
            verdict = baselines.check(name, *shape)
            verdict.dtype = baselines.get_kind(name).in_name
        else:
            verdict = check_layout(name, *shape)
        rows.append(_check_row(verdict))
    return rows


def run(progress) -> dict:
    bench.require_gpu("the shapes experiment")
    have = set(baselines.available())
    for kind in ("fp32", "fp16"):
        if kind not in have:
            raise RuntimeError(f"cuBLAS {kind} is not available (CuPy missing?)")
    rows = _checks(progress)
    inputs = _Inputs()

    # ---- (a) size curve
    for n in progress(SIZES, desc="size"):
        for impl in SIZE_IMPLS:
            rows.append(_time_hot("size", impl, n, n, n, inputs))
        inputs.clear()

    # ---- (b) alignment, then (e) the same sizes in shuffled rounds (inputs kept)
    for n in progress(ALIGN_SIZES, desc="alignment"):
        for impl in ALIGN_IMPLS:
            rows.append(_time_hot("alignment", impl, n, n, n, inputs, repeats=10
                                  if impl == ("numba", "tiled32") else 20))
    order_rng = np.random.default_rng(SHUFFLE_SEED)
    for rnd in progress(range(ROUNDS), desc="shuffled rounds"):
        order = [ALIGN_SIZES[i] for i in order_rng.permutation(len(ALIGN_SIZES))]
        for pos, n in enumerate(order):
            for impl in SHUFFLED_IMPLS:
                row = _time_hot("shuffled", impl, n, n, n, inputs, repeats=10)
                row.update(round=rnd, position=pos)
                rows.append(row)
    inputs.clear()

    # ---- (c) skinny: (M × 4096)·(4096 × 4096) FP16, cache-hot and rotated
    kn = SKINNY_KN
    for m in progress(SKINNY_M, desc="skinny"):
        for impl in SKINNY_IMPLS:
            for rotated in (False, True):
                row = (_time_rotated("skinny", impl, m, kn, kn) if rotated
                       else _time_hot("skinny", impl, m, kn, kn, inputs))
                row["weight_gbps"] = 2.0 * kn * kn / (row["median_ms"] * 1e-3) / 1e9
                rows.append(row)
        inputs.clear()

    # ---- (a', c') the short calls again, queued behind a busy kernel: the GPU's own time
    spinner = Spinner()
    for n in progress(QUEUED_SIZES, desc="size, queued"):
        for impl in SIZE_IMPLS:
            rows.append(_time_hot("size_queued", impl, n, n, n, inputs, queued=spinner))
        inputs.clear()
    for m in progress(SKINNY_M, desc="skinny, queued"):
        for impl in SKINNY_IMPLS:
            for rotated in (False, True):
                row = (_time_rotated("skinny_queued", impl, m, kn, kn, queued=spinner)
                       if rotated else
                       _time_hot("skinny_queued", impl, m, kn, kn, inputs, queued=spinner))
                row["weight_gbps"] = 2.0 * kn * kn / (row["median_ms"] * 1e-3) / 1e9
                rows.append(row)
        inputs.clear()

    # ---- (d) layouts, steady state; then short bursts after idling
    n = LAYOUT_SIZE
    spec = baselines.get_kind("fp16")
    a, b = bench.random_inputs(n, n, n, spec.in_dtype)
    d_c = cuda.device_array((n, n), dtype=spec.out_dtype)
    stored = {}
    for layout in LAYOUTS:
        a_s, b_s = _layout_operands(layout, a, b)
        stored[layout] = (cuda.to_device(a_s), cuda.to_device(b_s))
    flops = model.flops(n, n, n)
    for layout in progress(LAYOUTS, desc="layouts"):
        d_a, d_b = stored[layout]
        t = bench.time_gpu(lambda i: launch_layout(layout, d_a, d_b, d_c), repeats=20)
        rows.append({"part": "layout", "kernel": "cublas_fp16", "impl": "cublas",
                     "layout": layout, "m": n, "n": n, "k": n, "dtype": "float16",
                     "out_dtype": "float32", **t.row(), "tflops": t.tflops(flops)})
    for layout in progress(LAYOUTS, desc="bursts"):
        d_a, d_b = stored[layout]
        cuda.synchronize()
        _time.sleep(BURST_IDLE_S)
        t = bench.time_gpu(lambda i: launch_layout(layout, d_a, d_b, d_c), warmup=0,
                           repeats=10)
        rows.append({"part": "burst", "kernel": "cublas_fp16", "impl": "cublas",
                     "layout": layout, "m": n, "n": n, "k": n, "dtype": "float16",
                     "out_dtype": "float32", **t.row(), "tflops": t.tflops(flops),
                     "first_ms": t.samples_ms[0], "burst_samples": t.samples_ms})

    return {"rows": rows, "row_fields": list(ROW_FIELDS),
            "parameters": {"sizes": list(SIZES), "align_sizes": list(ALIGN_SIZES),
                           "skinny_m": list(SKINNY_M), "skinny_kn": SKINNY_KN,
                           "layouts": list(LAYOUTS), "layout_size": LAYOUT_SIZE,
                           "rounds": ROUNDS, "shuffle_seed": SHUFFLE_SEED,
                           "burst_idle_s": BURST_IDLE_S,
                           "queued_sizes": list(QUEUED_SIZES), "queue_batch": QUEUE_BATCH,
                           "queue_batches": QUEUE_BATCHES, "spin_min_ms": SPIN_MIN_MS,
                           "spinner_ms_per_iteration": spinner.ms_per_iteration,
                           "size_impls": [label(i) for i in SIZE_IMPLS],
                           "align_impls": [label(i) for i in ALIGN_IMPLS],
                           "skinny_impls": [label(i) for i in SKINNY_IMPLS],
                           "inputs": "cache-hot (one buffer set per shape, shared by every "
                                     "implementation) except skinny rows with rotated=true "
                                     "(buffer sets exceeding 2 x L2)",
                           "cublas": "cublasGemmEx via CuPy; fp32 = COMPUTE_32F default math "
                                     "(TF32 off); fp16 = FP16 in, FP32 accumulate and out"},
            "notes": "gbps = ideal bytes (inputs read once, output written once) / median "
                     "time; weight_gbps (skinny) = the 4096x4096 FP16 weight matrix / median "
                     "time. path = the code path our kernel took (lab.experiments.shapes."
                     "path_of)."}
