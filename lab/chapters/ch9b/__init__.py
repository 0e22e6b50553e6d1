"""Chapter 9b, calling a kernel from Python: launch cost, graphs, dispatch.

The page's sections, in order, one module each: :mod:`.s1_result` (``lab.gemm`` against cuBLAS
at the targets), :mod:`.s2_host_cost` (host µs per call of every kernel family and path),
:mod:`.s3_suite` (the ratio to cuBLAS over the whole suite, the shapes behind, a decoder layer), :mod:`.s4_dispatch` (what the
dispatcher picks and how a call is launched), :mod:`.s5_short` (what falls short: decode
shapes); the exercises' solutions in :mod:`.solutions`. The notebook calls only the names
imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch9b import (s1_result, s2_host_cost, s3_suite, s4_dispatch, s5_short,
                               solutions)
from lab.chapters.ch9b.s1_result import evidence_box, evidence_rows, targets, targets_table
from lab.chapters.ch9b.s2_host_cost import call_table, host_rows, host_table
from lab.chapters.ch9b.s3_suite import (below_classes, below_rows, below_table, layer_rows,
                                        layer_table, suite_figure)
from lab.chapters.ch9b.s4_dispatch import (choice_rows, choice_table, explain, plan_source,
                                           simulator_check)
from lab.chapters.ch9b.s5_short import decode_grid, decode_rows, decode_table

__all__ = ["evidence_box", "evidence_rows", "targets", "targets_table", "host_rows", "host_table", "call_table", "suite_figure", "below_rows",
           "below_classes", "below_table", "layer_rows", "layer_table", "choice_rows",
           "choice_table", "explain", "plan_source", "simulator_check", "decode_grid",
           "decode_rows", "decode_table", "values", "glue", "figure", "solutions"]

figure = page.figure


def values() -> dict:
    """Every number the page's prose quotes, as strings (glued from the results files)."""
    v = {}
    for section in (s1_result, s2_host_cost, s3_suite, s4_dispatch, s5_short, solutions):
        v.update(section.values())
    return v


def glue():
    return page.glue(values())
