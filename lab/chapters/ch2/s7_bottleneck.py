"""Chapter 2, section 7: what moved the bottleneck (DRAM bytes counted by Nsight Compute, and the
shared-memory and issue ceilings).
"""
from __future__ import annotations

from lab import page, results, roofline
from lab.chapters import common
from lab.chapters.ch2.s4_check import KERNELS
from lab.chapters.ch2.s5_compiler import sass_rows
from lab.chapters.ch2.s2_model import model_rows


#: Per SM and clock on compute capability 9.0: warp instructions issued (four schedulers, one
#: each) and warp-wide 4-byte shared-memory loads served (32 banks of 4 bytes).
ISSUE_PER_CLOCK = 4


SHARED_LOADS_PER_CLOCK = 1


def ncu_table():
    """Model reads, reads from L2 and from DRAM (Nsight Compute, 1024³), and the time."""
    rows = common.ncu_rows()
    size = common.measured()
    out = []
    for r in rows:
        if r["kernel"] not in ("naive", *KERNELS):
            continue
        row = {"kernel": r["kernel"], "model": common.model_reads(r["kernel"], r["n"]) / 1e6,
               "ms": size[(r["kernel"], r["n"])]["median_ms"]}
        if common.ncu_ok():
            row["l2"] = r["l2_read_bytes"] and r["l2_read_bytes"] / 1e6
            row["dram"] = r["dram_read_bytes"] / 1e6
        out.append(row)
    return page.table(out, ["kernel", "model", "l2", "dram", "ms"],
                      {"model": "model (MB)", "l2": "from L2 (MB)", "dram": "DRAM read (MB)",
                       "ms": "time at 1024³ (ms)"}, source=results.source_line("ncu_dram"))


def ceiling_rows() -> list[dict]:
    """Two ceilings read off each tiled kernel's hottest loop, against its 4096³ speed.

    Issue: the FP32 roof is one FFMA per issue slot, so the loop's FFMA share of its
    instructions caps the speed at share × roof. Shared memory: an SM serves
    ``SHARED_LOADS_PER_CLOCK`` warp-wide loads per clock against ``ISSUE_PER_CLOCK`` FFMAs at
    the roof, so at ``LDS per FFMA`` loads the cap is roof × loads-per-clock ÷ (issue × LDS
    per FFMA), counting every LDS as a single pass (the best case).
    """
    roof = roofline.measured()["fma_tflops"]
    size = common.measured()
    sass = {r["kernel"]: r for r in sass_rows()}
    rows = []
    for kernel in KERNELS:
        s = sass[kernel]
        issue = s["share"] * roof
        smem = min(1.0, SHARED_LOADS_PER_CLOCK / (ISSUE_PER_CLOCK * s["lds_per_ffma"])) * roof
        measured = size[(kernel, 4096)]["tflops"]
        rows.append({"kernel": kernel, "share": s["share"], "lds_per_ffma": s["lds_per_ffma"],
                     "issue": issue, "smem": smem, "tflops": measured,
                     "of_lower": 100 * measured / min(issue, smem)})
    return rows


def ceiling_table():
    """Issue and shared-memory ceilings beside the measured speed."""
    return page.table(ceiling_rows(), ["kernel", "issue", "smem", "tflops", "of_lower"],
                      {"issue": "issue cap (TFLOP/s)", "smem": "shared cap (TFLOP/s)",
                       "tflops": "4096³ (TFLOP/s)", "of_lower": "% of lower cap"})


def _ncu_values() -> dict:
    rows = common.ncu_rows()
    if not common.ncu_ok():
        return {"ncu_tiled_sentence": "Nsight Compute has no byte counts for this GPU to "
                                      "confirm it",
                "ncu_tiles_note": "Without counters, the gap between the DRAM ceiling and the "
                                  "measured speed is the evidence."}
    by = {r["kernel"]: r for r in rows}
    naive, t8, t32 = by["naive"], by["tiled8"], by["tiled32"]
    sentence = ("by Nsight Compute's count at 1024³, the bytes the SMs read from L2 fall from "
                f"{naive['l2_read_bytes'] / 1e6:,.0f} MB (naive) to "
                f"{t32['l2_read_bytes'] / 1e6:,.0f} MB (32 × 32 tiles)")
    note = ""
    if t8["l2_read_bytes"] > naive["l2_read_bytes"]:
        note = ("One row stands out: 8 × 8 tiles read more from L2 "
                f"({t8['l2_read_bytes'] / 1e6:,.0f} MB) than the naive kernel "
                f"({naive['l2_read_bytes'] / 1e6:,.0f} MB). The L1 already caught most of the "
                "naive kernel's reuse, more than an 8 × 8 tile collects on purpose, which fits "
                "8 × 8 tiles being no faster than the naive kernel. ")
    passes = [r["dram_read_bytes"] / (4 * 2 * r["n"] ** 2) for r in rows]
    spread = (f"about {min(passes):.2f}" if f"{min(passes):.2f}" == f"{max(passes):.2f}"
              else f"{min(passes):.2f} to {max(passes):.2f}")
    note += (f"DRAM reads are {spread} passes over A and B for every kernel at this size, so "
             "DRAM is not what separates them.")
    return {"ncu_tiled_sentence": sentence, "ncu_tiles_note": note}


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    size = common.measured()
    v = {}
    mrows = {r["tile"]: r for r in model_rows()}
    v.update(_ncu_values())
    crows = ceiling_rows()
    t32 = size[("tiled32", 4096)]["tflops"]
    shares = [r["of_lower"] for r in crows]
    v["issue_per_clock"] = str(ISSUE_PER_CLOCK)
    v["fma_roof_tflops"] = f"{roofs['fma_tflops']:.1f}"
    v["smem_ceiling_16"] = f"{crows[1]['smem']:.0f}"
    v["issue_ceiling_16"] = f"{crows[1]['issue']:.0f}"
    v["ceiling_lo"] = f"{min(shares):.0f}%"
    v["ceiling_hi"] = f"{max(shares):.0f}%"
    v["tiled32_tflops"] = f"{t32:.1f}"
    v["tiled32_share_of_dram_ceiling"] = f"{t32 / mrows['32 × 32']['ceiling']:.0%}"
    v["cublas_vs_tiled32"] = f"{size[('cublas_fp32', 4096)]['tflops'] / t32:.1f}"
    return v
