"""Chapter 9, the libraries: the layers above our kernels (cuBLAS, cuBLASLt, Triton, CUTLASS)
measured beside them, and the clock they all run at.

The page's sections, in order, one module each: :mod:`.s1_layers` (four layers, four
contracts), :mod:`.s2_check` (run and check), :mod:`.s3_prediction`, :mod:`.s4_measured`
(measured, side by side), :mod:`.s5_heuristics` (the heuristics' choices), :mod:`.s6_clocks`
(clocks and power); the exercises' solutions in :mod:`.solutions`. "What moved" is prose only.
What several sections use is in :mod:`.common`. Tables and figures come from two results files
of the selected GPU — ``libraries`` and ``clocks`` (:mod:`lab.experiments.libraries`,
:mod:`lab.experiments.clocks`) — and the provider registry (:mod:`lab.providers`). The notebook
calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch9 import s4_measured, s6_clocks, solutions
from lab.chapters.ch9.common import short_kernel_name
from lab.chapters.ch9.s1_layers import layer_rows, layer_table, triton_source
from lab.chapters.ch9.s2_check import check_here
from lab.chapters.ch9.s3_prediction import prediction_rows, prediction_table
from lab.chapters.ch9.s4_measured import library_figure, library_rows, library_table
from lab.chapters.ch9.s5_heuristics import (cutlass_line, heuristic_rows, heuristic_table,
                                            skipped_lines, triton_choices)
from lab.chapters.ch9.s6_clocks import clock_figure, roof_rows, roof_table
from lab.chapters.ch9.solutions import ex09_1, ex09_2, ex09_3, host_provider, solution_table

__all__ = ["short_kernel_name", "layer_rows", "layer_table", "triton_source", "check_here",
           "prediction_rows", "prediction_table", "library_figure", "library_rows",
           "library_table", "cutlass_line", "heuristic_rows", "heuristic_table",
           "skipped_lines", "triton_choices", "clock_figure", "roof_rows",
           "roof_table", "ex09_1", "ex09_2", "ex09_3", "host_provider", "solution_table",
           "host_provider_listing", "figure", "values", "glue", "glue_solutions"]


def figure(fig):
    """Show a figure of this chapter (:func:`lab.page.figure`)."""
    return page.figure(fig)


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings (the exercises'
    apart: :func:`glue_solutions`)."""
    return {**s4_measured.values(), **s6_clocks.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def glue_solutions():
    """Glue the exercises' numbers (:func:`lab.chapters.ch9.solutions.values`)."""
    return solutions.glue()


def host_provider_listing():
    """Exercise 1's solution: NumPy behind the provider face."""
    return page.source(solutions, "host_provider")
