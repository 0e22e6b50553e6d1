"""Section 'Run and check': rung 1 and the tuned kernels against float64, on a GPU.
"""
from __future__ import annotations

from lab import bench
from lab.kernels import runnable


#: Shapes for a check on a GPU: odd sizes just past a tile, and a round one.
CHECK_SHAPES = ((257, 129, 67), (256, 256, 256))


def check_here(kernels=("tc_naive_fp16", "tc_fp16", "tc_bf16")) -> None:
    """On a GPU: check each kernel against float64 at :data:`CHECK_SHAPES` and print the
    verdicts. Where they cannot run: in the simulator nothing (the introduction says once what
    the simulator skips); on a GPU older than the kernels, one line per kernel naming the
    capability it needs and the one the GPU has."""
    from lab import device

    cannot = [why for ok, why in map(runnable, kernels) if not ok]
    if cannot:
        if device.GPU:
            print("\n".join(f"not run here: {why}" for why in cannot))
        return
    for name in kernels:
        for shape in CHECK_SHAPES:
            print(bench.check(name, *shape).line())
