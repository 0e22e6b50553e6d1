"""Chapter 4, section 5: where the time goes, one change at a time (the warp-tile variants)."""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch4.s4_ladder import at_size


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
                       "pct_cublas": "% cuBLAS", "delta": "time vs warptile (%)"},
                      source=results.source_line("fp32_ladder"))
