"""Experiment ``hopper_past`` (chapter 7): the Hopper rungs past the best one, against both
yardsticks, FP16, BF16 and FP8, at 4096³ and 8192³.

Yardsticks, each with the output type of the kernel it is put beside, timed in the same
process: cuBLAS with FP32 output (``cublas_fp16`` / ``cublas_bf16``, CuPy) for our FP32-output
kernels; ``torch.mm`` (cuBLAS, FP16/BF16 output, as a framework calls it) for our 16-bit-output
kernels; cuBLASLt FP8 (``torch._scaled_mm``, fast accumulation, the same output type) for our
FP8 kernels; and fast.cu's kernel 12 (:mod:`lab.twins.fastcu`, BF16 in and out), built with nvcc
on the GPU's machine and launched on our buffers.

Every variant is checked: against float64 on fresh inputs, the output poisoned with NaN first,
at :data:`ODD_SHAPES` (1×1×1, not multiples of any tile, non-square) and one round shape — in
the final measurement once per run, the children taking the configurations in turn, and a
configuration whose check fails is left out of the summary; fast.cu's kernel 12 on its own
shape rules (:data:`FASTCU_CHECK`), on sampled rows. Timing is GPU-only:
:func:`lab.timing.time_queued` queues 20 calls behind a busy kernel, so the host's launch cost
(the Hopper launcher's tensor-map look-ups and marshalling) is hidden and the events measure
the GPU's time per call. NVML samples the SM clock and board power during every row. Inputs
are cache-hot (one buffer set per size and type).

Children: the parent starts :data:`PROCESSES` child processes that compile side by side and take
turns on the GPU (:mod:`lab.gpulock`); each times every row of its share in rotated order
(``mode`` "explore": each child a share of :data:`EXPLORE`, one process per row; "final": every
child all of :data:`FINAL` and the FP8 rows, and ``summary`` rows give the median over the
processes of each process's ratio, with the lowest and highest). After the final measurement's
children the parent traces :data:`TRACED` (``trace`` rows: each tile's main loop and epilogue
on the GPU's nanosecond timer, and a call's steps outside its tiles: :mod:`._hopper_records`),
then times the yardsticks and :data:`TIMELINE` under CUPTI (``timeline``
rows: each kernel's duration and the gaps between back-to-back calls).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

import numpy as np

from lab.experiments import hopper_profile as P
from lab.experiments._hopper_records import call_steps, tile_steps, timeline_rows

CHAPTER = "7.2"
NEEDS = ("cupy", "torch")
NEEDS_KERNELS = ("wgmma_out16_fp16", "wgmma_grid128_fp16", "fp8_e4m3_cluster")
H200_SECONDS = 540  # measured: 538 s on the H200 (three children compiling side by side, then
#                     their GPU turns and Nsight Compute's)
#: ``measure --quick`` leaves this experiment as it is: its quick run is the exploration (every
#: variant once, no profiles, no final rows) (call ``run(progress, quick=True)`` for it).
QUICK_IN_MEASURE = False

SIZES = (4096, 8192)
KINDS = ("f16", "bf16")
ODD_SHAPES = ((1, 1, 1), (17, 33, 5), (257, 129, 67), (1000, 1030, 999), (130, 260, 72),
              (384, 520, 130), (512, 768, 320))
#: Shapes with more tiles of 128×256 than the H200 has SMs, and not a whole number of waves, so
#: that stream-K shares out a last wave: 289 tiles (25 left over, 3 or 4 k-slices per block,
#: up to 6 blocks per tile) and 300 tiles (36 left over, 13 k-slices each).
STREAMK_SHAPES = ((2100, 4200, 1000), (1536, 6400, 777))
#: Kernel 12's check: 2048, 64 units of work, one per cluster of its grid. (Its harness has the
#: tensor maps encoded again whenever the shape or a buffer changes, and the check's launcher
#: holds its buffers until the kernel is done.)
FASTCU_CHECK = (2048, 2048, 2048)
PROCESSES = 3
EXPLORE_PROCESSES = 4
CHILD_TIMEOUT_S = 580
BATCH, BATCHES = 20, 10
ROW_FIELDS = ("part", "kernel")
DTYPE = {"f16": "float16", "bf16": "bfloat16"}


#: Prefix of a profiled name that is a label of :func:`explore_configs` (FP16, no rung's).
PAST = "past:"
#: Rung 11 on cuBLAS's tile at 4096³, 256×128 (in the final measurement and its profile).
CUBLAS_TILE = "tmastore 16-bit out whole-tile grid 128 256x128"
#: Rung 11 with sleeping waits; with a tile order of 16-row groups.
SLEEP = "tmastore 16-bit out whole-tile grid 128 sleeping waits"
GROUP16 = "tmastore 16-bit out whole-tile grid 128 group_m 16"
#: Rung 11 with the ring's slot and phase kept as counters.
COUNTERS = "tmastore 16-bit out whole-tile grid 128 slot counters"
#: … and each wgmma's descriptors stepped from the k-slice's two (a constant added per wgmma).
STEPS = COUNTERS + " descriptor steps"
#: The FP32-output rung on 128 blocks with slot counters; and with descriptor steps.
F32_COUNTERS = "tmastore 3 stages grid 128 slot counters"
F32_STEPS = F32_COUNTERS + " descriptor steps"
#: … and its C staged through a ring of 4 boxes per warpgroup, one barrier per box.
F32_RING = F32_STEPS + " ring 4"
#: The FP32-output rung's main loop (4 stages) with its C stored from registers, 8 bytes a store.
VECTOR = "vector store grid 128 slot counters descriptor steps"
#: The FP32-output rung with each warp staging and storing its own rows (no barrier).
F32_WARP = F32_STEPS + " per-warp staging"
#: Rungs 13 and 14 with a uniform warpgroup index and a 32-bit k-slice loop (rungs 15, 16);
#: and with C's TMA stores marked evict-first in L2.
UNIFORM = STEPS + " uniform index"
F32_UNIFORM = F32_RING + " uniform index"
EVICT = UNIFORM + " C evict-first"
F32_EVICT = F32_UNIFORM + " C evict-first"
#: Rung 16 with its staged C handed to store threads through mbarriers (rung 17).
F32_HANDOFF = F32_UNIFORM + " store threads"
#: Rungs 15 and 17 with the tile order read from a table (rungs 18 and 19).
TABLE = UNIFORM + " tile table"
F32_TABLE = F32_HANDOFF + " tile table"
#: torch.mm with FP16 output under Nsight Compute (the yardstick of the 16-bit rungs).
TORCH_F16 = "torch.mm f16"


def _k():
    from lab.kernels import wgmma as K
    return K


def for_kind(cfg, kind: str):
    """``cfg`` (written for FP16) for input type ``kind`` (the rung table's rule: a 16-bit
    output follows the input)."""
    return _k().for_kind(cfg, kind)


def explore_configs() -> dict:
    """label -> FP16 configuration: rung 8, rung 9 and one change each (the exploration's
    variants). Whole-tile staging of a 16-bit C needs 32 KB per consumer warpgroup, so its
    kernels keep 3 stages (``... 3 stages`` is the control)."""
    K = _k()
    from lab.experiments._hopper_study import study
    c = K.RUNG_CONFIGS["wgmma_cluster"]
    t = K.RUNG_CONFIGS["wgmma_tmastore"]
    o = replace(c, out="f16")
    ot = replace(t, out="f16")
    tile = replace(ot, stages=3, store="tile")
    ctile = replace(o, stages=3, store="tile")
    assert tile == K.RUNG_CONFIGS["wgmma_tile16"]
    assert replace(tile, grid=128) == K.RUNG_CONFIGS["wgmma_grid128"]
    # rungs 13 and 14, registered: rung 11's and rung 7's best variants of the steps below
    assert replace(tile, grid=128, counters=True, steps=True) == K.RUNG_CONFIGS["wgmma_lean"]
    assert (replace(t, stages=3, grid=128, counters=True, steps=True, ring=4)
            == K.RUNG_CONFIGS["wgmma_ring"])
    return {
        "cluster": c,
        "tmastore grid 128": replace(t, grid=128),
        "tmastore 3 stages grid 128": replace(t, stages=3, grid=128),
        "cluster 16-bit out": o,
        "tmastore 16-bit out": ot,
        "tmastore 16-bit out 3 stages": replace(ot, stages=3),
        "tmastore 16-bit out whole-tile": tile,
        "tmastore 16-bit out whole-tile 240/24": replace(tile, regs=240, producer_regs=24),
        "tmastore 16-bit out whole-tile grid 128": replace(tile, grid=128),
        "tmastore 16-bit out whole-tile stream-K": replace(tile, streamk=True),
        "cluster 16-bit out whole-tile": ctile,
        "cluster 16-bit out whole-tile grid 128": replace(ctile, grid=128),
        # cuBLAS's tile at 4096³ (cublas_kernels: nvjet ..._256x128_64x4_1x2_..._coopA): each
        # consumer warpgroup 128×128, two m64 wgmma per k-step, the same 512 tiles
        "tmastore 16-bit out whole-tile 256x128": replace(tile, bm=256, bn=128),
        "tmastore 16-bit out whole-tile grid 128 256x128": replace(tile, grid=128, bm=256,
                                                                   bn=128),
        "cluster 16-bit out whole-tile 256x128": replace(ctile, bm=256, bn=128),
        # rung 11 with less energy per tile: waits that sleep instead of polling (fewer
        # instructions issued), then a tile order whose waves share panels of both A and B
        # (a group of 16 tile rows: a wave of 128 tiles at 4096³ is 16 rows × 8 columns)
        SLEEP: study(tile, grid=128, sleep=True),
        GROUP16: replace(tile, grid=128, group_m=16),
        # rung 11 with the ring's slot and phase kept as counters: its main loop divides by
        # the stage count once per tile, not once per k-slice (138 → 92 instructions per
        # k-slice in SASS), so the next wgmma is issued sooner after the wait
        COUNTERS: replace(tile, grid=128, counters=True),
        COUNTERS + " group_m 16": replace(tile, grid=128, counters=True, group_m=16),
        # the descriptors of a k-slice built once, each wgmma's a constant step from them
        # (67 instructions per k-slice in SASS, from 82 with slot counters alone)
        STEPS: K.RUNG_CONFIGS["wgmma_lean"],
        # the FP32-output rung on 128 blocks (rung 7, 3 stages), with slot counters, and with
        # descriptor steps
        F32_COUNTERS: replace(t, stages=3, grid=128, counters=True),
        F32_STEPS: replace(t, stages=3, grid=128, counters=True, steps=True),
        # and a ring of 4 staging boxes per warpgroup (64 KB; 2 before): the issuing thread
        # waits for the store three boxes back, not the one before last, and the warpgroup
        # meets once per box, not twice
        F32_RING: K.RUNG_CONFIGS["wgmma_ring"],
        # an FP32 C stored straight from the registers (8 bytes a store, whole sectors): no
        # staging, no barrier, no wait in the epilogue, and 4 stages fit again
        VECTOR: study(t, epilogue="direct", vector=True, grid=128, counters=True, steps=True),
        # each warp stages its own 16 rows of a box in a ring of four 2 KB boxes of its own
        # and issues their TMA store: the warps never wait for each other
        F32_WARP: study(t, stages=3, grid=128, counters=True, steps=True, warp_store=True,
                          ring=4),
        # rungs 13 and 14 with the warpgroup index read from lane 0 (uniform registers for
        # the descriptors) and the k-slice loop in 32 bits: 67 → 49 SASS instructions per
        # k-slice; then with C's stores marked evict-first, so that A's and B's panels stay in L2
        UNIFORM: K.RUNG_CONFIGS["wgmma_uniform"],
        F32_UNIFORM: K.RUNG_CONFIGS["wgmma_ring_uniform"],
        EVICT: study(K.RUNG_CONFIGS["wgmma_uniform"], c_evict=True),
        F32_EVICT: study(K.RUNG_CONFIGS["wgmma_ring_uniform"], c_evict=True),
        # rung 16 with the staged C handed over to a store thread per consumer warpgroup
        # (filled/freed mbarriers per box): no named barrier per box, no consumer thread
        # waiting for the copy engine to read a box
        F32_HANDOFF: K.RUNG_CONFIGS["wgmma_handoff"],
        # rungs 15 and 17 with each tile's row and column read from a table computed on the
        # host, not found with 64-bit divisions between tiles (rungs 18 and 19)
        TABLE: K.RUNG_CONFIGS["wgmma_table"],
        F32_TABLE: K.RUNG_CONFIGS["wgmma_handoff_table"],
    }


#: Labels timed in both input types during the exploration (the rest FP16 only).
EXPLORE_BOTH = (SLEEP, GROUP16, COUNTERS, COUNTERS + " group_m 16", STEPS, F32_COUNTERS,
                F32_STEPS, F32_RING, VECTOR, F32_WARP, UNIFORM, F32_UNIFORM, EVICT, F32_EVICT,
                F32_HANDOFF,
                "tmastore grid 128",
                "tmastore 3 stages grid 128", "cluster 16-bit out",
                "tmastore 16-bit out", "tmastore 16-bit out whole-tile",
                "tmastore 16-bit out whole-tile grid 128", "cluster 16-bit out whole-tile",
                "tmastore 16-bit out whole-tile 256x128",
                "tmastore 16-bit out whole-tile grid 128 256x128",
                "cluster 16-bit out whole-tile 256x128")


def fp8_configs() -> dict:
    """label -> FP8 configuration (e4m3, per-tensor scales, tensor-core accumulation)."""
    from lab.kernels.wgmma import fp8 as F

    base = F.CONFIGS["fp8_e4m3"]
    tile = replace(base, out="bf16", stages=3, store="tile")
    assert replace(tile, grid=128) == F.CONFIGS["fp8_e4m3_tile"]
    cl = replace(base, cluster=2, regs=224, producer_regs=56)
    return {
        "fp8 f32 out": base,
        "fp8 bf16 out": replace(base, out="bf16"),
        "fp8 cluster f32 out": cl,
        "fp8 cluster bf16 out": replace(cl, out="bf16"),
        "fp8 cluster bf16 out whole-tile": replace(cl, out="bf16", stages=3, store="tile"),
        "fp8 bf16 out whole-tile": tile,
        "fp8 bf16 out whole-tile grid 128": replace(tile, grid=128),
    }


#: Traced after the children in the final measurement, at :data:`TRACE_SIZE` in both input
#: types: rung 15 (16-bit C), rungs 16 and 17 (FP32 C): where a tile's time goes.
TRACED = (UNIFORM, F32_UNIFORM, F32_HANDOFF)
TRACE_SIZE = 4096
#: Back-to-back calls of each yardstick and of :data:`TIMELINE` (FP16, :data:`TRACE_SIZE`³)
#: under CUPTI, after the traces: each kernel's duration and the gaps between them.
TIMELINE = (UNIFORM, F32_HANDOFF)
TIMELINE_CALLS = 10
#: Launched once each under Nsight Compute in the final measurement (FP16, 4096³): rung 8,
#: the rungs past it, rung 11 on cuBLAS's tile (``past:`` + its label), and cuBLAS.
PROFILE_KERNELS = ("wgmma_cluster_fp16", "wgmma_out16_fp16", "wgmma_tile16_fp16",
                   "wgmma_grid128_fp16", PAST + CUBLAS_TILE, PAST + SLEEP, PAST + GROUP16,
                   PAST + COUNTERS, PAST + STEPS, PAST + "tmastore 3 stages grid 128",
                   PAST + F32_COUNTERS, PAST + F32_STEPS, PAST + F32_RING, PAST + UNIFORM,
                   PAST + F32_UNIFORM, PAST + EVICT, PAST + F32_EVICT, PAST + F32_HANDOFF,
                   "cublas_fp16", TORCH_F16)
#: Rows of the final measurement (labels of :func:`explore_configs`, both input types): rungs
#: 8 and 9, rung 7 with a 16-bit C changed one step at a time up to rungs 10 and 11, rung 11
#: on cuBLAS's tile, rung 11 with sleeping waits, 16-row groups, slot counters and descriptor
#: steps, and rung 7 (FP32 C) on 128 blocks, then with slot counters, descriptor steps and a
#: ring of 4 staging boxes; two other FP32 epilogues on that main loop (from registers;
#: per-warp staging); rungs 15 and 16 (the uniform index), and they with C's stores evict-first;
#: rung 17 (rung 16's C handed to store threads).
FINAL = ("cluster", "cluster 16-bit out", "tmastore 16-bit out", "tmastore 16-bit out 3 stages",
         "tmastore 16-bit out whole-tile", "tmastore 16-bit out whole-tile grid 128",
         CUBLAS_TILE, SLEEP, GROUP16, COUNTERS, COUNTERS + " group_m 16", STEPS,
         "tmastore 3 stages grid 128", F32_COUNTERS, F32_STEPS, F32_RING, VECTOR, F32_WARP,
         UNIFORM, F32_UNIFORM, EVICT, F32_EVICT, F32_HANDOFF)
#: The stream-K measurement (``mode`` "streamk", the ``hopper_streamk`` experiment): rung 12
#: beside rungs 10 and 11, both input types, every child; its profile.
STREAMK = ("tmastore 16-bit out whole-tile", "tmastore 16-bit out whole-tile grid 128",
           "tmastore 16-bit out whole-tile stream-K")
PROFILE_STREAMK = ("wgmma_grid128_fp16", "wgmma_streamk_fp16")
#: The tile-table measurement (``mode`` "table", the ``hopper_table`` experiment): rungs 18
#: and 19 beside rungs 15 and 17 and fast.cu's kernel 12, both input types, every child; the
#: four rungs and both yardsticks under Nsight Compute.
TABLE_ROWS = (UNIFORM, TABLE, F32_HANDOFF, F32_TABLE)
PROFILE_TABLE = (PAST + UNIFORM, PAST + TABLE, PAST + F32_HANDOFF, PAST + F32_TABLE,
                 "cublas_fp16", TORCH_F16)
FINAL_FP8 = ("fp8 f32 out", "fp8 bf16 out", "fp8 cluster f32 out", "fp8 cluster bf16 out",
             "fp8 bf16 out whole-tile", "fp8 bf16 out whole-tile grid 128")


def profile_launcher(name: str, d_a, d_b, d_c):
    """The profile child's launch of ``name``: ``past:`` + a label of :func:`explore_configs`
    (C float32, a 16-bit C widened into it as the registry's kernels do), ``torch.mm f16``
    (torch.mm with FP16 output, widened the same way), else a registered kernel or a
    yardstick."""
    if name == TORCH_F16:
        import torch

        ta, tb = torch.as_tensor(d_a, device="cuda"), torch.as_tensor(d_b, device="cuda")
        tc = torch.empty(d_c.shape, dtype=torch.float16, device="cuda")
        c = torch.as_tensor(d_c, device="cuda")

        def call():                      # C widened into the float32 buffer, as below
            torch.mm(ta, tb, out=tc)
            c.copy_(tc)
        return call
    if not name.startswith(PAST):
        return P._launcher(name, d_a, d_b, d_c)
    K = _k()
    cfg = explore_configs()[name[len(PAST):]]
    launch = K.launcher(cfg) if cfg.out == "f32" else K.launcher16(cfg)
    return lambda: launch(d_a, d_b, d_c)


def _emit(row: dict) -> None:
    print("ROW\t" + json.dumps(row, default=float), flush=True)


# ----------------------------------------------------------------------------- checking

def check(cfg, m: int, n: int, k: int, rng, launch=None) -> dict:
    """One check of a 16-bit-input configuration: fresh inputs, C poisoned with NaN (in its
    output type), one launch (by ``launch``, a launcher of ``cfg`` that may have run before;
    default a new one), float64 reference, the elementwise bound of :mod:`lab.accuracy` (with
    the output's rounding for a 16-bit C)."""
    from numba import cuda

    from lab import accuracy, bench, fp8

    K = _k()
    a, b = bench.random_inputs(m, n, k, np.float16 if cfg.kind == "f16" else np.uint16, rng)
    if cfg.out == "f32":
        poison = np.full((m, n), np.nan, np.float32)
    elif cfg.out == "f16":
        poison = np.full((m, n), np.nan, np.float16)
    else:
        poison = np.full((m, n), 0x7FC0, np.uint16)             # BF16 NaN
    d_c = cuda.to_device(poison)
    (launch or K.launcher(cfg))(cuda.to_device(a), cuda.to_device(b), d_c)
    out = d_c.copy_to_host()
    if cfg.out == "bf16":
        value = fp8.bf16_bits_to_float32(out)
        a64, b64 = bench.to_float64(a), bench.to_float64(b)
        factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=2.0 ** -8)
        bound = factor * (np.abs(a64) @ np.abs(b64)) + k * 2.0 ** -149
        verdict = accuracy.judge(value, a64 @ b64, bound, kernel=cfg.label, shape=(m, n, k),
                                 dtype_name="bfloat16", factor=factor)
    else:
        verdict = accuracy.compare(out, a, b, kernel=cfg.label,
                                   dtype_name=DTYPE[cfg.kind])
    return {"part": "check", "shape": [m, n, k], "passed": bool(verdict.passed),
            "bound_ratio": float(verdict.err_over_bound) if np.isfinite(verdict.err_over_bound)
            else None, "line": verdict.line()}


def check_fp8(cfg, m: int, n: int, k: int, rng) -> dict:
    from numba import cuda

    from lab.kernels.wgmma import fp8 as F

    qa, qb, sa, sb = F.operands(m, n, k, cfg, rng)
    poison = (np.full((m, n), 0x7FC0, np.uint16) if cfg.out == "bf16"
              else np.full((m, n), np.nan, np.float32))
    out = cuda.to_device(poison)
    F.run(cfg, cuda.to_device(qa), cuda.to_device(qb), out, cuda.to_device(sa),
          cuda.to_device(sb))
    verdict = F.compare(out.copy_to_host(), qa, qb, sa, sb, cfg, kernel=cfg.label)
    return {"part": "check", "shape": [m, n, k], "passed": bool(verdict.passed),
            "bound_ratio": float(verdict.err_over_bound) if np.isfinite(verdict.err_over_bound)
            else None, "line": verdict.line()}


# ----------------------------------------------------------------------------- providers

def _torch(x, kind: str):
    import torch

    t = torch.as_tensor(x, device="cuda")
    return t.view(torch.bfloat16) if kind == "bf16" else t


def providers_16(size: int, kind: str, labels, rng, fastcu_fn=None) -> dict:
    """name -> (call, output type) for one size and input type, all on the same inputs."""
    import torch
    from numba import cuda

    from lab import baselines, bench

    K = _k()
    cfgs = explore_configs()
    a, b = bench.random_inputs(size, size, size, np.float16 if kind == "f16" else np.uint16,
                               rng)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    c32 = cuda.device_array((size, size), np.float32)
    c16 = cuda.device_array((size, size), np.float16 if kind == "f16" else np.uint16)
    out: dict = {}
    base = "fp16" if kind == "f16" else "bf16"
    if base in baselines.available():
        out[f"cublas_{base} (FP32 out)"] = (lambda: baselines.launch(base, d_a, d_b, c32), "f32")
    ta, tb, tc = _torch(d_a, kind), _torch(d_b, kind), _torch(c16, kind)
    out[f"torch.mm {kind} ({kind.upper()} out)"] = (lambda: torch.mm(ta, tb, out=tc), kind)
    for label in labels:
        cfg = for_kind(cfgs[label], kind)
        launch = K.launcher(cfg)
        dst = c32 if cfg.out == "f32" else c16
        out[label] = ((lambda launch=launch, dst=dst: launch(d_a, d_b, dst)), cfg.out)
    if fastcu_fn is not None and kind == "bf16":
        from lab.twins import fastcu

        bt = cuda.to_device(np.ascontiguousarray(b.T))
        cc = cuda.device_array((size, size), np.uint16)
        out["fast.cu kernel 12 (BF16 out)"] = (fastcu.launcher(fastcu_fn, d_a, bt, cc), "bf16")
        out["__keep__"] = (bt, cc)
    out["__keep__"] = (out.get("__keep__"), d_a, d_b, c32, c16, ta, tb, tc)
    return out


def providers_fp8(size: int, labels, rng) -> dict:
    import torch
    from numba import cuda

    from lab import fp8

    K = _k()
    cfgs = fp8_configs()
    a = rng.standard_normal((size, size))
    bt = rng.standard_normal((size, size))
    qa, sa = fp8.quantize(a, "e4m3")
    qb, sb = fp8.quantize(bt, "e4m3")
    d = [cuda.to_device(x) for x in (qa, qb, sa, sb)]
    c32 = cuda.device_array((size, size), np.float32)
    c16 = cuda.device_array((size, size), np.uint16)
    ta = torch.as_tensor(d[0], device="cuda").view(torch.float8_e4m3fn)
    tb = torch.as_tensor(d[1], device="cuda").view(torch.float8_e4m3fn).t()
    tsa = torch.as_tensor(d[2], device="cuda").reshape(())
    tsb = torch.as_tensor(d[3], device="cuda").reshape(())
    out: dict = {}
    outs = {cfgs[lb].out for lb in labels}
    for o, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        if o not in outs:
            continue
        out[f"cuBLASLt e4m3 fast accum ({o.upper()} out)"] = (
            (lambda dt=dt: torch._scaled_mm(ta, tb, tsa, tsb, out_dtype=dt,
                                            use_fast_accum=True)), o)
    for label in labels:
        cfg = cfgs[label]
        launch = K.launcher(cfg)
        dst = c16 if cfg.out == "bf16" else c32
        out[label] = ((lambda launch=launch, dst=dst: launch(d[0], d[1], dst, d[2], d[3])),
                      cfg.out)
    out["__keep__"] = (d, c32, c16, ta, tb, tsa, tsb)
    return out


def check_fastcu(fn, rng) -> dict:
    """Kernel 12 at :data:`FASTCU_CHECK`, C poisoned with NaN, 64 sampled rows of C against
    float64 (its C is column-major: row n of its buffer is column n of C)."""
    from numba import cuda

    from lab import accuracy, bench, fp8
    from lab.twins import fastcu

    m, n, k = FASTCU_CHECK
    a, b = bench.random_inputs(m, n, k, np.uint16, rng)
    bt = np.ascontiguousarray(b.T)
    d_a, d_bt = cuda.to_device(a), cuda.to_device(bt)
    d_c = cuda.to_device(np.full((n, m), 0x7FC0, np.uint16))
    fastcu.launcher(fn, d_a, d_bt, d_c)()
    cuda.synchronize()                 # the buffers are freed only after the kernel is done
    value = fp8.bf16_bits_to_float32(d_c.copy_to_host()).T           # M×N
    a64, b64 = bench.to_float64(a), bench.to_float64(b)
    rows = rng.choice(m, size=64, replace=False)
    factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=2.0 ** -8)
    bound = factor * (np.abs(a64[rows]) @ np.abs(b64)) + k * 2.0 ** -149
    verdict = accuracy.judge(value[rows], a64[rows] @ b64, bound, kernel="fast.cu kernel 12",
                             shape=(m, n, k), dtype_name="bfloat16", factor=factor)
    nonfinite = int(np.count_nonzero(~np.isfinite(value)))
    return {"part": "check", "kernel": "fast.cu kernel 12 (BF16 out)", "shape": [m, n, k],
            "passed": bool(verdict.passed) and nonfinite == 0, "nonfinite": nonfinite,
            "line": verdict.line() + " (64 sampled rows; whole output finite: "
                    f"{nonfinite == 0})"}


