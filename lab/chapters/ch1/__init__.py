"""Chapter 1, the naive kernel: one thread per output, what a warp asks memory for under two
thread mappings, the Numba kernel beside nvcc's build of the sources' CUDA C, and the
measurements of the selected GPU beside the sources' T4 and RTX 3090.

The page's sections, in order, one module each: :mod:`.s1_idea` (one thread, one dot product),
:mod:`.s2_warp` (what a warp asks memory for), :mod:`.s3_kernel` (the kernel's source),
:mod:`.s4_check` (run and check), :mod:`.s5_compilers` (Numba and CUDA C, one loop, two
compilers), :mod:`.s6_sources` (measured, beside the sources), :mod:`.s7_coalescing` (the
swapped mapping, measured), :mod:`.s8_analysis` (the RTX 3090 tutorial's analysis,
recomputed), :mod:`.s9_dram` (what DRAM delivers), :mod:`.s10_this_gpu`; the exercises'
solutions in :mod:`.solutions`. Measurements come from the ``naive_tiled`` results file (and
``ncu_dram``) of the selected GPU, compiler facts from :mod:`lab.compiler` and
:func:`lab.twins.compile_report`, the sources' numbers from :mod:`lab.seeds`. The notebook calls
only the names imported here.
"""
from __future__ import annotations

from lab import compiler, model, page, roofline, seeds
from lab.chapters.common import gpu, measured, model_reads, ratio_rows
from lab.chapters.ch1.s1_idea import launch_rows, launch_table
from lab.chapters.ch1.s2_warp import (LANES, SECTOR_BYTES, ROW, MAPPINGS, warp_coordinates,
                                      touched, sectors, access_rows, access_table, warp_figure)
from lab.chapters.ch1.s4_check import CHECK_SHAPES, check_table
from lab.chapters.ch1.s5_compilers import (SASS_NUMBA, SASS_TWINS, PAIRS, loop_row, twin_reports,
                                           sass_rows, sass_table, mix_table, ratio_table)
from lab.chapters.ch1.s6_sources import seed_rows, seed_table
from lab.chapters.ch1.s7_coalescing import (load_sectors, swap_rows, swap_table, sweep_rows,
                                            l2_bytes, sweep_table, sweep_figure)
from lab.chapters.ch1.s8_analysis import (metrics_rows, metrics_table, bandwidth_rows,
                                          bandwidth_table)
from lab.chapters.ch1.s9_dram import ncu_table, _ncu_values
from lab.chapters.ch1.s10_this_gpu import measure_here
from lab.chapters.ch1.s3_kernel import source
from lab.chapters.common import example_inputs, verdict

__all__ = ["figure", "source", "example_inputs", "verdict", "launch_rows", "launch_table", "LANES",
           "SECTOR_BYTES", "ROW", "MAPPINGS", "warp_coordinates", "touched", "sectors",
           "access_rows", "access_table", "warp_figure", "CHECK_SHAPES", "check_table",
           "SASS_NUMBA", "SASS_TWINS", "PAIRS", "loop_row", "twin_reports", "sass_rows",
           "sass_table", "mix_table", "ratio_table", "seed_rows", "seed_table", "load_sectors",
           "swap_rows", "swap_table", "sweep_rows", "l2_bytes", "sweep_table", "sweep_figure",
           "metrics_rows", "metrics_table", "bandwidth_rows", "bandwidth_table", "ncu_table",
           "measure_here", "values", "glue"]


