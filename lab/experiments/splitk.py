"""Experiment ``splitk`` (chapter 6.1): split-K measured, its non-determinism counted, and small K.

Rows told apart by ``part``:

* ``check`` — every split-K kernel (two-pass and atomic, FP32 and tensor-core designs) against
  float64 at the timed shape and at an odd one, before anything is timed.
* ``splitk`` — few output tiles and a long K: (M × K)·(K × N) for each of :data:`SPLIT_SHAPES`,
  the unsplit kernel (``warptile_tuned`` / ``tc_fp16``), both split-K versions at each factor of
  :data:`SPLITS`, and cuBLAS (FP32 with TF32 off / FP16 in, FP32 out) — one process run.
  ``splits`` is the factor asked for, ``slices`` the slices used; ``extra_bytes`` what the
  model says split-K adds (:func:`lab.kernels.splitk.extra_bytes`).
* ``determinism`` — the atomic version run :data:`RUNS` times on the same inputs at each
  factor; per run against the first run and against the two-pass result: elements whose bits
  differ, total differing bits (popcount of the XOR) and the largest difference in units in the
  last place. The two-pass version is run as often as a control (its counts must be 0).
* ``small_k`` — M = N = 4096 with K from 16 to 256: the product's time against writing its
  output, unfused (GEMM, then the element-wise epilogue) and fused (bias + ReLU), for both
  designs and cuBLAS; ``model_bytes`` the bytes each row moves at least.

Short calls (under ~100 µs of GPU time, timed queued to tell) are timed *queued*
(:func:`lab.timing.time_queued`): a busy kernel holds the GPU while a batch of calls is queued
behind it, so the host's launch path is hidden; every row says ``timing``. Inputs are
cache-hot. Budget: ≈ 60–90 s, most of it compiling eight kernels.
"""
from __future__ import annotations

import numpy as np

from lab import baselines, bench, model
from numba import cuda  # noqa: E402  (after lab: simulator decided first)

CHAPTER = "6.1"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16_splitk",)
H200_SECONDS = 65  # measured: 63 s on the H200 (~8 compiles, timing, checks)

#: (design, M, N, K): few tiles, long K.
SPLIT_SHAPES = (("fp32", 512, 512, 16384), ("fp16", 512, 512, 16384),
                ("fp16", 256, 256, 16384))
SPLITS = (1, 2, 3, 4, 8, 16, 32)
#: Atomic non-determinism: factors and runs.
DET_SPLITS = (2, 3, 8, 16)
RUNS = 10
#: Small K: M = N = SMALL_MN, K from SMALL_K.
SMALL_MN = 4096
SMALL_K = (16, 32, 64, 128, 256)
ODD_CHECK = (255, 257, 1000)

DESIGNS = {"fp32": {"plain": "warptile_tuned", "two_pass": "warptile_tuned_splitk",
                    "atomic": "warptile_tuned_splitk_atomic", "fused": "warptile_tuned_epilogue",
                    "cublas": "fp32", "dtype": np.float32},
           "fp16": {"plain": "tc_fp16", "two_pass": "tc_fp16_splitk",
                    "atomic": "tc_fp16_splitk_atomic", "fused": "tc_fp16_epilogue",
                    "cublas": "fp16", "dtype": np.float16}}

#: Calls whose queued GPU time is below this keep it; longer ones are timed call by call.
QUEUE_BELOW_MS = 0.1


# ----------------------------------------------------------------------------- timing

def timed(call, repeats: int = 20) -> dict:
    """Queued timing first (the GPU's own time, whatever the host is doing); kept when its
    median is under :data:`QUEUE_BELOW_MS`, else the call is timed call by call with CUDA
    events (warm-up 3, ``repeats`` calls), where the host's launch path is a small share.
    Deciding by the per-call time instead let a busy host (other experiments compiling beside
    this one) push short calls over the line and time them with the host's gaps inside.
    The row fields of the timing."""
    q, covered = bench.time_queued(call)
    if q.median_ms < QUEUE_BELOW_MS:
        return {**q.row(), "timing": "queued", "batch": bench.QUEUE_BATCH,
                "spin_covered": covered}
    t = bench.time_gpu(call, warmup=3, repeats=repeats)
    return {**t.row(), "timing": "per call"}


# ----------------------------------------------------------------------------- helpers

def _device(*arrays):
    return [cuda.to_device(x) for x in arrays]


def _inputs(design: str, m: int, n: int, k: int, seed: int = 11):
    a, b = bench.random_inputs(m, n, k, DESIGNS[design]["dtype"], np.random.default_rng(seed))
    return a, b


def _launcher(name: str, splits: int | None = None):
    from lab.kernels import get_spec
    from lab.kernels.splitk import launcher

    return launcher(name, splits) if splits is not None else get_spec(name).launch


