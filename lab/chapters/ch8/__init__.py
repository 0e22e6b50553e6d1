"""Chapter 8, one model for the whole ladder: the step-by-step model's traffic model of its four kernels,
reproduced from :mod:`lab.model` and set beside the seed's table (:mod:`lab.seeds`), the same
model on the H200 beside our measured times, and the seed's 16 × 16 × 16 animation with its
traffic counters checked against loads counted in real kernels under the CUDA simulator.

Loads are counted by :func:`lab.counting.count_accesses` (the simulator watched during one
launch).

The notebook calls one function per table, figure or set of glued values.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from lab import device, model, page, results, seeds, tables
from lab.counting import count_accesses, in_simulator
from lab.kernels import k02_tiled

#: The animation's problem: SIZE³, worked one BLOCK × BLOCK tile of C at a time, k in slices
#: of SLICE.
SIZE, BLOCK, SLICE = 16, 8, 4
#: The measured rung standing for each of seed 001's kernels at 4096³: (experiment, match).
MEASURED = {
    "naive": ("naive_tiled", {"kernel": "naive", "part": "size", "n": 4096}),
    "shared": ("naive_tiled", {"kernel": "tiled32", "part": "size", "n": 4096}),
    "register": ("patch_sweep", {"kernel": "block128", "n": 4096}),
    "tensor": ("tensor_cores", {"kernel": "tc_bf16", "part": "ladder", "n": 4096}),
}
#: Names of the rungs in our ladder.
OUR_KERNEL = {kind: match["kernel"] for kind, (_, match) in MEASURED.items()}


# ----------------------------------------------------------------------------- seed 001's table

def seed_rows() -> list[dict]:
    """The step-by-step model's four kernels at 4096³: its quoted numbers beside :func:`lab.model.rung_model`
    on the A100 and the H100 (datasheet roofs), with the course's tile formula for comparison."""
    rows = []
    for s in seeds.LADDER_MODEL_001:
        a100 = model.rung_model(s["kernel"], model.DATASHEET["A100"])
        h100 = model.rung_model(s["kernel"], model.DATASHEET["H100"])
        rows.append({"kernel": s["title"], "seed_fpb": s["flop_per_byte"],
                     "fpb": a100["flop_per_byte"], "course_fpb": model.kernel_model_4096(
                         s["kernel"]), "seed_bound": s["bound_a100"], "bound": a100["bound"],
                     "seed_a100": s["a100_ms"], "a100": a100["seconds"] * 1e3,
                     "seed_h100": s["h100_ms"], "h100": h100["seconds"] * 1e3,
                     "h100_bound": h100["bound"]})
    return rows


def seed_intensity_table():
    """FLOP per byte: the seed's, ours with the store of C counted, the course's tile formula."""
    return page.table(seed_rows(), ["kernel", "seed_fpb", "fpb", "course_fpb"],
                      {"seed_fpb": "the step-by-step model (FLOP/B)", "fpb": "lab.model (FLOP/B)",
                       "course_fpb": "tile formula (FLOP/B)"},
                      source=f"Seed columns: {seeds.LADDER_MODEL_001_SOURCE}. lab.model: "
                             "gemm_traffic (loads and the store of C); tile formula: "
                             "kernel_model_4096 (loads only).")


def seed_time_table():
    """The modelled times on the A100 and the H100, the seed's and ours, with the bounds."""
    return page.table(seed_rows(), ["kernel", "seed_bound", "bound", "seed_a100", "a100",
                                    "seed_h100", "h100", "h100_bound"],
                      {"seed_bound": "seed: bound (A100)", "bound": "bound (A100)",
                       "seed_a100": "seed: A100 (ms)", "a100": "A100 (ms)",
                       "seed_h100": "seed: H100 (ms)", "h100": "H100 (ms)",
                       "h100_bound": "bound (H100)"},
                      source=f"Seed columns: {seeds.LADDER_MODEL_001_SOURCE}. Ours: "
                             "lab.model.rung_model with lab.model.DATASHEET (A100 SXM4 40 GB, "
                             "H100 SXM5).")


