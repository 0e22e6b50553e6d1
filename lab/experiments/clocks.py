"""Experiment ``clocks`` (chapter 9): SM clock, power and temperature while the top of the
ladder runs for seconds at a time.

Our best FP32 kernel (``warptile_tuned``), our tensor-core kernel (``tc_fp16``) and cuBLAS FP16
run one after the other at :data:`SIZE`³, each for :data:`RUN_S` seconds of back-to-back calls,
with idle gaps between them, while :class:`lab.clocks.Sampler` reads NVML every 20 ms in a
background thread. Each provider is checked against float64 at an odd and a round shape first.

Rows (``part``):

* ``check`` — the checks;
* ``chunk`` — the calls of one provider in chunks of about :data:`CHUNK_S` (CUDA events around
  each chunk; ``t_s`` its midpoint on the sampler's clock, ``ms_per_call``, ``tflops``);
* ``summary`` — per provider: median/min/max ms per call over its chunks (at least
  :data:`MIN_CHUNKS`), the SM clock (median/min/max), power (mean/max) and temperature (max)
  of its samples after the first :data:`SKIP_S`, the roof of its unit at the GPU's maximum
  SM clock and at the sampled median (:func:`lab.clocks.roof_at`), and the rate as a share of
  each; an ``idle`` row summarises the samples between phases;
* ``sample`` — every NVML sample: ``t_s``, ``sm_mhz``, ``power_w``, ``temp_c``; ``kernel``
  is the phase it fell in (``idle`` between phases).

The clocks are the GPU's own: nothing here sets or locks them.
"""
from __future__ import annotations

import time

import numpy as np

from lab import bench, clocks, device, model, providers, timing

CHAPTER = "9"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("warptile_tuned", "tc_fp16")
#: Estimate: compiles and checks (~20 s), 8192³ inputs (~5 s), 2 s idle, three phases of
#: 4 s with 2 s gaps.
H200_SECONDS = 45  # measured: 42 s on the H200 (wall of the committed run)

SIZE = 8192
PROVIDERS = ("warptile_tuned", "tc_fp16", "cublas_fp16")
#: The unit whose roof each provider runs against.
UNITS = {"warptile_tuned": "fp32", "tc_fp16": "tensor_fp16", "cublas_fp16": "tensor_fp16"}
CHECK_SHAPES = ((1000, 1030, 999), (1024, 1024, 1024))
RUN_S = 4.0
IDLE_S = 2.0
GAP_S = 2.0
CHUNK_S = 0.1
MIN_CHUNKS = 20
SKIP_S = 0.5
WARMUP = 3
ROW_FIELDS = ("part", "kernel")


def _sustain(name: str, sampler, flops: float) -> list[dict]:
    """Run provider ``name`` for :data:`RUN_S` seconds in event-timed chunks, inside a
    sampler phase of that name; the chunk rows."""
    from numba import cuda

    p = providers.get(name)
    a, b = bench.random_inputs(SIZE, SIZE, SIZE, p.dtype)
    call = p.prepare(cuda.to_device(a), cuda.to_device(b),
                     cuda.device_array((SIZE, SIZE), dtype=p.out_dtype))
    for _ in range(WARMUP):
        call()
    cuda.synchronize()
    t0 = time.perf_counter()
    call()
    cuda.synchronize()
    per_chunk = max(1, round(CHUNK_S / (time.perf_counter() - t0)))
    chunks = []
    with sampler.phase(name):
        end = sampler.now() + RUN_S
        while sampler.now() < end or len(chunks) < MIN_CHUNKS:
            t_start = sampler.now()
            ms = timing.event_samples(lambda i: call(), warmup=0, repeats=1,
                                      batch=per_chunk)[0]
            chunks.append({"part": "chunk", "kernel": name, "t_s": (t_start + sampler.now()) / 2,
                           "calls": per_chunk, "ms_per_call": ms,
                           "tflops": flops / (ms * 1e-3) / 1e12})
    return chunks


