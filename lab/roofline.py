"""The two roofs of the machine, measured with our own kernels.

* :func:`fma_kernel` — the FP32 compute roof. Each thread runs ``CHAINS`` independent chains
  ``a = a * x + y`` (one FFMA each) entirely in registers; ``x`` and ``y`` are read from memory
  so the compiler cannot fold them. Independent chains hide the FFMA latency; the inner loop of
  ``UNROLL`` steps keeps loop overhead to a few instructions per ``CHAINS × UNROLL`` FFMAs.
* :func:`read_kernel` — the streaming-read memory roof: every element of a large array read
  once, ``LOADS`` independent loads in flight per thread before any is used.
* :func:`copy_kernel` — read + write, counting both directions (the number a datasheet's
  bandwidth is usually compared with).

The matmul's inner loop only reads, so the ridge point uses the streaming-read roof.
"""
from __future__ import annotations

from numba import cuda, float32, int32

from lab import results

#: Independent FMA chains per thread and FMA steps per loop trip.
CHAINS = 16
UNROLL = 8
#: Independent loads per thread per loop trip in the memory kernels.
LOADS = 8


@cuda.jit
def fma_kernel(xy, out, trips):
    i = cuda.grid(1)
    x = xy[0]
    y = xy[1]
    a0 = float32(i) * float32(1e-9)
    a1 = a0 + float32(1)
    a2 = a0 + float32(2)
    a3 = a0 + float32(3)
    a4 = a0 + float32(4)
    a5 = a0 + float32(5)
    a6 = a0 + float32(6)
    a7 = a0 + float32(7)
    a8 = a0 + float32(8)
    a9 = a0 + float32(9)
    a10 = a0 + float32(10)
    a11 = a0 + float32(11)
    a12 = a0 + float32(12)
    a13 = a0 + float32(13)
    a14 = a0 + float32(14)
    a15 = a0 + float32(15)
    # region: fma_loop
    trip = int32(0)
    while trip < trips:
        for _ in range(int32(UNROLL)):  # a constant trip count: fully unrolled
            a0 = a0 * x + y
            a1 = a1 * x + y
            a2 = a2 * x + y
            a3 = a3 * x + y
            a4 = a4 * x + y
            a5 = a5 * x + y
            a6 = a6 * x + y
            a7 = a7 * x + y
            a8 = a8 * x + y
            a9 = a9 * x + y
            a10 = a10 * x + y
            a11 = a11 * x + y
            a12 = a12 * x + y
            a13 = a13 * x + y
            a14 = a14 * x + y
            a15 = a15 * x + y
        trip += int32(1)
    # endregion: fma_loop
    out[i] = (((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))) + \
        (((a8 + a9) + (a10 + a11)) + ((a12 + a13) + (a14 + a15)))


def fma_flops(threads: int, trips: int) -> float:
    return 2.0 * threads * trips * UNROLL * CHAINS


@cuda.jit
def read_kernel(x, out):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = x.shape[0]
    acc = float32(0)
    j = i
    # region: read_loop
    while j + (LOADS - 1) * stride < n:
        v0 = x[j]
        v1 = x[j + stride]
        v2 = x[j + 2 * stride]
        v3 = x[j + 3 * stride]
        v4 = x[j + 4 * stride]
        v5 = x[j + 5 * stride]
        v6 = x[j + 6 * stride]
        v7 = x[j + 7 * stride]
        acc += ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))
        j += LOADS * stride
    # endregion: read_loop
    while j < n:
        acc += x[j]
        j += stride
    out[i] = acc


@cuda.jit
def copy_kernel(x, y):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = x.shape[0]
    j = i
    while j + 3 * stride < n:
        v0 = x[j]
        v1 = x[j + stride]
        v2 = x[j + 2 * stride]
        v3 = x[j + 3 * stride]
        y[j] = v0
        y[j + stride] = v1
        y[j + 2 * stride] = v2
        y[j + 3 * stride] = v3
        j += 4 * stride
    while j < n:
        y[j] = x[j]
        j += stride


#: FP32 lanes per SM by compute capability (each retires one FFMA, two FLOPs, per clock).
FP32_LANES_PER_SM = {"9.0": 128}

#: Datasheet peaks by the GPU name a results file records: FP32 TFLOP/s on the CUDA cores and
#: HBM bandwidth in TB/s. A GPU not listed is shown against its measured roofs only.
DATASHEETS = {
    "NVIDIA H200": {"fp32_tflops": 67.0, "hbm_tbps": 4.8, "source": "NVIDIA H200 SXM datasheet"},
    "NVIDIA H100 80GB HBM3": {"fp32_tflops": 67.0, "hbm_tbps": 3.35,
                              "source": "NVIDIA H100 SXM datasheet"},
}


def measured(gpu: str | None = None) -> dict:
    """The roofs of one GPU's ``roofline`` results file (the selected GPU by default).

    Keys: ``fma_tflops`` (FP32 FMA chains), ``read_gbps`` (streaming read), ``copy_gbps`` (read +
    write), ``memcpy_gbps`` (the driver's device-to-device copy), ``ridge`` (FLOP/byte where
    the FMA roof meets the read roof), ``gpu`` (the name recorded), ``sm_count``, ``l2_bytes``,
    ``max_clock_mhz``, ``cc``, ``rows`` (the rows by kernel) and ``data`` (the whole file).
    """
    data = results.load("roofline", gpu) if gpu else results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    prov = data["provenance"]
    fma = by["fma_chains"]["tflops"]
    read = by["stream_read"]["gbps"]
    clock = prov.get("max_sm_clock_mhz") or prov.get("sm_clock_mhz")
    return {"fma_tflops": fma, "read_gbps": read, "copy_gbps": by["copy"]["gbps"],
            "memcpy_gbps": by["memcpy_d2d"]["gbps"], "ridge": fma * 1e12 / (read * 1e9),
            "gpu": prov["gpu"], "sm_count": prov["sm_count"], "l2_bytes": prov.get("l2_bytes"),
            "max_clock_mhz": float(clock) if clock else None,
            "cc": prov["compute_capability"], "rows": by, "data": data}


SIGNATURES = {
    "fma_kernel": "void(float32[::1], float32[::1], int32)",
    "read_kernel": "void(float32[::1], float32[::1])",
    "copy_kernel": "void(float32[::1], float32[::1])",
}
