"""Chapter 4, section 5: where the time goes, one change at a time (the warp-tile variants)."""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch4.s4_ladder import at_size
from lab.chapters.ch4.s3_compiler import compiler_rows
from lab.chapters.ch4.s1_kernel import config


#: The one-change variants of ``warptile`` and what each changes.
VARIANTS = {"warptile_nopad": "no padding of A's tile", "warptile_1buf": "one shared buffer",
            "warptile_lb2": "launch bounds (2 blocks/SM)"}


def variant_rows() -> list[dict]:
    """``warptile`` and its one-change variants, time relative to ``warptile``."""
    base = at_size()["warptile"]
    rows = [dict(base, change="none (warptile)", delta=0.0)]
    for r in results.rows("fp32_ladder", part="variant"):
        rows.append(dict(r, change=VARIANTS.get(r["kernel"], r["kernel"]),
                         delta=100 * (r["median_ms"] / base["median_ms"] - 1)))
    return rows


def variant_table():
    """:func:`variant_rows` as a table."""
    return page.table(variant_rows(), ["kernel", "change", "median_ms", "tflops", "pct_cublas",
                                       "delta"],
                      {"median_ms": "median (ms)", "tflops": "TFLOP/s",
                       "pct_cublas": "% cuBLAS", "delta": "time vs warptile (%)"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    comp = {r["kernel"]: r for r in compiler_rows()}
    tuned, edges = comp["warptile_tuned"], comp["warptile_tuned (edges)"]
    v = {}
    v["tuned_other"] = f"{1 - tuned['share']:.0%}"
    wcfg = config("warptile")
    delta = {r["kernel"]: f"{r['delta']:+.1f}%" for r in variant_rows()[1:]}
    v["delta_warptile_nopad"] = delta["warptile_nopad"]
    v["delta_warptile_1buf"] = delta["warptile_1buf"]
    v["delta_warptile_lb2"] = delta["warptile_lb2"]
    la = wcfg.BM * wcfg.BK // 4 // wcfg.threads
    v["a_stores"] = str(4 * la)
    v["ffma_per_tile"] = str(wcfg.TM * wcfg.TN * wcfg.BK)
    return v
