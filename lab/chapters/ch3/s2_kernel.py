"""Chapter 3, section 2: the kernel, shown from :mod:`lab.kernels.k03_registers` by named region."""
from __future__ import annotations

from lab import page
from lab.kernels import k03_registers


#: What the shown patch kernel folds away: what chapter 2's tiled kernel already did.
FOLDED = {"patch_indices": "sizes, thread and block indices, as chapter 2 (uint32)",
          "patch_load": "load phase as chapter 2: A and B tiles to shared memory, zero-filled"}


def source(region: str):
    """A named region of ``lab/kernels/k03_registers.py``, highlighted; the patch kernel with
    what chapter 2 already did folded to one line each."""
    return page.source(k03_registers, region, fold=FOLDED if region == "patch_kernel" else None)
