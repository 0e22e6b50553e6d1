"""Chapter 6.2, the size curve, alignment and layouts: what cuBLAS and our kernels do as the
size, the alignment of a side and the layout of the operands change.

The page's sections, in order, one module each: :mod:`.s1_size` (the size curve, the launch
floor and queued timing), :mod:`.s2_alignment` (one element past a round number, and drift or
alignment), :mod:`.s3_layouts` (transposed operands and bursts), :mod:`.s4_tf32` (TF32: a
switch, not a kernel); the exercises' solutions in :mod:`.solutions`. The notebook calls only
the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch6_2 import s1_size, s2_alignment, s3_layouts, s4_tf32, solutions
from lab.chapters.ch6_2.s1_size import (queued_figure, queued_table, seed_size_table,
                                        size_figure, size_table)
from lab.chapters.ch6_2.s2_alignment import (align_extra_table, align_kernel_table,
                                             align_path_table, align_speed_table,
                                             seed_align_table, shuffled_table)
from lab.chapters.ch6_2.s3_layouts import layout_table
from lab.chapters.ch6_2.s4_tf32 import tf32_table

__all__ = ["queued_figure", "queued_table", "seed_size_table", "size_figure",
           "size_table", "align_extra_table", "align_kernel_table", "align_path_table",
           "align_speed_table", "seed_align_table", "shuffled_table", "layout_table",
           "tf32_table", "values", "glue", "glue_solutions"]


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings (the exercises'
    worked solutions, on the appendix page *Solutions: chapters 5–7*: :func:`glue_solutions`)."""
    return {**s1_size.values(), **s2_alignment.values(), **s3_layouts.values(),
            **s4_tf32.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def glue_solutions():
    """Glue the exercises' worked solutions (:func:`lab.chapters.ch6_2.solutions.values`) for the
    appendix page that shows them; returns them as one checked text block."""
    return page.glue(solutions.values())
