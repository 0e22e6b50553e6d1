"""Experiment ``naive_tiled`` (chapters 1–2): the naive and tiled kernels, their CUDA C twins
and cuBLAS FP32, in one process on one GPU; plus the coalescing sweep across the L2 capacity.

Rows, told apart by ``part``:

* ``part="size"`` — every ch1–2 kernel (``naive``, ``naive_swapped``, ``naive_literal``,
  ``tiled8/16/32``), every twin (``s003_*``, ``s004_*``) and ``cublas_fp32`` at n = 256 … 4096
  (square, cache-hot inputs). Fields: kernel, impl ("numba" | "twin" | "cublas"), twin_of,
  n (= m = k), median_ms, min_ms, max_ms, tflops, gflops, checked (whether the output was
  checked against float64 first: sizes ≤ ``CHECK_MAX``).
* ``part="l2_sweep"`` — ``naive`` and ``naive_swapped`` at n = 512 … 8192, footprint_mb =
  the three matrices' size against the 60 MB L2; ``ratio_swapped`` on the swapped rows.

Budget: about 90 s of GPU time (the 8192 swapped runs dominate).
"""
from __future__ import annotations

from lab import baselines, bench, twins

CHAPTER = "1"
NEEDS = ("cupy",)
H200_SECONDS = 56  # measured: 56 s on the H200 (timing run of `measure`, 2026-12-01)

KERNELS = ("naive", "naive_swapped", "naive_literal", "tiled8", "tiled16", "tiled32")
SIZES = (256, 512, 1024, 2048, 4096)
SWEEP = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 6144, 8192)
CHECK_MAX = 2048


def _repeats(n: int) -> int:
    return 20 if n <= 2048 else 10


def _finish(row: dict, impl: str, part: str, n: int, checked: bool) -> dict:
    row.update(part=part, impl=impl, n=n, checked=checked,
               gflops=2.0 * n ** 3 / (row["median_ms"] * 1e-3) / 1e9)
    row.setdefault("twin_of", row["kernel"] if impl == "numba" else None)
    return row


def run(progress) -> dict:
    rows = []
    twin_names = twins.available()
    have_cublas = "fp32" in baselines.available()
    jobs = [("numba", k, n) for n in SIZES for k in KERNELS]
    jobs += [("twin", t, n) for n in SIZES for t in twin_names if twins.supports(t, n, n, n)]
    jobs += [("cublas", "fp32", n) for n in SIZES if have_cublas]
    jobs += [("sweep", k, n) for n in SWEEP for k in ("naive", "naive_swapped")]
    bench.compile_ahead(KERNELS)
    for impl, name, n in progress(jobs, desc="naive_tiled"):
        checked = n <= CHECK_MAX
        kw = dict(repeats=_repeats(n), check_first=checked)
        if impl == "numba":
            rows.append(_finish(bench.time(name, n, n, n, **kw), impl, "size", n,
                                checked))
        elif impl == "twin":
            rows.append(_finish(bench.time(name, n, n, n, **kw), impl, "size", n, checked))
        elif impl == "cublas":
            rows.append(_finish(bench.time(f"cublas_{name}", n, n, n, **kw), impl, "size", n,
                                checked))
        else:
            row = bench.time(name, n, n, n, repeats=10, warmup=2,
                             check_first=n <= 1024)
            row["footprint_mb"] = 3 * 4 * n * n / 1e6
            rows.append(_finish(row, "numba", "l2_sweep", n, n <= 1024))
    by_n = {r["n"]: r for r in rows if r["part"] == "l2_sweep" and r["kernel"] == "naive"}
    for r in rows:
        if r["part"] == "l2_sweep" and r["kernel"] == "naive_swapped":
            r["ratio_swapped"] = r["median_ms"] / by_n[r["n"]]["median_ms"]
    return {"rows": rows,
            "row_fields": ["part", "kernel", "impl", "n", "median_ms", "min_ms", "max_ms",
                           "tflops"],
            "parameters": {"kernels": list(KERNELS), "sizes": list(SIZES),
                           "sweep": list(SWEEP), "twins": twin_names,
                           "cublas": "fp32 (TF32 off)" if have_cublas else "unavailable",
                           "inputs": "cache-hot (one buffer set)",
                           "check_max": CHECK_MAX, "block": "16x16 (naive), TxT (tiled)"},
            "notes": "Twins compiled by NVRTC through CuPy RawModule; cuBLAS via cublasGemmEx "
                     "COMPUTE_32F, default math mode."}
