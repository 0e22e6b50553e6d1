"""Chapter 1, section 10: on a live GPU, the naive kernels timed beside the H200 reference."""
from __future__ import annotations

from lab.chapters import common
from lab.chapters.ch1.s2_warp import MAPPINGS


def measure_here(kernels=MAPPINGS):
    """On a GPU: the naive kernels timed here beside the H200 reference
    (:func:`lab.chapters.common.measure_here`); nothing in the simulator."""
    return common.measure_here(kernels)
