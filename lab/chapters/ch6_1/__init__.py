"""Chapter 6.1, waves, tails, split-K and decode: what a product's shape does to the work a
grid of tiles gives the SMs.

The page's sections, in order, one module each: :mod:`.s1_reuse` (how much reuse a shape
allows), :mod:`.s2_waves` (waves, modelled and measured), :mod:`.s3_tails` (the ragged edge),
:mod:`.s4_splitk` (split-K and Stream-K, modelled and measured), :mod:`.s5_decode` (one row
against a weight matrix), :mod:`.s6_shape_list` (list the shapes first); the exercises'
solutions in :mod:`.solutions`; the roofs every section judges against in :mod:`.roofs`.
The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch6_1 import (s1_reuse, s2_waves, s3_tails, s4_splitk, s5_decode,
                                s6_shape_list, solutions)
from lab.chapters.ch6_1.s1_reuse import regime_table
from lab.chapters.ch6_1.s2_waves import (kernel_table, wave_measured_figure, wave_model_table,
                                         wave_steps_table, wave_sweep_figure, wave_table,
                                         waves_figure)
from lab.chapters.ch6_1.s3_tails import edge_table, tail_table
from lab.chapters.ch6_1.s4_splitk import (determinism_table, reduction_order_table,
                                          split_k_table, split_source, splitk_figure,
                                          splitk_table, stream_k_text)
from lab.chapters.ch6_1.s5_decode import skinny_figure, skinny_queued_table, skinny_table
from lab.chapters.ch6_1.s6_shape_list import manifest_table

__all__ = ["regime_table", "kernel_table", "wave_measured_figure", "wave_model_table",
           "wave_steps_table", "wave_sweep_figure", "wave_table", "waves_figure",
           "edge_table", "tail_table", "determinism_table", "reduction_order_table",
           "split_k_table", "split_source", "splitk_figure", "splitk_table",
           "stream_k_text", "skinny_figure", "skinny_queued_table", "skinny_table",
           "manifest_table", "values", "glue", "glue_solutions"]


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings (the exercises'
    worked solutions, on the appendix page *Solutions: chapters 5–7*: :func:`glue_solutions`)."""
    return {**s1_reuse.values(), **s2_waves.values(), **s3_tails.values(),
            **s4_splitk.values(), **s5_decode.values(), **s6_shape_list.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def glue_solutions():
    """Glue the exercises' worked solutions (:func:`lab.chapters.ch6_1.solutions.values`) for the
    appendix page that shows them; returns them as one checked text block."""
    return page.glue(solutions.values())