# ----------------------------------------------------------------------------- timing

def time_row(call, size: int, sampler, label: str) -> dict:
    from lab import bench, clocks

    call()
    if sampler is not None:
        with sampler.phase(label):
            t, covered = bench.time_queued(lambda i: call(), batch=BATCH, batches=BATCHES)
    else:
        t, covered = bench.time_queued(lambda i: call(), batch=BATCH, batches=BATCHES)
    row = {**t.row(), "tflops": t.tflops(2.0 * size ** 3), "spin_covered": covered}
    row.pop("rotated", None)
    if sampler is not None:
        try:
            s = clocks.summary(sampler.samples, label)
            row.update({k: v for k, v in s.items() if k.startswith(("sm_", "power", "temp"))})
        except ValueError:
            pass
    return row


def _yardstick(name: str, out: str) -> bool:
    return name.startswith(("cublas", "torch.mm", "cuBLASLt"))


def _ratios(group: list[dict]) -> None:
    """Each row's ratio to the yardstick with its output type in its group (same process)."""
    ref = {r["out"]: r["tflops"] for r in group if r["yardstick"] and
           not r["kernel"].startswith("fast.cu")}
    for r in group:
        r["ratio"] = r["tflops"] / ref[r["out"]] if r["out"] in ref else None


def child(lock_path: str, index: int, mode: str, fastcu_lib: str,
          processes: int = PROCESSES) -> None:
    """Compile, then take the GPU: check every configuration of this child, time the rows."""
    from numba import cuda

    from lab import clocks, gpulock

    K = _k()
    cfgs, f8 = explore_configs(), fp8_configs()
    if mode == "explore":                # every item once, dealt out among the children
        items = [(kind, lb) for kind in KINDS for lb in cfgs
                 if kind == "f16" or lb in EXPLORE_BOTH] + [("e4m3", lb) for lb in f8]
        share = items[index::processes]
        labels = {kind: [lb for kd, lb in share if kd == kind] for kind in KINDS}
        fp8_labels = [lb for kd, lb in share if kd == "e4m3"]
    elif mode in ("streamk", "table"):
        labels = {kind: list(STREAMK if mode == "streamk" else TABLE_ROWS) for kind in KINDS}
        fp8_labels = []
    else:
        labels = {kind: list(FINAL) for kind in KINDS}
        fp8_labels = list(FINAL_FP8)
    todo = [for_kind(cfgs[lb], kind) for kind in KINDS for lb in labels[kind]]
    todo += [f8[lb] for lb in fp8_labels]
    for cfg in todo:                     # compile before taking the GPU
        try:
            K.kernel_for(cfg).compile(K.signature(cfg))
        except Exception as exc:  # noqa: BLE001 - the check below reports it
            _emit({"part": "compile", "kernel": cfg.label, "error": repr(exc)[:300]})
    fn = None
    if fastcu_lib and (index == 0 or mode != "explore"):
        for _ in range(600):              # the parent builds it meanwhile, then marks it
            if os.path.exists(fastcu_lib + ".done"):
                break
            time.sleep(0.5)
        if os.path.exists(fastcu_lib) and os.path.exists(fastcu_lib + ".done"):
            from lab.twins import fastcu
            fn = fastcu.load(fastcu_lib)
    rng = np.random.default_rng(1000 + index)
    lock = gpulock.GpuLock(lock_path)
    lock.acquire()
    t0 = time.time()
    sampler = None
    try:
        failed = set()
        # (final: each configuration is checked once per run, by the children in turn; every
        # child times them all, and the summary leaves out any whose check failed)
        for cfg in (todo[index::processes] if mode == "final" else todo):
            # (the stream-K shapes give a block of 128 several tiles, each starting at another
            # slot of the ring: checked for every kernel whose main loop or waits are new)
            multi = cfg.streamk or cfg.counters or getattr(cfg, "sleep", False)
            for m, n, k in ODD_SHAPES + (STREAMK_SHAPES if multi else ()):
                try:
                    row = (check_fp8 if cfg.fp8 else check)(cfg, m, n, k, rng)
                except Exception as exc:  # noqa: BLE001
                    row = {"part": "check", "shape": [m, n, k], "passed": False,
                           "line": f"{type(exc).__name__}: {exc}"[:300]}
                row.update(kernel=cfg.label, process=index,
                           dtype="e4m3" if cfg.fp8 else DTYPE[cfg.kind])
                _emit(row)
                if not row["passed"]:
                    failed.add(cfg)
                    break
        if fn is not None:
            row = check_fastcu(fn, rng)
            _emit({**row, "process": index})
            if not row["passed"]:
                fn = None
        if clocks.reason() is None:
            try:
                sampler = clocks.Sampler().__enter__()
            except Exception:  # noqa: BLE001 - rows then carry no clock
                sampler = None
        for size in SIZES:
            groups = []
            for kind in KINDS:
                ok = [lb for lb in labels[kind] if for_kind(cfgs[lb], kind) not in failed]
                if ok or (fn is not None and kind == "bf16"):
                    groups.append((DTYPE[kind], providers_16(size, kind, ok, rng, fn)))
            if fp8_labels:
                ok = [lb for lb in fp8_labels if f8[lb] not in failed]
                groups.append(("e4m3", providers_fp8(size, ok, rng)))
            for dtype, provs in groups:
                names = [nm for nm in provs if nm != "__keep__"]
                shift = index % len(names)
                names = names[shift:] + names[:shift]          # rotated per process
                group = []
                for position, name in enumerate(names):
                    call, out = provs[name]
                    row = {"part": "time", "kernel": name, "dtype": dtype, "m": size,
                           "n": size, "k": size, "out": out, "process": index,
                           "position": position, "yardstick": _yardstick(name, out)}
                    try:
                        row.update(time_row(call, size, sampler, f"{name} {dtype} {size}"))
                    except Exception as exc:  # noqa: BLE001
                        row.update(error=f"{type(exc).__name__}: {exc}"[:300], tflops=None)
                    group.append(row)
                _ratios([r for r in group if r.get("tflops")])
                for row in group:
                    _emit(row)
                cuda.synchronize()
    finally:
        if sampler is not None:
            sampler.__exit__(None, None, None)
        lock.release()
        _emit({"part": "turn", "kernel": "__turn__", "process": index, "start": t0,
               "end": time.time()})


