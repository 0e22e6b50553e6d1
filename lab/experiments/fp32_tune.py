"""Experiment ``fp32_tune`` (chapter 4): the warp-tiled FP32 kernel's tuning space on this GPU.

For every configuration of :func:`lab.kernels.k06_warptile.sweep_configs` (block tile, k-depth,
warp tile, lane layout, thread patch), plus a launch-bounds variant of each 256-thread 128×128
one: compile, check against float64 at 512³, then time at ``n``³ (cache-hot, CUDA events) beside
cuBLAS FP32 (TF32 off) timed in the same run. A configuration that fails its check is not timed;
the file's notes name it.

Rows: kernel (= config), config, lb (launch bounds: minimum blocks per SM, 0 = none), regs (what
the driver allocated), blocks/SM (the occupancy those registers and the shared memory allow),
threads, median_ms, min_ms, max_ms, tflops, pct_cublas; one ``cublas_fp32`` row.
``quick=True`` times the k-depth-8 configurations and the registered ones (9 of 26).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lab import bench, model

CHAPTER = "4"
NEEDS = ("cupy",)
H200_SECONDS = 195  # measured: 195 s on the H200 (26 configurations, ~7 s of compiling each)
H200_SECONDS_QUICK = 70  # estimate with quick=True: 9 of 26 configurations at ~7.5 s each

N = 4096
REPEATS = 10
CHECK_N = 512
#: Columns of the printed table (``tools/tune_fp32.py``).
COLUMNS = ("config", "lb", "regs", "blocks/SM", "median_ms", "tflops", "pct_cublas")


def configs(quick: bool = False) -> list:
    """The configurations the sweep times, in order: every one of the tuning space and a
    launch-bounds variant of each 256-thread 128×128 one; with ``quick``, only those of k-depth
    8 and the registered ones (``lab.kernels.k06_warptile.VARIANTS``)."""
    from lab.kernels.k06_warptile import VARIANTS, sweep_configs

    out = []
    for cfg in sweep_configs():
        out.append(cfg)
        if cfg.threads == 256 and (cfg.BM, cfg.BN) == (128, 128):
            out.append(replace(cfg, min_blocks=2))
    if quick:
        registered = set(VARIANTS.values())
        out = [cfg for cfg in out if cfg.BK == 8 or cfg in registered]
    return out


def run(progress, *, n: int = N, repeats: int = REPEATS, quick: bool = False) -> dict:
    from numba import cuda

    from lab import baselines
    from lab.kernels.k04_vectorized import SIGNATURE, build

    a, b = bench.random_inputs(n, n, n, np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    a5, b5 = bench.random_inputs(CHECK_N, CHECK_N, CHECK_N, np.float32)
    s_a, s_b = cuda.to_device(a5), cuda.to_device(b5)

    cublas = None
    if "fp32" in baselines.available():
        cublas = bench.time("cublas_fp32", n, n, n, repeats=repeats, check_first=False)
    rows, failed = [], []
    built = [(cfg, build(cfg)) for cfg in configs(quick)]
    # every configuration compiles first; CHECK_N and n are tile multiples: the fast kernel
    bench.compile_ahead(pairs=[(fast, SIGNATURE) for _, (fast, _e, _l) in built])
    for cfg, (fast, _edges, launch) in progress(built, desc="fp32 configurations"):
        try:
            s_c = cuda.to_device(np.full((CHECK_N, CHECK_N), np.nan, dtype=np.float32))
            launch(s_a, s_b, s_c)
            verdict = bench.compare(s_c.copy_to_host(), a5, b5, kernel=cfg.label())
            if not verdict.passed:
                raise AssertionError(verdict.line())
            t = bench.time_gpu(lambda i: launch(d_a, d_b, d_c), repeats=repeats)
        except Exception as exc:  # noqa: BLE001 - one broken configuration must not end the sweep
            failed.append(f"{cfg.label()} lb={cfg.min_blocks}: {type(exc).__name__}: "
                          f"{str(exc)[:120]}")
            continue
        regs = fast.get_regs_per_thread()
        regs = max(regs.values()) if isinstance(regs, dict) else regs
        smem = fast.get_shared_mem_per_block()
        smem = max(smem.values()) if isinstance(smem, dict) else smem
        tflops = t.tflops(2.0 * n ** 3)
        rows.append({"kernel": cfg.label(), "config": cfg.label(), "lb": cfg.min_blocks,
                     "regs": int(regs),
                     "blocks/SM": model.blocks_per_sm(cfg.threads, int(regs), int(smem)),
                     "threads": cfg.threads, "median_ms": t.median_ms, "min_ms": t.min_ms,
                     "max_ms": t.max_ms, "tflops": tflops,
                     "pct_cublas": 100 * tflops / cublas["tflops"] if cublas else None})
    rows.sort(key=lambda r: -r["tflops"])
    if cublas:
        rows.append({"kernel": "cublas_fp32", "config": "cuBLAS FP32 (TF32 off)",
                     "median_ms": cublas["median_ms"], "min_ms": cublas["min_ms"],
                     "max_ms": cublas["max_ms"], "tflops": cublas["tflops"],
                     "pct_cublas": 100.0})
    return {"rows": rows, "row_fields": ["kernel", "config", "median_ms", "tflops"],
            "parameters": {"n": n, "repeats": repeats, "quick": quick,
                           "check": f"{CHECK_N}^3 against float64, before timing",
                           "inputs": "cache-hot",
                           "cublas": "fp32 (TF32 off)" if cublas else "unavailable"},
            "notes": ("pct_cublas compares with cuBLAS FP32 timed in the same run."
                      + (" Failed: " + "; ".join(failed) if failed else ""))}
