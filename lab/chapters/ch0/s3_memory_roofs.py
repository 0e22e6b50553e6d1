"""Chapter 0, section 3: the memory roofs, a streaming read and a copy, measured."""
from __future__ import annotations

from lab import page, results, roofline


def roof_rows(gpu: str | None = None) -> list[dict]:
    """The four roof measurements of one GPU's ``roofline`` file, with the datasheet share
    where :data:`lab.roofline.DATASHEETS` knows the GPU."""
    roofs = roofline.measured(gpu)
    sheet = roofline.DATASHEETS.get(roofs["gpu"])
    rows = []
    for key, label in (("fma_chains", "FP32 FMA chains"), ("stream_read", "streaming read"),
                       ("copy", "copy (read + write)"), ("memcpy_d2d", "driver memcpy")):
        r = roofs["rows"][key]
        row = {"roof": label, "median_ms": r["median_ms"], "min_ms": r["min_ms"],
               "max_ms": r["max_ms"], "tflops": r.get("tflops"),
               "tbps": r["gbps"] / 1e3 if "gbps" in r else None, "datasheet": None}
        if sheet:
            row["datasheet"] = (100 * r["tflops"] / sheet["fp32_tflops"] if "tflops" in r
                                else 100 * r["gbps"] / 1e3 / sheet["hbm_tbps"])
        rows.append(row)
    return rows


def roof_table():
    """The measured roofs: times, rates and their share of the datasheet's figure."""
    return page.table(roof_rows(), ["roof", "median_ms", "min_ms", "max_ms", "tflops", "tbps",
                                    "datasheet"],
                      {"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)",
                       "tflops": "TFLOP/s", "tbps": "TB/s", "datasheet": "% datasheet"},
                      source=results.source_line("roofline"))
