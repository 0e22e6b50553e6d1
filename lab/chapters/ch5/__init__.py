"""Chapter 5, tensor cores: WMMA's opaque fragments, the documented fragment of
``mma.sync.m16n8k16``, the rung that only issues the instruction, the rungs that feed it
(shared-memory tiles, warp tiles, a ``cp.async`` pipeline, a swizzled layout), predictions against
measurements, the tuning sweep, sizes, padding, what the instruction itself costs, and the
accuracy of 16-bit inputs.

The page's sections, in order, one module each where the section computes something:
:mod:`.s1_wmma` (WMMA), :mod:`.s2_fragment` (the documented fragment), :mod:`.s3_numba`
(reaching the tensor cores from Numba), :mod:`.s4_rung1` (rung 1), :mod:`.s5_check` (run and
check), :mod:`.s6_rung1_measured`, :mod:`.s7_sources` (beside the sources' numbers),
:mod:`.s8_fed` (rung 2 onward), :mod:`.s9_measured`, :mod:`.s10_goal` (what stands between us
and the library), :mod:`.s11_accuracy`; the exercises' solutions in :mod:`.solutions`. The
opening section ("The idea") and "What moved the bottleneck" are prose only. What several
sections use is in :mod:`.common`. Everything comes from the selected GPU's results files, the
analytic model, the NumPy fragment model, the offline compiler and the sources' quoted numbers.
The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch5 import (s1_wmma, s4_rung1, s6_rung1_measured, s7_sources, s8_fed,
                              s9_measured, s10_goal, s11_accuracy, solutions)
from lab.chapters.ch5.s1_wmma import probe_text, wmma_listing, wmma_table
from lab.chapters.ch5.s2_fragment import (compare_with_numpy, fragment_figure, model_mma,
                                          random_tiles)
from lab.chapters.ch5.s3_numba import mma_listing
from lab.chapters.ch5.s4_rung1 import intensity_table, naive_listing
from lab.chapters.ch5.s5_check import check_here
from lab.chapters.ch5.s6_rung1_measured import rung1_ceiling_text, rung1_table
from lab.chapters.ch5.s7_sources import seed_table
from lab.chapters.ch5.s8_fed import (conflict_table, fragments_listing, main_loop_listing,
                                     prediction_table, rung_table, swizzle_listing)
from lab.chapters.ch5.s9_measured import (ladder_figure, ladder_table, measure_here,
                                          padding_table, size_figure, size_table, tune_table)
from lab.chapters.ch5.s10_goal import (compile_reports, compile_table, compile_values,
                                       sanitizer_table, wgmma_probe)
from lab.chapters.ch5.s11_accuracy import precision_seed_table, precision_table

__all__ = ["probe_text", "wmma_listing", "wmma_table", "compare_with_numpy", "fragment_figure",
           "model_mma", "random_tiles", "mma_listing", "intensity_table", "naive_listing",
           "check_here", "rung1_ceiling_text", "rung1_table", "seed_table", "conflict_table",
           "fragments_listing", "main_loop_listing", "prediction_table", "rung_table",
           "swizzle_listing", "ladder_figure", "ladder_table", "measure_here", "padding_table",
           "size_figure", "size_table", "tune_table", "compile_reports", "compile_table",
           "compile_values", "sanitizer_table", "wgmma_probe", "precision_seed_table",
           "precision_table", "figure", "values", "glue", "glue_compiler", "glue_solutions"]


def figure(fig):
    """Show a figure of this chapter (:func:`lab.page.figure`)."""
    return page.figure(fig)


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings (the compiler's
    facts apart: :func:`glue_compiler`)."""
    return {**s1_wmma.values(), **s4_rung1.values(), **s6_rung1_measured.values(),
            **s7_sources.values(), **s8_fed.values(), **s9_measured.values(),
            **s10_goal.values(), **s11_accuracy.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def glue_compiler(reports: dict):
    """Glue the compiler facts the prose quotes (:func:`compile_values`)."""
    return page.glue(s10_goal.compile_values(reports))


def glue_solutions():
    """Glue the exercises' numbers (:func:`lab.chapters.ch5.solutions.values`)."""
    return solutions.glue()
