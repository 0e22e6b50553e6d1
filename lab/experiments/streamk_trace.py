"""Experiment ``streamk_trace`` (chapter 7): where Hopper rung 12's time goes. Stream-K, traced:
thread 0 of every consumer warpgroup writes the GPU's nanosecond timer (``%globaltimer``, one
clock for all SMs) at each step of its work (:data:`lab.experiments._hopper_study.TRACE_EVENTS`: a
whole tile multiplied and stored; a share of k-slices multiplied, its partial sums published; a
fix-up's wait, each block's partial sums seen and added; the shared tile stored; the end), so
that every block's steps lie on one time axis — at 4096³ and 8192³, where stream-K lost to Hopper
rung 11, and at decode shapes, where it took far longer than its arithmetic.

Both fix-ups are traced: the finisher's (the block holding a tile's last k-slice waits for the
others' partial sums, adds them one after another and stores the tile) and the atomic one
(every block but the finisher adds its part into the tile's one slot where it lives in L2,
``red.global.add``; the finisher waits for their count and adds the slot once). Then the block
count: at decode shapes (a few tiles, long K) each fix-up on 132, 96 and 64 blocks — fewer
blocks mean fewer parts per shared tile, more k-slices each.

Every configuration is checked first (fresh inputs, C poisoned with NaN, float64 reference,
:func:`lab.experiments.hopper_past.check`) at :data:`CHECK_SHAPES`, twice through one launcher
(what a fix-up leaves for the next launch is checked too). Timing is GPU-only
(:func:`lab.timing.time_queued`, 20 calls queued behind a busy kernel, 10 batches) with
``torch.mm`` (FP16 out) and Hopper rung 11 beside, in one process: a diagnosis, not the ladder's
headline (``hopper_past`` and ``hopper_streamk`` take medians over processes). The trace is
of one more call after the timing, the inputs cache-hot.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

CHAPTER = "7.2"
SUMMARY = ("stream-K traced: every consumer warpgroup's steps on the GPU's global timer, at "
           "4096³, 8192³ and decode shapes; stream-K's block count at decode shapes")
NEEDS = ("torch",)
NEEDS_KERNELS = ("wgmma_streamk_fp16", "wgmma_grid128_fp16")
H200_SECONDS = 200  # measured: one fix-up 109 s, three (an earlier build) 208 s

TRACE_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (128, 4096, 14336),
                (128, 14336, 4096), (1, 4096, 4096))
GRID_SHAPES = ((128, 4096, 14336), (128, 14336, 4096), (128, 4096, 4096), (64, 4096, 14336),
               (64, 14336, 4096), (1, 4096, 14336), (256, 4096, 14336), (512, 4096, 14336))
GRIDS = (132, 96, 64)
FIXUPS = ("finisher", "atomic")
#: 1×1×1; 17 tiles of 128×256 with 47 k-slices (split over many blocks); a K of 224 k-slices
#: over 4 tiles; 514 tiles with an odd edge (whole waves, then a shared last one)
CHECK_SHAPES = ((1, 1, 1), (97, 4100, 3000), (128, 1000, 14336), (2049, 8200, 520))
BATCH, BATCHES = 20, 10


def _k():
    from lab.kernels import wgmma as K
    return K


def label(fixup: str, grid: int = 0, traced: bool = False) -> str:
    return (f"stream-K, {fixup} fix-up" + (f", {grid} blocks" if grid else "")
            + (", traced" if traced else ""))


def configs() -> dict:
    """label -> configuration: stream-K (FP16 in and out) with each fix-up, traced, and on
    each of GRIDS."""
    from lab.experiments._hopper_study import study
    from lab.kernels import get_spec

    sk = get_spec("wgmma_streamk_fp16").config
    out = {}
    for f in FIXUPS:
        out[label(f, traced=True)] = study(sk, fixup=f, trace=True)
        for g in GRIDS:
            out[label(f, g)] = replace(sk, fixup=f, grid=g).validate()
    return out


def _ms(t) -> dict:
    row = t.row()
    row.pop("rotated", None)
    return row


def timeline(events_by_slot, consumers: int) -> tuple[list[dict], dict]:
    """Trace rows (one per block and warpgroup: its events in µs from the first start) and a
    summary of the steps (medians and maxima in µs)."""
    t0 = min(ns for ev in events_by_slot for code, ns in ev if code == 1)
    rows, steps = [], {"tile_us": [], "share_us": [], "publish_us": [], "wait_us": [],
                       "add_us": [], "tile_store_us": [], "end_us": [], "last_wave_us": []}
    for slot, ev in enumerate(events_by_slot):
        rel = [(code, (ns - t0) / 1e3) for code, ns in ev]
        rows.append({"part": "trace", "block": slot // consumers, "warpgroup": slot % consumers,
                     "events": [[c, round(t, 3)] for c, t in rel]})
        prev = None
        wave_start = rel[0][1] if rel else 0.0
        for code, t in rel:
            if code == 2 and prev is not None:
                steps["tile_us"].append(t - prev)
            if code == 3:
                wave_start = t
            if code == 4 and prev is not None:
                steps["share_us"].append(t - prev)
            if code == 5 and prev is not None:
                steps["publish_us"].append(t - prev)
            if code == 7 and prev is not None:
                steps["wait_us"].append(t - prev)
            if code == 8 and prev is not None:
                steps["add_us"].append(t - prev)
            if code == 9 and prev is not None:
                steps["tile_store_us"].append(t - prev)
            if code == 10:
                steps["end_us"].append(t)
                steps["last_wave_us"].append(t - wave_start)
            prev = t
    summary = {}
    for name, values in steps.items():
        if values:
            summary[name.replace("_us", "_median_us")] = float(np.median(values))
            summary[name.replace("_us", "_max_us")] = float(np.max(values))
            summary[name.replace("_us", "_count")] = len(values)
    return rows, summary


def run(progress) -> dict:
    import torch
    from numba import cuda

    from lab import bench
    from lab.experiments import hopper_past
    from lab.kernels import get_spec
    from lab.experiments._hopper_study import TRACE_EVENTS, trace_rows

    bench.require_gpu("the streamk_trace experiment")
    K = _k()
    cfgs = configs()
    rung11 = get_spec("wgmma_grid128_fp16").config
    rng = np.random.default_rng(2024)
    rows = []
    for name, cfg in progress(list(cfgs.items()) + [("rung 11", rung11)], desc="checks"):
        # one launcher through every shape twice: a fix-up's flags and workspace are kept
        # between launches (each reader clears what it read), so the later calls check that
        launch = K.launcher(cfg)
        for rep in range(2):
            for m, n, k in CHECK_SHAPES:
                r = hopper_past.check(cfg, m, n, k, rng, launch)
                if not r["passed"]:
                    raise AssertionError(f"{name} failed its check at {m}x{n}x{k} (call "
                                         f"{rep + 1}): {r['line']}")
                rows.append({"part": "check", "kernel": name, "m": m, "n": n, "k": k,
                             "call": rep + 1, "passed": True, "line": r["line"]})

    def providers(m, n, k):
        a, b = bench.random_inputs(m, n, k, np.float16, rng)
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        c = cuda.device_array((m, n), np.float16)
        ta, tb, tc = (torch.as_tensor(x, device="cuda") for x in (d_a, d_b, c))
        calls = {"torch.mm": lambda: torch.mm(ta, tb, out=tc)}
        return d_a, d_b, c, calls, (ta, tb, tc)

    def timed(call):
        call()
        t, covered = bench.time_queued(lambda i: call(), batch=BATCH, batches=BATCHES)
        return {**_ms(t), "spin_covered": covered}

    for m, n, k in progress(TRACE_SHAPES, desc="traces"):
        d_a, d_b, c, calls, keep = providers(m, n, k)
        launchers = {"rung 11": K.launcher(rung11)}
        for f in FIXUPS:
            launchers[label(f)] = K.launcher(replace(cfgs[label(f, traced=True)], trace=False))
            launchers[label(f, traced=True)] = K.launcher(cfgs[label(f, traced=True)])
        for name, launch in launchers.items():
            calls[name] = (lambda launch=launch: launch(d_a, d_b, c))
        for name, call in calls.items():
            t = timed(call)
            rows.append({"part": "time", "kernel": name, "m": m, "n": n, "k": k, **t,
                         "tflops": 2.0 * m * n * k / (t["median_ms"] * 1e9)})
        for f in FIXUPS:
            name = label(f, traced=True)
            launch, cfg = launchers[name], cfgs[name]
            cuda.synchronize()
            launch(d_a, d_b, c)
            cuda.synchronize()
            (blocks, (_, flags)), = launch.scratch.items()
            events = trace_rows(flags.copy_to_host(), blocks, cfg.consumers)
            trace, summary = timeline(events, cfg.consumers)
            for r in trace:
                r.update({"kernel": name, "m": m, "n": n, "k": k})
            rows += trace
            rows.append({"part": "steps", "kernel": name, "m": m, "n": n, "k": k,
                         "blocks": blocks, **summary})
        del keep
    for m, n, k in progress(GRID_SHAPES, desc="block counts"):
        d_a, d_b, c, calls, keep = providers(m, n, k)
        calls["rung 11"] = (lambda launch=K.launcher(rung11): launch(d_a, d_b, c))
        for f in FIXUPS:
            for g in GRIDS:
                launch = K.launcher(cfgs[label(f, g)])
                calls[label(f, g)] = (lambda launch=launch: launch(d_a, d_b, c))
        for name, call in calls.items():
            t = timed(call)
            rows.append({"part": "grid", "kernel": name, "m": m, "n": n, "k": k, **t,
                         "tflops": 2.0 * m * n * k / (t["median_ms"] * 1e9)})
        del keep
    return {"rows": rows, "row_fields": ["part", "kernel", "m", "n", "k"],
            "parameters": {"trace_shapes": [list(s) for s in TRACE_SHAPES],
                           "grid_shapes": [list(s) for s in GRID_SHAPES],
                           "grids": list(GRIDS), "fixups": list(FIXUPS), "check_shapes": [list(s) for s in CHECK_SHAPES],
                           "batch": BATCH, "batches": BATCHES, "dtype": "float16",
                           "out_dtype": "float16",
                           "events": {str(c): e for c, e in TRACE_EVENTS.items()}},
            "notes": ("GPU-only times (time_queued); trace events in µs from the first "
                      "warpgroup's start, %globaltimer; one process (a diagnosis)")}
