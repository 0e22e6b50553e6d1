"""Chapter 8, one model for the whole ladder: the step-by-step model's traffic model of its four
kernels, reproduced from :mod:`lab.model` and set beside the seed's table (:mod:`lab.seeds`), the
same model on the measured GPU beside our measured times, and the seed's 16 × 16 × 16 animation with its
traffic counters checked against loads counted in real kernels under the CUDA simulator.

The page's sections, in order, one module each: :mod:`.s1_model` (the model's code),
:mod:`.s2_seed_table` (the step-by-step model's table, reproduced), :mod:`.s3_h200` (the same
model on the measured GPU), :mod:`.s4_traffic` (the traffic, step by step: the animation),
:mod:`.s5_counters` (its counters, counted in real kernels by
:func:`lab.counting.count_accesses`); the exercises' solutions in :mod:`.solutions`. The
notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch8.s2_seed_table import (seed_rows, seed_intensity_table, seed_time_table,
                                            worst_seed_gap)
from lab.chapters.ch8.s3_h200 import (MEASURED, OUR_KERNEL, gpu_name, measured_machine,
                                      measured_row, h200_rows, h200_table, dram_evidence)
from lab.chapters.ch8.s4_traffic import SIZE, BLOCK, SLICE, step_figure, animation
from lab.chapters.ch8.s5_counters import (animation_inputs, naive_step_loads, tiled_step_loads,
                                          counted_runs, counter_rows, counter_table,
                                          same_algorithm_rows, same_algorithm_table)

from lab.chapters.ch8.s1_model import source
from lab.chapters.ch8 import s2_seed_table, s3_h200, s4_traffic

__all__ = ["figure", "source", "seed_rows", "seed_intensity_table", "seed_time_table", "MEASURED",
           "OUR_KERNEL", "gpu_name", "measured_machine", "measured_row", "h200_rows", "h200_table",
           "SIZE", "BLOCK", "SLICE", "step_figure", "animation", "animation_inputs",
           "naive_step_loads", "tiled_step_loads", "counted_runs", "counter_rows", "counter_table",
           "same_algorithm_rows", "same_algorithm_table", "worst_seed_gap", "dram_evidence",
           "values", "glue"]


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s2_seed_table.values(), **s3_h200.values(), **s4_traffic.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