def summarize(name: str, chunks: list[dict], samples: list[dict], *, sms: int,
              max_mhz: float, cc: tuple[int, int]) -> dict:
    """The ``summary`` row of one provider (see the module docstring)."""
    ms = [c["ms_per_call"] for c in chunks]
    median = float(np.median(ms))
    tflops = model.flops(SIZE, SIZE, SIZE) / (median * 1e-3) / 1e12
    clock = clocks.summary(samples, name, SKIP_S)
    roof = clocks.roof_at(UNITS[name], sms, max_mhz, clock["sm_mhz_median"], cc)
    p = providers.get(name)
    return {"part": "summary", "kernel": name, "layer": p.layer, "unit": UNITS[name],
            "m": SIZE, "n": SIZE, "k": SIZE, "dtype": p.dtype_name,
            "median_ms": median, "min_ms": float(min(ms)), "max_ms": float(max(ms)),
            "repeats": len(ms), "tflops": tflops, **clock, "max_sm_mhz": max_mhz, **roof,
            "of_roof_boost": tflops / roof["roof_boost_tflops"],
            "of_roof_sampled": tflops / roof["roof_sampled_tflops"]}


def run(progress) -> dict:
    bench.require_gpu("the clocks experiment")
    why = clocks.reason()
    if why:
        raise RuntimeError(why)
    for name in PROVIDERS:
        providers.get(name).require()
    rows = []
    bench.compile_ahead(PROVIDERS)          # ours among them; the library names are passed over
    for name in progress(PROVIDERS, desc="checks"):
        for shape in CHECK_SHAPES:
            v = bench.check(name, *shape)
            if not v.passed:
                raise AssertionError(f"check failed before timing: {v.line()}")
            rows.append({"part": "check", "kernel": name, "m": shape[0], "n": shape[1],
                         "k": shape[2], "dtype": v.dtype, "rel_frobenius": v.rel_frobenius,
                         "err_over_bound": v.err_over_bound, "passed": True})
    prov = device.provenance()
    cc = tuple(int(x) for x in prov["compute_capability"].split("."))
    flops = model.flops(SIZE, SIZE, SIZE)
    chunks = {}
    with clocks.Sampler() as sampler:
        time.sleep(IDLE_S)
        for name in progress(PROVIDERS, desc="sustained runs"):
            chunks[name] = _sustain(name, sampler, flops)
            time.sleep(GAP_S)
    samples = sampler.rows()
    for name in PROVIDERS:
        rows += chunks[name]
        rows.append(summarize(name, chunks[name], samples, sms=prov["sm_count"],
                              max_mhz=sampler.max_sm_mhz, cc=cc))
    rows.append({"part": "summary", "kernel": "idle", **clocks.summary(samples, "idle")})
    rows += [{"part": "sample", "kernel": s["phase"], "t_s": s["t_s"], "sm_mhz": s["sm_mhz"],
              "power_w": s["power_w"], "temp_c": s["temp_c"]} for s in samples]
    return {"rows": rows, "row_fields": list(ROW_FIELDS),
            "parameters": {"size": SIZE, "providers": list(PROVIDERS), "units": UNITS,
                           "run_s": RUN_S, "idle_s": IDLE_S, "gap_s": GAP_S,
                           "chunk_s": CHUNK_S, "skip_s": SKIP_S, "warmup": WARMUP,
                           "interval_s": sampler.interval_s, "phases": sampler.phases,
                           "max_sm_mhz": sampler.max_sm_mhz,
                           "power_limit_w": sampler.power_limit_w,
                           "sampling_errors": sampler.errors,
                           "flop_per_clock_per_sm": clocks.FLOP_PER_CLOCK_PER_SM.get(cc),
                           "inputs": "cache-hot, one buffer set per provider"},
            "notes": "Clocks, power and temperature from NVML (nvidia-ml-py) every 20 ms in a "
                     "background thread; NVML's power is itself averaged by the driver. "
                     "roof_*_tflops = FLOP per clock per SM x SMs x clock (lab.clocks)."}
