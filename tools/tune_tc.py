"""Sweep tile configurations of the fed tensor-core kernel on the GPU (under a minute).

    python3 tools/tune_tc.py [--size 4096] [--quick] [--out lab/results]

For each :class:`lab.kernels.k08_tc_pipeline.TileConfig` below: compile, check once at
1000×1030×999 against float64 (odd in every dimension, so the padding and the edges are
exercised), time at ``size``³ (cache-hot, median of 20), and print registers, shared memory,
blocks per SM allowed by registers/shared memory, TFLOP/s and the ratio to cuBLAS FP16 timed
in the same run. The last line names the fastest configuration. With ``--out DIR`` the table
is also saved as ``DIR/<gpu>/tc_tune.json`` (lab.results schema; the book's chapter 5 reads it).

The list varies one thing at a time around 128×128 block tiles with 64×64 warp tiles:
the k-depth and number of stages, the warp tile, the block tile, the block order (group_m)
and the swizzle.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from lab import baselines, bench, device, tables  # noqa: E402
from lab.kernels.k08_tc_pipeline import (SIGNATURE, TileConfig, kernel_for,  # noqa: E402
                                         launcher)

C = TileConfig
#: (what the row varies, config) — every config is swizzled with group_m 8 unless it says so.
CONFIGS = [
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
]
QUICK = [CONFIGS[i] for i in (1, 3, 7, 12)]


def _time(launch, a, b, c) -> bench.Timing:
    return bench.time_gpu(lambda i: launch(a, b, c), warmup=3, repeats=20)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--quick", action="store_true", help="4 configurations only")
    parser.add_argument("--out", help="also save the table as <OUT>/<gpu>/tc_tune.json "
                                      "(lab.results schema), e.g. --out lab/results")
    args = parser.parse_args(argv)
    bench.require_gpu("tune_tc")
    from numba import cuda

    n = args.size
    flops = 2.0 * n ** 3
    a, b = bench.random_inputs(n, n, n, np.float16)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    check_shape = (1000, 1030, 999)
    x, y = bench.random_inputs(*check_shape, np.float16)
    ref = bench.to_float64(x) @ bench.to_float64(y)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    cublas = None
    if "fp16" in baselines.available():
        cublas = _time(lambda p, q, r: baselines.launch("fp16", p, q, r), d_a, d_b, d_c)
        print(f"cuBLAS FP16 (FP32 acc) {n}³: {cublas.median_ms:.3f} ms, "
              f"{cublas.tflops(flops):.0f} TFLOP/s")
    ref_tflops = cublas.tflops(flops) if cublas else None
    sms = device.provenance()["sm_count"]
    rows = []
    started = time.time()
    for varies, cfg in (QUICK if args.quick else CONFIGS):
        launch = launcher(cfg)
        row = {"config": cfg.label, "varies": varies, "bm": cfg.bm, "bn": cfg.bn, "bk": cfg.bk,
               "wm": cfg.wm, "wn": cfg.wn, "stages": cfg.stages, "swizzle": cfg.swizzle,
               "group_m": cfg.group_m, "threads": cfg.threads,
               "smem_KB": cfg.shared_bytes / 1024}
        try:
            t0 = time.time()
            compiled = kernel_for(cfg).compile(SIGNATURE[cfg.kind])
            regs = compiled._codelibrary.get_cufunc().attrs.regs
            by_regs = 65536 // (max(regs, 1) * cfg.threads)
            by_smem = (228 * 1024) // (cfg.shared_bytes + 1024)
            row.update(regs=regs, blocks_per_sm=min(by_regs, by_smem, 32 // cfg.warps),
                       compile_s=time.time() - t0)
            out = cuda.to_device(np.full(check_shape[:2], np.nan, np.float32))
            launch(d_x, d_y, out)
            verdict = bench.compare(out.copy_to_host(), ref, dtype_name="float16")
            if not verdict.passed:
                raise AssertionError(f"check failed at {check_shape}: {verdict.line()}")
            t = _time(launch, d_a, d_b, d_c)
            row.update(t.row(), tflops=t.tflops(flops),
                       vs_cublas=t.tflops(flops) / ref_tflops if ref_tflops else None)
        except Exception as exc:  # noqa: BLE001 - report and go on with the sweep
            row["error"] = f"{type(exc).__name__}: {str(exc)[:120]}"
        rows.append(row)
        print(tables.render([row], ["config", "regs", "blocks_per_sm", "median_ms", "tflops",
                                    "error"]).splitlines()[-1], flush=True)
    print()
    print(tables.render(rows, ["config", "threads", "regs", "smem_KB", "blocks_per_sm",
                               "median_ms", "tflops", "vs_cublas", "error"]))
    timed = [r for r in rows if r.get("tflops")]
    if timed:
        best = max(timed, key=lambda r: r["tflops"])
        print(f"\nbest: {best['config']}  {best['tflops']:.0f} TFLOP/s"
              + (f"  ({best['vs_cublas']:.0%} of cuBLAS FP16)" if best.get("vs_cublas") else ""))
    print(f"sweep took {time.time() - started:.0f} s on {device.provenance()['gpu']} "
          f"({sms} SMs)")
    if args.out and timed:
        from lab import results

        saved = [dict(r, kernel="tc " + r["config"]) for r in timed]
        if cublas:
            saved.append({"kernel": "cublas_fp16", "config": "cuBLAS FP16 in, FP32 out",
                          "varies": "reference", **cublas.row(), "tflops": ref_tflops,
                          "vs_cublas": 1.0})
        failed = [f"{r['config']}: {r['error']}" for r in rows if r.get("error")]
        path = results.save(
            "tc_tune", saved,
            parameters={"size": n, "repeats": 20, "inputs": "cache-hot",
                        "check": "1000x1030x999 against float64, before timing",
                        "configs": len(rows)},
            command="python3 tools/tune_tc.py " + " ".join(argv if argv is not None
                                                          else sys.argv[1:]),
            row_fields=["kernel", "config", "varies", "median_ms", "tflops"],
            root=Path(args.out),
            notes=("vs_cublas compares with cuBLAS FP16-in/FP32-out timed in the same run; "
                   "blocks_per_sm is the limit from registers and shared memory."
                   + (" Failed: " + "; ".join(failed) if failed else "")))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