def worst_seed_gap() -> float:
    """The largest relative gap between a seed number and ours (intensities and times)."""
    gaps = []
    for r in seed_rows():
        for a, b in (("seed_fpb", "fpb"), ("seed_a100", "a100"), ("seed_h100", "h100")):
            gaps.append(abs(r[b] / r[a] - 1))
    return max(gaps)


# ----------------------------------------------------------------------------- the H200

def gpu_name() -> str:
    """The measured GPU's short name, from the provenance of ``roofline``."""
    return page.gpu_label(results.load("roofline")["provenance"]["gpu"])


def measured_machine() -> dict:
    """The H200 with its measured roofs: FP32 from the FMA chains and HBM from the streaming
    read (``roofline``), SMs and maximum clock from the provenance; no tensor roof was
    measured, so the datasheet's stands."""
    data = results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    prov = data["provenance"]
    return {"fp32_tflops": by["fma_chains"]["tflops"],
            "tensor_tflops": model.DATASHEET["H200"]["tensor_tflops"],
            "hbm_gbps": by["stream_read"]["gbps"], "sms": prov["sm_count"],
            "clock_mhz": int(prov["max_sm_clock_mhz"])}


def measured_row(kind: str) -> dict:
    """Our measured row at 4096³ for one of the step-by-step model's kernels (:data:`MEASURED`)."""
    experiment, match = MEASURED[kind]
    match = dict(match)
    n = match.pop("n")
    return next(r for r in results.rows(experiment, **match) if r["m"] == r["n"] == r["k"] == n)


def h200_rows() -> list[dict]:
    """Each kernel: the model on the H200's datasheet roofs and on its measured roofs, and the
    time we measured for the rung that stands for it."""
    rows = []
    for s in seeds.LADDER_MODEL_001:
        kind = s["kernel"]
        sheet = model.rung_model(kind, model.DATASHEET["H200"])
        ours = model.rung_model(kind, measured_machine())
        m = measured_row(kind)
        rows.append({"kernel": s["title"], "ours": OUR_KERNEL[kind], "bound": sheet["bound"],
                     "sheet_ms": sheet["seconds"] * 1e3, "roofs_ms": ours["seconds"] * 1e3,
                     "measured_ms": m["median_ms"],
                     "ratio": m["median_ms"] / (ours["seconds"] * 1e3)})
    return rows


def h200_table():
    """:func:`h200_rows` as a table."""
    name = gpu_name()
    return page.table(h200_rows(), ["kernel", "ours", "bound", "sheet_ms", "roofs_ms",
                                    "measured_ms", "ratio"],
                      {"ours": "our rung", "bound": "model bound",
                       "sheet_ms": f"model, datasheet (ms)",
                       "roofs_ms": f"model, measured roofs (ms)",
                       "measured_ms": f"measured {name} (ms)",
                       "ratio": "measured ÷ model"},
                      source="Model: lab.model.rung_model; datasheet roofs lab.model.DATASHEET"
                             "['H200']; measured roofs " + results.source_line("roofline")
                             + " Measured: lab/results/h200/naive_tiled.json, patch_sweep.json,"
                               " tensor_cores.json (4096³, medians).")