def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    size = measured()
    roofs = roofline.measured()
    v = {"the_gpu": gpu(), "the_sm_count": str(roofs["sm_count"]),
         "resident_per_sm": f"{model.SM90_LIMITS['threads']:,}",
         "resident": f"{model.SM90_LIMITS['threads'] * roofs['sm_count']:,}"}
    launch = launch_rows()
    v["oversub_1024"] = f"{launch[0]['per_resident']:.1f}"
    v["oversub_4096"] = f"{launch[1]['per_resident']:.0f}"

    per_k = {m: load_sectors(m) for m in MAPPINGS}
    per_8k = {m: load_sectors(m, 8) for m in MAPPINGS}
    v["sectors_naive"] = str(per_k["naive"])
    v["sectors_swapped"] = str(per_k["naive_swapped"])
    v["sectors8_naive"] = str(per_8k["naive"])
    v["sectors8_swapped"] = str(per_8k["naive_swapped"])
    v["sector_ratio"] = f"{per_k['naive_swapped'] / per_k['naive']:.2f}"

    sass = {r["kernel"]: r for r in sass_rows()}
    lit_mix = compiler.report("naive_literal")[0].loop_mix
    literal, typed, twin = (sass.get(name, {}) for name in ("naive_literal", "naive", "s003_naive"))
    v["loop_literal"] = str(literal.get("loop", "-"))
    v["ffma_literal"] = str(literal.get("ffma", "-"))
    v["ldg_literal"] = str(literal.get("ldg", "-"))
    v["loop_typed"] = str(typed.get("loop", "-"))
    v["ffma_typed"] = str(typed.get("ffma", "-"))
    v["ldg_typed"] = str(typed.get("ldg", "-"))
    v["loop_twin"] = str(twin.get("loop", "-"))
    v["ffma_twin"] = str(twin.get("ffma", "-"))
    v["ldg_twin"] = str(twin.get("ldg", "-"))
    v["sel_literal"] = str(sum(c for op, c in lit_mix.items() if op.endswith("SEL")))

    ratio = {(r["numba"], r["twin"], r["n"]): r["ratio"] for r in ratio_rows(PAIRS)}
    v["ratio_naive_1024"] = f"{ratio[('naive', 's003_naive', 1024)]:.2f}"
    v["ratio_naive_4096"] = f"{ratio[('naive', 's003_naive', 4096)]:.2f}"
    v["slowdown_literal"] = f"{1 / ratio[('naive_literal', 's003_naive', 1024)]:.1f}"
    worst = min(r for (k, _, _), r in ratio.items() if k != "naive_literal" and r)
    v["ratio_worst"] = f"{worst:.2f}"

    h1024, h4096 = size[("naive", 1024)], size[("naive", 4096)]
    t4 = seeds.NAIVE_T4[0]
    rtx = {s["n"]: s for s in seeds.NAIVE_TILED_3090}[1024]
    v["naive_ms_1024"] = f"{h1024['median_ms']:.3f}"
    v["naive_tflops_1024"] = f"{h1024['tflops']:.2f}"
    v["naive_tflops_4096"] = f"{h4096['tflops']:.2f}"
    v["naive_roof_share"] = f"{h4096['tflops'] / roofs['fma_tflops']:.0%}"
    v["naive_vs_t4"] = f"{t4['ms'] / h1024['median_ms']:.0f}"
    v["naive_vs_3090"] = f"{rtx['naive_ms'] / h1024['median_ms']:.0f}"
    v["t4_roof_share"] = f"{t4['tflops'] / seeds.MACHINES[0]['tflops']:.0%}"

    swaps = swap_rows()
    v["swap_1024"] = f"{swaps[0]['ratio']:.2f}"
    v["swap_4096"] = f"{next(r for r in swaps if r['n'] == 4096 and r['kernels'] == 'Numba')['ratio']:.2f}"
    v["swap_t4"] = f"{seeds.SWAPPED_SLOWDOWN_T4:.2f}"
    v["t4_l2_mb"] = f"{seeds.L2_T4_BYTES / 2**20:.0f} MiB"
    v["footprint_1024"] = f"{3 * 4 * 1024 ** 2 / 1e6:.1f}"
    v["l2_size"] = f"{l2_bytes() / 2**20:.0f} MiB"

    rows = sweep_rows()
    inside = [r for r in rows if r["fits"]]
    outside = [r for r in rows if not r["fits"]]
    v["n_first"] = str(rows[0]["n"])
    v["n_last_fit"] = str(inside[-1]["n"]) if inside else "-"
    v["ratio_in_lo"] = f"{min(r['ratio'] for r in inside):.2f}" if inside else "-"
    v["ratio_in_hi"] = f"{max(r['ratio'] for r in inside):.2f}" if inside else "-"
    v["ratio_out_lo"] = f"{min(r['ratio'] for r in outside):.2f}" if outside else "-"
    v["ratio_out_hi"] = f"{max(r['ratio'] for r in outside):.2f}" if outside else "-"
    v["ratio_largest"] = f"{rows[-1]['ratio']:.2f}"
    v["n_largest"] = str(rows[-1]["n"])
    mean_in = sum(r["ratio"] for r in inside) / max(len(inside), 1)
    mean_out = sum(r["ratio"] for r in outside) / max(len(outside), 1)
    step = mean_out / mean_in if inside and outside else 1.0
    v["sweep_trend"] = ("rises" if step > 1.15 else "falls" if step < 1 / 1.15
                        else "stays about the same")
    lo, hi = min(r["ratio"] for r in rows), max(r["ratio"] for r in rows)
    if step > 1.15:
        v["sweep_reading"] = (
            "The step at the L2 line is the second cost: once the operands no longer fit, "
            "the swapped kernel's evicted sectors come back from HBM, and the L2 is what kept "
            "the penalty smaller below the line.")
        v["swap_takeaway"] = "more once the operands outgrow the L2"
    else:
        v["sweep_reading"] = (
            "There is no step at the L2 line, so the swap does not cost DRAM bytes here: the "
            "sectors it needs again are still in the L1 or the L2 at every size. What it costs "
            f"is requests, {per_k['naive_swapped']} sectors per load step where the sources' "
            f"mapping needs {per_k['naive']}, which the L1 works through one after another "
            f"whatever the L2 holds. The measured slowdown, {lo:.1f} to {hi:.1f} across the "
            f"sizes, is of the order of that request ratio "
            f"({per_k['naive_swapped'] / per_k['naive']:.2f}), and so is the T4's "
            f"{seeds.SWAPPED_SLOWDOWN_T4:.2f}. A large L2 does not rescue an uncoalesced kernel.")
        v["swap_takeaway"] = "about as much on either side of the L2 line"

    bw = bandwidth_rows()
    stated = seeds.BANDWIDTH_003[0]
    v["eff_bw_naive"] = f"{bw[0]['gbps'] / 1e3:.1f}"
    v["eff_bw_share"] = f"{bw[0]['roof']:.0f}%"
    v["read_tbps"] = f"{roofs['read_gbps'] / 1e3:.2f}"
    v["eff_bw_3090"] = f"{bw[3]['gbps']:,.0f}"
    v["eff_bw_3090_share"] = f"{bw[3]['roof']:.0f}%"
    v["seed_naive_ms_at_700"] = f"{stated['global_reads_gb'] / stated['effective_gbps'] * 1e3:.0f}"
    v["seed_bw_stated"] = f"{stated['effective_gbps']}"
    v["seed_reads"] = f"{stated['global_reads_gb']:g}"
    v["seed_naive_ms"] = f"{rtx['naive_ms']:g}"
    v["peak_3090"] = f"{seeds.PEAK_GBPS_3090}"
    v["model_reads_gb"] = f"{model_reads('naive', 1024) / 1e9:.1f}"
    v["naive_intensity"] = f"{model.naive_intensity(4):.2f}"
    v["naive_dram_roof"] = f"{model.naive_intensity(4) * roofs['read_gbps'] / 1e3:.1f}"

    v.update(_ncu_values())
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
