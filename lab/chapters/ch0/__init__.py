"""Chapter 0, the machine: how much work and traffic a product asks for, the two roofs of the
GPU measured with our own kernels, the ridge point beside the sources' machines, and what a live
GPU measures now.

The page's sections, in order, one module each: :mod:`.s1_problem` (how much work, how many
bytes), :mod:`.s2_compute_roof` (FMA chains in registers), :mod:`.s3_memory_roofs` (streaming
read, and copy), :mod:`.s4_ridge` (the ridge point beside the sources' machines),
:mod:`.s5_this_gpu` (the roofs re-measured on a live GPU); the exercises' solutions in
:mod:`.solutions`. Each reads the selected GPU's results (:func:`lab.results.load`), the
analytic model (:mod:`lab.model`), the compiler (:mod:`lab.compiler`) and the sources' quoted
numbers (:mod:`lab.seeds`). The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import model, page, roofline, seeds
from lab.chapters.ch0.s1_problem import SIZES, problem_rows, problem_table, intensity_figure
from lab.chapters.ch0.s2_compute_roof import FMA_KERNEL, fma_report, compiler_table
from lab.chapters.ch0.s3_memory_roofs import roof_rows, roof_table
from lab.chapters.ch0.s4_ridge import machine_rows, ridge_table, roofline_figure
from lab.chapters.ch0.s5_this_gpu import measure_here


__all__ = ["SIZES", "problem_rows", "problem_table", "intensity_figure", "FMA_KERNEL",
           "fma_report", "compiler_table", "roof_rows", "roof_table", "machine_rows",
           "ridge_table", "roofline_figure", "measure_here", "DECODE", "values", "glue", "figure",
           "source"]


#: The decode-time shape of the problem table's footnote: one token through a 4096² FP16 layer.
DECODE = (1, 4096, 4096)


def values() -> dict:
    """Every number the chapter's prose quotes, as strings, from the model, the compiler, the
    selected GPU's results and the seeds."""
    roofs = roofline.measured()
    by = roofs["rows"]
    sheet = roofline.DATASHEETS.get(roofs["gpu"])
    lanes = roofline.FP32_LANES_PER_SM.get(roofs["cc"])
    fma = fma_report()
    loop = fma.loop_mix
    loop_total = sum(loop.values())
    other = {op: n for op, n in loop.items() if op != "FFMA"}
    params = roofs["data"]["parameters"]
    machines = {m["machine"]: m for m in seeds.MACHINES}
    h100 = machines["H100 SXM (FP32)"]
    t4 = machines["Tesla T4 (measured, FP32)"]
    rtx = machines["RTX 3090 (FP32)"]
    v = {
        "the_gpu": page.gpu_label(roofs["gpu"]),
        "ideal_4096_bf16": f"{model.ideal_intensity(4096, 4096, 4096, 2):,.0f}",
        "ideal_4096_fp32": f"{model.ideal_intensity(4096, 4096, 4096, 4):,.0f}",
        "decode_intensity": f"{model.ideal_intensity(*DECODE, 2):.2f}",
        "naive_intensity": f"{model.naive_intensity(4):.2f}",
        "the_sm_count": str(roofs["sm_count"]),
        "clock_mhz": f"{roofs['max_clock_mhz']:,.0f}" if roofs["max_clock_mhz"] else "-",
        "lanes": str(lanes) if lanes else "-",
        "peak_calc": (f"{roofs['sm_count'] * lanes * 2 * roofs['max_clock_mhz'] / 1e6:.1f}"
                      if lanes and roofs["max_clock_mhz"] else "-"),
        "datasheet_tflops": f"{sheet['fp32_tflops']:g}" if sheet else "-",
        "datasheet_tbps": f"{sheet['hbm_tbps']:g}" if sheet else "-",
        "chains": str(roofline.CHAINS),
        "unroll": str(roofline.UNROLL),
        "fma_block_threads": str(params["fma_block"]),
        "fma_grid_blocks_per_sm": str(params["fma_blocks_per_sm"]),
        "fma_resident_blocks": str(model.SM90_LIMITS["threads"] // params["fma_block"]),
        "sm_threads": f"{model.SM90_LIMITS['threads']:,}",
        "loop_ffma": str(loop.get("FFMA", 0)),
        "loop_other": str(loop_total - loop.get("FFMA", 0)),
        "loop_other_mix": ", ".join(f"{op} ×{n}" for op, n in other.items()),
        "loop_share": f"{loop.get('FFMA', 0) / loop_total:.1%}",
        "fma_registers": str(fma.registers),
        "read_gib": f"{params['read_bytes'] / 2**30:g}",
        "loads_in_flight": str(roofline.LOADS),
        "fma_roof_tflops": f"{roofs['fma_tflops']:.1f}",
        "fma_share": f"{roofs['fma_tflops'] / sheet['fp32_tflops']:.0%}" if sheet else "-",
        "read_tbps": f"{roofs['read_gbps'] / 1e3:.2f}",
        "read_share": f"{roofs['read_gbps'] / 1e3 / sheet['hbm_tbps']:.0%}" if sheet else "-",
        "copy_tbps": f"{roofs['copy_gbps'] / 1e3:.2f}",
        "memcpy_tbps": f"{roofs['memcpy_gbps'] / 1e3:.2f}",
        "sm_clock_after": str(by["fma_chains"].get("sm_clock_after_mhz") or "-"),
        "t4_read_gbps": f"{t4['gbps']:g}",
        "t4_rw_gbps": f"{seeds.READ_WRITE_T4_GBPS:g}",
        "ridge_measured": f"{roofs['ridge']:.1f}",
        "h100_ridge": f"{model.ridge(h100['tflops'] * 1e12, h100['gbps'] * 1e9):.0f}",
        "t4_ridge": f"{model.ridge(t4['tflops'] * 1e12, t4['gbps'] * 1e9):.0f}",
        "rtx_ridge": f"{model.ridge(rtx['tflops'] * 1e12, rtx['gbps'] * 1e9):.1f}",
        "naive_short": f"{roofs['ridge'] / model.naive_intensity(4):.0f}",
    }
    h200 = roofline.DATASHEETS["NVIDIA H200"]
    v["h200_bandwidth_vs_h100"] = f"{h200['hbm_tbps'] * 1e3 / h100['gbps']:.1f}"
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)


def source(region: str):
    """A named region of :mod:`lab.roofline` (the roof kernels), highlighted."""
    return page.source(roofline, region)