def dram_evidence() -> dict:
    """The naive kernel at 1024³ under Nsight Compute: the bytes the model counts against the
    bytes DRAM served and the bytes L2 served (``ncu_dram``)."""
    r = next(r for r in results.rows("ncu_dram") if r["kernel"] == "naive")
    return {"n": r["n"], "model": r["model_bytes"], "dram": r["dram_read_bytes"],
            "l2": r["l2_read_bytes"]}


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
    """:func:`counter_rows` as a table (running totals, elements)."""
    rows = counter_rows(counted)
    for r in rows:
        r["agree"] = "yes" if r["agree"] else "NO"
    ends = [i for i in range(len(rows)) if i < 4 or i >= len(rows) - 4 or rows[i]["agree"] != "yes"]
    return page.table(rows, ["step", "tile", "k", "naive_model", "naive_counted",
                             "tiled_model", "tiled_counted", "shared_model", "shared_counted",
                             "agree"],
                      show=ends[:15],
                      headers={"naive_model": "naive global (model)",
                       "naive_counted": "naive global (counted)",
                       "tiled_model": "tiled global (model)",
                       "tiled_counted": "tiled global (counted)",
                       "shared_model": "tiled shared (model)",
                       "shared_counted": "tiled shared (counted)",
                       "agree": "all agree"},
                      source="Model: lab.model.step_counters. Counted: lab.counting."
                             "count_accesses on lab's naive kernel and on the tiled kernel "
                             "with 8 × 8 tiles and slices of 4, under the CUDA simulator.")


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


# ----------------------------------------------------------------------------- the animation

#: Colours of the animation: the slice of A and B being worked on, the C tile, finished C.
_SLICE, _TILE, _DONE = "#4c72b0", "#dd8452", "#f3d9c6"


def _intensity(fma: int, loads: int) -> float:
    """FLOP per byte of FP32 loads: 2 FLOPs per multiply-add over 4 bytes per element."""
    return 2 * fma / (4 * loads) if loads else 0.0


