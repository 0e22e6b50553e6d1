"""Chapter 2, shared-memory tiles: the tile walk along k, what the tile buys in the model, the
kernel checked at shapes past a tile, its machine code beside nvcc's, and the measurements of
the selected GPU beside the sources' T4 and RTX 3090, cuBLAS, the sanitizer and Nsight Compute.

Measurements come from the selected GPU's ``naive_tiled`` file (``ncu_dram`` and ``sanitizer``
where they exist); compiler facts from :mod:`lab.compiler` and :func:`lab.twins.compile_report`;
the sources' numbers from :mod:`lab.seeds`.
"""
from __future__ import annotations

import functools

from lab import bench, compiler, device, model, page, plots, results, roofline, seeds, twins
from lab.chapters import common
from lab.chapters.common import example_inputs, verdict  # noqa: F401  (the notebook's run cell)
from lab.counting import count_accesses, in_simulator
from lab.kernels import k01_naive, k02_tiled

#: Tile sizes of the chapter's kernels (``tiled8``, ``tiled16``, ``tiled32``).
TILES = k02_tiled.TILES
KERNELS = tuple(f"tiled{t}" for t in TILES)
#: The most threads one block may have (every compute capability since 2.0).
MAX_THREADS_PER_BLOCK = 1024
#: Per SM and clock on compute capability 9.0: warp instructions issued (four schedulers, one
#: each) and warp-wide 4-byte shared-memory loads served (32 banks of 4 bytes).
ISSUE_PER_CLOCK = 4
SHARED_LOADS_PER_CLOCK = 1
#: Shapes of the padding table: tiny, just under a round size, round, and one past it.
PADDING_SHAPES = ((17, 33, 5), (1000, 1030, 999), (1024, 1024, 1024), (1025, 1025, 1025),
                  (4097, 4097, 4097))
#: nvcc builds of the seeds' tiled kernels whose machine code the chapter reads.
SASS_TWINS = ("s003_tiled16", "s004_tiled16", "s004_tiled32")
#: (Numba kernel, CUDA C twin) pairs of the timing comparison.
PAIRS = (("tiled16", "s003_tiled16"), ("tiled8", "s004_tiled8"), ("tiled16", "s004_tiled16"),
         ("tiled32", "s004_tiled32"))
#: The kernels of chapters 1-2 in the size figure, with their labels.
FIGURE_KERNELS = (("naive", "naive"), ("naive_swapped", "naive, swapped"),
                  ("tiled8", "tiled 8×8"), ("tiled16", "tiled 16×16"), ("tiled32", "tiled 32×32"))


def check_shapes(tile: int) -> tuple[tuple[int, int, int], ...]:
    """A shape past one tile in M and K with N under a tile (every guard of the kernel runs:
    rows past M, columns past N, a partial last k-step), and one exact tile."""
    return ((tile + 1, 5, tile + 5), (tile, tile, tile))


def intensity(kernel: str) -> float:
    """The model's FLOP per byte against global memory: 1/4 naive, T/4 for T × T tiles."""
    return (model.tile_intensity(int(kernel[5:])) if kernel.startswith("tiled")
            else model.naive_intensity(4))


# ----------------------------------------------------------------------------- the idea

