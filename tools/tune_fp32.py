"""Tune the warp-tiled FP32 kernel on this GPU: one compact table, fastest first.

    python3 tools/tune_fp32.py [--n 4096] [--repeats 10] [--quick]

For every configuration of :func:`lab.kernels.k06_warptile.sweep_configs` (block tile,
k-depth, warp tile, lane layout, thread patch, with and without launch bounds): compile,
check against float64 at 512³, time at n³ (cache-hot, CUDA events), and print TFLOP/s and
% of cuBLAS FP32 (TF32 off, timed in the same run) with the registers the driver reports.
About 1–2 minutes on an H200 (most of it compiling).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="only the 128x128 and 128x64 tiles")
    p.add_argument("--out", help="also save the table as <OUT>/<gpu>/fp32_tune.json "
                                 "(lab.results schema), e.g. --out lab/results")
    args = p.parse_args(argv)

    import lab  # noqa: F401
    from lab import baselines, bench, device, tables
    from lab.kernels.k04_vectorized import build
    from lab.kernels.k06_warptile import sweep_configs
    from lab.experiments.patch_sweep import occupancy

    bench.require_gpu("tuning")
    from numba import cuda

    n = args.n
    a, b = bench.random_inputs(n, n, n, np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    a5, b5 = bench.random_inputs(512, 512, 512, np.float32)
    ref5 = a5.astype(np.float64) @ b5.astype(np.float64)
    s_a, s_b = cuda.to_device(a5), cuda.to_device(b5)
    s_c = cuda.device_array((512, 512), dtype=np.float32)

    cublas = None
    if "fp32" in baselines.available():
        cublas = baselines.time("fp32", n, n, n, repeats=args.repeats, check_first=False)
    configs = []
    for cfg in sweep_configs():
        if args.quick and (cfg.BM, cfg.BN) not in ((128, 128), (128, 64)):
            continue
        configs.append(cfg)
        if cfg.threads == 256 and (cfg.BM, cfg.BN) == (128, 128):
            configs.append(replace(cfg, min_blocks=2))
    print(device.describe())
    print(f"{len(configs)} configurations at {n}^3, {args.repeats} repeats each", flush=True)
    rows = []
    t0 = time.time()
    for cfg in configs:
        fast, _edges, launch = build(cfg)
        try:
            launch(s_a, s_b, s_c)
            v = bench.compare(s_c.copy_to_host(), ref5, kernel="tune", shape=(512,) * 3)
            t = bench.time_gpu(lambda i: launch(d_a, d_b, d_c), repeats=args.repeats)
        except Exception as exc:  # noqa: BLE001 - report and go on
            rows.append({"config": cfg.label(), "lb": cfg.min_blocks, "tflops": None,
                         "note": f"{type(exc).__name__}: {str(exc)[:60]}"})
            continue
        regs = fast.get_regs_per_thread()
        regs = max(regs.values()) if isinstance(regs, dict) else regs
        smem = fast.get_shared_mem_per_block()
        smem = max(smem.values()) if isinstance(smem, dict) else smem
        occ = occupancy(int(regs), int(smem), cfg.threads)
        tf = t.tflops(2.0 * n ** 3)
        rows.append({"config": cfg.label(), "lb": cfg.min_blocks, "regs": int(regs),
                     "blocks/SM": occ["blocks_per_sm"], "ms": t.median_ms, "min_ms": t.min_ms,
                     "max_ms": t.max_ms, "tflops": tf, "threads": cfg.threads,
                     "pct_cublas": 100 * tf / cublas["tflops"] if cublas else None,
                     "ok": v.passed})
        print(f"  {cfg.label():<70} lb={cfg.min_blocks} regs={regs:<4} {tf:6.2f} TFLOP/s "
              f"{'' if v.passed else 'CHECK FAILED'}", flush=True)
    rows.sort(key=lambda r: -(r["tflops"] or 0))
    print()
    if cublas:
        print(f"cuBLAS FP32 (TF32 off): {cublas['tflops']:.2f} TFLOP/s ({cublas['median_ms']:.3f} ms)")
    print(tables.render(rows, ["config", "lb", "regs", "blocks/SM", "ms", "tflops",
                               "pct_cublas", "ok"]))
    print(f"\n{len(rows)} configurations in {time.time() - t0:.0f} s")
    if args.out:
        from lab import results
        saved = [dict(r, kernel=r["config"]) for r in rows if r.get("tflops")]
        for r in saved:
            r["median_ms"] = r.pop("ms")
        if cublas:
            saved.append({"kernel": "cublas_fp32", "config": "cuBLAS FP32 (TF32 off)",
                          "median_ms": cublas["median_ms"], "tflops": cublas["tflops"],
                          "pct_cublas": 100.0})
        path = results.save("fp32_tune", saved, parameters={"n": n, "repeats": args.repeats,
                            "check": "512^3 against float64", "inputs": "cache-hot"},
                            command="python3 tools/tune_fp32.py " + " ".join(argv or sys.argv[1:]),
                            row_fields=["kernel", "config", "median_ms", "tflops"],
                            root=Path(args.out))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
