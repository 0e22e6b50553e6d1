"""Chapter 2, shared-memory tiles: the tile walk along k, what the tile buys in the model, the
kernel checked at shapes past a tile, its machine code beside nvcc's, and the measurements of
the selected GPU beside the sources' T4 and RTX 3090, cuBLAS, the sanitizer and Nsight Compute.

The page's sections, in order, one module each: :mod:`.s1_idea`, :mod:`.s2_model`,
:mod:`.s3_kernel`, :mod:`.s4_check`, :mod:`.s5_compiler`, :mod:`.s6_measured`,
:mod:`.s7_bottleneck`, :mod:`.s8_banks`, :mod:`.s9_this_gpu`; the exercises' solutions in
:mod:`.solutions`. Measurements come from the selected GPU's ``naive_tiled`` file
(``ncu_dram`` and ``sanitizer`` where they exist); compiler facts from :mod:`lab.compiler` and
:func:`lab.twins.compile_report`; the sources' numbers from :mod:`lab.seeds`. The notebook
calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch2.s1_idea import tile_walk_figure
from lab.chapters.ch2.s2_model import TILES, model_rows, model_table
from lab.chapters.ch2.s3_kernel import PADDING_SHAPES, padding_rows, padding_table
from lab.chapters.ch2.s4_check import KERNELS, check_shapes, check_table
from lab.chapters.ch2.s5_compiler import SASS_TWINS, sass_rows, sass_table
from lab.chapters.ch2.s6_measured import (PAIRS, FIGURE_KERNELS, intensity, tile_rows, tile_table,
                                          size_rows, size_table, size_figure, roofline_figure,
                                          ratio_table, sanitizer_rows)
from lab.chapters.ch2.s7_bottleneck import (ISSUE_PER_CLOCK, SHARED_LOADS_PER_CLOCK, ncu_table,
                                            ceiling_rows, ceiling_table)
from lab.chapters.ch2.s8_banks import (BANKS, BANK_BYTES, WARP, BANK_TILE, BANK_SHAPE, BANK_KINDS,
                                       conflict_degree, warp_accesses, bank_degrees, bank_runs,
                                       bank_rows, bank_table, bank_values)
from lab.chapters.ch2.s9_this_gpu import measure_here
from lab.chapters.ch2.s3_kernel import MAX_THREADS_PER_BLOCK, source
from lab.chapters.ch2.s8_banks import glue_banks
from lab.chapters.common import example_inputs, verdict
from lab.chapters.ch2 import s1_idea, s2_model, s3_kernel, s5_compiler, s6_measured, s7_bottleneck

__all__ = ["figure", "source", "glue_banks", "example_inputs", "verdict", "tile_walk_figure",
           "TILES", "model_rows", "model_table", "PADDING_SHAPES", "padding_rows", "padding_table",
           "KERNELS", "check_shapes", "check_table", "SASS_TWINS", "sass_rows", "sass_table",
           "PAIRS", "FIGURE_KERNELS", "intensity", "tile_rows", "tile_table", "size_rows",
           "size_table", "size_figure", "roofline_figure", "ratio_table", "sanitizer_rows",
           "ISSUE_PER_CLOCK", "SHARED_LOADS_PER_CLOCK", "ncu_table",
           "ceiling_rows", "ceiling_table", "BANKS", "BANK_BYTES", "WARP", "BANK_TILE",
           "BANK_SHAPE", "BANK_KINDS", "conflict_degree", "warp_accesses", "bank_degrees",
           "bank_runs", "bank_rows", "bank_table", "bank_values", "measure_here",
           "MAX_THREADS_PER_BLOCK", "values", "glue"]


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s1_idea.values(), **s2_model.values(), **s3_kernel.values(), **s5_compiler.values(),
            **s6_measured.values(), **s7_bottleneck.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
