"""Chapter 7b, FP8 on Hopper: the formats, what the tensor cores' FP8 accumulation keeps, and
chapter 7's best kernel on e4m3 and e5m2 beside cuBLASLt FP8.

The page's sections, in order, one module each: :mod:`.s1_formats` (the formats, and what
rounding to e4m3 loses), :mod:`.s2_kernel` (the kernel and its promotion), :mod:`.s3_check`
(run and check), :mod:`.s4_accuracy`, :mod:`.s5_speed` (beside cuBLASLt FP8, with the tile
sweep and clusters), :mod:`.s6_grouped` (mixture of experts: every expert in one launch); the exercises' worked solutions in :mod:`.solutions`. What several sections
use is in :mod:`.common`. Tables and figures come from the ``fp8`` results file of the selected
GPU (:mod:`lab.experiments.fp8`) and the FP8 rows of ``hopper_past``, from the formats
themselves (:mod:`lab.fp8`), from the NumPy model of the kernels' arithmetic
(:func:`lab.fp8.emulate`) and from the committed compiler facts. The notebook calls only the
names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch7b import s1_formats, s4_accuracy, s5_speed, s6_grouped
from lab.chapters.ch7b.s1_formats import (code_table, format_table, quantization_table,
                                          values_figure)
from lab.chapters.ch7b.s2_kernel import (config_table, kernel_source, promotion_source,
                                         sass_rows, sass_table)
from lab.chapters.ch7b.s3_check import check_here
from lab.chapters.ch7b.s4_accuracy import (accuracy_figure, accuracy_rows, accuracy_table,
                                           predicted_rows, predicted_table)
from lab.chapters.ch7b.s5_speed import (cluster_table, evidence_box, speed_figure, speed_rows,
                                        speed_table, sweep_table, tile_rows, tile_table)
from lab.chapters.ch7b.s6_grouped import (fp8_rows, fp8_table, grouped_rows, grouped_table,
                                          hopper_rows, hopper_table, scheduler_source,
                                          walk_source)
from lab.chapters.ch7b.solutions import ex7b_1, ex7b_2, ex7b_3

__all__ = ["code_table", "format_table", "quantization_table", "values_figure",
           "config_table", "kernel_source", "promotion_source", "sass_rows", "sass_table",
           "check_here", "accuracy_figure", "accuracy_rows", "accuracy_table",
           "predicted_rows", "predicted_table", "cluster_table", "speed_figure", "speed_rows",
           "speed_table", "sweep_table", "tile_rows", "tile_table", "grouped_rows",
           "grouped_table", "scheduler_source", "hopper_rows", "hopper_table", "walk_source",
           "fp8_rows", "fp8_table",
           "ex7b_1", "ex7b_2", "ex7b_3", "values", "glue", "evidence_box", "answer"]


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings."""
    return {**s1_formats.values(), **s4_accuracy.values(), **s5_speed.values(),
            **s6_grouped.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def answer(solution: dict):
    """A worked solution's values as a two-column table (quantity, value)."""
    return page.table([{"quantity": k, "value": v} for k, v in solution.items()])
