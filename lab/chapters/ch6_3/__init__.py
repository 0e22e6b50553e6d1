"""Chapter 6.3, fused epilogues: the element-wise work after a product, run on the accumulators
while they are still in registers, predicted, measured, and set against the library.

The page's sections, in order, one module each: :mod:`.s1_epilogue` (the epilogue and its
device function), :mod:`.s2_prediction` (the bytes fusion saves, small K), :mod:`.s3_small_k`
(small K, measured), :mod:`.s4_library` (fused against the library). The notebook calls only
the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters.ch6_3 import s2_prediction, s3_small_k, s4_library
from lab.chapters.ch6_3.s1_epilogue import epilogue_source
from lab.chapters.ch6_3.s2_prediction import epilogue_model_table, small_k_model_table
from lab.chapters.ch6_3.s3_small_k import small_k_figure, small_k_table
from lab.chapters.ch6_3.s4_library import (epilogue_figure, epilogue_table, library_table,
                                           torch_launched_table)

__all__ = ["epilogue_source", "epilogue_model_table", "small_k_model_table",
           "small_k_figure", "small_k_table", "epilogue_figure", "epilogue_table",
           "library_table", "torch_launched_table", "values", "glue"]


def values() -> dict:
    """Every number the page's prose quotes, section by section, as strings."""
    return {**s2_prediction.values(), **s3_small_k.values(), **s4_library.values()}


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())
