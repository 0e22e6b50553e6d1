"""Chapter 2, section 9: on a live GPU, the tiled kernels timed beside the H200 reference."""
from __future__ import annotations

from lab.chapters import common
from lab.chapters.ch2.s4_check import KERNELS


def measure_here():
    """On a GPU: time the naive kernel and the three tile sizes at 1024³ (a few seconds) beside
    the H200 reference. Without a GPU: print one line, return None."""
    return common.measure_here(("naive", *KERNELS), tflops=True)
