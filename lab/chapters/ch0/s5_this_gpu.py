"""Chapter 0, section 5: on a live GPU, the roofs re-measured beside the H200 reference."""
from __future__ import annotations

import numpy as np

from lab import device, page, results, roofline


def measure_here():
    """On a GPU: re-measure the FMA and streaming-read roofs briefly (a few seconds) and return
    them as a table beside the H200 reference. Without a GPU: nothing (the introduction says
    once what the simulator skips)."""
    if not device.GPU:
        return None
    from numba import cuda

    from lab import bench

    ref = roofline.measured(results.REFERENCE_GPU)
    sms = device.provenance()["sm_count"]
    blocks, threads_per_block, trips = sms * 16, 256, 1024
    xy = cuda.to_device(np.array([0.9999, 1e-4], dtype=np.float32))
    out = cuda.device_array(blocks * threads_per_block, dtype=np.float32)
    fma = bench.time_gpu(lambda i: roofline.fma_kernel[blocks, threads_per_block](
        xy, out, np.int32(trips)), warmup=3, repeats=10)
    tflops = roofline.fma_flops(blocks * threads_per_block, trips) / (fma.median_ms * 1e-3) / 1e12
    nbytes = 2 ** 30
    x = cuda.to_device(np.ones(nbytes // 4, dtype=np.float32))
    sink = cuda.device_array(sms * 8 * 512, dtype=np.float32)
    read = bench.time_gpu(lambda i: roofline.read_kernel[sms * 8, 512](x, sink), repeats=10)
    gbps = nbytes / (read.median_ms * 1e-3) / 1e9
    here = page.gpu_label(device.provenance()["gpu"] or "this GPU")
    rows = [{"roof": "FP32 FMA chains", "here": tflops, "ref": ref["fma_tflops"],
             "unit": "TFLOP/s"},
            {"roof": "streaming read", "here": gbps / 1e3, "ref": ref["read_gbps"] / 1e3,
             "unit": "TB/s"}]
    return page.table(rows, ["roof", "here", "ref", "unit"],
                      {"here": f"{here} (now)", "ref": "H200 (reference)"})
