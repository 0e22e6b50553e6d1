"""Experiment ``roofline``: the FP32 FMA roof, the streaming-read and copy memory roofs.

Sizes are chosen so each timed call runs for milliseconds (clocks settle) and the memory
buffers are many times the 60 MB L2 (every byte really comes from HBM).
"""
from __future__ import annotations

import numpy as np

from lab import bench, device, roofline

CHAPTER = "0"
NEEDS = ()
H200_SECONDS = 15  # measured: 15 s on the H200 (timing run of `measure`, 2026-12-01)

FMA_BLOCK = 256
FMA_BLOCKS_PER_SM = 16
FMA_TRIPS = 4096
READ_BYTES = 4 * 2**30          # 4 GiB streamed once per call
COPY_BYTES = 2 * 2**30          # 2 GiB read + 2 GiB written per call
MEM_BLOCK = 512
MEM_BLOCKS_PER_SM = 8


def run(progress) -> dict:
    from numba import cuda

    sms = device.provenance()["sm_count"]
    rows = []
    steps = progress(["fma", "read", "copy", "memcpy"], desc="roofline")
    for step in steps:
        if step == "fma":
            blocks = sms * FMA_BLOCKS_PER_SM
            threads = blocks * FMA_BLOCK
            xy = cuda.to_device(np.array([0.9999, 1e-4], dtype=np.float32))
            out = cuda.device_array(threads, dtype=np.float32)
            t = bench.time_gpu(lambda i: roofline.fma_kernel[blocks, FMA_BLOCK](
                xy, out, np.int32(FMA_TRIPS)), warmup=5, repeats=20)
            clock = device._nvidia_smi("clocks.sm")
            host = out.copy_to_host()
            assert np.all(np.isfinite(host)), "FMA kernel produced non-finite values"
            flops = roofline.fma_flops(threads, FMA_TRIPS)
            rows.append({"kernel": "fma_chains", "roof": "compute", **t.row(),
                         "tflops": flops / (t.median_ms * 1e-3) / 1e12,
                         "tflops_best": flops / (t.min_ms * 1e-3) / 1e12,
                         "sm_clock_after_mhz": clock, "threads": threads,
                         "chains": roofline.CHAINS, "unroll": roofline.UNROLL,
                         "trips": FMA_TRIPS})
        elif step == "read":
            n = READ_BYTES // 4
            x = cuda.to_device(np.random.default_rng(0).random(n, dtype=np.float32))
            blocks = sms * MEM_BLOCKS_PER_SM
            out = cuda.device_array(blocks * MEM_BLOCK, dtype=np.float32)
            t = bench.time_gpu(lambda i: roofline.read_kernel[blocks, MEM_BLOCK](x, out),
                               warmup=3, repeats=20)
            total = out.copy_to_host().astype(np.float64).sum()
            expect = x.copy_to_host().astype(np.float64).sum()
            assert abs(total - expect) <= 1e-3 * expect, "read kernel skipped elements"
            rows.append({"kernel": "stream_read", "roof": "memory", **t.row(),
                         "bytes": READ_BYTES, "gbps": READ_BYTES / (t.median_ms * 1e-3) / 1e9,
                         "gbps_best": READ_BYTES / (t.min_ms * 1e-3) / 1e9})
            del x
        elif step == "copy":
            n = COPY_BYTES // 4
            src = cuda.to_device(np.arange(n, dtype=np.float32))
            dst = cuda.device_array(n, dtype=np.float32)
            blocks = sms * MEM_BLOCKS_PER_SM
            t = bench.time_gpu(lambda i: roofline.copy_kernel[blocks, MEM_BLOCK](src, dst),
                               warmup=3, repeats=20)
            assert np.array_equal(dst[:1 << 20].copy_to_host(), src[:1 << 20].copy_to_host())
            moved = 2 * COPY_BYTES
            rows.append({"kernel": "copy", "roof": "memory", **t.row(), "bytes": moved,
                         "gbps": moved / (t.median_ms * 1e-3) / 1e9,
                         "gbps_best": moved / (t.min_ms * 1e-3) / 1e9})
        else:
            t = bench.time_gpu(lambda i: dst.copy_to_device(src), warmup=3, repeats=20)
            moved = 2 * COPY_BYTES
            rows.append({"kernel": "memcpy_d2d", "roof": "memory", **t.row(), "bytes": moved,
                         "gbps": moved / (t.median_ms * 1e-3) / 1e9,
                         "gbps_best": moved / (t.min_ms * 1e-3) / 1e9})
    return {"rows": rows,
            "parameters": {"fma_block": FMA_BLOCK, "fma_blocks_per_sm": FMA_BLOCKS_PER_SM,
                           "fma_trips": FMA_TRIPS, "chains": roofline.CHAINS,
                           "unroll": roofline.UNROLL, "read_bytes": READ_BYTES,
                           "copy_bytes": COPY_BYTES, "mem_block": MEM_BLOCK,
                           "mem_blocks_per_sm": MEM_BLOCKS_PER_SM, "inputs": "cache-cold "
                           "(buffers many times the L2)"}}
