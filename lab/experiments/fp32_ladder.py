"""Experiment ``fp32_ladder`` (chapter 4): every FP32 rung beside cuBLAS FP32, 1024 … 8192.

Rows, told apart by ``part``:

* ``part="ladder"`` — each rung of :data:`RUNGS` and ``cublas_fp32`` at n = 1024, 2048, 4096,
  8192 (square, cache-hot), one process run; cuBLAS is timed first and last at every size and
  ``pct_cublas`` uses the mean of the two. The slow chapter 1–2 rungs are skipped at 8192.
* ``part="variant"`` — "skip a stage" kernels at 4096 that differ from ``warptile`` in one
  thing (:data:`VARIANTS`: no padding, one buffer, launch bounds for two blocks per SM),
  built from :class:`lab.kernels.k04_vectorized.Config` without being registered.
* ``part="edges"`` — ``warptile_tuned`` (:data:`EDGE_KERNEL`) and cuBLAS at shapes that are not tile multiples
  (4095, 4097 and 4100³): the bounds-checked twin kernel's price.

Every Numba kernel is checked against float64 before any timing: at 1024³ (fast path), at
1000×1030×999 (edge path) and, for the chapter 4 rungs, at 4096³ (one float64 reference
shared by all). Timings use ``repeats`` CUDA-event samples after 3 warm-up calls.

Row fields: part, kernel, chapter, n (or m, n, k), median_ms, min_ms, max_ms, tflops,
pct_cublas, cublas_tflops, config (for variants).

Budget: about 2–3 minutes of GPU time (compiles ≈ 1 min, the 4096³ float64 reference ≈ 10 s).
"""
from __future__ import annotations

import numpy as np

from lab import bench

CHAPTER = "4"
NEEDS = ("cupy",)
H200_SECONDS = 190  # measured: 190 s on the H200, mostly compiling 12 rungs and 3 variants

#: Rungs of the FP32 ladder, in order (names missing from the registry are skipped).
RUNGS = ("naive", "tiled32", "patch4", "patch8", "block128", "vectorized",
         "vectorized_spread", "pipelined", "warptile", "warptile_128x64", "warptile_bk16",
         "warptile_tuned")
SLOW = ("naive", "tiled32")          # skipped at 8192
SIZES = (1024, 2048, 4096, 8192)
EDGE_SIZES = (4095, 4097, 4100)
EDGE_KERNEL = "warptile_tuned"
CH4 = ("vectorized", "vectorized_spread", "pipelined", "warptile", "warptile_128x64",
       "warptile_bk16", "warptile_tuned")


def _variants():
    from dataclasses import replace

    from lab.kernels.k06_warptile import DEFAULT
    return {"warptile_nopad": replace(DEFAULT, PAD=0),
            "warptile_1buf": replace(DEFAULT, stages=1),
            "warptile_lb2": replace(DEFAULT, min_blocks=2)}


