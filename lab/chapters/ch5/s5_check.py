"""Section 'Run and check': rung 1 and the tuned kernels against float64, on a GPU.
"""
from __future__ import annotations

from lab import bench
from lab.kernels import runnable


#: Shapes for a check on a GPU: odd sizes just past a tile, and a round one.
CHECK_SHAPES = ((257, 129, 67), (256, 256, 256))


def check_here(kernels=("tc_naive_fp16", "tc_fp16", "tc_bf16")) -> None:
    """On a GPU: check each kernel against float64 at :data:`CHECK_SHAPES` and print the
    verdicts. Where they cannot run (the simulator): nothing (the introduction says once what
    the simulator skips)."""
    if not all(runnable(name)[0] for name in kernels):
        return
    for name in kernels:
        for shape in CHECK_SHAPES:
            print(bench.check(name, *shape).line())
