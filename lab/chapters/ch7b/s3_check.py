"""Run and check: each FP8 kernel against float64 where it can run."""
from __future__ import annotations

from lab import bench, kernels, page
from lab.kernels.wgmma import fp8 as wgmma_fp8


def check_here():
    """On a Hopper GPU: each FP8 kernel checked once against float64 at an odd shape (scaled
    operands); elsewhere the one line that says why it cannot run."""
    lines = []
    for name in wgmma_fp8.CONFIGS:
        ok, why = kernels.runnable(name)
        if not ok:
            lines.append(why)
            continue
        lines.append(bench.check(name, 257, 387, 259).line())
    return page.text("\n".join(lines))
