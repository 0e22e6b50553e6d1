"""Chapter 4, closing the gap: 16-byte loads, a pipelined main loop and warp tiles, rung by rung
against cuBLAS.

The page's sections, in order, one module each: :mod:`.s1_kernel` (where chapter 3 left us:
16-byte loads and the kernel factory, the warp tile drawn), :mod:`.s2_check` (run and check),
:mod:`.s3_compiler` (evidence from the compiler), :mod:`.s4_ladder` (predictions, and the
ladder measured), :mod:`.s5_variants` (where the time goes, one change at a time),
:mod:`.s6_edges` (shapes that are not tile multiples), :mod:`.s7_tuning` (tuning the
configuration), :mod:`.s8_races` (the sanitizer), :mod:`.s9_reference` (beside a CUDA C ladder),
:mod:`.s10_gap` (what moved the bottleneck, and what would close the rest); the exercises'
solutions in :mod:`.solutions`. The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import model, page, results
from lab.chapters import common
from lab.chapters.ch4.s1_kernel import (config, thread_pieces, warp_footprint, warp_tile_figure,
                                        source)
from lab.chapters.ch4.s2_check import CHECKS, check_table
from lab.chapters.ch4.s3_compiler import COMPILED, compiler_rows, compiler_table
from lab.chapters.ch4.s4_ladder import (PREDICTIONS, CURVES, ladder, at_size, cublas_mean,
                                        ladder_table, prediction_rows, prediction_table,
                                        size_figure, size_table)
from lab.chapters.ch4.s5_variants import VARIANTS, variant_rows, variant_table
from lab.chapters.ch4.s6_edges import edge_rows, edge_table
from lab.chapters.ch4.s7_tuning import tune_rows, tune_table
from lab.chapters.ch4.s8_races import sanitizer_table
from lab.chapters.ch4.s9_reference import REFERENCE_PAIRS, reference_rows, reference_table
from lab.chapters.ch4.s10_gap import gap_rows, gap_values, gap_table
from lab.chapters.common import example_inputs, verdict

__all__ = ["figure", "example_inputs", "verdict", "config", "thread_pieces", "warp_footprint",
           "warp_tile_figure", "source", "CHECKS", "check_table", "COMPILED", "compiler_rows",
           "compiler_table", "PREDICTIONS", "CURVES", "ladder", "at_size", "cublas_mean",
           "ladder_table", "prediction_rows", "prediction_table", "size_figure", "size_table",
           "VARIANTS", "variant_rows", "variant_table", "edge_rows", "edge_table", "tune_rows",
           "tune_table", "sanitizer_table", "REFERENCE_PAIRS", "reference_rows", "reference_table",
           "gap_rows", "gap_values", "gap_table", "RUNGS", "GOAL", "PREDICTED_TOTAL", "prefetch",
           "gpu_name", "values", "glue"]


#: The rungs of this chapter in ladder order, after chapter 3's ``block128``.
RUNGS = ("vectorized", "vectorized_spread", "pipelined", "warptile", "warptile_tuned")


#: The goal: this share of cuBLAS FP32 at 4096³.
GOAL = 0.80


#: The whole ladder's predicted share of cuBLAS at ``warptile``.
PREDICTED_TOTAL = (75, 90)


def prefetch() -> None:
    """Make sure the compiler facts of :data:`COMPILED` are at hand
    (:func:`lab.chapters.common.prefetch`)."""
    common.prefetch(list(COMPILED))


def gpu_name() -> str:
    """The measured GPU's short name, from the ladder file's provenance."""
    return page.gpu_label(results.load("fp32_ladder")["provenance"]["gpu"])


def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    at = at_size()
    comp = {r["kernel"]: r for r in compiler_rows()}
    b128, vec = comp["block128"], comp["vectorized"]
    tuned, edges = comp["warptile_tuned"], comp["warptile_tuned (edges)"]
    cub = cublas_mean()
    v = {"the_gpu": gpu_name(), "cublas_4096": f"{cub:.1f}", "goal": f"{GOAL:.0%}",
         "target_tflops": f"{GOAL * cub:.1f}"}
    peer = [r for r in results.rows("sgemm_cuda", m=4096) if r["peer_kernel"] != 0]
    ref_best = max(peer, key=lambda r: r["tflops"])
    ref_pct = ref_best["pct_cublas"]
    v["ref_best_pct"] = f"{ref_pct:.1f}%"
    v["ref_best_rung"] = ref_best["rung"]
    v["ref_best_tflops"] = f"{ref_best['tflops']:.1f}"
    v.update(gap_values())
    # compiler
    v["b128_regs"], v["b128_blocks"] = str(b128["registers"]), str(b128["blocks"])
    v["b128_loop"], v["b128_ffma"] = str(b128["loop"]), str(b128["ffma"])
    v["b128_lds"], v["b128_share"] = b128["lds"], f"{b128['share']:.2f}"
    v["b128_other"] = str(b128["loop"] - b128["ffma"] - b128["lds_count"])
    v["lds_per_k_b128"] = f"{b128['lds_count'] / (b128['ffma'] / 64):g}"
    v["vec_loop"] = str(vec["loop"])
    v["vec_share"], v["vec_lds"] = f"{vec['share']:.2f}", vec["lds"]
    v["vec_k_per_loop"] = f"{vec['ffma'] // 64}"
    v["lds_per_k_vec"] = f"{vec['lds_count'] / (vec['ffma'] / 64):g}"
    v["tuned_share"] = f"{tuned['share']:.2f}"
    v["tuned_loop"] = str(tuned["loop"])
    v["tuned_other"] = f"{1 - tuned['share']:.0%}"
    v["tuned_warps"], v["tuned_blocks"] = str(tuned["warps"]), str(tuned["blocks"])
    v["tuned_threads"] = str(config("warptile_tuned").threads)
    v["edge_regs"], v["edge_warps"] = str(edges["registers"]), str(edges["warps"])
    v["max_spills"] = str(max(r["spills"] for r in comp.values()))
    v["fast_regs_max"] = str(max(r["registers"] for k, r in comp.items() if "edges" not in k
                                 and k != "block128"))
    # the warp tile model
    pipe, warp = warp_footprint(config("pipelined")), warp_footprint(config("warptile"))
    v["values_pipelined"], v["values_warptile"] = str(pipe["values"]), str(warp["values"])
    v["rows_pipelined"], v["cols_pipelined"] = str(len(pipe["rows"])), str(len(pipe["cols"]))
    v["rows_warptile"], v["cols_warptile"] = str(len(warp["rows"])), str(len(warp["cols"]))
    v["warp_fma"] = str(warp["fma"])
    wcfg = config("warptile")
    v["warp_tile"] = f"{wcfg.WM} × {wcfg.WN}"
    v["warp_lanes"] = f"{wcfg.LM} × {wcfg.LN}"
    # predictions and measurements
    pred = {name: f"{lo}–{hi}" + ("%" if unit == "% of cuBLAS" else "")
            for name, prev, lo, hi, unit in PREDICTIONS}
    v["pred_block128"] = pred["block128"]
    v["pred_vectorized"] = pred["vectorized"]
    v["pred_vectorized_spread"] = pred["vectorized_spread"]
    v["pred_pipelined"] = pred["pipelined"]
    v["pred_warptile"] = pred["warptile"]
    v["pred_warptile_tuned"] = pred["warptile_tuned"]
    v["pred_total"] = f"{PREDICTED_TOTAL[0]}–{PREDICTED_TOTAL[1]}%"
    # the first two rungs were predicted as a share of cuBLAS, the rest as a gain over the last
    got = {row["rung"]: row for row in prediction_rows()}
    v["pct_block128"] = f"{got['block128']['pct']:.1f}%"
    v["verdict_block128"] = got["block128"]["verdict"]
    v["pct_vectorized"] = f"{got['vectorized']['pct']:.1f}%"
    v["verdict_vectorized"] = got["vectorized"]["verdict"]
    v["gain_vectorized_spread"] = f"{got['vectorized_spread']['gain']:+.1f}%"
    v["verdict_vectorized_spread"] = got["vectorized_spread"]["verdict"]
    v["gain_pipelined"] = f"{got['pipelined']['gain']:+.1f}%"
    v["verdict_pipelined"] = got["pipelined"]["verdict"]
    v["gain_warptile"] = f"{got['warptile']['gain']:+.1f}%"
    v["verdict_warptile"] = got["warptile"]["verdict"]
    v["gain_warptile_tuned"] = f"{got['warptile_tuned']['gain']:+.1f}%"
    v["x_vectorized"] = f"{at['vectorized']['tflops'] / at['block128']['tflops']:.1f}"
    best = max(at.values(), key=lambda r: r["tflops"])
    v["best_kernel"], v["best_tflops"] = best["kernel"], f"{best['tflops']:.1f}"
    v["best_pct"] = f"{best['pct_cublas']:.1f}%"
    v["best_verdict"] = "reaches" if best["pct_cublas"] >= 100 * GOAL else "falls short of"
    v["ref_ours_best_pct"] = v["best_pct"]
    v["ref_vs_ours"] = "above" if best["pct_cublas"] > ref_pct else "below"
    tuned = {n: at_size(n).get("warptile_tuned") for n in (1024, 2048, 4096, 8192)}
    v["tuned_pct_1024"] = f"{tuned[1024]['pct_cublas']:.0f}%" if tuned[1024] else "-"
    v["tuned_pct_2048"] = f"{tuned[2048]['pct_cublas']:.0f}%" if tuned[2048] else "-"
    v["tuned_pct_4096"] = f"{tuned[4096]['pct_cublas']:.0f}%" if tuned[4096] else "-"
    v["tuned_pct_8192"] = f"{tuned[8192]['pct_cublas']:.0f}%" if tuned[8192] else "-"
    tcfg = config("warptile_tuned")
    v["tuned_tile"] = f"{tcfg.BM} × {tcfg.BN}"
    v["tiles_1024"] = str(model.tile_grid(1024, 1024, tcfg.BM, tcfg.BN))
    v["the_sm_count"] = str(results.load("fp32_ladder")["provenance"]["sm_count"])
    delta = {r["kernel"]: f"{r['delta']:+.1f}%" for r in variant_rows()[1:]}
    v["delta_warptile_nopad"] = delta["warptile_nopad"]
    v["delta_warptile_1buf"] = delta["warptile_1buf"]
    v["delta_warptile_lb2"] = delta["warptile_lb2"]
    edge = [r["pct"] for r in edge_rows() if r["pct"] is not None]
    v["edge_lo"], v["edge_hi"] = f"{min(edge):.0f}%", f"{max(edge):.0f}%"
    tune = tune_rows()
    v["tune_n"] = str(len(tune))
    v["tune_best_pct"] = f"{tune[0]['pct']:.1f}%"
    v["tune_worst_pct"] = f"{tune[-1]['pct']:.1f}%"
    narrow = [i for i, r in enumerate(tune) if r["patch"] != "8×8"]
    v["narrow_rank"] = str(narrow[0] + 1) if narrow else "-"
    v["narrow_best_pct"] = f"{tune[narrow[0]]['pct']:.1f}%" if narrow else "-"

    def group(block, bk, lb=0, patch="8×8"):
        return [r for r in tune if r["block"] == block and r["bk"] == bk and r["lb"] == lb
                and r["patch"] == patch]

    v["regs_bk8"] = "/".join(str(x) for x in sorted({r["regs"] for r in tune if r["bk"] == 8}))
    wide16 = [r for r in tune if r["bk"] == 16 and r["patch"] == "8×8" and not r["lb"]]
    v["regs_bk16"] = "/".join(str(x) for x in sorted({r["regs"] for r in wide16}))
    lb16 = group("128×128×16", 16, lb=2)
    v["bk16_lb_regs"] = str(lb16[0]["regs"]) if lb16 else "-"
    v["bk16_lb_pct"] = f"{max(r['pct'] for r in lb16):.1f}%" if lb16 else "-"
    plain16 = group("128×128×16", 16)
    v["bk16_pct"] = f"{max(r['pct'] for r in plain16):.1f}%" if plain16 else "-"
    v["bk16_blocks"] = str(plain16[0]["blocks"]) if plain16 else "-"
    small, large = group("64×128×8", 8), group("128×128×8", 8)
    if small and large:
        v["small_pct"] = f"{max(r['pct'] for r in small):.1f}%"
        v["large_pct"] = f"{max(r['pct'] for r in large):.1f}%"
        regs = (small[0]["regs"], large[0]["regs"])
        v["small_large_regs"] = (f"at the same {regs[0]} registers per thread" if regs[0] == regs[1]
                                 else f"at {regs[0]} and {regs[1]} registers per thread")
        v["small_blocks"], v["large_blocks"] = str(small[0]["blocks"]), str(large[0]["blocks"])
        v["small_threads"], v["large_threads"] = str(small[0]["threads"]), str(large[0]["threads"])
    wt = next((r for r in tune if r["config"] == wcfg.label() and not r["lb"]),
              None)
    v["warp_regs"] = str(wt["regs"]) if wt else "-"
    v["warp_blocks"] = str(wt["blocks"]) if wt else "-"
    v["tuned_is_best"] = ("is" if tcfg.label() == tune[0]["config"] else
                          "is not (re-register it from the table)")
    v["bk8_best_pct"] = f"{max(r['pct'] for r in tune if r['bk'] == 8):.1f}%"
    v["bk16_best_pct"] = f"{max(r['pct'] for r in tune if r['bk'] == 16):.1f}%"
    v["reg_limit_2x256"] = str(model.SM90_LIMITS["registers"] // (2 * 256))
    v["vec_warps"] = str(vec["warps"])
    la = wcfg.BM * wcfg.BK // 4 // wcfg.threads
    v["a_stores"] = str(4 * la)
    v["ffma_per_tile"] = str(wcfg.TM * wcfg.TN * wcfg.BK)
    edges_n = results.load("fp32_ladder")["parameters"].get("edge_sizes") or []
    v["edge_sizes"] = (", ".join(str(n) for n in edges_n[:-1]) + f" and {edges_n[-1]}"
                       if len(edges_n) > 1 else ", ".join(str(n) for n in edges_n))
    san = [r for r in results.rows("sanitizer")
           if r["kernel"] in ("pipelined", "warptile", "warptile_tuned")]
    v["sanitizer_runs"] = str(len(san))
    v["sanitizer_errors"] = str(sum(r["errors"] or 0 for r in san))
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