def tile_walk_figure(steps: int = 6, block_row: int = 2, block_col: int = 4, step: int = 2):
    """Concept figure: the block owning one T × T tile of C walks along k; at each step it
    stages one tile of A's row band and one of B's column band in shared memory. Cells are
    numbered by the step that loads them; the current step is highlighted."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(8.6, 3.4), dpi=110)
    titles = ("A (M × K), in tiles", "B (K × N), in tiles", "C (M × N), in tiles")
    for ax, title in zip(axes, titles):
        ax.set_xlim(0, steps)
        ax.set_ylim(steps, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(steps + 1))
        ax.set_yticks(range(steps + 1))
        ax.tick_params(labelbottom=False, labelleft=False, length=0)
        ax.grid(True, color="0.8")
        ax.set_title(title, fontsize=9)

    def cell(ax, col, row, colour, alpha, label=None, text_colour="black"):
        ax.add_patch(mpatches.Rectangle((col, row), 1, 1, facecolor=colour, alpha=alpha,
                                        edgecolor="0.4", linewidth=0.6))
        if label is not None:
            ax.text(col + 0.5, row + 0.5, label, ha="center", va="center", fontsize=8,
                    color=text_colour)

    for s in range(steps):
        colour, alpha = (("C1", 0.9) if s == step else ("C0", 0.45) if s < step
                         else ("C0", 0.12))
        cell(axes[0], s, block_row, colour, alpha, str(s))
        cell(axes[1], block_col, s, colour, alpha, str(s))
    cell(axes[2], block_col, block_row, "C2", 0.85, "acc")
    handles = [mpatches.Patch(facecolor="C1", alpha=0.9, label=f"step {step}: in shared memory now"),
               mpatches.Patch(facecolor="C0", alpha=0.45, label="steps already done"),
               mpatches.Patch(facecolor="C0", alpha=0.12, label="steps still to come"),
               mpatches.Patch(facecolor="C2", alpha=0.85,
                              label="the block's outputs, summed in registers")]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def model_rows() -> list[dict]:
    """Per tile size: threads and shared memory per block, global loads for a 1024³ product,
    the model's intensity, and the DRAM ceiling it implies on the selected GPU."""
    n = 1024
    roofs = roofline.measured()

    def ceiling(i):
        return min(i * roofs["read_gbps"] / 1e3, roofs["fma_tflops"])

    rows = [{"tile": "none (naive)", "threads": k01_naive.BLOCK ** 2, "shared_kb": 0.0,
             "loads": 2 * n ** 3 / 1e9, "intensity": model.naive_intensity(4),
             "ceiling": ceiling(model.naive_intensity(4))}]
    for tile in (*TILES, 2 * TILES[-1]):
        rows.append({"tile": f"{tile} × {tile}", "threads": tile * tile,
                     "shared_kb": model.tile_shared_bytes(tile) / 1024,
                     "loads": model.tiled_global_loads(n, tile) / 1e9,
                     "intensity": model.tile_intensity(tile),
                     "ceiling": ceiling(model.tile_intensity(tile))})
    return rows


def model_table():
    """What each tile size buys, by the model, with the DRAM ceiling of chapter 0's roofs."""
    return page.table(model_rows(), ["tile", "threads", "shared_kb", "loads", "intensity",
                                     "ceiling"],
                      {"threads": "threads", "shared_kb": "shared (KB)",
                       "loads": "loads at 1024³ (G)", "intensity": "FLOP/B",
                       "ceiling": "DRAM cap (TFLOP/s)"},
                      source=results.source_line("roofline"))


# ----------------------------------------------------------------------------- edges and checks

