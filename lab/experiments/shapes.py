"""Experiment ``shapes`` (chapter 6.2): the library across shapes, and the shapes that run slowly.

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
  is the GPU's own time per call (:func:`lab.bench.time_queued`). Extra fields:
  timing="queued", batch, spin_covered (share of batches whose busy kernel outlasted the
  host's enqueueing; 1.0 expected).
* ``layout`` — cuBLAS FP16 4096³ with A and/or B stored transposed (``NN``, ``TN``, ``NT``,
  ``TT``: first letter A, second B, ``T`` = stored transposed), called through ``gemmEx``'s op
  flags (:func:`lab.baselines.launch_layout`); steady state (3 warm-up calls, 20 timed).
* ``burst`` — the same four layouts in a short burst after the GPU idled ``BURST_IDLE_S``: no
  warm-up, 10 calls, ``first_ms`` the very first, ``burst_samples`` all ten; against
  ``layout`` it shows whether the clock moves between bursts (seed 004's T4 saw 2–3×).

Every timed row: part, kernel, impl ("cublas" | "numba"), m, n, k, dtype, out_dtype,
median_ms, min_ms, max_ms, repeats, rotated, tflops, gbps (ideal bytes / median time), path.
Check rows: part="check", kernel, m, n, k, dtype, rel_frobenius, max_err_over_max_entry,
tolerance, passed. Every implementation is a provider (:mod:`lab.providers`), named as in the
rows; ``path`` is :meth:`lab.providers.Provider.path`.

Budget: ≈ 60–80 s of GPU time, most of it compiling the Numba kernels, cuBLAS FP32 and
``warptile_tuned`` at 8192³ (≈ 25 ms a call) and ``tiled32`` at the alignment sizes (≈ 17 ms a
call). Big sizes use 10 repeats, the rest 20.
"""
from __future__ import annotations

import functools
import time as _time

import numpy as np

from lab import baselines, bench, model, providers
from numba import cuda  # noqa: E402  (after lab: simulator decided first)

CHAPTER = "6.2"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16",)
H200_SECONDS = 55  # measured: 55 s on the H200

SIZES = (128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
ALIGN_SIZES = (2048, 2049, 4088, 4092, 4096, 4097, 4100, 4104)
SKINNY_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)
SKINNY_KN = 4096
LAYOUT_SIZE = 4096
ROUNDS = 3
SHUFFLE_SEED = 2026
BURST_IDLE_S = 0.5

#: Square sizes timed queued (:func:`lab.bench.time_queued`, its default batch shape).
QUEUED_SIZES = (128, 256, 512, 768, 1024, 1536, 2048)

#: What each part times (provider names).
SIZE_IMPLS = ("cublas_fp32", "cublas_fp16", "warptile_tuned", "tc_fp16")
ALIGN_IMPLS = SIZE_IMPLS + ("tiled32",)
SKINNY_IMPLS = ("cublas_fp16", "tc_fp16")
SHUFFLED_IMPLS = ("cublas_fp16", "cublas_fp32")

#: Shapes every implementation is checked on before timing (M, N, K).
CHECK_SHAPES = ((1024, 1024, 1024), (1000, 1030, 999))
CUBLAS_CHECK_SHAPES = ((1024, 1024, 1024), (1025, 1025, 1025), (1028, 1028, 1028))
SKINNY_CHECK_M = (1, 64)
LAYOUT_CHECK_SHAPE = (1000, 1030, 999)

ROW_FIELDS = ("part", "kernel", "m", "n", "k", "dtype")


# ----------------------------------------------------------------------------- helpers

def path_of(kernel: str, m: int, n: int, k: int) -> str:
    """Which code path provider ``kernel`` takes at M×N×K (no GPU needed):
    :meth:`lab.providers.Provider.path`."""
    return providers.get(kernel).path(m, n, k)


def _repeats(m: int, n: int, k: int) -> int:
    return 10 if 2.0 * m * n * k >= 2.0 * 6144 ** 3 else 20


def _row(part: str, name: str, m: int, n: int, k: int, timing) -> dict:
    p = providers.get(name)
    in_dt, out_dt = np.dtype(p.dtype), np.dtype(p.out_dtype)
    ideal = model.ideal_bytes(m, n, k, in_dt.itemsize, out_dt.itemsize)
    return {"part": part, "kernel": name, "impl": p.family, "m": m, "n": n, "k": k,
            "dtype": p.dtype_name, "out_dtype": out_dt.name, **timing.row(),
            "tflops": timing.tflops(model.flops(m, n, k)),
            "gbps": ideal / (timing.median_ms * 1e-3) / 1e9,
            "path": path_of(name, m, n, k)}


