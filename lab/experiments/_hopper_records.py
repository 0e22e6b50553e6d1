"""The records of ``hopper_past``'s parent, read into rows: the events a traced Hopper kernel
writes on the GPU's nanosecond timer (:func:`lab.experiments._hopper_study.trace_rows`) — each tile's
steps and a call's steps outside its tiles — and CUPTI's kernel records of back-to-back calls
(``torch.profiler``'s Chrome trace). Pure functions of the records, tested on synthetic ones."""
from __future__ import annotations

import numpy as np


def tile_steps(events) -> dict:
    """Per tile, from a traced launch's events (:func:`lab.experiments._hopper_study.trace_rows`):
    each consumer warpgroup's main loop (from its start or the tile before stored to the tile
    multiplied) and epilogue (multiplied to stored: its C staged), in µs — the 10th, 50th and
    90th percentiles over every warpgroup's tiles, and the count."""
    main, epi = [], []
    for ev in events:
        for (c0, t0), (c1, t1) in zip(ev, ev[1:]):
            if c1 == 2:
                main.append((t1 - t0) / 1e3)
            elif c0 == 2 and c1 == 3:
                epi.append((t1 - t0) / 1e3)
    out = {"tiles": len(epi)}
    for name, values in (("mainloop", main), ("epilogue", epi)):
        for q in (10, 50, 90):
            out[f"{name}_p{q}_us"] = float(np.percentile(values, q)) if values else None
    return out


def _gap_or_overlap(gap):
    """(gap, overlap): a time between two things, split so that neither is negative (row
    fields in µs never are); (None, None) for None."""
    if gap is None:
        return None, None
    return (gap, None) if gap >= 0 else (None, -gap)


def call_steps(events, before=None) -> dict:
    """A traced call's steps outside its tiles, from its events (and those of the call before
    it in the stream, ``before``): how far apart its warpgroups start and end, its span from
    the first start to the last end, the median main loop of a warpgroup's first tile (the
    later ones are :func:`tile_steps`'), and the gap from the last end of the call before to
    this call's first start — the block's exit, the launch and the set-up between them, and
    (store threads) C still draining; a call that began before the one before it ended has
    ``overlap_us`` instead (row fields in µs are never negative). µs; None where the events
    do not say."""
    def firsts(evs, code):
        return [next((t for c, t in ev if c == code), None) for ev in evs]

    def lasts(evs, code):
        return [next((t for c, t in reversed(ev) if c == code), None) for ev in evs]

    starts = [t for t in firsts(events, 1) if t is not None]
    ends = [t for t in lasts(events, 10) if t is not None]
    first = [m - s for s, m in zip(firsts(events, 1), firsts(events, 2))
             if s is not None and m is not None]
    out = {"start_spread_us": (max(starts) - min(starts)) / 1e3 if starts else None,
           "end_spread_us": (max(ends) - min(ends)) / 1e3 if ends else None,
           "span_us": (max(ends) - min(starts)) / 1e3 if starts and ends else None,
           "first_mainloop_p50_us": float(np.median(first)) / 1e3 if first else None,
           "gap_us": None, "overlap_us": None}
    prior = [t for t in lasts(before or [], 10) if t is not None]
    if prior and starts:
        out["gap_us"], out["overlap_us"] = _gap_or_overlap((min(starts) - max(prior)) / 1e3)
    return out


def timeline_rows(names, kernels, size: int) -> list[dict]:
    """``timeline`` rows from CUPTI's kernel records (``name``, ``ts`` and ``dur`` in µs, as
    a Chrome trace has them): the records between two of the busy kernels that separate the
    groups (``spin_kernel``) are the calls of ``names[i]``, in order; each row has the median,
    lowest and highest duration of the group's GEMM kernels (those over 50 µs: a call's small
    kernels, such as a cast, are left out), the median gap between one kernel's end and the
    next one's start (``overlap_p50_us`` instead if they overlapped) and the time per call
    from the first start to the last end."""
    groups, current = [], None
    for k in sorted(kernels, key=lambda k: k["ts"]):
        if "spin_kernel" in k["name"]:
            if current is not None:       # (an empty group still belongs to its name)
                groups.append(current)
            current = []
        elif current is not None:
            current.append(k)
    if current is not None:
        groups.append(current)
    rows = []
    for name, group in zip(names, groups):
        g = [k for k in group if k["dur"] > 50]
        if not g:
            continue
        durs = [k["dur"] for k in g]
        gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(g, g[1:])]
        gap, overlap = _gap_or_overlap(float(np.median(gaps)) if gaps else None)
        rows.append({"part": "timeline", "kernel": name, "dtype": "float16", "m": size,
                     "n": size, "k": size, "calls": len(g), "cuda_kernel": g[0]["name"][:120],
                     "kernel_p50_us": float(np.median(durs)), "kernel_min_us": min(durs),
                     "kernel_max_us": max(durs),
                     "gap_p50_us": gap, "overlap_p50_us": overlap,
                     "per_call_us": (g[-1]["ts"] + g[-1]["dur"] - g[0]["ts"]) / len(g)})
    return rows
