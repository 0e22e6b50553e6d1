"""Section "The epilogue": what a layer computes after the product, and the one device function
our fused kernels run on the accumulators."""
from __future__ import annotations

from lab import page
from lab.kernels import fused_epilogue


def epilogue_source():
    """The fused kernels' epilogue device function (region ``epilogue`` of fused_epilogue)."""
    return page.source(fused_epilogue, "epilogue")
