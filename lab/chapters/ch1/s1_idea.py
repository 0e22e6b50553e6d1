"""Chapter 1, section 1: the idea, one thread per dot product, and how many threads that launches."""
from __future__ import annotations

from lab import model, page, roofline
from lab.chapters.common import SIZES
from lab.kernels import k01_naive


def launch_rows() -> list[dict]:
    """Blocks and threads one launch asks for, against the threads the GPU keeps resident."""
    roofs = roofline.measured()
    resident = model.SM90_LIMITS["threads"] * roofs["sm_count"]
    block = k01_naive.BLOCK
    rows = []
    for n in SIZES:
        blocks = (-(-n // block)) ** 2
        threads = blocks * block * block
        rows.append({"n": n, "blocks": blocks, "threads": threads,
                     "per_resident": threads / resident, "loads": 2 * n})
    return rows


def launch_table():
    """The launch's size against the GPU's resident-thread capacity."""
    return page.table(launch_rows(), ["n", "blocks", "threads", "per_resident", "loads"],
                      {"per_resident": "threads / resident", "loads": "loads per thread"})
