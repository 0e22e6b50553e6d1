"""Experiment ``hopper``: the Hopper ladder (wgmma, TMA, mbarriers, warp specialization) against
chapter 5's best mma.sync kernel and cuBLAS, FP16 and BF16, at 4096³ and 8192³.

Every kernel is checked before it is timed: against float64 on odd shapes (1×1×1, not multiples
of any tile, non-square) on fresh inputs, and at ``CHECK_SIZE``³ on inputs shared by all the
kernels of one dtype (cuBLAS included). Then, per size, every kernel and cuBLAS are timed in the
same process run (CUDA events, warm-up, median/min/max of ``REPEATS``), and each row carries its
ratio to cuBLAS of the same input type measured in that run. Inputs are cache-hot (one buffer set).
"""
from __future__ import annotations

import numpy as np

from lab import bench

CHAPTER = 7
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16", "tc_bf16", "wgmma_ws_fp16", "wgmma_ws_bf16")
H200_SECONDS = 90  # estimate: 14 kernels compiled and checked, timed at 4096³ and 8192³

SIZES = (4096, 8192)
CHECK_SIZE = 4096
RUNGS = ("wgmma_cpasync", "wgmma_tma", "wgmma_2wg", "wgmma_ws", "wgmma_persistent",
         "wgmma_pingpong")
MMA_SYNC = {"f16": "tc_fp16", "bf16": "tc_bf16"}
BASELINE = {"f16": "fp16", "bf16": "bf16"}
ODD_SHAPES = ((1, 1, 1), (17, 33, 5), (257, 129, 67), (1000, 1030, 999), (130, 260, 72))
REPEATS = 20
ROW_FIELDS = ("kernel", "rung", "dtype", "m", "n", "k", "median_ms", "min_ms", "max_ms",
              "tflops", "ratio_to_cublas")


def kernels(kind: str) -> list[str]:
    """Our kernels for one input type, ladder order: chapter 5's best, then the rungs."""
    suffix = "_fp16" if kind == "f16" else "_bf16"
    return [MMA_SYNC[kind]] + [r + suffix for r in RUNGS]


def _check_shared(names, kind: str, n: int) -> dict:
    """Every kernel of one input type (and its cuBLAS) on the same fresh n³ inputs."""
    from numba import cuda

    from lab import baselines
    from lab.api import matmul
    from lab.kernels import get_spec

    spec0 = get_spec(names[0])
    a, b = bench.random_inputs(n, n, n, spec0.dtype)
    out = {}
    for name in names:
        verdict = bench.compare(matmul(a, b, kernel=name), a, b, dtype_name=spec0.dtype_name,
                                kernel=name)
        if not verdict.passed:
            raise AssertionError(verdict.line())
        out[name] = verdict
    base = BASELINE[kind]
    if base in baselines.available():
        spec = baselines.get_kind(base)
        d_c = cuda.to_device(np.full((n, n), np.nan, dtype=spec.out_dtype))
        baselines.launch(base, cuda.to_device(a), cuda.to_device(b), d_c)
        verdict = bench.compare(d_c.copy_to_host(), a, b, dtype_name=spec0.dtype_name,
                                kernel=f"cublas_{base}")
        if not verdict.passed:
            raise AssertionError(verdict.line())
        out[f"cublas_{base}"] = verdict
    return out


def run(progress) -> dict:
    from lab import baselines
    from lab.kernels import get_spec
    from lab.kernels.k09_hopper import RUNG_CONFIGS, TITLES

    available = baselines.available()
    rows = []
    checks = {}
    for kind in progress(("f16", "bf16"), desc="checks"):
        names = kernels(kind)
        for name in names:
            for m, n, k in ODD_SHAPES:
                verdict = bench.check(name, m, n, k)
                if not verdict.passed:
                    raise AssertionError(verdict.line())
        checks.update(_check_shared(names, kind, CHECK_SIZE))

    for size in SIZES:
        for kind in ("f16", "bf16"):
            base = BASELINE[kind]
            group = []
            if base in available:
                row = baselines.time(base, size, size, size, repeats=REPEATS, check_first=False)
                row.update(rung="cuBLAS", title=baselines.get_kind(base).title)
                group.append(row)
            for name in progress(kernels(kind), desc=f"{size}³ {kind}"):
                row = bench.time_kernel(name, size, size, size, repeats=REPEATS,
                                        check_first=False)
                rung = name.rsplit("_", 1)[0]
                cfg = RUNG_CONFIGS.get(rung)
                row.update(rung=rung if cfg else "mma.sync (chapter 5)",
                           title=TITLES.get(rung, get_spec(name).title),
                           config=cfg.label if cfg else "128x128x64, 3 stages, mma.sync")
                group.append(row)
            ref = next((r["tflops"] for r in group if r["kernel"] == f"cublas_{base}"), None)
            for row in group:
                verdict = checks.get(row["kernel"])
                if verdict is not None:
                    row.update(check_size=CHECK_SIZE, rel_frobenius=verdict.rel_frobenius,
                               max_err_over_max_entry=verdict.max_err_over_max_entry)
                row["ratio_to_cublas"] = row["tflops"] / ref if ref else None
            rows.extend(group)

    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"sizes": list(SIZES), "check_size": CHECK_SIZE,
                           "odd_shapes": [list(s) for s in ODD_SHAPES], "rungs": list(RUNGS),
                           "baselines": [b for b in BASELINE.values() if b in available],
                           "repeats": REPEATS, "inputs": "cache-hot (one buffer set), "
                           "uniform(-1, 1)",
                           "configs": {k: c.label for k, c in RUNG_CONFIGS.items()}},
            "notes": "ratio_to_cublas: TFLOP/s over cuBLAS with the same input type (FP16 or "
                     "BF16 in, FP32 out) measured in the same run at the same size."}
