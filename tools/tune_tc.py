"""Sweep tile configurations of the fed tensor-core kernel on the GPU (about 1–2 minutes).

    python3 tools/tune_tc.py [--size 4096] [--quick]

For each :class:`lab.kernels.k08_tc_pipeline.TileConfig` below: compile, check once at 256³
and 1000×1030×999 against float64, time at ``size``³ (cache-hot, median of 20), and print
registers, shared memory, blocks per SM allowed by registers/shared memory, TFLOP/s and the
ratio to cuBLAS FP16 timed in the same run. The last line names the fastest configuration.
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
CONFIGS = [
    C(128, 128, 32, 64, 64, 3), C(128, 128, 32, 64, 64, 4), C(128, 128, 32, 64, 64, 5),
    C(128, 128, 64, 64, 64, 3), C(128, 128, 64, 64, 64, 4),
    C(128, 128, 32, 64, 32, 4), C(128, 128, 32, 32, 64, 4),
    C(128, 256, 32, 64, 64, 3), C(128, 256, 32, 64, 64, 4),
    C(256, 128, 32, 64, 64, 3), C(256, 128, 32, 64, 64, 4),
    C(128, 256, 64, 64, 64, 3), C(256, 128, 64, 64, 64, 3),
    C(128, 128, 32, 64, 64, 4, group_m=1), C(128, 128, 32, 64, 64, 4, group_m=4),
    C(128, 128, 32, 64, 64, 4, group_m=16),
    C(128, 128, 32, 64, 64, 4, swizzle=False),
]
QUICK = CONFIGS[:2] + CONFIGS[7:9]


def _time(launch, a, b, c) -> bench.Timing:
    return bench.time_gpu(lambda i: launch(a, b, c), warmup=3, repeats=20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--quick", action="store_true", help="4 configurations only")
    args = parser.parse_args()
    bench.require_gpu("tune_tc")
    from numba import cuda

    n = args.size
    flops = 2.0 * n ** 3
    a, b = bench.random_inputs(n, n, n, np.float16)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    ref_tflops = None
    if "fp16" in baselines.available():
        t = _time(lambda x, y, z: baselines.launch("fp16", x, y, z), d_a, d_b, d_c)
        ref_tflops = t.tflops(flops)
        print(f"cuBLAS FP16 (FP32 acc) {n}³: {t.median_ms:.3f} ms, {ref_tflops:.0f} TFLOP/s")
    sms = device.provenance()["sm_count"]
    rows = []
    started = time.time()
    for cfg in (QUICK if args.quick else CONFIGS):
        launch = launcher(cfg)
        row = {"config": cfg.label, "threads": cfg.threads, "smem_KB": cfg.shared_bytes / 1024}
        try:
            t0 = time.time()
            compiled = kernel_for(cfg).compile(SIGNATURE[cfg.kind])
            regs = compiled._codelibrary.get_cufunc().attrs.regs
            by_regs = 65536 // (max(regs, 1) * cfg.threads)
            by_smem = (228 * 1024) // (cfg.shared_bytes + 1024)
            row.update(regs=regs, blocks_per_sm=min(by_regs, by_smem, 32 // cfg.warps),
                       compile_s=time.time() - t0)
            for shape in ((256, 256, 256), (1000, 1030, 999)):
                x, y = bench.random_inputs(*shape, np.float16)
                ref = bench.to_float64(x) @ bench.to_float64(y)
                out = cuda.to_device(np.full((shape[0], shape[1]), np.nan, np.float32))
                launch(cuda.to_device(x), cuda.to_device(y), out)
                verdict = bench.compare(out.copy_to_host(), ref, dtype_name="float16")
                if not verdict.passed:
                    raise AssertionError(f"check failed at {shape}: {verdict.line()}")
            t = _time(launch, d_a, d_b, d_c)
            row.update(ms=t.median_ms, tflops=t.tflops(flops),
                       vs_cublas=t.tflops(flops) / ref_tflops if ref_tflops else None)
        except Exception as exc:  # noqa: BLE001 - report and go on with the sweep
            row["error"] = f"{type(exc).__name__}: {str(exc)[:120]}"
        rows.append(row)
        print(tables.render([row]).splitlines()[-1], flush=True)
    print()
    print(tables.render(rows, ["config", "threads", "regs", "smem_KB", "blocks_per_sm", "ms",
                               "tflops", "vs_cublas", "error"]))
    timed = [r for r in rows if r.get("tflops")]
    if timed:
        best = max(timed, key=lambda r: r["tflops"])
        print(f"\nbest: {best['config']}  {best['tflops']:.0f} TFLOP/s"
              + (f"  ({best['vs_cublas']:.0%} of cuBLAS FP16)" if best.get("vs_cublas") else ""))
    print(f"sweep took {time.time() - started:.0f} s on {device.provenance()['gpu']} "
          f"({sms} SMs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
