"""Chapter 0, section 3: the memory roofs, a streaming read and a copy, measured."""
from __future__ import annotations

from lab import page, results, roofline, seeds


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


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    by = roofs["rows"]
    sheet = roofline.DATASHEETS.get(roofs["gpu"])
    params = roofs["data"]["parameters"]
    machines = {m["machine"]: m for m in seeds.MACHINES}
    t4 = machines["Tesla T4 (measured, FP32)"]
    v = {}
    v["datasheet_tbps"] = f"{sheet['hbm_tbps']:g}" if sheet else "-"
    v["read_gib"] = f"{params['read_bytes'] / 2**30:g}"
    v["loads_in_flight"] = str(roofline.LOADS)
    v["fma_roof_tflops"] = f"{roofs['fma_tflops']:.1f}"
    v["fma_share"] = f"{roofs['fma_tflops'] / sheet['fp32_tflops']:.0%}" if sheet else "-"
    v["read_tbps"] = f"{roofs['read_gbps'] / 1e3:.2f}"
    v["read_share"] = f"{roofs['read_gbps'] / 1e3 / sheet['hbm_tbps']:.0%}" if sheet else "-"
    v["copy_tbps"] = f"{roofs['copy_gbps'] / 1e3:.2f}"
    v["memcpy_tbps"] = f"{roofs['memcpy_gbps'] / 1e3:.2f}"
    v["sm_clock_after"] = str(by["fma_chains"].get("sm_clock_after_mhz") or "-")
    v["t4_read_gbps"] = f"{t4['gbps']:g}"
    v["t4_rw_gbps"] = f"{seeds.READ_WRITE_T4_GBPS:g}"
    return v