def traces(rng) -> list[dict]:
    """Each of :data:`TRACED`, traced (every consumer warpgroup writes the GPU's nanosecond
    timer as each tile is multiplied and stored), checked once at 257×129×67, then at
    :data:`TRACE_SIZE`³ on cache-hot inputs: two launchers (each its own trace) warmed, then
    called back to back behind a busy kernel, three times; the second call's tile steps
    (:func:`tile_steps`) and steps outside its tiles (:func:`call_steps`), the first call's
    events being the call before it."""
    from numba import cuda

    from lab import bench, timing
    from lab.experiments._hopper_study import study, trace_rows

    K = _k()
    cfgs = explore_configs()
    size = TRACE_SIZE
    rows = []
    for kind in KINDS:
        a, b = bench.random_inputs(size, size, size,
                                   np.float16 if kind == "f16" else np.uint16, rng)
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        c32 = cuda.device_array((size, size), np.float32)
        c16 = cuda.device_array((size, size), np.float16 if kind == "f16" else np.uint16)
        for label in TRACED:
            cfg = study(for_kind(cfgs[label], kind), trace=True)
            try:
                passed = check(cfg, 257, 129, 67, rng)["passed"]
                pair = (K.launcher(cfg), K.launcher(cfg))
                c = c32 if cfg.out == "f32" else c16
                for _ in range(3):
                    timing.process_spinner().launch(5.0)     # the pair queued back to back
                    for launch in pair:
                        launch(d_a, d_b, c)
                    cuda.synchronize()
                events = []
                for launch in pair:
                    (blocks, (_, flags)), = launch.scratch.items()
                    events.append(trace_rows(flags.copy_to_host(), blocks, cfg.consumers))
                rows.append(trace_row(label, kind, size, passed, events[1], events[0]))
            except Exception as exc:  # noqa: BLE001 - the row says why
                rows.append({**trace_row(label, kind, size, False, []),
                             "error": f"{type(exc).__name__}: {exc}"[:300]})
    return rows


