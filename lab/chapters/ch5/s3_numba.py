"""Section 'Reaching the tensor cores from Numba': the line of PTX the ``mma`` intrinsic emits."""
from __future__ import annotations

from lab import page, ptx


def mma_listing():
    """The ``mma.sync`` instruction text and its operand constraints (:mod:`lab.ptx`)."""
    return page.source(ptx, "mma_instruction")
