"""Chapter 8, section 5: the animation's counters, counted: loads of real kernels counted under
the CUDA simulator (:func:`lab.counting.count_accesses`), beside the model.
"""
from __future__ import annotations

from collections import Counter
import numpy as np

from lab import device, model, page
from lab.counting import count_accesses, in_simulator
from lab.kernels import k02_tiled
from lab.chapters.ch8.s4_traffic import BLOCK, SIZE, SLICE


def animation_inputs(seed: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Random SIZE × SIZE FP32 inputs for the counted runs."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32),
            rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32))


def _step_of(tile: tuple[int, int], k_slice: int) -> int:
    """The animation step (1-based) at which tile ``tile`` works on slice ``k_slice``."""
    tiles = SIZE // BLOCK
    return (tile[0] * tiles + tile[1]) * (SIZE // SLICE) + k_slice + 1


def naive_step_loads(events) -> Counter:
    """Global loads of the naive kernel by animation step: each load belongs to the C tile of
    the output its thread computes and to the k-slice of the element it reads."""
    steps = Counter()
    for space, op, array, idx, blk, thr, _ in events:
        if space != "global" or op != "load":
            continue
        k = idx[1] if array == "A" else idx[0]
        row = blk[1] * 16 + thr[1]          # naive: 16 × 16 threads, x along the columns
        col = blk[0] * 16 + thr[0]
        steps[_step_of((row // BLOCK, col // BLOCK), k // SLICE)] += 1
    return steps


def tiled_step_loads(events) -> dict[str, Counter]:
    """The tiled kernel's accesses by animation step: global loads, shared stores and shared
    loads, each in the step of its block (the C tile) and of the slice it belongs to (the
    barriers its thread has passed: two per slice)."""
    out = {"global": Counter(), "shared_store": Counter(), "shared_load": Counter()}
    for space, op, array, idx, blk, thr, barriers in events:
        key = {("global", "load"): "global", ("shared", "store"): "shared_store",
               ("shared", "load"): "shared_load"}.get((space, op))
        if key is None:
            continue
        out[key][_step_of((blk[1], blk[0]), barriers // 2)] += 1
    return out


def counted_runs() -> dict:
    """Run lab's naive kernel and the tiled kernel with 8 × 8 tiles and k-slices of 4 under the
    simulator, counting; returns the per-step counters (step -> elements) and whether both
    products match float64. On a GPU the runs happen in a child process on the simulator."""
    if not device.SIMULATOR:
        return in_simulator("counted_runs", "lab.chapters.ch8")
    from lab.kernels.k01_naive import launch_naive

    A, B = animation_inputs()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C_naive, ev_naive = count_accesses(launch_naive, A, B)
    C_tiled, ev_tiled = count_accesses(k02_tiled.make_tiled_study(BLOCK, SLICE), A, B)
    ok = all(float(np.abs(C - ref).max()) <= 1e-5 * float(np.abs(ref).max())
             for C in (C_naive, C_tiled))
    return {"naive": dict(naive_step_loads(ev_naive)),
            "tiled": {k: dict(v) for k, v in tiled_step_loads(ev_tiled).items()},
            "correct": ok}


def counter_rows(counted: dict | None = None) -> list[dict]:
    """Step by step: the model's running totals (:func:`lab.model.step_counters`) and the
    running totals counted in the two kernels."""
    counted = counted or counted_runs()
    rows, run = [], Counter()
    for r in model.step_counters(SIZE, BLOCK, SLICE):
        s = r["step"]
        run["ng"] += counted["naive"].get(s, 0)
        run["tg"] += counted["tiled"]["global"].get(s, 0)
        run["ts"] += counted["tiled"]["shared_store"].get(s, 0)
        run["tl"] += counted["tiled"]["shared_load"].get(s, 0)
        rows.append({"step": s, "tile": "C[{0}:{1}, {2}:{3}]".format(
                         r["tile"][0] * BLOCK, (r["tile"][0] + 1) * BLOCK,
                         r["tile"][1] * BLOCK, (r["tile"][1] + 1) * BLOCK),
                     "k": f"{r['slice'] * SLICE}–{(r['slice'] + 1) * SLICE - 1}",
                     "naive_model": r["naive_global"], "naive_counted": run["ng"],
                     "tiled_model": r["tiled_global"], "tiled_counted": run["tg"],
                     "shared_model": r["tiled_shared_loads"], "shared_counted": run["tl"],
                     "stores_model": r["tiled_shared_stores"], "stores_counted": run["ts"],
                     "agree": all(r[a] == run[b] for a, b in (
                         ("naive_global", "ng"), ("tiled_global", "tg"),
                         ("tiled_shared_loads", "tl"), ("tiled_shared_stores", "ts")))})
    return rows


def counter_table(counted: dict | None = None):
    """:func:`counter_rows` summed up: per counter, the model's total after the last step, the
    total counted in the kernels, and at how many steps the running totals agree (elements)."""
    rows = counter_rows(counted)
    last = rows[-1]
    out = []
    for what, key in (("naive: global loads", "naive"), ("tiled: global loads", "tiled"),
                      ("tiled: shared stores", "stores"), ("tiled: shared loads", "shared")):
        same = sum(r[f"{key}_model"] == r[f"{key}_counted"] for r in rows)
        out.append({"what": what, "model": last[f"{key}_model"],
                    "counted": last[f"{key}_counted"], "steps": f"{same} of {len(rows)}"})
    return page.table(out, ["what", "model", "counted", "steps"],
                      {"what": "kernel: access", "model": "model, after the last step",
                       "counted": "counted", "steps": "steps where they agree"},
                      source="Model: lab.model.step_counters. Counted: lab.counting."
                             "count_accesses, under the CUDA simulator.")


def same_algorithm_rows() -> list[dict]:
    """The tiled kernel with its own slice constant against lab's ``make_tiled`` at equal
    tile and slice (T = 4 and 8, on SIZE³): accesses of each kind, and whether the two record
    the very same accesses (same thread, address, barrier count)."""
    if not device.SIMULATOR:
        return in_simulator("same_algorithm_rows", "lab.chapters.ch8")
    A, B = animation_inputs()
    rows = []
    for tile in (4, 8):
        _, theirs = count_accesses(_lab_tiled_launch(tile), A, B)
        _, mine = count_accesses(k02_tiled.make_tiled_study(tile, tile), A, B)
        kinds = Counter((e[0], e[1]) for e in theirs)
        rows.append({"tile": f"{tile}×{tile}, slice {tile}",
                     "global": kinds[("global", "load")],
                     "shared_stores": kinds[("shared", "store")],
                     "shared_loads": kinds[("shared", "load")],
                     "model_global": 2 * SIZE ** 3 // tile,
                     "same": "identical" if sorted(theirs) == sorted(mine) else "DIFFERENT"})
    return rows


def same_algorithm_table():
    """:func:`same_algorithm_rows` as a table."""
    return page.table(same_algorithm_rows(), ["tile", "global", "shared_stores",
                                              "shared_loads", "model_global", "same"],
                      {"tile": "tile, k-slice", "global": "global loads",
                       "shared_stores": "shared stores", "shared_loads": "shared loads",
                       "model_global": "global loads (model)",
                       "same": "vs lab.kernels.k02_tiled"})


def _lab_tiled_launch(tile: int):
    """Chapter 2's tiled kernel for ``tile`` (registered as tiled8/16/32; 4 built here)."""

    if tile in k02_tiled.KERNELS:
        return k02_tiled.make_launch(tile)
    kernel = k02_tiled.make_tiled(tile)

    def launch(A, B, C):
        m, n = C.shape
        kernel[((n + tile - 1) // tile, (m + tile - 1) // tile), (tile, tile)](A, B, C)

    return launch
