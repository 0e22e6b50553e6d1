"""Chapter 0, section 2: the compute roof, FMA chains in registers, and what the compiler made
of the kernel.
"""
from __future__ import annotations

from lab import compiler, model, page, roofline


#: The FMA kernel as :mod:`lab.compiler` names it.
FMA_KERNEL = "lab.roofline:fma_kernel"


def fma_report():
    """The offline compile report (sm_90) of the FMA-chains kernel."""
    return compiler.report(FMA_KERNEL)[0]


def compiler_table():
    """Registers, spills and the hottest loop of the FMA kernel, from ptxas and nvdisasm."""
    r = fma_report()
    loop = r.loop_mix
    total = sum(loop.values())
    row = {"registers": r.registers, "spill_bytes": r.spill_stores + r.spill_loads,
           "loop": total, "ffma": loop.get("FFMA", 0), "other": total - loop.get("FFMA", 0),
           "share": loop.get("FFMA", 0) / total}
    return page.table([row], list(row),
                      {"registers": "registers", "spill_bytes": "spills (bytes)",
                       "loop": "loop instructions", "ffma": "FFMA", "other": "other",
                       "share": "FFMA share"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    sheet = roofline.DATASHEETS.get(roofs["gpu"])
    lanes = roofline.FP32_LANES_PER_SM.get(roofs["cc"])
    fma = fma_report()
    loop = fma.loop_mix
    loop_total = sum(loop.values())
    other = {op: n for op, n in loop.items() if op != "FFMA"}
    params = roofs["data"]["parameters"]
    v = {}
    v["the_sm_count"] = str(roofs["sm_count"])
    v["clock_mhz"] = f"{roofs['max_clock_mhz']:,.0f}" if roofs["max_clock_mhz"] else "-"
    v["lanes"] = str(lanes) if lanes else "-"
    v["peak_calc"] = (f"{roofs['sm_count'] * lanes * 2 * roofs['max_clock_mhz'] / 1e6:.1f}"
                     if lanes and roofs["max_clock_mhz"] else "-")
    v["datasheet_tflops"] = f"{sheet['fp32_tflops']:g}" if sheet else "-"
    v["chains"] = str(roofline.CHAINS)
    v["unroll"] = str(roofline.UNROLL)
    v["fma_block_threads"] = str(params["fma_block"])
    v["fma_grid_blocks_per_sm"] = str(params["fma_blocks_per_sm"])
    v["fma_resident_blocks"] = str(model.SM90_LIMITS["threads"] // params["fma_block"])
    v["sm_threads"] = f"{model.SM90_LIMITS['threads']:,}"
    v["loop_ffma"] = str(loop.get("FFMA", 0))
    v["loop_other"] = str(loop_total - loop.get("FFMA", 0))
    v["loop_other_mix"] = ", ".join(f"{op} ×{n}" for op, n in other.items())
    v["loop_share"] = f"{loop.get('FFMA', 0) / loop_total:.1%}"
    return v
