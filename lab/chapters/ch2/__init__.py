"""Chapter 2, shared-memory tiles: the tile walk along k, what the tile buys in the model, the
kernel checked at shapes past a tile, its machine code beside nvcc's, and the measurements of
the selected GPU beside the sources' T4 and RTX 3090, cuBLAS, the sanitizer and Nsight Compute.

The page's sections, in order, one module each: :mod:`.s1_idea`, :mod:`.s2_model`,
:mod:`.s3_kernel`, :mod:`.s4_check`, :mod:`.s5_compiler`, :mod:`.s6_measured`,
:mod:`.s7_bottleneck`, :mod:`.s8_banks`, :mod:`.s9_this_gpu`; the exercises' solutions in
:mod:`.solutions`. Measurements come from the selected GPU's ``naive_tiled`` file
(``ncu_dram`` and ``sanitizer`` where they exist); compiler facts from :mod:`lab.compiler` and
:func:`lab.twins.compile_report`; the sources' numbers from :mod:`lab.seeds`. The notebook
calls only the names imported here.
"""
from __future__ import annotations

from lab import compiler, model, page, roofline, seeds
from lab.chapters import common
from lab.chapters.ch2.s1_idea import tile_walk_figure
from lab.chapters.ch2.s2_model import TILES, model_rows, model_table
from lab.chapters.ch2.s3_kernel import PADDING_SHAPES, padding_rows, padding_table
from lab.chapters.ch2.s4_check import KERNELS, check_shapes, check_table
from lab.chapters.ch2.s5_compiler import SASS_TWINS, sass_rows, sass_table
from lab.chapters.ch2.s6_measured import (PAIRS, FIGURE_KERNELS, intensity, tile_rows, tile_table,
                                          size_rows, size_table, size_figure, roofline_figure,
                                          ratio_table, sanitizer_rows, sanitizer_table)
from lab.chapters.ch2.s7_bottleneck import (ISSUE_PER_CLOCK, SHARED_LOADS_PER_CLOCK, ncu_table,
                                            ceiling_rows, ceiling_table, _ncu_values)
from lab.chapters.ch2.s8_banks import (BANKS, BANK_BYTES, WARP, BANK_TILE, BANK_SHAPE, BANK_KINDS,
                                       conflict_degree, warp_accesses, bank_degrees, bank_runs,
                                       bank_rows, bank_table, bank_values)
from lab.chapters.ch2.s9_this_gpu import measure_here
from lab.chapters.ch2.s3_kernel import source
from lab.chapters.ch2.s8_banks import glue_banks
from lab.chapters.common import example_inputs, verdict

__all__ = ["figure", "source", "glue_banks", "example_inputs", "verdict", "tile_walk_figure",
           "TILES", "model_rows", "model_table", "PADDING_SHAPES", "padding_rows", "padding_table",
           "KERNELS", "check_shapes", "check_table", "SASS_TWINS", "sass_rows", "sass_table",
           "PAIRS", "FIGURE_KERNELS", "intensity", "tile_rows", "tile_table", "size_rows",
           "size_table", "size_figure", "roofline_figure", "ratio_table", "sanitizer_rows",
           "sanitizer_table", "ISSUE_PER_CLOCK", "SHARED_LOADS_PER_CLOCK", "ncu_table",
           "ceiling_rows", "ceiling_table", "BANKS", "BANK_BYTES", "WARP", "BANK_TILE",
           "BANK_SHAPE", "BANK_KINDS", "conflict_degree", "warp_accesses", "bank_degrees",
           "bank_runs", "bank_rows", "bank_table", "bank_values", "measure_here",
           "MAX_THREADS_PER_BLOCK", "sanitizer_verdict", "values", "glue"]


#: The most threads one block may have (every compute capability since 2.0).
MAX_THREADS_PER_BLOCK = 1024


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
    """Every number the chapter's prose quotes, as strings."""
    roofs = roofline.measured()
    size = common.measured()
    v = {"the_gpu": common.gpu(), "max_threads": f"{MAX_THREADS_PER_BLOCK:,}",
         "threads_64": f"{64 * 64:,}", "the_sm_count": str(roofs["sm_count"])}
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
    v["fma_roof_tflops"] = f"{roofs['fma_tflops']:.1f}"
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


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
