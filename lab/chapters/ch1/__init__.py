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

from lab import page
from lab.chapters.ch1.s1_idea import launch_rows, launch_table
from lab.chapters.ch1.s2_warp import (LANES, SECTOR_BYTES, ROW, MAPPINGS, warp_coordinates,
                                      touched, sectors, access_rows, access_table, warp_figure)
from lab.chapters.ch1.s4_check import CHECK_SHAPES, check_table
from lab.chapters.ch1.s5_compilers import (SASS_NUMBA, SASS_TWINS, PAIRS, loop_row, twin_reports,
                                           sass_rows, sass_table, ratio_table)
from lab.chapters.ch1.s6_sources import seed_rows, seed_table
from lab.chapters.ch1.s7_coalescing import (load_sectors, swap_rows, swap_table, sweep_rows,
                                            l2_bytes, sweep_figure)
from lab.chapters.ch1.s8_analysis import (metrics_rows, metrics_table, bandwidth_rows,
                                          bandwidth_table)
from lab.chapters.ch1.s9_dram import ncu_table
from lab.chapters.ch1.s10_this_gpu import measure_here
from lab.chapters.ch1.s3_kernel import source
from lab.chapters.common import example_inputs, verdict
from lab.chapters.ch1 import s1_idea, s5_compilers, s6_sources, s7_coalescing, s8_analysis, s9_dram

__all__ = ["figure", "source", "example_inputs", "verdict", "launch_rows", "launch_table", "LANES",
           "SECTOR_BYTES", "ROW", "MAPPINGS", "warp_coordinates", "touched", "sectors",
           "access_rows", "access_table", "warp_figure", "CHECK_SHAPES", "check_table",
           "SASS_NUMBA", "SASS_TWINS", "PAIRS", "loop_row", "twin_reports", "sass_rows",
           "sass_table", "ratio_table", "seed_rows", "seed_table", "load_sectors",
           "swap_rows", "swap_table", "sweep_rows", "l2_bytes", "sweep_figure",
           "metrics_rows", "metrics_table", "bandwidth_rows", "bandwidth_table", "ncu_table",
           "measure_here", "values", "glue"]


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s1_idea.values(), **s5_compilers.values(), **s6_sources.values(),
            **s7_coalescing.values(), **s8_analysis.values(), **s9_dram.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