def _check_row(verdict, **extra) -> dict:
    m, n, k = verdict.shape
    if not verdict.passed:
        raise AssertionError(f"check failed before timing: {verdict.line()}")
    return {"part": "check", "kernel": verdict.kernel, "m": m, "n": n, "k": k,
            "dtype": verdict.dtype, "rel_frobenius": verdict.rel_frobenius,
            "err_over_bound": verdict.err_over_bound, "passed": True, **extra}


def _check_split(name: str, splits: int, a, b) -> dict:
    m, n = a.shape[0], b.shape[1]
    d_a, d_b = _device(a, b)
    d_c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    _launcher(name, splits)(d_a, d_b, d_c)
    v = bench.compare(d_c.copy_to_host(), a, b, kernel=name)
    return _check_row(v, splits=splits)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, np.float32).view(np.uint32)


def bit_difference(x: np.ndarray, y: np.ndarray) -> dict:
    """Elements whose bits differ, differing bits in all (popcount of the XOR) and the largest
    difference in units in the last place (ordered integer view of float32)."""
    bx, by = _bits(x), _bits(y)
    xor = bx ^ by
    bits = int(np.unpackbits(xor.view(np.uint8)).sum())

    def ordered(b):
        s = b.astype(np.int64)
        return np.where(s & 0x80000000, 0x80000000 - s, s)
    ulps = int(np.max(np.abs(ordered(bx) - ordered(by)))) if xor.any() else 0
    return {"elements_differ": int(np.count_nonzero(xor)), "bits_differ": bits,
            "max_ulps": ulps}


# ----------------------------------------------------------------------------- parts

def _splitk_rows(progress) -> list[dict]:
    rows = []
    for design, m, n, k in progress(SPLIT_SHAPES, desc="split-K"):
        d = DESIGNS[design]
        a, b = _inputs(design, m, n, k)
        rows.append(_check_row(bench.check(d["plain"], m, n, k)))
        rows.append(_check_row(bench.check("cublas_" + d["cublas"], m, n, k)))
        for mode in ("two_pass", "atomic"):
            rows.append(_check_split(d[mode], 8, a, b))
            oa, ob = _inputs(design, *ODD_CHECK)
            rows.append(_check_split(d[mode], 3, oa, ob))
        d_a, d_b = _device(a, b)
        d_c = cuda.device_array((m, n), np.float32)
        base = {"part": "splitk", "design": design, "m": m, "n": n, "k": k,
                "dtype": np.dtype(d["dtype"]).name}
        flops = model.flops(m, n, k)
        plain = _launcher(d["plain"])
        t = timed(lambda i: plain(d_a, d_b, d_c))
        rows.append({**base, "kernel": d["plain"], "impl": "numba", "mode": "unsplit",
                     "splits": 1, "slices": 1, "extra_bytes": 0, **t,
                     "tflops": flops / (t["median_ms"] * 1e-3) / 1e12})
        kind = d["cublas"]
        t = timed(lambda i: baselines.launch(kind, d_a, d_b, d_c))
        rows.append({**base, "kernel": f"cublas_{kind}", "impl": "cublas", "mode": "library",
                     **t, "tflops": flops / (t["median_ms"] * 1e-3) / 1e12})
        from lab.kernels import get_spec
        from lab.kernels.splitk import extra_bytes, k_slices

        bk = get_spec(d["plain"]).tile[2]
        for splits in SPLITS:
            for mode in ("two_pass", "atomic"):
                launch = _launcher(d[mode], splits)
                t = timed(lambda i: launch(d_a, d_b, d_c))
                slices = k_slices(k, bk, splits)[1]
                rows.append({**base, "kernel": d[mode], "impl": "numba", "mode": mode,
                             "splits": splits, "slices": slices,
                             "extra_bytes": extra_bytes(m, n, slices, mode), **t,
                             "tflops": flops / (t["median_ms"] * 1e-3) / 1e12})
    return rows


def _determinism_rows(progress) -> list[dict]:
    rows = []
    for design, m, n, k in progress(SPLIT_SHAPES[:2], desc="determinism"):
        d = DESIGNS[design]
        a, b = _inputs(design, m, n, k, seed=12)
        d_a, d_b = _device(a, b)
        d_c = cuda.device_array((m, n), np.float32)
        for splits in DET_SPLITS:
            outs = {}
            for mode in ("two_pass", "atomic"):
                launch = _launcher(d[mode], splits)
                outs[mode] = []
                for _ in range(RUNS):
                    launch(d_a, d_b, d_c)
                    outs[mode].append(d_c.copy_to_host())
            ref = outs["two_pass"][0]
            for mode in ("two_pass", "atomic"):
                runs = outs[mode]
                vs_first = [bit_difference(runs[0], r) for r in runs[1:]]
                vs_two_pass = [bit_difference(ref, r) for r in runs]
                distinct = len({r.tobytes() for r in runs})
                rows.append({"part": "determinism", "design": design,
                             "kernel": d[mode], "mode": mode, "m": m, "n": n, "k": k,
                             "splits": splits, "runs": RUNS, "distinct_results": distinct,
                             "elements": m * n,
                             "max_elements_vs_first": max(x["elements_differ"]
                                                          for x in vs_first),
                             "max_bits_vs_first": max(x["bits_differ"] for x in vs_first),
                             "max_ulps_vs_first": max(x["max_ulps"] for x in vs_first),
                             "max_elements_vs_two_pass": max(x["elements_differ"]
                                                             for x in vs_two_pass),
                             "max_ulps_vs_two_pass": max(x["max_ulps"] for x in vs_two_pass)})
    return rows


