"""Run and check: every provider of the chapter that runs here, against float64."""
from __future__ import annotations

from lab import bench, providers
from lab.chapters.ch9.common import CHECK_SHAPES, FP16, FP32

def check_here() -> None:
    """Check every provider of the chapter that runs here against float64 — on a GPU at an
    odd and a round shape, in the simulator at one small odd shape; those that cannot run here
    are left out: silently in the simulator (the introduction says once what it skips), with
    the reason on a GPU (a capability it lacks, a library not installed)."""
    from lab import device

    shapes = CHECK_SHAPES if device.GPU else ((33, 17, 9),)
    for name in FP16 + FP32:
        why = providers.get(name).reason()
        if why is not None:
            if device.GPU:              # on a GPU, say what is left out and why
                print(f"{name:<22} not run here: {why}")
            continue
        for shape in shapes:
            print(bench.check(name, *shape).line())
