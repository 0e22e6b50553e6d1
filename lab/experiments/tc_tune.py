"""Experiment ``tc_tune`` (chapter 5): tile configurations of the fed tensor-core kernel.

For each :class:`lab.kernels.k08_tc_pipeline.TileConfig` of :data:`CONFIGS`: compile, check once
at 1000×1030×999 against float64 (odd in every dimension, so the padding and the edges are
exercised), time at ``size``³ (cache-hot, median of 20), and record registers, shared memory,
blocks per SM allowed by registers and shared memory, TFLOP/s and the ratio to cuBLAS FP16 timed
in the same run. A configuration that fails to compile or to check is not timed; the file's
notes name it.

The list varies one thing at a time around 128×128 block tiles with 64×64 warp tiles: the
k-depth and number of stages, the warp tile, the block tile, the block order (group_m) and the
swizzle. ``quick=True`` times four of them (:data:`QUICK`).
"""
from __future__ import annotations

import time

import numpy as np

from lab import bench
from lab.kernels.k08_tc_pipeline import TileConfig

CHAPTER = "5"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16",)
H200_SECONDS = 24  # measured: 24 s on the H200 (13 configurations)
H200_SECONDS_QUICK = 10  # estimate with quick=True: 4 of 13 configurations at ~2 s each

SIZE = 4096
REPEATS = 20
CHECK_SHAPE = (1000, 1030, 999)
#: Columns of the printed table (``tools/tune_tc.py``).
COLUMNS = ("varies", "config", "threads", "regs", "smem_KB", "blocks_per_sm", "median_ms",
           "tflops", "vs_cublas")

C = TileConfig
#: (what the row varies, config) — every config is swizzled with group_m 8 unless it says so.
CONFIGS = (
    ("depth, stages", C(128, 128, 32, 64, 64, 3)),
    ("depth, stages", C(128, 128, 32, 64, 64, 4)),
    ("depth, stages", C(128, 128, 32, 64, 64, 5)),
    ("depth, stages", C(128, 128, 64, 64, 64, 3)),
    ("depth, stages", C(128, 128, 64, 64, 64, 4)),
    ("warp tile", C(128, 128, 32, 64, 32, 4)),
    ("warp tile", C(128, 128, 32, 32, 64, 4)),
    ("block tile", C(128, 256, 32, 64, 64, 3)),
    ("block tile", C(128, 256, 32, 64, 64, 4)),
    ("block order", C(128, 128, 32, 64, 64, 4, group_m=1)),
    ("block order", C(128, 128, 32, 64, 64, 4, group_m=4)),
    ("block order", C(128, 128, 32, 64, 64, 4, group_m=16)),
    ("swizzle", C(128, 128, 32, 64, 64, 4, swizzle=False)),
)
#: What ``quick=True`` times: one of each kind of change.
QUICK = tuple(CONFIGS[i] for i in (1, 3, 7, 12))


def run(progress, *, size: int = SIZE, quick: bool = False) -> dict:
    from numba import cuda

    from lab import baselines
    from lab.kernels.k08_tc_pipeline import SIGNATURE, kernel_for, launcher

    n = size
    flops = 2.0 * n ** 3
    a, b = bench.random_inputs(n, n, n, np.float16)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    x, y = bench.random_inputs(*CHECK_SHAPE, np.float16)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)

    def timed(launch) -> bench.Timing:
        return bench.time_gpu(lambda i: launch(d_a, d_b, d_c), warmup=3, repeats=REPEATS)

    cublas = None
    if "fp16" in baselines.available():
        cublas = timed(lambda p, q, r: baselines.launch("fp16", p, q, r))
    ref_tflops = cublas.tflops(flops) if cublas else None
    chosen = QUICK if quick else CONFIGS
    rows, failed = [], []
    for varies, cfg in progress(chosen, desc="tensor-core configurations"):
        row = {"kernel": "tc " + cfg.label, "config": cfg.label, "varies": varies,
               "bm": cfg.bm, "bn": cfg.bn, "bk": cfg.bk, "wm": cfg.wm, "wn": cfg.wn,
               "stages": cfg.stages, "swizzle": cfg.swizzle, "group_m": cfg.group_m,
               "threads": cfg.threads, "smem_KB": cfg.shared_bytes / 1024}
        try:
            t0 = time.time()
            compiled = kernel_for(cfg).compile(SIGNATURE[cfg.kind])
            regs = compiled._codelibrary.get_cufunc().attrs.regs
            by_regs = 65536 // (max(regs, 1) * cfg.threads)
            by_smem = (228 * 1024) // (cfg.shared_bytes + 1024)
            row.update(regs=regs, blocks_per_sm=min(by_regs, by_smem, 32 // cfg.warps),
                       compile_s=time.time() - t0)
            launch = launcher(cfg)
            out = cuda.to_device(np.full(CHECK_SHAPE[:2], np.nan, np.float32))
            launch(d_x, d_y, out)
            verdict = bench.compare(out.copy_to_host(), x, y, kernel=row["kernel"])
            if not verdict.passed:
                raise AssertionError(f"check failed: {verdict.line()}")
            t = timed(launch)
        except Exception as exc:  # noqa: BLE001 - one broken configuration must not end the sweep
            failed.append(f"{cfg.label}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        row.update(t.row(), tflops=t.tflops(flops),
                   vs_cublas=t.tflops(flops) / ref_tflops if ref_tflops else None)
        rows.append(row)
    if cublas:
        rows.append({"kernel": "cublas_fp16", "config": "cuBLAS FP16 in, FP32 out",
                     "varies": "reference", **cublas.row(), "tflops": ref_tflops,
                     "vs_cublas": 1.0})
    return {"rows": rows, "row_fields": ["kernel", "config", "varies", "median_ms", "tflops"],
            "parameters": {"size": n, "repeats": REPEATS, "inputs": "cache-hot",
                           "check": "x".join(map(str, CHECK_SHAPE))
                                    + " against float64, before timing",
                           "configs": len(chosen), "quick": quick},
            "notes": ("vs_cublas compares with cuBLAS FP16-in/FP32-out timed in the same run; "
                      "blocks_per_sm is the limit from registers and shared memory."
                      + (" Failed: " + "; ".join(failed) if failed else ""))}
