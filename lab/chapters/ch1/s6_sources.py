"""Chapter 1, section 6: the naive kernel measured, beside the sources' T4 and RTX 3090."""
from __future__ import annotations

from lab import page, roofline, seeds
from lab.chapters.common import SIZES, gpu, measured


def seed_rows() -> list[dict]:
    """The naive kernel measured here at 1024³ and 4096³, and as the T4 (the T4 study) and the
    RTX 3090 (the RTX 3090 tutorial) ran it; the last column is each time's share of that GPU's FP32 roof."""
    size = measured()
    roof = roofline.measured()["fma_tflops"]
    seed_roof = {m["source"]: m["tflops"] for m in seeds.MACHINES}
    rows = []
    for n in SIZES:
        r = size[("naive", n)]
        rows.append({"gpu": gpu(), "source": "naive_tiled results", "n": n,
                     "ms": r["median_ms"], "tflops": r["tflops"],
                     "roof": 100 * r["tflops"] / roof})
    t4 = seeds.NAIVE_T4[0]
    rows.append({"gpu": t4["gpu"], "source": t4["source"], "n": t4["n"], "ms": t4["ms"],
                 "tflops": t4["tflops"], "roof": 100 * t4["tflops"] / seed_roof["the T4 study"]})
    for s in seeds.NAIVE_TILED_3090:
        if s["n"] in SIZES:
            tf = s["naive_gflops"] / 1e3
            rows.append({"gpu": seeds.GPU_3090, "source": "the RTX 3090 tutorial", "n": s["n"],
                         "ms": s["naive_ms"], "tflops": tf,
                         "roof": 100 * tf / seed_roof["the RTX 3090 tutorial"]})
    return rows


def seed_table():
    """The naive kernel here and on the sources' GPUs."""
    return page.table(seed_rows(), ["gpu", "source", "n", "ms", "tflops", "roof"],
                      {"gpu": "GPU", "ms": "time (ms)", "tflops": "TFLOP/s",
                       "roof": "% FP32 roof"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    size = measured()
    roofs = roofline.measured()
    v = {}
    h1024, h4096 = size[("naive", 1024)], size[("naive", 4096)]
    t4 = seeds.NAIVE_T4[0]
    rtx = {s["n"]: s for s in seeds.NAIVE_TILED_3090}[1024]
    v["naive_tflops_4096"] = f"{h4096['tflops']:.2f}"
    v["naive_roof_share"] = f"{h4096['tflops'] / roofs['fma_tflops']:.0%}"
    v["naive_vs_t4"] = f"{t4['ms'] / h1024['median_ms']:.0f}"
    v["naive_vs_3090"] = f"{rtx['naive_ms'] / h1024['median_ms']:.0f}"
    v["t4_roof_share"] = f"{t4['tflops'] / seeds.MACHINES[0]['tflops']:.0%}"
    return v