def _timer(queued):
    """Per-call event timing (``queued=None``) or :func:`lab.bench.time_queued` with this
    spinner."""
    if queued is None:
        return lambda call, repeats, rotated: (bench.time_gpu(call, repeats=repeats,
                                                              rotated=rotated), {})

    def timer(call, repeats, rotated):
        t, covered = bench.time_queued(call, spinner=queued, rotated=rotated)
        return t, {"timing": "queued", "batch": bench.QUEUE_BATCH, "spin_covered": covered}
    return timer


def _time_hot(part: str, name: str, m: int, n: int, k: int, inputs: bench.Operands,
              repeats: int | None = None, queued=None) -> dict:
    p = providers.get(name)
    d_a, d_b = inputs.operands(m, n, k, p.dtype)
    call = p.prepare(d_a, d_b, inputs.output(m, n, p.out_dtype))
    t, extra = _timer(queued)(lambda i: call(), repeats or _repeats(m, n, k), False)
    return {**_row(part, name, m, n, k, t), **extra}


@functools.lru_cache(maxsize=1)
def _l2_bytes() -> int:
    """The L2 size, read once (``device.provenance`` asks nvidia-smi on every call)."""
    return int(cuda.get_current_device().L2_CACHE_SIZE) or 60 * 2**20


def _time_rotated(part: str, name: str, m: int, n: int, k: int, repeats: int = 20,
                  queued=None) -> dict:
    """Cycle through enough buffer sets (same values, distinct buffers) to exceed 2 × L2."""
    p = providers.get(name)
    in_dt, out_dt = np.dtype(p.dtype), np.dtype(p.out_dtype)
    a, b = bench.random_inputs(m, n, k, in_dt)
    per_set = in_dt.itemsize * (m * k + k * n) + out_dt.itemsize * m * n
    calls = [p.prepare(cuda.to_device(a), cuda.to_device(b),
                       cuda.device_array((m, n), dtype=out_dt))
             for _ in range(bench.buffer_sets(per_set, True, _l2_bytes()))]
    t, extra = _timer(queued)(lambda i: calls[i % len(calls)](), repeats, True)
    return {**_row(part, name, m, n, k, t), **extra, "buffer_sets": len(calls)}


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
    everything = ALIGN_IMPLS + SKINNY_IMPLS + SHUFFLED_IMPLS
    ours = sorted({n for n in everything if providers.get(n).family == "numba"})
    libs = sorted({n for n in everything if providers.get(n).family == "cublas"})
    bench.compile_ahead(ours)
    jobs = [(name, s) for name in ours for s in CHECK_SHAPES]
    jobs += [(name, s) for name in libs for s in CUBLAS_CHECK_SHAPES]
    jobs += [(name, (m, SKINNY_KN, SKINNY_KN)) for name in SKINNY_IMPLS
             for m in SKINNY_CHECK_M]
    jobs += [(layout, LAYOUT_CHECK_SHAPE) for layout in baselines.LAYOUTS]
    rows = []
    for name, shape in progress(jobs, desc="checks"):
        verdict = (baselines.check_layout(name, *shape) if name in baselines.LAYOUTS
                   else bench.check(name, *shape))
        rows.append(_check_row(verdict))
    return rows