def _small_k_rows(progress) -> list[dict]:
    from lab.kernels import get_spec
    from lab.kernels import fused_epilogue as epi

    rows = []
    m = n = SMALL_MN
    rng = np.random.default_rng(13)
    bias = cuda.to_device(rng.uniform(-1, 1, n).astype(np.float32))
    p = cuda.device_array((m, n), np.float32)
    out = cuda.device_array((m, n), np.float32)
    for k in progress(SMALL_K, desc="small K"):
        for design, d in DESIGNS.items():
            a, b = _inputs(design, m, n, k)
            e = np.dtype(d["dtype"]).itemsize
            d_a, d_b = _device(a, b)
            base = {"part": "small_k", "design": design, "m": m, "n": n, "k": k,
                    "dtype": np.dtype(d["dtype"]).name}
            flops = model.flops(m, n, k)
            io = e * (m * k + k * n)
            plain = get_spec(d["plain"]).launch
            fused = epi.FUSED[d["fused"]]
            kind = d["cublas"]
            if k == SMALL_K[0]:
                v = epi.check(d["fused"], 1024, 1024, k, activation="relu", use_c=False)
                rows.append(_check_row(v))
            calls = {
                ("gemm", d["plain"], "numba"): (lambda i: plain(d_a, d_b, p), io + 4 * m * n),
                ("gemm", f"cublas_{kind}", "cublas"):
                    (lambda i: baselines.launch(kind, d_a, d_b, p), io + 4 * m * n),
                ("epilogue_only", "elementwise", "numba"):
                    (lambda i: epi.launch_elementwise(p, out, bias=bias, activation="relu"),
                     8 * m * n + 4 * n),
                ("unfused", d["plain"] + "+elementwise", "numba"):
                    (lambda i: (plain(d_a, d_b, p),
                                epi.launch_elementwise(p, out, bias=bias, activation="relu")),
                     io + 12 * m * n + 4 * n),
                ("fused", d["fused"], "numba"):
                    (lambda i: fused(d_a, d_b, out, bias=bias, activation="relu"),
                     io + 4 * m * n + 4 * n),
            }
            for (variant, kernel, impl), (call, nbytes) in calls.items():
                t = timed(call)
                row = {**base, "variant": variant, "kernel": kernel, "impl": impl,
                       "epilogue": "bias+relu" if variant != "gemm" else "none", **t,
                       "model_bytes": nbytes,
                       "gbps": nbytes / (t["median_ms"] * 1e-3) / 1e9}
                if variant != "epilogue_only":
                    row["tflops"] = flops / (t["median_ms"] * 1e-3) / 1e12
                rows.append(row)
    return rows


def run(progress) -> dict:
    bench.require_gpu("the splitk experiment")
    for kind in ("fp32", "fp16"):
        if kind not in baselines.available():
            raise RuntimeError(f"cuBLAS {kind} is not available (CuPy missing?)")
    bench.compile_ahead([d[key] for d in DESIGNS.values()
                         for key in ("plain", "two_pass", "atomic", "fused")])
    rows = _splitk_rows(progress)
    rows += _determinism_rows(progress)
    rows += _small_k_rows(progress)
    return {"rows": rows, "row_fields": ["part", "kernel", "m", "n", "k"],
            "parameters": {"split_shapes": [list(s) for s in SPLIT_SHAPES],
                           "splits": list(SPLITS), "det_splits": list(DET_SPLITS),
                           "runs": RUNS, "small_mn": SMALL_MN, "small_k": list(SMALL_K),
                           "odd_check": list(ODD_CHECK), "batch": bench.QUEUE_BATCH,
                           "batches": bench.QUEUE_BATCHES,
                           "queue_below_ms": QUEUE_BELOW_MS,
                           "spinner_ms_per_iteration": bench.process_spinner().ms_per_iteration,
                           "inputs": "cache-hot (one buffer set per shape)",
                           "cublas": "cublasGemmEx via CuPy; fp32 = TF32 off; fp16 = FP16 in, "
                                     "FP32 accumulate and out"},
            "notes": "timing = 'per call' (CUDA events around each call, warm-up 3, 20 calls) "
                     "or 'queued' (calls whose queued time is under 0.1 ms: batches of 20 "
                     "behind a spin kernel, 10 batches). extra_bytes: split-K's added DRAM "
                     "bytes by the model; "
                     "model_bytes (small_k): the bytes a row's calls move at least."}
