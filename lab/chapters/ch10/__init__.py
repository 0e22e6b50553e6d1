"""Chapter 10, two or more GPUs: four ways to split one product, their bytes against their
FLOPs, the schemes checked on simulated ranks, measured on two H200s, and the model beyond.

The page's sections, in order, one module each: :mod:`.s1_splits` (four ways to split one
product), :mod:`.s2_prediction` (bytes against FLOPs), :mod:`.s3_schemes` (the code one GPU
runs), :mod:`.s4_simulated` (two ranks in one process), :mod:`.s5_measured` (two H200s),
:mod:`.s6_model` (the model against the measurement), :mod:`.s7_beyond` (the model alone, past
two GPUs); the exercises' solutions in :mod:`.solutions`; the results file's rows in
:mod:`.s0_rows`. The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch10 import s0_rows, s2_prediction, s4_simulated, s5_measured, s6_model
from lab.chapters.ch10.s0_rows import EXPERIMENT
from lab.chapters.ch10.s1_splits import split_figure
from lab.chapters.ch10.s2_prediction import WORLD, N_REF, LABELS, bytes_rows, FORMULAS, bytes_table
from lab.chapters.ch10.s3_schemes import source
from lab.chapters.ch10.s4_simulated import SIM_SHAPE, simulated_rows, simulated_table
from lab.chapters.ch10.s5_measured import (KERNEL_OF, rate_figure, bandwidth_table, link,
                                           evidence_box)
from lab.chapters.ch10.s6_model import (startup, predict, GOAL, model_rows, model_table, miss_table,
                                        _overlap_pairs)
from lab.chapters.ch10.s7_beyond import MODEL_GPUS, GRIDS, scaling_figure


__all__ = ["source", "figure", "EXPERIMENT", "split_figure", "WORLD", "N_REF", "LABELS",
           "bytes_rows", "FORMULAS", "bytes_table", "SIM_SHAPE", "simulated_rows",
           "simulated_table", "KERNEL_OF", "rate_figure", "bandwidth_table", "startup", "predict",
           "GOAL", "model_rows", "model_table", "miss_table", "MODEL_GPUS", "GRIDS",
           "scaling_figure", "link",
           "measured_values", "values", "glue", "evidence_box"]


def measured_values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s5_measured.values(), **s5_measured.evidence_values(), **s6_model.values()}


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s2_prediction.values(), **s4_simulated.values(), **measured_values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
