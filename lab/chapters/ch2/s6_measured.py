"""Chapter 2, section 6: measured, beside the sources: the T4 study's tile table, the RTX 3090
tutorial's sizes, the roofline, Numba against the sources' CUDA C, and the sanitizer's verdict.
"""
from __future__ import annotations

from lab import compiler, model, page, plots, results, roofline, seeds, twins
from lab.chapters import common
from lab.chapters.ch2.s2_model import TILES
from lab.chapters.ch2.s4_check import KERNELS
from lab.chapters.ch2.s5_compiler import sass_rows


#: (Numba kernel, CUDA C twin) pairs of the timing comparison.
PAIRS = (("tiled16", "s003_tiled16"), ("tiled8", "s004_tiled8"), ("tiled16", "s004_tiled16"),
         ("tiled32", "s004_tiled32"))


#: The kernels of chapters 1-2 in the size figure, with their labels.
FIGURE_KERNELS = (("naive", "naive"), ("naive_swapped", "naive, swapped"),
                  ("tiled8", "tiled 8×8"), ("tiled16", "tiled 16×16"), ("tiled32", "tiled 32×32"))


def intensity(kernel: str) -> float:
    """The model's FLOP per byte against global memory: 1/4 naive, T/4 for T × T tiles."""
    return (model.tile_intensity(int(kernel[5:])) if kernel.startswith("tiled")
            else model.naive_intensity(4))


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
                       "speedup": "speed-up", "tflops": "tiled16 TFLOP/s"})


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


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    v = {}
    v["the_sm_count"] = str(roofs["sm_count"])
    sass = {r["kernel"]: r for r in sass_rows()}
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
    return v