def run(progress) -> dict:
    bench.require_gpu("the shapes experiment")
    for name in ("cublas_fp32", "cublas_fp16"):
        providers.get(name).require()
    rows = _checks(progress)
    inputs = bench.Operands()

    # ---- (a) size curve
    for n in progress(SIZES, desc="size"):
        for name in SIZE_IMPLS:
            rows.append(_time_hot("size", name, n, n, n, inputs))
        inputs.clear()

    # ---- (b) alignment, then (e) the same sizes in shuffled rounds (inputs kept)
    for n in progress(ALIGN_SIZES, desc="alignment"):
        for name in ALIGN_IMPLS:
            rows.append(_time_hot("alignment", name, n, n, n, inputs,
                                  repeats=10 if name == "tiled32" else 20))
    order_rng = np.random.default_rng(SHUFFLE_SEED)
    for rnd in progress(range(ROUNDS), desc="shuffled rounds"):
        order = [ALIGN_SIZES[i] for i in order_rng.permutation(len(ALIGN_SIZES))]
        for pos, n in enumerate(order):
            for name in SHUFFLED_IMPLS:
                row = _time_hot("shuffled", name, n, n, n, inputs, repeats=10)
                row.update(round=rnd, position=pos)
                rows.append(row)
    inputs.clear()

    # ---- (c) skinny: (M × 4096)·(4096 × 4096) FP16, cache-hot and rotated
    kn = SKINNY_KN
    for m in progress(SKINNY_M, desc="skinny"):
        for name in SKINNY_IMPLS:
            for rotated in (False, True):
                row = (_time_rotated("skinny", name, m, kn, kn) if rotated
                       else _time_hot("skinny", name, m, kn, kn, inputs))
                row["weight_gbps"] = 2.0 * kn * kn / (row["median_ms"] * 1e-3) / 1e9
                rows.append(row)
        inputs.clear()

    # ---- (a', c') the short calls again, queued behind a busy kernel: the GPU's own time
    spinner = bench.Spinner()
    for n in progress(QUEUED_SIZES, desc="size, queued"):
        for name in SIZE_IMPLS:
            rows.append(_time_hot("size_queued", name, n, n, n, inputs, queued=spinner))
        inputs.clear()
    for m in progress(SKINNY_M, desc="skinny, queued"):
        for name in SKINNY_IMPLS:
            for rotated in (False, True):
                row = (_time_rotated("skinny_queued", name, m, kn, kn, queued=spinner)
                       if rotated else
                       _time_hot("skinny_queued", name, m, kn, kn, inputs, queued=spinner))
                row["weight_gbps"] = 2.0 * kn * kn / (row["median_ms"] * 1e-3) / 1e9
                rows.append(row)
        inputs.clear()

    # ---- (d) layouts, steady state; then short bursts after idling
    n = LAYOUT_SIZE
    spec = baselines.get_kind("fp16")
    a, b = bench.random_inputs(n, n, n, spec.in_dtype)
    d_c = cuda.device_array((n, n), dtype=spec.out_dtype)
    stored = {}
    for layout in baselines.LAYOUTS:
        a_s, b_s = baselines.layout_operands(layout, a, b)
        stored[layout] = (cuda.to_device(a_s), cuda.to_device(b_s))
    flops = model.flops(n, n, n)
    for layout in progress(baselines.LAYOUTS, desc="layouts"):
        d_a, d_b = stored[layout]
        t = bench.time_gpu(lambda i: baselines.launch_layout(layout, d_a, d_b, d_c),
                           repeats=20)
        rows.append({"part": "layout", "kernel": "cublas_fp16", "impl": "cublas",
                     "layout": layout, "m": n, "n": n, "k": n, "dtype": "float16",
                     "out_dtype": "float32", **t.row(), "tflops": t.tflops(flops)})
    for layout in progress(baselines.LAYOUTS, desc="bursts"):
        d_a, d_b = stored[layout]
        cuda.synchronize()
        _time.sleep(BURST_IDLE_S)
        t = bench.time_gpu(lambda i: baselines.launch_layout(layout, d_a, d_b, d_c),
                           warmup=0, repeats=10)
        rows.append({"part": "burst", "kernel": "cublas_fp16", "impl": "cublas",
                     "layout": layout, "m": n, "n": n, "k": n, "dtype": "float16",
                     "out_dtype": "float32", **t.row(), "tflops": t.tflops(flops),
                     "first_ms": t.samples_ms[0], "burst_samples": t.samples_ms})

    return {"rows": rows, "row_fields": list(ROW_FIELDS),
            "parameters": {"sizes": list(SIZES), "align_sizes": list(ALIGN_SIZES),
                           "skinny_m": list(SKINNY_M), "skinny_kn": SKINNY_KN,
                           "layouts": list(baselines.LAYOUTS), "layout_size": LAYOUT_SIZE,
                           "rounds": ROUNDS, "shuffle_seed": SHUFFLE_SEED,
                           "burst_idle_s": BURST_IDLE_S,
                           "queued_sizes": list(QUEUED_SIZES),
                           "queue_batch": bench.QUEUE_BATCH,
                           "queue_batches": bench.QUEUE_BATCHES,
                           "spin_min_ms": bench.SPIN_MIN_MS,
                           "spinner_ms_per_iteration": spinner.ms_per_iteration,
                           "size_impls": list(SIZE_IMPLS),
                           "align_impls": list(ALIGN_IMPLS),
                           "skinny_impls": list(SKINNY_IMPLS),
                           "inputs": "cache-hot (one buffer set per shape, shared by every "
                                     "implementation) except skinny rows with rotated=true "
                                     "(buffer sets exceeding 2 x L2)",
                           "cublas": "cublasGemmEx via CuPy; fp32 = COMPUTE_32F default math "
                                     "(TF32 off); fp16 = FP16 in, FP32 accumulate and out"},
            "notes": "gbps = ideal bytes (inputs read once, output written once) / median "
                     "time; weight_gbps (skinny) = the 4096x4096 FP16 weight matrix / median "
                     "time. path = the code path our kernel took (lab.experiments.shapes."
                     "path_of)."}
