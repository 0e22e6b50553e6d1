"""Chapter 0, the machine: how much work and traffic a product asks for, the two roofs of the
GPU measured with our own kernels, the ridge point beside the sources' machines, and what a live
GPU measures now.

The page's sections, in order, one module each: :mod:`.s1_problem` (how much work, how many
bytes), :mod:`.s2_compute_roof` (FMA chains in registers), :mod:`.s3_memory_roofs` (streaming
read, and copy), :mod:`.s4_ridge` (the ridge point beside the sources' machines),
:mod:`.s5_this_gpu` (the roofs re-measured on a live GPU); the exercises' solutions in
:mod:`.solutions`. Each reads the selected GPU's results (:func:`lab.results.load`), the
analytic model (:mod:`lab.model`), the compiler (:mod:`lab.compiler`) and the sources' quoted
numbers (:mod:`lab.seeds`). The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page, roofline
from lab.chapters.ch0.s1_problem import (DECODE, SIZES, problem_rows, problem_table,
                                         intensity_figure)
from lab.chapters.ch0.s2_compute_roof import FMA_KERNEL, fma_report, compiler_table
from lab.chapters.ch0.s3_memory_roofs import roof_rows, roof_table
from lab.chapters.ch0.s4_ridge import machine_rows, ridge_table, roofline_figure
from lab.chapters.ch0.s5_this_gpu import measure_here
from lab.chapters.ch0 import s1_problem, s2_compute_roof, s3_memory_roofs, s4_ridge


__all__ = ["SIZES", "problem_rows", "problem_table", "intensity_figure", "FMA_KERNEL",
           "fma_report", "compiler_table", "roof_rows", "roof_table", "machine_rows",
           "ridge_table", "roofline_figure", "measure_here", "DECODE", "values", "glue", "figure",
           "source"]


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s1_problem.values(), **s2_compute_roof.values(), **s3_memory_roofs.values(),
            **s4_ridge.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)


def source(region: str):
    """A named region of :mod:`lab.roofline` (the roof kernels), highlighted."""
    return page.source(roofline, region)
