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

from lab import page
from lab.chapters import common
from lab.chapters.ch4.s1_kernel import (config, thread_pieces, warp_footprint, warp_tile_figure,
                                        source)
from lab.chapters.ch4.s2_check import CHECKS, check_table
from lab.chapters.ch4.s3_compiler import COMPILED, compiler_rows, compiler_table
from lab.chapters.ch4.s4_ladder import (PREDICTIONS, CURVES, ladder, at_size, cublas_mean,
                                        ladder_table, prediction_rows, prediction_table,
                                        size_figure, GOAL, PREDICTED_TOTAL,
                                        gpu_name)
from lab.chapters.ch4.s5_variants import VARIANTS, variant_rows, variant_table
from lab.chapters.ch4.s6_edges import edge_rows, edge_table
from lab.chapters.ch4.s7_tuning import tune_rows, tune_table
from lab.chapters.ch4.s8_races import sanitizer_table
from lab.chapters.ch4.s9_reference import REFERENCE_PAIRS, reference_rows, reference_table
from lab.chapters.ch4.s10_gap import gap_rows, gap_values, gap_table
from lab.chapters.common import example_inputs, verdict
from lab.chapters.ch4 import (s1_kernel, s3_compiler, s4_ladder, s5_variants, s6_edges, s7_tuning,
                              s8_races, s9_reference, s10_gap)

__all__ = ["figure", "example_inputs", "verdict", "config", "thread_pieces", "warp_footprint",
           "warp_tile_figure", "source", "CHECKS", "check_table", "COMPILED", "compiler_rows",
           "compiler_table", "PREDICTIONS", "CURVES", "ladder", "at_size", "cublas_mean",
           "ladder_table", "prediction_rows", "prediction_table", "size_figure",
           "VARIANTS", "variant_rows", "variant_table", "edge_rows", "edge_table", "tune_rows",
           "tune_table", "sanitizer_table", "REFERENCE_PAIRS", "reference_rows", "reference_table",
           "gap_rows", "gap_values", "gap_table", "RUNGS", "GOAL", "PREDICTED_TOTAL", "prefetch",
           "gpu_name", "values", "glue"]


#: The rungs of this chapter in ladder order, after chapter 3's ``block128``.
RUNGS = ("vectorized", "vectorized_spread", "pipelined", "warptile", "warptile_tuned")


def prefetch() -> None:
    """Make sure the compiler facts of :data:`COMPILED` are at hand
    (:func:`lab.chapters.common.prefetch`)."""
    common.prefetch(list(COMPILED))


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s1_kernel.values(), **s3_compiler.values(), **s4_ladder.values(),
            **s5_variants.values(), **s6_edges.values(), **s7_tuning.values(), **s8_races.values(),
            **s9_reference.values(), **s10_gap.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
