"""Chapter 7, Hopper: wgmma, TMA, mbarriers, warp specialization and clusters, rung by rung, on
two pages (7.1, rungs 1-8: the machinery; 7.2, rungs 9-19: past cuBLAS) and an appendix of the
changes measured and rejected, all three gluing from this package.

The page's sections, in order, one module each: :mod:`.s1_result` (the ladder against cuBLAS,
medians of three processes), :mod:`.s2_idea` (what wgmma changes, the shared layout),
:mod:`.s3_rungs` (what each rung changes and what Nsight Compute saw), :mod:`.s4_stability`
(how steady the numbers are, and why rung 8 was not), :mod:`.s5_past` (past rung 8),
:mod:`.s6_trace` (stream-K traced, step by step), :mod:`.s7_table` (rungs 18 and 19, the
tile table, and the evidence beside the headline of the second page); the drawings in :mod:`.figures`, the
exercises' solutions in :mod:`.solutions`, the results files' rows in :mod:`.common`. The
notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch7 import s1_result, s2_idea, s3_rungs, s4_stability, s5_past, s6_trace, \
    s7_table, solutions
from lab.chapters.ch7.figures import (descriptors_figure, epilogue_timeline_figure,
                                      multicast_figure, ring_figure)
from lab.chapters.ch7.s1_result import headline_table, ladder_figure
from lab.chapters.ch7.s2_idea import instruction_table, layout_check
from lab.chapters.ch7.s3_rungs import config_diff, profile_table, region, region_diff, \
    region_lines, rung_change
from lab.chapters.ch7.s4_stability import host_figure
from lab.chapters.ch7.s5_past import past_profile_table, past_table, rungs_table, \
    steps_table, streamk_table
from lab.chapters.ch7.s6_trace import trace_figure
from lab.chapters.ch7.s7_table import evidence_box, table_table

__all__ = ["descriptors_figure", "epilogue_timeline_figure", "multicast_figure", "ring_figure",
           "headline_table", "ladder_figure", "instruction_table", "layout_check",
           "config_diff", "profile_table", "region", "region_diff", "region_lines", "rung_change",
           "host_figure", "past_table", "rungs_table", "past_profile_table", "steps_table",
           "streamk_table", "trace_figure", "table_table", "evidence_box", "figure", "glue",
           "glue_solutions", "checks_table"]


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)


def checks_table():
    """The committed one-process run's check of every FP16 kernel at 4096³ (errors against
    float64 on shared inputs; the BF16 rows, checked alike, are in the results file); the odd
    shapes it passed are named in the line above the table."""
    from lab import results

    data = results.load("hopper")
    rows = [{"kernel": r["kernel"], "rel. Frobenius": r["rel_frobenius"],
             "max|err| / max|C|": r["max_err_over_max_entry"]}
            for r in data["rows"] if r["rung"] != "sweep" and r["m"] == 4096
            and "rel_frobenius" in r and r["kernel"].endswith("fp16")]
    shapes = ", ".join("×".join(map(str, s)) for s in data["parameters"]["odd_shapes"])
    return page.table(rows, digits=3, title=f"checked first on {shapes}, then at 4096³",
                      source=results.source_line("hopper"))


def glue():
    """Glue every value the prose quotes (each section's and the solutions'); returns them as
    one checked text block (for a removed cell)."""
    values = {**s1_result.values(), **s3_rungs.values(), **s4_stability.values(),
              **s5_past.values(), **s6_trace.values(), **s7_table.values(),
              **solutions.values()}
    page.glue_values(values)
    return page.values_text(values)


def glue_solutions():
    """Glue the exercises' worked solutions (:func:`lab.chapters.ch7.solutions.values`) for the
    appendix page that shows them; returns them as one checked text block."""
    values = solutions.values()
    page.glue_values(values)
    return page.values_text(values)