def padding_rows() -> list[dict]:
    """Share of the multiply-adds spent on zero padding, per shape and tile size."""
    rows = []
    for m, n, k in PADDING_SHAPES:
        row = {"shape": f"{m}×{n}×{k}"}
        for tile in TILES:
            work = 1
            for extent in (m, n, k):
                work *= -(-extent // tile) * tile
            row[f"t{tile}"] = 100 * (1 - m * n * k / work)
        rows.append(row)
    return rows


def padding_table():
    """Zero padding's share of the work."""
    return page.table(padding_rows(), ["shape", *(f"t{t}" for t in TILES)],
                      {"shape": "M×N×K", **{f"t{t}": f"T = {t} (%)" for t in TILES}}, digits=2)


def check_table():
    """Each tiled kernel at :func:`check_shapes` against float64 (output filled with NaN)."""
    rows = []
    for kernel, tile in zip(KERNELS, TILES):
        for i, shape in enumerate(check_shapes(tile)):
            v = bench.check(kernel, *shape, seed=i)
            rows.append({"kernel": kernel, "shape": "×".join(map(str, shape)),
                         "verdict": "PASS" if v.passed else "FAIL"})
    return page.table(rows, ["kernel", "shape", "verdict"], {"shape": "M×N×K"})


# ----------------------------------------------------------------------------- SASS

def _loop_row(report, compiled_by: str) -> dict:
    loop = report.loop_mix
    total = sum(loop.values())
    ffma = loop.get("FFMA", 0)
    lds = sum(c for op, c in loop.items() if op.startswith("LDS"))
    return {"kernel": report.kernel, "compiler": compiled_by, "loop": total, "ffma": ffma,
            "lds": lds, "bar": loop.get("BAR", 0), "lds_per_ffma": lds / ffma,
            "share": ffma / total}


@functools.lru_cache(maxsize=None)
def sass_rows() -> tuple[dict, ...]:
    """The hottest loop of each tiled kernel (Numba) and of the sources' tiled kernels (nvcc)."""
    rows = [_loop_row(compiler.report(k)[0], "Numba") for k in KERNELS]
    try:
        rows += [_loop_row(twins.compile_report(t), "nvcc -O3") for t in SASS_TWINS]
    except FileNotFoundError:
        pass
    return tuple(rows)


def sass_table():
    """Instruction counts of the hottest loops."""
    return page.table(list(sass_rows()), ["kernel", "compiler", "loop", "ffma", "lds", "bar",
                                          "share"],
                      {"loop": "loop instructions", "ffma": "FFMA", "lds": "LDS", "bar": "BAR",
                       "share": "FFMA share"})


# ----------------------------------------------------------------------------- measured

def tile_rows() -> list[dict]:
    """The T4 study's tile table at 1024³: the selected GPU's kernels beside the T4's."""
    size = common.measured()
    t4 = {row["tile"]: row for row in seeds.TILES_T4}
    naive_ms = size[("naive", 1024)]["median_ms"]
    rows = []
    for tile in (1, *TILES):
        ours = size[("naive" if tile == 1 else f"tiled{tile}", 1024)]
        rows.append({"tile": "none (naive)" if tile == 1 else f"{tile} × {tile}",
                     "intensity": model.naive_intensity(4) if tile == 1
                     else model.tile_intensity(tile),
                     "tflops": ours["tflops"], "x": naive_ms / ours["median_ms"],
                     "ms": ours["median_ms"], "t4_tflops": t4[tile]["tflops"],
                     "t4_x": t4[1]["ms"] / t4[tile]["ms"], "t4_ms": t4[tile]["ms"]})
    return rows


def tile_table():
    """The tile as the only variable, here and on the T4 study's T4 (1024³, FP32)."""
    g = common.gpu()
    return page.table(tile_rows(), ["tile", "intensity", "tflops", "x", "t4_tflops", "t4_x"],
                      {"intensity": "FLOP/B (model)", "tflops": f"{g} TFLOP/s",
                       "x": f"{g} × naive", "t4_tflops": "T4 TFLOP/s", "t4_x": "T4 × naive"},
                      source=results.source_line("naive_tiled"))


def size_rows() -> list[dict]:
    """The RTX 3090 tutorial's naive-vs-tiled table by size: the selected GPU's row beside the RTX 3090's."""
    size = common.measured()
    theirs = {s["n"]: s for s in seeds.NAIVE_TILED_3090}
    rows = []
    for n in sorted(theirs):
        naive, tiled = size[("naive", n)], size[("tiled16", n)]
        rows.append({"n": n, "gpu": common.gpu(), "naive_ms": naive["median_ms"],
                     "tiled_ms": tiled["median_ms"],
                     "speedup": naive["median_ms"] / tiled["median_ms"],
                     "tflops": tiled["tflops"]})
        s = theirs[n]
        rows.append({"n": n, "gpu": f"{seeds.GPU_3090}, the RTX 3090 tutorial", "naive_ms": s["naive_ms"],
                     "tiled_ms": s["tiled_ms"], "speedup": s["speedup"],
                     "tflops": s["tiled_gflops"] / 1e3})
    return rows


def size_table():
    """Naive against 16 × 16 tiles, size by size."""
    return page.table(size_rows(), ["n", "gpu", "naive_ms", "tiled_ms", "speedup", "tflops"],
                      {"gpu": "GPU", "naive_ms": "naive (ms)", "tiled_ms": "tiled16 (ms)",
                       "speedup": "speed-up", "tflops": "tiled16 TFLOP/s"},
                      source=results.source_line("naive_tiled"))


def size_figure():
    """TFLOP/s against n for every kernel of chapters 1-2 and cuBLAS on the selected GPU,
    the RTX 3090 tutorial's RTX 3090 dashed."""
    size = common.measured()
    g = common.gpu()
    sizes = sorted({n for (_, n) in size})
    fig, ax = plots.axes("", "n (M = N = K)", "TFLOP/s", logx=True, logy=True)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    for i, (kernel, label) in enumerate(FIGURE_KERNELS):
        ax.plot(sizes, [size[(kernel, n)]["tflops"] for n in sizes], label=f"{label}, {g}",
                color=f"C{i}", **plots.OURS)
    cublas = [n for n in sizes if ("cublas_fp32", n) in size]
    if cublas:
        ax.plot(cublas, [size[("cublas_fp32", n)]["tflops"] for n in cublas],
                label=f"cuBLAS FP32, {g}", color="black", **plots.LIBRARY)
    ns = [s["n"] for s in seeds.NAIVE_TILED_3090]
    ax.plot(ns, [s["naive_gflops"] / 1e3 for s in seeds.NAIVE_TILED_3090], color="C0",
            label="naive, RTX 3090 (the RTX 3090 tutorial)", **plots.SEED)
    ax.plot(ns, [s["tiled_gflops"] / 1e3 for s in seeds.NAIVE_TILED_3090], color="C3",
            label="tiled 16×16, RTX 3090 (the RTX 3090 tutorial)", **plots.SEED)
    return plots.finish_below(fig, ax)


def roofline_figure():
    """The selected GPU's roofline with each kernel of chapters 1-2 at its model intensity
    (4096³), at its measured DRAM intensity (Nsight Compute, 1024³) where counted, and the T4
    tile table of the T4 study. Kernels are told apart by colour, so no label overprints another."""
    import matplotlib.pyplot as plt

    roofs = roofline.measured()
    size = common.measured()
    g = common.gpu()
    fig, ax = plots.axes("", "arithmetic intensity (FLOP/byte)", "TFLOP/s")
    plots.roofline(ax, roofs["fma_tflops"], roofs["read_gbps"],
                   label=f"{g} FP32 roof, measured", style={"linewidth": 2, "color": "0.2"})
    t4 = next(m for m in seeds.MACHINES if m["source"] == "the T4 study")
    plots.roofline(ax, t4["tflops"], t4["gbps"], label="Tesla T4 roof (the T4 study)",
                   style={**plots.SEED, "color": "0.55"})
    t4_tiles = {row["tile"]: row for row in seeds.TILES_T4}
    counted = {r["kernel"]: r for r in common.ncu_rows()} if common.ncu_ok() else {}
    handles = []
    for i, kernel in enumerate(("naive", *KERNELS)):
        colour = f"C{i}"
        x = intensity(kernel)
        ax.plot([x], [size[(kernel, 4096)]["tflops"]], linestyle="none", marker="o",
                color=colour, markersize=7)
        tile = 1 if kernel == "naive" else int(kernel[5:])
        ax.plot([x], [t4_tiles[tile]["tflops"]], linestyle="none", marker="s",
                markerfacecolor="none", color=colour, markersize=7)
        if kernel in counted:
            r = counted[kernel]
            dram = r["dram_read_bytes"] + (r["dram_write_bytes"] or 0)
            ax.plot([model.flops(r["n"], r["n"], r["n"]) / dram],
                    [size[(kernel, r["n"])]["tflops"]], linestyle="none", marker="x",
                    color=colour, markersize=8, markeredgewidth=1.6)
        handles.append(plt.Line2D([], [], color=colour, linewidth=6, label=kernel))
    if ("cublas_fp32", 4096) in size:
        ax.axhline(size[("cublas_fp32", 4096)]["tflops"], color="black", linestyle=":",
                   linewidth=1)
        handles.append(plt.Line2D([], [], color="black", linestyle=":",
                                  label=f"cuBLAS FP32, {g}, 4096³"))
    grey = "0.35"
    handles += [plt.Line2D([], [], linestyle="none", marker="o", color=grey,
                           label=f"{g}, model intensity, 4096³"),
                plt.Line2D([], [], linestyle="none", marker="s", markerfacecolor="none",
                           color=grey, label="Tesla T4 tile table (the T4 study)")]
    if counted:
        handles.append(plt.Line2D([], [], linestyle="none", marker="x", color=grey,
                                  markeredgewidth=1.6,
                                  label=f"{g}, DRAM intensity measured by ncu, 1024³"))
    handles += ax.get_lines()[:2]
    ax.set_ylim(0.05, 150)
    return plots.finish_below(fig, ax, handles=handles)


def ratio_table():
    """The tiled kernels beside their CUDA C twins (the RTX 3090 tutorial's and the T4 study's, nvcc)."""
    return common.ratio_table(PAIRS)


# ----------------------------------------------------------------------------- sanitizer

def sanitizer_rows() -> list[dict]:
    """compute-sanitizer's memcheck and racecheck for the kernels and twins of chapters 1-2 at
    the experiment's small odd shape."""
    data = results.load("sanitizer")
    shape = tuple(data["parameters"].get("shape", []))
    ours = {"naive", "naive_swapped", "naive_literal", *KERNELS, *twins.TWINS}
    by_kernel: dict[str, dict] = {}
    for r in data["rows"]:
        if r["kernel"] not in ours or (r["m"], r["n"], r["k"]) != shape:
            continue
        entry = by_kernel.setdefault(r["kernel"], {"kernel": r["kernel"]})
        entry[f"{r['tool']}_errors"] = (r["errors"] if r["errors"] is not None
                                        else f"no summary (exit {r['returncode']})")
        entry[f"{r['tool']}_check"] = r["check"]
    return [dict(row, shape="×".join(map(str, shape))) for row in by_kernel.values()]


def sanitizer_table():
    """Errors each tool reported, and the run's own float64 check."""
    return page.table(sanitizer_rows(), ["kernel", "memcheck_errors", "racecheck_errors",
                                         "memcheck_check", "racecheck_check"],
                      {"memcheck_errors": "memcheck errors", "racecheck_errors":
                       "racecheck errors", "memcheck_check": "memcheck run",
                       "racecheck_check": "racecheck run"},
                      source=results.source_line("sanitizer"))


def sanitizer_verdict() -> str:
    """One clause per tool summarising the sanitizer rows."""
    rows = sanitizer_rows()
    parts = []
    for tool in ("memcheck", "racecheck"):
        runs = [r for r in rows if f"{tool}_errors" in r]
        if not runs:
            continue
        if all(r[f"{tool}_errors"] == 0 and r[f"{tool}_check"] == "PASS" for r in runs):
            parts.append(f"{tool} reported no errors for any kernel, and every run passed "
                         "its check")
        else:
            bad = sorted(r["kernel"] for r in runs
                         if r[f"{tool}_errors"] != 0 or r[f"{tool}_check"] != "PASS")
            parts.append(f"{tool} flagged {', '.join(bad)}")
    return "; ".join(parts) or "no sanitizer rows for these kernels"


# ----------------------------------------------------------------------------- the new limit

def ncu_table():
    """Model reads, reads from L2 and from DRAM (Nsight Compute, 1024³), and the time."""
    rows = common.ncu_rows()
    size = common.measured()
    out = []
    for r in rows:
        if r["kernel"] not in ("naive", *KERNELS):
            continue
        row = {"kernel": r["kernel"], "model": common.model_reads(r["kernel"], r["n"]) / 1e6,
               "ms": size[(r["kernel"], r["n"])]["median_ms"]}
        if common.ncu_ok():
            row["l2"] = r["l2_read_bytes"] and r["l2_read_bytes"] / 1e6
            row["dram"] = r["dram_read_bytes"] / 1e6
        out.append(row)
    return page.table(out, ["kernel", "model", "l2", "dram", "ms"],
                      {"model": "model (MB)", "l2": "from L2 (MB)", "dram": "DRAM read (MB)",
                       "ms": "time at 1024³ (ms)"}, source=results.source_line("ncu_dram"))


def ceiling_rows() -> list[dict]:
    """Two ceilings read off each tiled kernel's hottest loop, against its 4096³ speed.

    Issue: the FP32 roof is one FFMA per issue slot, so the loop's FFMA share of its
    instructions caps the speed at share × roof. Shared memory: an SM serves
    ``SHARED_LOADS_PER_CLOCK`` warp-wide loads per clock against ``ISSUE_PER_CLOCK`` FFMAs at
    the roof, so at ``LDS per FFMA`` loads the cap is roof × loads-per-clock ÷ (issue × LDS
    per FFMA), counting every LDS as a single pass (the best case).
    """
    roof = roofline.measured()["fma_tflops"]
    size = common.measured()
    sass = {r["kernel"]: r for r in sass_rows()}
    rows = []
    for kernel in KERNELS:
        s = sass[kernel]
        issue = s["share"] * roof
        smem = min(1.0, SHARED_LOADS_PER_CLOCK / (ISSUE_PER_CLOCK * s["lds_per_ffma"])) * roof
        measured = size[(kernel, 4096)]["tflops"]
        rows.append({"kernel": kernel, "share": s["share"], "lds_per_ffma": s["lds_per_ffma"],
                     "issue": issue, "smem": smem, "tflops": measured,
                     "of_lower": 100 * measured / min(issue, smem)})
    return rows


def ceiling_table():
    """Issue and shared-memory ceilings beside the measured speed."""
    return page.table(ceiling_rows(), ["kernel", "issue", "smem", "tflops", "of_lower"],
                      {"issue": "issue cap (TFLOP/s)", "smem": "shared cap (TFLOP/s)",
                       "tflops": "4096³ (TFLOP/s)", "of_lower": "% of lower cap"},
                      source=results.source_line("naive_tiled"))


# ----------------------------------------------------------------------------- this GPU

def measure_here():
    """On a GPU: time the naive kernel and the three tile sizes at 1024³ (a few seconds) beside
    the H200 reference. Without a GPU: print one line, return None."""
    return common.measure_here(("naive", *KERNELS), tflops=True)


# ----------------------------------------------------------------------------- glued values

def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    roofs = roofline.measured()
    size = common.measured()
    v = {"gpu": common.gpu(), "max_threads": f"{MAX_THREADS_PER_BLOCK:,}",
         "threads_64": f"{64 * 64:,}", "sm_count": str(roofs["sm_count"])}
    mrows = {r["tile"]: r for r in model_rows()}
    v["ceiling_32"] = f"{mrows['32 × 32']['ceiling']:.0f}"

    sass = {r["kernel"]: r for r in sass_rows()}
    mix16 = compiler.report("tiled16")[0].loop_mix
    v["lds_per_ffma_16"] = f"{sass['tiled16']['lds_per_ffma']:.2f}"
    v["lds128_16"] = str(mix16.get("LDS.128", 0))
    v["lds32_16"] = str(mix16.get("LDS", 0))
    v["ffma_16"] = str(mix16.get("FFMA", 0))
    v["loop_16"] = str(sass["tiled16"]["loop"])
    if "s003_tiled16" in sass:
        v["loop_twin_16"] = str(sass["s003_tiled16"]["loop"])
        v["ffma_s004_16"] = str(sass["s004_tiled16"]["ffma"])
        v["steps_s004_16"] = str(sass["s004_tiled16"]["ffma"] // 16)
        v["bar_s004_16"] = str(sass["s004_tiled16"]["bar"])
    else:
        for key in ("loop_twin_16", "ffma_s004_16", "steps_s004_16", "bar_s004_16"):
            v[key] = "(nvcc not installed)"

    tiles = tile_rows()
    best = max(tiles[1:], key=lambda r: r["tflops"])
    gains = [tiles[i]["ms"] / tiles[i + 1]["ms"] for i in (1, 2)]
    v["x_32"] = f"{tiles[3]['x']:.1f}"
    v["x_8"] = f"{tiles[1]['x']:.2f}"
    v["t4_x_32"] = f"{tiles[3]['t4_x']:.1f}"
    v["best_tile"] = best["tile"]
    v["gain_8_16"] = f"{gains[0]:.2f}"
    v["gain_16_32"] = f"{gains[1]:.2f}"
    v["t4_gain_8_16"] = f"{tiles[1]['t4_ms'] / tiles[2]['t4_ms']:.2f}"
    v["t4_gain_16_32"] = f"{tiles[2]['t4_ms'] / tiles[3]['t4_ms']:.2f}"
    v["gain_sentence"] = ("Neither machine comes close to 2×: the model's intensity against "
                          "DRAM is not what sets the speed." if max(gains) < 1.8 else
                          "Here at least one doubling comes close to the model's 2×.")

    ours = [r for r in size_rows() if r["gpu"] == common.gpu()]
    by_n = {r["n"]: r for r in ours}
    v["n_small"] = str(ours[0]["n"])
    v["speedup_small"] = f"{ours[0]['speedup']:.1f}"
    v["speedup_512"] = f"{by_n[512]['speedup']:.1f}"
    v["n_large"] = str(ours[-1]["n"])
    v["speedup_large"] = f"{ours[-1]['speedup']:.1f}"
    v["speedup_trend"] = ("keeps growing with size, as on the RTX 3090"
                          if ours[-1]["speedup"] > 1.15 * by_n[512]["speedup"] else
                          "is flat from 512³ on, where the RTX 3090's keeps growing")
    n0 = ours[0]["n"]
    blocks_small = (-(-n0 // 16)) ** 2
    v["blocks_small"] = f"{blocks_small:,}"
    v["blocks_per_sm_small"] = f"{blocks_small / roofs['sm_count']:.1f}"
    v["blocks_fit"] = str(model.blocks_per_sm(16 * 16, compiler.report("tiled16")[0].registers,
                      model.tile_shared_bytes(16)))

    pairs = [r for r in common.ratio_rows(PAIRS) if r["ratio"] is not None]
    ratios = [r["ratio"] for r in pairs]
    v["tiled_ratio_lo"] = f"{min(ratios):.2f}"
    v["tiled_ratio_hi"] = f"{max(ratios):.2f}"
    worst = min(pairs, key=lambda r: r["ratio"])
    ours, twin = sass.get(worst["numba"]), sass.get(worst["twin"])
    gap = (f"The largest gap is {worst['numba']} against {worst['twin']} "
           f"({worst['ratio']:.2f} at {worst['n']}³)")
    if ours and twin:
        gap += (f", and the SASS table above shows where it comes from: Numba's loop takes "
                f"{ours['loop']} instructions for {ours['ffma']} FFMAs, nvcc's build of the "
                f"seed's kernel {twin['loop']} for {twin['ffma']}.")
    else:
        gap += "."
    v["gap_sentence"] = gap

    v["sanitizer_verdict"] = sanitizer_verdict()
    v.update(_ncu_values())

    crows = ceiling_rows()
    t32 = size[("tiled32", 4096)]["tflops"]
    shares = [r["of_lower"] for r in crows]
    v["issue_per_clock"] = str(ISSUE_PER_CLOCK)
    v["fma_tflops"] = f"{roofs['fma_tflops']:.1f}"
    v["smem_ceiling_16"] = f"{crows[1]['smem']:.0f}"
    v["issue_ceiling_16"] = f"{crows[1]['issue']:.0f}"
    v["ceiling_lo"] = f"{min(shares):.0f}%"
    v["ceiling_hi"] = f"{max(shares):.0f}%"
    v["tiled32_tflops"] = f"{t32:.1f}"
    v["tiled32_share_of_dram_ceiling"] = f"{t32 / mrows['32 × 32']['ceiling']:.0%}"
    v["tiled32_vs_roof"] = f"{t32 / roofs['fma_tflops']:.0%}"
    v["cublas_vs_tiled32"] = f"{size[('cublas_fp32', 4096)]['tflops'] / t32:.1f}"
    v["seed004_edge"] = f"{seeds.TILED_EDGE_T4[0]['extra_time_pct']:g}%"
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def _ncu_values() -> dict:
    rows = common.ncu_rows()
    if not common.ncu_ok():
        return {"ncu_tiled_sentence": "Nsight Compute has no byte counts for this GPU to "
                                      "confirm it",
                "ncu_tiles_note": "Without counters, the gap between the DRAM ceiling and the "
                                  "measured speed is the evidence."}
    by = {r["kernel"]: r for r in rows}
    naive, t8, t32 = by["naive"], by["tiled8"], by["tiled32"]
    sentence = ("by Nsight Compute's count at 1024³, the bytes the SMs read from L2 fall from "
                f"{naive['l2_read_bytes'] / 1e6:,.0f} MB (naive) to "
                f"{t32['l2_read_bytes'] / 1e6:,.0f} MB (32 × 32 tiles)")
    note = ""
    if t8["l2_read_bytes"] > naive["l2_read_bytes"]:
        note = ("One row stands out: 8 × 8 tiles read more from L2 "
                f"({t8['l2_read_bytes'] / 1e6:,.0f} MB) than the naive kernel "
                f"({naive['l2_read_bytes'] / 1e6:,.0f} MB). The L1 already caught most of the "
                "naive kernel's reuse, more than an 8 × 8 tile collects on purpose, which fits "
                "8 × 8 tiles being no faster than the naive kernel. ")
    passes = [r["dram_read_bytes"] / (4 * 2 * r["n"] ** 2) for r in rows]
    spread = (f"about {min(passes):.2f}" if f"{min(passes):.2f}" == f"{max(passes):.2f}"
              else f"{min(passes):.2f} to {max(passes):.2f}")
    note += (f"DRAM reads are {spread} passes over A and B for every kernel at this size, so "
             "DRAM is not what separates them.")
    return {"ncu_tiled_sentence": sentence, "ncu_tiles_note": note}


# ----------------------------------------------------------------------------- shared-memory banks

#: Shared memory's banks on every GPU since compute capability 5.0: 32 banks, 4 bytes wide;
#: consecutive 4-byte words sit in consecutive banks.
BANKS, BANK_BYTES = 32, 4
WARP = 32
#: The counted run: one 32 × 32 block of C, one step along k (a few seconds in the simulator).
BANK_TILE, BANK_SHAPE = 32, (32, 32, 32)
#: The four access kinds of the tiled kernel: (shared array, op, label). The simulator names
#: shared arrays by the order in which the kernel creates them: the A tile first, then B.
BANK_KINDS = (("shared0", "store", "A tile store"), ("shared1", "store", "B tile store"),
              ("shared0", "load", "A read in the k-loop"),
              ("shared1", "load", "B read in the k-loop"))


def conflict_degree(words) -> int:
    """The bank conflict degree of one warp-wide access to 4-byte ``words`` (one per active
    lane): the most distinct words any one bank must serve. Lanes reading the same word share
    one transfer (a broadcast), so 1 is conflict-free and 32 is fully serialised."""
    per_bank: dict[int, set] = {}
    for w in words:
        per_bank.setdefault(w % BANKS, set()).add(w)
    return max(len(s) for s in per_bank.values())


def warp_accesses(events, block_dim: tuple[int, int], width: int) -> dict:
    """Group the shared accesses of a counted run (:func:`lab.counting.count_accesses`)
    into warp-wide accesses: key (array, op, block, barriers passed, warp, n-th access of this
    array and op by each thread since its last barrier), value the 4-byte words the warp's lanes
    touch, with a shared array of row width ``width`` words. Threads are numbered
    ``x + y·block_dim[0]``, 32 to a warp, as the hardware numbers them."""
    ordinal: dict = {}
    grouped: dict = {}
    for space, op, array, idx, blk, thr, barriers in events:
        if space != "shared":
            continue
        phase = (array, op, blk, thr, barriers)
        n = ordinal.get(phase, 0)
        ordinal[phase] = n + 1
        warp = (thr[0] + thr[1] * block_dim[0]) // WARP
        row, col = idx
        grouped.setdefault((array, op, blk, barriers, warp, n), []).append(row * width + col)
    return grouped


def bank_degrees(events, block_dim: tuple[int, int], width: int) -> dict:
    """Per access kind (:data:`BANK_KINDS`): the number of warp-wide accesses, the largest and
    the mean conflict degree over them, and whether every warp-wide access had all 32 lanes."""
    grouped = warp_accesses(events, block_dim, width)
    out = {}
    for array, op, label in BANK_KINDS:
        groups = [w for (a, o, *_), w in grouped.items() if a == array and o == op]
        degrees = [conflict_degree(w) for w in groups]
        out[label] = {"accesses": len(groups), "max": max(degrees),
                      "mean": sum(degrees) / len(degrees),
                      "full": all(len(w) == WARP for w in groups)}
    return out


def bank_runs() -> dict:
    """Lab's ``tiled32`` and :func:`lab.kernels.k02_tiled.make_tiled_study` (32 × 33) counted on one
    :data:`BANK_SHAPE` product in the simulator: per kind the conflict degrees of each, whether
    the two record the very same accesses (thread, block, element, barrier count: only the
    address differs), and each output's verdict against float64. On a GPU the counting runs in
    a child Python on the simulator."""
    if not device.SIMULATOR:
        return in_simulator("bank_runs", "lab.chapters.ch2")
    m, n, k = BANK_SHAPE
    A, B = example_inputs(m=m, k=k, n=n)
    t = BANK_TILE
    C_lab, lab_events = _counted(k02_tiled.make_launch(t), A, B)
    C_pad, pad_events = _counted(k02_tiled.make_tiled_study(t, pad=1), A, B)
    return {"unpadded": bank_degrees(lab_events, (t, t), t),
            "padded": bank_degrees(pad_events, (t, t), t + 1),
            "same_accesses": sorted(lab_events) == sorted(pad_events),
            "unpadded_check": bench.compare(C_lab, A, B).passed,
            "padded_check": bench.compare(C_pad, A, B).passed}


def _counted(launch, A, B):
    """:func:`lab.counting.count_accesses`, checked to be whole: every thread worked on the
    same two shared arrays, ``shared0`` and ``shared1`` (the A and B tiles); RuntimeError if not."""
    C, events = count_accesses(launch, A, B)
    arrays: dict = {}
    for space, _op, array, _idx, blk, thr, _bar in events:
        if space == "shared":
            arrays.setdefault((blk, thr), set()).add(array)
    if {frozenset(a) for a in arrays.values()} != {frozenset({"shared0", "shared1"})}:
        raise RuntimeError("a counted run did not share one pair of tiles among its threads")
    return C, events


def bank_rows(runs: dict | None = None) -> list[dict]:
    """Per access kind: warp-wide accesses counted, and the worst and mean conflict degree with
    the 32 × 32 tiles of ``tiled32`` and with 32 × 33 tiles."""
    runs = runs or bank_runs()
    return [{"access": label, "warps": runs["unpadded"][label]["accesses"],
             "plain_max": runs["unpadded"][label]["max"],
             "plain_mean": runs["unpadded"][label]["mean"],
             "padded_max": runs["padded"][label]["max"],
             "padded_mean": runs["padded"][label]["mean"]} for _, _, label in BANK_KINDS]


def bank_table(runs: dict | None = None):
    """:func:`bank_rows` as a table, with the checks of the counted runs under it."""
    runs = runs or bank_runs()
    m, n, k = BANK_SHAPE
    word = {True: "PASS", False: "FAIL"}
    return page.table(
        bank_rows(runs), ["access", "warps", "plain_max", "plain_mean", "padded_max",
                          "padded_mean"],
        {"warps": "warp-wide accesses", "plain_max": "[32][32] worst",
         "plain_mean": "[32][32] mean", "padded_max": "[32][33] worst",
         "padded_mean": "[32][33] mean"},
        source=f"Counted: lab.counting.count_accesses on tiled32 and on the same kernel "
               f"with 32 × 33 tiles (k02_tiled.make_tiled_study with pad=1), {m}×{n}×{k}, CUDA simulator; "
               f"32 banks of 4 bytes. Same accesses apart from the addresses: "
               f"{'yes' if runs['same_accesses'] else 'NO'}. Against float64: "
               f"{word[runs['unpadded_check']]} (32 × 32), "
               f"{word[runs['padded_check']]} (32 × 33).")


def bank_values(runs: dict | None = None) -> dict:
    """The numbers the banks section quotes: the worst degree of the kernel's accesses with and
    without padding, and a warp reading down one column of a 32-wide and a 33-wide tile."""
    runs = runs or bank_runs()
    lanes = range(WARP)
    return {"bank_worst_plain": str(max(r["max"] for r in runs["unpadded"].values())),
            "bank_worst_padded": str(max(r["max"] for r in runs["padded"].values())),
            "bank_column_32": str(conflict_degree([lane * 32 for lane in lanes])),
            "bank_column_33": str(conflict_degree([lane * 33 for lane in lanes])),
            "bank_banks": str(BANKS), "bank_bytes": str(BANK_BYTES)}
