"""Chapter 1, section 3: the kernel, shown from :mod:`lab.kernels.k01_naive` by named region."""
from __future__ import annotations

from lab import page
from lab.kernels import k01_naive


def source(region: str):
    """A named region of :mod:`lab.kernels.k01_naive`, highlighted."""
    return page.source(k01_naive, region)