def _draw_step(fig, step: int, steps: list[dict]) -> None:
    """Draw the animation's state after ``step`` steps (0: before the first) into ``fig``."""
    from matplotlib.patches import Rectangle

    fig.clear()
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1.55]})
    cur = steps[step - 1] if step else None
    titles = ("A (16 × 16)", "B (16 × 16)", "C = A·B")
    for ax, title in zip(axes[:3], titles):
        ax.add_patch(Rectangle((0, 0), SIZE, SIZE, facecolor="white", edgecolor="0.4",
                               linewidth=0.8))
        for i in range(SIZE + 1):
            shade = "0.7" if i % SLICE == 0 else "0.9"
            ax.plot([i, i], [0, SIZE], color=shade, linewidth=0.4)
            ax.plot([0, SIZE], [i, i], color=shade, linewidth=0.4)
        ax.set_xlim(-0.5, SIZE + 0.5)
        ax.set_ylim(SIZE + 0.5, -0.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=8)
    a_ax, b_ax, c_ax = axes[:3]
    for r in steps[:step]:                           # finished slices of finished tiles shade C
        if r["slice"] == SIZE // SLICE - 1:
            ti, tj = r["tile"]
            c_ax.add_patch(Rectangle((tj * BLOCK, ti * BLOCK), BLOCK, BLOCK,
                                     facecolor=_DONE, edgecolor="none"))
    if cur:
        ti, tj = cur["tile"]
        k0 = cur["slice"] * SLICE
        a_ax.add_patch(Rectangle((k0, ti * BLOCK), SLICE, BLOCK, facecolor=_SLICE,
                                 edgecolor="none", alpha=0.8))
        b_ax.add_patch(Rectangle((tj * BLOCK, k0), BLOCK, SLICE, facecolor=_SLICE,
                                 edgecolor="none", alpha=0.8))
        c_ax.add_patch(Rectangle((tj * BLOCK, ti * BLOCK), BLOCK, BLOCK, facecolor=_TILE,
                                 edgecolor="none", alpha=0.35 + 0.65 * (cur["slice"] + 1)
                                 / (SIZE // SLICE)))
    txt = axes[3]
    txt.axis("off")
    r = cur or {"step": 0, "naive_global": 0, "tiled_global": 0, "tiled_shared_loads": 0,
                "fma": 0}
    where = (f"step {r['step']} of {len(steps)}: "
             f"C[{cur['tile'][0] * BLOCK}:{cur['tile'][0] * BLOCK + BLOCK}, "
             f"{cur['tile'][1] * BLOCK}:{cur['tile'][1] * BLOCK + BLOCK}], "
             f"k {cur['slice'] * SLICE}–{cur['slice'] * SLICE + SLICE - 1}" if cur
             else f"{len(steps)} steps: 4 tiles of C × 4 slices of k")
    lines = [where, f"multiply-adds: {r['fma']}", "",
             "naive (every operand from global)",
             f"  global loads {r['naive_global']}  "
             f"({_intensity(r['fma'], r['naive_global']):.2f} FLOP/B)",
             "tiled (8 × 8 tile, slices of 4)",
             f"  global loads {r['tiled_global']}  "
             f"({_intensity(r['fma'], r['tiled_global']):.2f} FLOP/B)",
             f"  shared loads {r['tiled_shared_loads']}"]
    txt.text(0.0, 0.95, "\n".join(lines), va="top", ha="left", fontsize=7.5,
             family="monospace", transform=txt.transAxes)


def step_figure(step: int = 6):
    """One frame of the animation as a static figure: the tile of C, the slices of A and B,
    and the running counters after ``step`` steps."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8.6, 2.5), dpi=110)
    _draw_step(fig, step, model.step_counters(SIZE, BLOCK, SLICE))
    return fig


#: The player's button icons (matplotlib asks a web font for them) as plain characters.
_ICONS = {"fa-minus": "−", "fa-fast-backward": "«", "fa-step-backward": "|◀",
          "fa-play fa-flip-horizontal": "◀", "fa-pause": "❚❚", "fa-play": "▶",
          "fa-step-forward": "▶|", "fa-fast-forward": "»", "fa-plus": "+"}


def _offline_player(html: str) -> str:
    """matplotlib's player without its one outside request: the icon font's stylesheet link
    is dropped and each icon becomes a character, so the page needs no network."""
    import re

    html = re.sub(r'<link rel="stylesheet"\s*href="https?://[^"]*font-awesome[^"]*">', "", html)
    for name, char in _ICONS.items():
        html = html.replace(f'<i class="fa {name}"></i>', char)
    return html


def animation(dpi: int = 72):
    """The step-by-step model's animation in our drawing: the SIZE³ product step by step (one frame before
    the first step, one per step), as an interactive player (HTML, frames embedded as PNG).
    The plain-text form names the frames and the size of the HTML."""
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    steps = model.step_counters(SIZE, BLOCK, SLICE)
    fig = plt.figure(figsize=(8.6, 2.5), dpi=dpi)
    anim = FuncAnimation(fig, lambda i: _draw_step(fig, i, steps), frames=len(steps) + 1,
                         interval=700, repeat=False)
    html = _offline_player(anim.to_jshtml(fps=1.5, default_mode="once"))
    plt.close(fig)
    return page._Output({"text/html": html,
                         "text/plain": f"[animation: {len(steps) + 1} frames, "
                                       f"{len(html) // 1024} KiB of HTML]"})


# ----------------------------------------------------------------------------- glued values

def _loop(kernel: str) -> dict:
    """The hottest loop's instruction counts of a registered kernel (committed compiler
    facts, sm_90)."""
    from lab import compiler

    return compiler.report(kernel)[0].loop_mix


def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    a100 = model.DATASHEET["A100"]
    tensor_a100 = model.rung_model("tensor", a100)
    rows = {r["ours"]: r for r in h200_rows()}
    roofs = measured_machine()
    v = {"gpu": gpu_name(), "worst_gap": f"{100 * worst_seed_gap():.1f}%",
         "ridge_a100": f"{model.ridge(a100['tensor_tflops'] * 1e12, a100['hbm_gbps'] * 1e9):.0f}",
         "seed_ridge_a100": f"{seeds.TENSOR_RIDGE_A100_001}",
         "tensor_a100_tflops": f"{tensor_a100['tflops']:.1f}",
         "seed_tensor_a100_tflops": f"{seeds.TENSOR_TFLOPS_A100_001:g}",
         "hbm_measured": f"{roofs['hbm_gbps'] / 1e3:.2f}",
         "fp32_measured": f"{roofs['fp32_tflops']:.1f}",
         "smem_tbps": f"{model.shared_bandwidth(roofs) / 1e12:.1f}"}
    naive, shared = rows[OUR_KERNEL["naive"]], rows[OUR_KERNEL["shared"]]
    register, tensor = rows[OUR_KERNEL["register"]], rows[OUR_KERNEL["tensor"]]
    v["ratio_naive"] = f"{naive['ratio']:.2f}"
    v["measured_naive"] = tables.fmt(naive["measured_ms"])
    v["model_naive"] = tables.fmt(naive["roofs_ms"])
    v["ratio_shared"] = f"{shared['ratio']:.2f}"
    v["measured_shared"] = tables.fmt(shared["measured_ms"])
    v["model_shared"] = tables.fmt(shared["roofs_ms"])
    v["ratio_register"] = f"{register['ratio']:.2f}"
    v["measured_register"] = tables.fmt(register["measured_ms"])
    v["model_register"] = tables.fmt(register["roofs_ms"])
    v["ratio_tensor"] = f"{tensor['ratio']:.2f}"
    v["measured_tensor"] = tables.fmt(tensor["measured_ms"])
    v["model_tensor"] = tables.fmt(tensor["roofs_ms"])
    h200 = model.rung_model("naive", roofs)
    naive_ms = rows["naive"]["measured_ms"]
    v["naive_served_tbps"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / 1e12:.0f}"
    v["naive_served_x"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / (roofs['hbm_gbps'] * 1e9):.1f}"
    d = dram_evidence()
    v["ncu_n"] = str(d["n"])
    v["ncu_dram_pct"] = f"{100 * d['dram'] / d['model']:.2f}%"
    v["ncu_l2_pct"] = f"{100 * d['l2'] / d['model']:.1f}%"
    loop = _loop("tiled32")
    lds, lds128, sts = loop.get("LDS", 0), loop.get("LDS.128", 0), loop.get("STS", 0)
    k_per_trip = loop.get("FFMA", 0)                    # one output per thread: one FFMA per k
    v.update({"t32_lds": str(lds), "t32_lds128": str(lds128), "t32_sts": str(sts),
              "t32_k": str(k_per_trip), "t32_hw_passes": str(lds + lds128 + sts),
              "t32_model_passes": str(2 * k_per_trip + sts),
              "t32_hw_share": f"{(lds + lds128 + sts) / (2 * k_per_trip + sts):.0%}"})
    loop = _loop("block128")
    share = loop.get("FFMA", 0) / sum(loop.values())
    v["b128_share"] = f"{share:.2f}"
    v["b128_ceiling_ms"] = f"{model.flops(4096, 4096, 4096) / (share * roofs['fp32_tflops'] * 1e12) * 1e3:.2f}"
    cublas = next(r for r in results.rows("patch_sweep", kernel="cublas_fp32")
                  if r["m"] == r["n"] == r["k"] == 4096)
    v["cublas_fp32_ms"] = f"{cublas['median_ms']:.2f}"
    t = model.rung_model("tensor", roofs)
    tc_ms = rows["tc_bf16"]["measured_ms"]
    v["tc_need_tbps"] = f"{t['global_bytes'] / (tc_ms * 1e-3) / 1e12:.1f}"
    v["tc_min_l2"] = f"{1 - roofs['hbm_gbps'] * 1e9 * tc_ms * 1e-3 / t['global_bytes']:.0%}"
    last = model.step_counters(SIZE, BLOCK, SLICE)[-1]
    v.update({"anim_naive": str(last["naive_global"]), "anim_tiled": str(last["tiled_global"]),
              "anim_shared": str(last["tiled_shared_loads"]), "anim_fma": str(last["fma"]),
              "anim_naive_fpb": f"{_intensity(last['fma'], last['naive_global']):.2f}",
              "anim_tiled_fpb": f"{_intensity(last['fma'], last['tiled_global']):.2f}",
              "anim_steps": str(last["step"])})
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())
