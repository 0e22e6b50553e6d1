"""Chapter 1, section 1: the idea, one thread per dot product, and how many threads that launches."""
from __future__ import annotations

from lab import model, page, roofline
from lab.chapters.common import SIZES, gpu
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


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    v = {}
    v["the_gpu"] = gpu()
    v["the_sm_count"] = str(roofs["sm_count"])
    v["resident_per_sm"] = f"{model.SM90_LIMITS['threads']:,}"
    v["resident"] = f"{model.SM90_LIMITS['threads'] * roofs['sm_count']:,}"
    launch = launch_rows()
    v["oversub_1024"] = f"{launch[0]['per_resident']:.1f}"
    v["oversub_4096"] = f"{launch[1]['per_resident']:.0f}"
    v["naive_intensity"] = f"{model.naive_intensity(4):.2f}"
    v["naive_dram_roof"] = f"{model.naive_intensity(4) * roofs['read_gbps'] / 1e3:.1f}"
    return v