def _time_launch(launch, n: int, repeats: int):
    from numba import cuda

    a, b = bench.random_inputs(n, n, n, np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    t = bench.time_gpu(lambda i: launch(d_a, d_b, d_c), repeats=repeats)
    return t, a, b, d_c


def run(progress) -> dict:
    from lab import baselines
    from lab.kernels import REGISTRY
    from lab.kernels.k04_vectorized import SIGNATURE, build

    rungs = [r for r in RUNGS if r in REGISTRY]
    have_cublas = "fp32" in baselines.available()
    rows = []
    variants = {vname: (cfg, build(cfg)) for vname, cfg in _variants().items()}
    bench.compile_ahead(rungs, [(fast, SIGNATURE) for _, (fast, _e, _l) in variants.values()])

    # ---- correctness first: 1024³ and an odd shape for every rung, 4096³ for chapter 4
    for name in progress(rungs, desc="checks"):
        for shape in ((1024, 1024, 1024), (1000, 1030, 999)):
            v = bench.check(name, *shape)
            if not v.passed:
                raise AssertionError(f"{name} failed its check: {v.line()}")
    rng = np.random.default_rng(4096)
    a, b = bench.random_inputs(4096, 4096, 4096, np.float32, rng)
    checked_4096 = []
    from lab.api import matmul
    for name in [r for r in rungs if r in CH4]:
        v = bench.compare(matmul(a, b, kernel=name), a, b, kernel=name)
        if not v.passed:
            raise AssertionError(f"{name} failed its 4096³ check: {v.line()}")
        checked_4096.append(name)

    def cublas_row(n, m=None, k=None):
        m = m or n
        k = k or n
        return bench.time("cublas_fp32", m, n, k, repeats=20, check_first=False)

    # ---- the ladder
    for n in progress(SIZES, desc="ladder"):
        first = cublas_row(n) if have_cublas else None
        timed = []
        for name in rungs:
            if n >= 8192 and name in SLOW:
                continue
            repeats = 10 if name in SLOW or n >= 8192 else 20
            row = bench.time(name, n, n, n, repeats=repeats, check_first=False)
            row.update(part="ladder", n=n, chapter=REGISTRY[name].chapter)
            timed.append(row)
        last = cublas_row(n) if have_cublas else None
        if have_cublas:
            ref_tflops = 0.5 * (first["tflops"] + last["tflops"])
            for r in timed:
                r.update(cublas_tflops=ref_tflops, pct_cublas=100 * r["tflops"] / ref_tflops)
            first.update(part="ladder", n=n, chapter=CHAPTER, kernel="cublas_fp32", when="first")
            last.update(part="ladder", n=n, chapter=CHAPTER, kernel="cublas_fp32", when="last")
            rows += [first, last]
        rows += timed

    # ---- one-change variants of the best rung, at 4096
    n = 4096
    base = next((r for r in rows if r.get("part") == "ladder" and r["kernel"] == "warptile"
                 and r["n"] == n), None)
    for vname, (cfg, (_fast, _edges, launch)) in progress(list(variants.items()),
                                                          desc="variants"):
        t, a1, b1, d_c = _time_launch(launch, 1024, 10)   # check at 1024
        v = bench.compare(d_c.copy_to_host(), a1, b1, kernel=vname)
        if not v.passed:
            raise AssertionError(f"{vname} failed its check: {v.line()}")
        t, *_ = _time_launch(launch, n, 20)
        row = {"part": "variant", "kernel": vname, "n": n, "m": n, "k": n,
               "config": cfg.label(), **t.row(), "tflops": t.tflops(2.0 * n ** 3)}
        if base is not None and "cublas_tflops" in base:
            row.update(cublas_tflops=base["cublas_tflops"],
                       pct_cublas=100 * row["tflops"] / base["cublas_tflops"])
        rows.append(row)

    # ---- edges: the bounds-checked twin kernel
    for e in progress(EDGE_SIZES, desc="edges"):
        row = bench.time(EDGE_KERNEL, e, e, e, repeats=20, check_first=False)
        row.update(part="edges", n=e)
        if have_cublas:
            c = cublas_row(e)
            c.update(part="edges", n=e, kernel="cublas_fp32")
            row.update(cublas_tflops=c["tflops"], pct_cublas=100 * row["tflops"] / c["tflops"])
            rows.append(c)
        rows.append(row)

    return {"rows": rows,
            "row_fields": ["part", "kernel", "n", "median_ms", "min_ms", "max_ms", "tflops"],
            "parameters": {"rungs": rungs, "sizes": list(SIZES), "edge_sizes": list(EDGE_SIZES),
                           "variants": {k: v.label() for k, v in _variants().items()},
                           "inputs": "cache-hot (one buffer set per kernel and size)",
                           "checked": "every rung at 1024^3 and 1000x1030x999; chapter-4 "
                                      f"rungs also at 4096^3 ({', '.join(checked_4096)})",
                           "cublas": "fp32 (TF32 off)" if have_cublas else "unavailable"},
            "notes": "pct_cublas: TFLOP/s over the mean of cuBLAS timed just before and just "
                     "after the rungs at the same size, same process."}
