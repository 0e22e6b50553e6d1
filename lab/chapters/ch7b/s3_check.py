"""Run and check: each FP8 kernel against float64 where it can run."""
from __future__ import annotations

from lab import bench, kernels, page
from lab.kernels.wgmma import fp8 as wgmma_fp8


def check_here():
    """On a Hopper GPU: each FP8 kernel checked once against float64 at an odd shape (scaled
    operands); elsewhere one line that says how many cannot run here and why (on a GPU of
    another capability, the capability the kernels need and the one it has)."""
    from lab import device

    lines, cannot = [], []
    for name in wgmma_fp8.CONFIGS:
        ok, why = kernels.runnable(name)
        if not ok:
            cannot.append(why)
            continue
        lines.append(bench.check(name, 257, 387, 259).line())
    if cannot and device.SIMULATOR:
        lines.append(f"{len(cannot)} FP8 kernels not run here: they need a Hopper GPU "
                     "(sm_90a); the CUDA simulator cannot run wgmma, TMA or mbarriers")
    elif cannot:                        # a GPU that is not a Hopper: the capability it lacks
        lines.append(f"{len(cannot)} FP8 kernels not run here: {cannot[0]}")
    return page.text("\n".join(lines))
