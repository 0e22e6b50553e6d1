"""Experiment ``shuffle`` (chapter 2, exercise 8): ``tiled32`` against ``tiled32_shuffle``, the
same kernel with the A tile replaced by warp shuffles (``cuda.shfl_sync``).

Both kernels are checked against float64 on the shapes ``bench.shapes_for`` derives from the
32 × 32 tile (past one and two tiles along every side, 1×1×1, a non-square odd shape), then timed
cache-hot at 2048³ and 4096³ with cuBLAS FP32 in the same run (CUDA events, 3 warm-up calls,
median of 20).

Rows: kernel, impl ("numba" | "cublas"), m, n, k, median_ms, min_ms, max_ms, tflops, checked.
"""
from __future__ import annotations

from lab import bench

CHAPTER = "2"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tiled32_shuffle",)
H200_SECONDS = 10  # measured: 7 s on the H200

KERNELS = ("tiled32", "tiled32_shuffle")
SIZES = (2048, 4096)


def run(progress) -> dict:
    from lab.kernels import get_spec

    checked = {}
    for name in progress(KERNELS, desc="check"):
        shapes = bench.shapes_for(get_spec(name), gpu=True)
        for m, n, k in shapes:
            verdict = bench.check(name, m, n, k)
            if not verdict.passed:
                raise AssertionError(f"{name} failed its check: {verdict.line()}")
        checked[name] = len(shapes)
    rows = []
    for size in progress(SIZES, desc="time"):
        cublas = bench.time("cublas_fp32", size, size, size, repeats=20)
        rows.append({**cublas, "impl": "cublas", "checked": True})
        for name in KERNELS:
            row = bench.time(name, size, size, size, repeats=20, check_first=False)
            rows.append({**row, "impl": "numba", "checked": True,
                         "pct_cublas": 100.0 * row["tflops"] / cublas["tflops"]})
    return {"rows": rows,
            "parameters": {"sizes": list(SIZES), "repeats": 20, "warmup": 3,
                           "inputs": "cache-hot (one buffer set), uniform(-1, 1)",
                           "checked_shapes": checked}}