def timeline(rng) -> list[dict]:
    """The yardsticks and :data:`TIMELINE`, FP16 at :data:`TRACE_SIZE`³, under CUPTI
    (``torch.profiler``): each warmed, then :data:`TIMELINE_CALLS` calls queued behind a busy
    kernel (``torch.cuda._sleep``); :func:`timeline_rows` of the kernels it records."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    provs = providers_16(TRACE_SIZE, "f16", list(TIMELINE), rng)
    names = [n for n in provs if n != "__keep__"]
    for name in names:
        for _ in range(3):
            provs[name][0]()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for name in names:
            torch.cuda._sleep(50_000_000)
            for _ in range(TIMELINE_CALLS):
                provs[name][0]()
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "timeline.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            events = json.load(fh)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    return timeline_rows(names, kernels, TRACE_SIZE)


def trace_row(label: str, kind: str, size: int, passed: bool, events, before=None) -> dict:
    """The row of one traced launch of ``label`` in input type ``kind`` at ``size``³: whether
    the traced kernel passed its check, :func:`tile_steps` and :func:`call_steps` of its
    events (``before``: the events of the call before it)."""
    return {"part": "trace", "kernel": label, "dtype": DTYPE[kind], "m": size, "n": size,
            "k": size, "passed": bool(passed), **tile_steps(events),
            **call_steps(events, before)}


# ----------------------------------------------------------------------------- the parent

def failed_checks(rows: list[dict]) -> set:
    """(label, dtype) of every configuration with a failed check among ``rows``."""
    names = {(for_kind(c, kind).label, DTYPE[kind]): lb
             for lb, c in explore_configs().items() for kind in KINDS}
    names.update({(c.label, "e4m3"): lb for lb, c in fp8_configs().items()})
    return {(names.get((r["kernel"], r.get("dtype")), r["kernel"]), r.get("dtype"))
            for r in rows if r.get("part") == "check" and not r.get("passed")}


def summarize(rows: list[dict]) -> list[dict]:
    """Medians over the processes of each row's TFLOP/s and ratio, leaving out every
    configuration whose check failed in any process."""
    failed = failed_checks(rows)
    by: dict = {}
    for r in rows:
        if (r.get("part") == "time" and r.get("tflops")
                and (r["kernel"], r["dtype"]) not in failed):
            by.setdefault((r["kernel"], r["dtype"], r["m"]), []).append(r)
    out = []
    for (kernel, dtype, size), group in by.items():
        tf = np.array([r["tflops"] for r in group])
        ratios = [r["ratio"] for r in group if r.get("ratio") is not None]
        out.append({"part": "summary", "kernel": kernel, "dtype": dtype, "m": size, "n": size,
                    "k": size, "out": group[0]["out"], "processes": len(group),
                    "tflops": float(np.median(tf)), "tflops_min": float(tf.min()),
                    "tflops_max": float(tf.max()),
                    "ratio": float(np.median(ratios)) if ratios else None,
                    "ratio_min": float(min(ratios)) if ratios else None,
                    "ratio_max": float(max(ratios)) if ratios else None,
                    "sm_mhz": float(np.median([r["sm_mhz_median"] for r in group
                                               if r.get("sm_mhz_median")] or [np.nan]))})
    return out


def run(progress, *, quick: bool = False, mode: str | None = None) -> dict:
    """``quick``: the exploration (every variant once, shared among the children); else the
    final measurement (the chosen rows in every child); ``mode`` "streamk": the stream-K rung
    beside rungs 10 and 11 (every child), without fast.cu and FP8; "table": rungs 18 and 19
    beside rungs 15 and 17 and fast.cu (every child), without FP8."""
    from lab import bench
    from lab.experiments.hopper_profile import _read_rows, _tail, wait_all
    from lab.twins import fastcu

    bench.require_gpu("hopper_past")
    mode = mode or ("explore" if quick or os.environ.get("LAB_PAST_MODE") == "explore"
                    else "final")
    work = os.environ.get("LAB_PROFILE_LOGS") or tempfile.mkdtemp(prefix="hopper_past_")
    os.makedirs(work, exist_ok=True)
    lock = os.path.join(tempfile.mkdtemp(prefix="hopper_past_lock_"), "gpu.lock")
    open(lock, "a").close()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    lib, fastcu_error = "", fastcu.missing()
    builder = None
    if mode == "streamk":
        fastcu_error = "not in the stream-K measurement"
    if fastcu_error is None:
        lib = os.path.join(work, "libfastcu_k12.so")
        builder = subprocess.Popen(fastcu.build_command(fastcu.source_dir(), lib),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started = []
    processes = EXPLORE_PROCESSES if mode == "explore" else PROCESSES
    profiled = {"streamk": PROFILE_STREAMK, "table": PROFILE_TABLE}.get(mode, PROFILE_KERNELS)
    for index in range(processes):
        log = open(os.path.join(work, f"child{index}.log"), "w")
        started.append((f"child{index}", subprocess.Popen(
            [sys.executable, "-m", "lab.experiments.hopper_past", "--child", lock, str(index),
             mode, lib, str(processes)], stdout=log, stderr=subprocess.STDOUT, env=env)))
    if builder is not None:
        text = builder.communicate(timeout=600)[0]
        if builder.returncode:
            fastcu_error = "nvcc failed: " + text[-600:]
        open(lib + ".done", "w").close()
    ncu = P.ncu_path() if mode != "explore" else None
    metrics = []
    if ncu:
        metrics = P.usable_metrics(P.known_metrics(ncu))
        log = open(os.path.join(work, "profile.log"), "w")
        started.append(("profile", subprocess.Popen(
            P.ncu_command(ncu, metrics, lock, profiled, "lab.experiments.hopper_past"),
            stdout=log,
            stderr=subprocess.STDOUT, env=env)))
    status = wait_all(started, progress, 180 if mode == "streamk" else CHILD_TIMEOUT_S)
    rows, errors = [], {}
    for label in sorted(status):
        path = os.path.join(work, f"{label}.log")
        if label == "profile":
            with open(path, errors="replace") as fh:
                groups = P.split_by_marker(P.parse_raw_csv(fh.read()), list(profiled))
            rows += [P.profile_row(name, groups.get(name, [])) for name in profiled]
        rows += [r for r in _read_rows(path) if r.get("part") in ("check", "time", "turn",
                                                                  "compile")]
        if status[label] != "0":
            errors[label] = f"exit {status[label]}: " + _tail(path)
    rows += summarize(rows)
    if mode == "final":                  # (the children are done: the GPU is free)
        rows += traces(np.random.default_rng(2026))
        try:
            rows += timeline(np.random.default_rng(2027))
        except Exception as exc:  # noqa: BLE001 - the row says why
            rows.append({"part": "timeline", "kernel": "__error__",
                         "error": f"{type(exc).__name__}: {exc}"[:300]})
    from lab.kernels import wgmma as K
    return {"rows": rows, "row_fields": list(ROW_FIELDS),
            "parameters": {"mode": mode, "sizes": list(SIZES), "processes": processes,
                           "odd_shapes": [list(s) for s in ODD_SHAPES],
                           "streamk_shapes": [list(s) for s in STREAMK_SHAPES],
                           "configs": {lb: c.label for lb, c in explore_configs().items()},
                           "fp8_configs": {lb: c.label for lb, c in fp8_configs().items()},
                           "final": list(FINAL), "final_fp8": list(FINAL_FP8),
                           "streamk": list(STREAMK), "table": list(TABLE_ROWS),
                           "traced": list(TRACED) if mode == "final" else [],
                           "trace_size": TRACE_SIZE,
                           "timeline": list(TIMELINE) if mode == "final" else [],
                           "timeline_calls": TIMELINE_CALLS,
                           "profile_kernels": list(profiled), "ncu": ncu,
                           "ncu_metrics": metrics,
                           "timing": f"GPU time per call: {BATCH} calls queued behind a busy "
                                     f"kernel, {BATCHES} batches, median/min/max; cache-hot",
                           "fastcu": {"source": fastcu.SOURCE,
                                      "build": fastcu.build_flags(),
                                      "error": fastcu_error},
                           "child_status": status, "child_errors": errors,
                           "best_rung_config": K.RUNG_CONFIGS["wgmma_cluster"].label},
            "notes": "ratio: TFLOP/s over the yardstick with the same input and output type "
                     "in the same process and size (FP32 out: cuBLAS via CuPy; FP16/BF16 out: "
                     "torch.mm; FP8: cuBLASLt fast accumulation via torch._scaled_mm); fast.cu "
                     "kernel 12 (BF16 out) against torch.mm BF16. part 'summary': medians over "
                     "the processes."}


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]))
elif __name__ == "__main__" and sys.argv[1:2] == ["--profile-child"]:
    P.profile_child(sys.argv[2], sys.argv[3:], launcher=profile_launcher)
