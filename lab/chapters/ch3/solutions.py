"""Chapter 3's exercises, worked: one function per exercise, ``ex03_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex03_N_key``.
"""
from __future__ import annotations

from lab import model, page, results
from lab.chapters import common


def ex03_1(patch: int = 16, n: int = 4096) -> dict:
    """patch16: the accumulators alone exceed the per-thread register limit; the tile grid."""
    limit = model.MAX_REGISTERS_PER_THREAD
    tile = 16 * patch
    return {"ex03_1_accumulators": patch * patch, "ex03_1_max_regs": limit,
            "ex03_1_spills": patch * patch > limit, "ex03_1_tile": tile,
            "ex03_1_blocks_4096": model.tile_grid(n, n, tile, tile),
            "ex03_1_blocks_2048": model.tile_grid(2048, 2048, tile, tile),
            "ex03_1_sms": results.load("patch_sweep")["provenance"]["sm_count"]}


def ex03_2() -> dict:
    """Rectangular patches: shared reads per FMA for 8 × 4 and 4 × 8."""
    return {"ex03_2_reads_8x4": model.smem_reads_per_fma(8, 4), "ex03_2_reads_4x8": model.smem_reads_per_fma(4, 8),
            "ex03_2_reads_4x4": model.smem_reads_per_fma(4), "ex03_2_reads_8x8": model.smem_reads_per_fma(8)}


def ex03_3() -> dict:
    """patch1's shared-memory traffic counted once per distinct word a warp reads."""
    r = common.row_where(results.load("patch_sweep"), kernel="patch1")
    prov = results.load("patch_sweep")["provenance"]
    fma_per_s = r["tflops"] * 1e12 / 2
    # A warp of 16×16 threads is two rows of 16: at one k it reads 2 distinct words of A
    # (one per row, broadcast to 16 lanes) and 16 distinct words of B (shared by both rows).
    words_per_warp = 2 + 16
    per_thread_bytes = fma_per_s * 2 * 4
    warp_bytes = fma_per_s / 32 * words_per_warp * 4
    peak = prov["sm_count"] * model.SMEM_BYTES_PER_CLOCK * float(prov["max_sm_clock_mhz"]) * 1e6
    return {"ex03_3_tflops": r["tflops"], "ex03_3_per_thread_tbps": per_thread_bytes / 1e12,
            "ex03_3_words_per_warp": words_per_warp, "ex03_3_warp_tbps": warp_bytes / 1e12,
            "ex03_3_peak_tbps": peak / 1e12, "ex03_3_share": warp_bytes / peak}


def ex03_4() -> dict:
    """The signed-index detour's bill in the committed facts: the upper bound of the answer."""
    from lab import compiler

    u = compiler.report("patch8")[0]
    s = compiler.report("lab.kernels.k03_registers:int32_patch8")[0]
    return {"ex03_4_regs_u": u.registers, "ex03_4_loop_u": sum(u.loop_mix.values()),
            "ex03_4_share_u": u.loop_mix.get("FFMA", 0) / sum(u.loop_mix.values()),
            "ex03_4_regs_s": s.registers, "ex03_4_loop_s": sum(s.loop_mix.values()),
            "ex03_4_share_s": s.loop_mix.get("FFMA", 0) / sum(s.loop_mix.values())}


def ex03_5(shapes=((17, 33, 25), (33, 17, 9))) -> dict:
    """The RTX 3090 tutorial's 2 × 2 register patch: our ``patch2`` (``make_patch(2)``), checked and timed."""
    checks = [common.check_summary("patch2", *s) for s in shapes]
    sweep = results.load("patch_sweep")
    p1 = common.row_where(sweep, kernel="patch1")
    p2 = common.row_where(sweep, kernel="patch2")
    t32 = common.row_where(results.load("naive_tiled"), kernel="tiled32", m=4096, part="size")
    t16 = common.row_where(results.load("naive_tiled"), kernel="tiled16", m=4096, part="size")
    return {"ex03_5_ok": all(c["ok"] for c in checks),
            "ex03_5_rel_frobenius": common.error_class(max(c["rel_frobenius"] for c in checks)),
            "ex03_5_shapes": " and ".join(f"{m}×{k}·{k}×{n}" for m, n, k in shapes),
            "ex03_5_tile": 16 * 2, "ex03_5_accumulators": 4, "ex03_5_reads_per_fma": model.smem_reads_per_fma(2),
            "ex03_5_tflops": p2["tflops"], "ex03_5_vs_patch1": p2["tflops"] / p1["tflops"],
            "ex03_5_vs_tiled16": p2["tflops"] / t16["tflops"], "ex03_5_vs_tiled32": p2["tflops"] / t32["tflops"],
            "ex03_5_regs": p2["regs_ptxas"], "ex03_5_size": p2["m"]}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex03_N_key``, as text."""
    return common.solution_values(globals(), "ex03_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
