"""Chapter 1's exercises, worked: one function per exercise, ``ex01_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex01_N_key``.
"""
from __future__ import annotations

import math

import numpy as np

from lab import model, page, results, seeds
from lab.chapters import ch1, common


def warp_sectors(block: int, mapping: str) -> dict:
    """Sectors one warp's A and B loads touch at one k, for a ``block``-wide block of threads."""
    lane = np.arange(32)
    tx, ty = lane % block, lane // block
    row, col = (ty, tx) if mapping == "naive" else (tx, ty)
    a = len(ch1.sectors((row, np.zeros_like(row))))
    b = len(ch1.sectors((np.zeros_like(col), col)))
    return {"A": a, "B": b, "total": a + b}


def ex01_1() -> dict:
    """BLOCK = 32: a warp is one row of threads."""
    nt = results.load("naive_tiled")
    ratio = {n: common.row_where(nt, kernel="naive_swapped", m=n, part="size")["median_ms"]
             / common.row_where(nt, kernel="naive", m=n, part="size")["median_ms"] for n in (1024, 4096)}
    b32 = {m: warp_sectors(32, m) for m in ("naive", "naive_swapped")}
    b16 = {m: warp_sectors(16, m) for m in ("naive", "naive_swapped")}
    return {"ex01_1_naive_32": b32["naive"]["total"], "ex01_1_swapped_32": b32["naive_swapped"]["total"],
            "ex01_1_swapped_32_A": b32["naive_swapped"]["A"], "ex01_1_naive_16": b16["naive"]["total"],
            "ex01_1_swapped_16": b16["naive_swapped"]["total"],
            "ex01_1_ratio_32": b32["naive_swapped"]["total"] / b32["naive"]["total"],
            "ex01_1_ratio_16": b16["naive_swapped"]["total"] / b16["naive"]["total"],
            "ex01_1_measured_1024": ratio[1024], "ex01_1_measured_4096": ratio[4096]}


def ex01_2() -> dict:
    """What the literal kernel's hottest loop carries beyond the typed one (committed facts)."""
    from lab import compiler

    lit = compiler.report("naive_literal")[0].loop_mix
    typed = compiler.report("naive")[0].loop_mix
    uniform = sum(n for op, n in lit.items() if op.startswith("U"))

    def per_ffma(loop):
        return (sum(loop.values()) - loop.get("FFMA", 0)) / loop.get("FFMA", 1)

    return {"ex01_2_literal_ffma": lit.get("FFMA", 0), "ex01_2_literal_total": sum(lit.values()),
            "ex01_2_literal_uniform": uniform, "ex01_2_literal_sel": lit.get("USEL", 0),
            "ex01_2_typed_ffma": typed.get("FFMA", 0), "ex01_2_typed_total": sum(typed.values()),
            "ex01_2_typed_uniform": sum(n for op, n in typed.items() if op.startswith("U"))}


def ex01_3() -> dict:
    """Largest n whose A, B and C (FP32) fit in the T4's L2, and what that says at n = 512."""
    n_t4 = int(math.isqrt(seeds.L2_T4_BYTES // 12))
    l2_h200 = results.load("naive_tiled")["provenance"]["l2_bytes"]
    rows = ch1.sweep_rows()
    inside = [r["ratio"] for r in rows if r["fits"]]
    outside = [r["ratio"] for r in rows if not r["fits"]]
    ours_512 = next(r["ratio"] for r in rows if r["n"] == 512)
    return {"ex01_3_n_t4": n_t4, "ex01_3_mb_512": 3 * 4 * 512 ** 2 / 2 ** 20,
            "ex01_3_t4_l2_mb": seeds.L2_T4_BYTES / 2 ** 20, "ex01_3_n_h200": int(math.isqrt(l2_h200 // 12)),
            "ex01_3_ours_512": ours_512, "ex01_3_t4_1024": seeds.SWAPPED_SLOWDOWN_T4,
            "ex01_3_ours_in_lo": min(inside), "ex01_3_ours_in_hi": max(inside),
            "ex01_3_ours_out_lo": min(outside), "ex01_3_ours_out_hi": max(outside)}


def ex01_4(k: int = 4096, n: int = 4096) -> dict:
    """Matrix–vector product (M = 1): the naive model's bytes against each input read once."""
    naive = model.naive_bytes(1, n, k)
    ideal = model.ideal_bytes(1, n, k)
    return {"ex01_4_naive_mb": naive / 1e6, "ex01_4_ideal_mb": ideal / 1e6, "ex01_4_ratio": naive / ideal,
            "ex01_4_b_mb": 4 * k * n / 1e6, "ex01_4_intensity": model.ideal_intensity(1, n, k)}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex01_N_key``, as text."""
    return common.solution_values(globals(), "ex01_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
