"""Chapter 0, the machine: how much work and traffic a product asks for, the two roofs of the
GPU measured with our own kernels, the ridge point beside the sources' machines, and what a live
GPU measures now.

Everything here reads the selected GPU's results (:func:`lab.results.load` with its default
GPU), the analytic model (:mod:`lab.model`), the compiler (:mod:`lab.compiler`) and the sources'
quoted numbers (:mod:`lab.seeds`). The notebook calls one function per table, figure or set of
glued values.
"""
from __future__ import annotations

import numpy as np

from lab import compiler, device, model, page, plots, results, roofline, seeds

#: The square sizes of the problem table.
SIZES = (1024, 4096, 8192)
#: The decode-time shape of the problem table's footnote: one token through a 4096² FP16 layer.
DECODE = (1, 4096, 4096)
#: The FMA kernel as :mod:`lab.compiler` names it.
FMA_KERNEL = "lab.roofline:fma_kernel"


# ----------------------------------------------------------------------------- the problem

def problem_rows() -> list[dict]:
    """FLOPs, least possible traffic and best intensity of n³ products (the model, no GPU)."""
    rows = []
    for n in SIZES:
        rows.append({"n": n, "gflop": model.flops(n, n, n) / 1e9,
                     "ideal_mb": model.ideal_bytes(n, n, n, 4) / 1e6,
                     "ideal_fp32": model.ideal_intensity(n, n, n, 4),
                     "ideal_bf16": model.ideal_intensity(n, n, n, 2),
                     "naive_gb": model.naive_bytes(n, n, n, 4) / 1e9})
    return rows


def problem_table():
    """The problem table: work, least traffic, best intensity, and what the naive kernel reads."""
    return page.table(problem_rows(),
                      ["n", "gflop", "ideal_mb", "ideal_fp32", "ideal_bf16", "naive_gb"],
                      {"gflop": "GFLOP", "ideal_mb": "each once, FP32 (MB)",
                       "ideal_fp32": "FP32 FLOP/B", "ideal_bf16": "BF16 FLOP/B",
                       "naive_gb": "naive reads (GB)"})


def intensity_figure():
    """Concept figure: the best intensity n³ products allow (FP32 and BF16), the naive kernel's
    flat 0.25, and the measured ridge of the selected GPU (the only measured number drawn)."""
    roofs = roofline.measured()
    ns = [2 ** p for p in range(4, 15)]
    fig, ax = plots.axes("", "n (M = N = K)", "FLOP per byte of traffic", logx=True, logy=True)
    ax.plot(ns, [model.ideal_intensity(n, n, n, 4) for n in ns], label="best possible, FP32 (n/6)",
            **plots.OURS)
    ax.plot(ns, [model.ideal_intensity(n, n, n, 2) for n in ns], label="best possible, BF16 (n/3)",
            **{**plots.OURS, "marker": "^"})
    ax.plot(ns, [model.naive_intensity(4) for _ in ns], label="naive kernel, FP32 (1/4)",
            **{**plots.OURS, "marker": "v"})
    ax.axhline(roofs["ridge"], color="0.3", linestyle="--", linewidth=1.2,
               label=f"ridge of the {page.gpu_label(roofs['gpu'])}, FP32 (measured)")
    ax.set_ylim(0.1, 1e4)
    return plots.finish(fig, ax)


# ----------------------------------------------------------------------------- the compute roof

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


# ----------------------------------------------------------------------------- the ridge

def machine_rows() -> list[dict]:
    """The selected GPU's measured roofs and ridge, then the sources' machines as they state them."""
    roofs = roofline.measured()
    rows = [{"machine": f"{page.gpu_label(roofs['gpu'])} FP32 (measured)",
             "tflops": roofs["fma_tflops"], "gbps": roofs["read_gbps"], "ridge": roofs["ridge"],
             "source": "roofline results"}]
    for m in seeds.MACHINES:
        rows.append({"machine": m["machine"], "tflops": float(m["tflops"]),
                     "gbps": float(m["gbps"]) if m["gbps"] else None,
                     "ridge": model.ridge(m["tflops"] * 1e12, m["gbps"] * 1e9) if m["gbps"]
                     else None, "source": m["source"]})
    return rows


def ridge_table():
    """Roofs and ridge points: the selected GPU measured, the sources' machines quoted."""
    return page.table(machine_rows(), ["machine", "tflops", "gbps", "ridge", "source"],
                      {"tflops": "TFLOP/s", "gbps": "GB/s", "ridge": "ridge (FLOP/B)"},
                      source=results.source_line("roofline"))


def roofline_figure():
    """The measured roofline of the selected GPU, the sources' machines dashed, and the model
    intensities of the course's kernels as vertical marks."""
    roofs = roofline.measured()
    name = page.gpu_label(roofs["gpu"])
    fig, ax = plots.axes("", "arithmetic intensity (FLOP/byte)", "attainable TFLOP/s")
    plots.roofline(ax, roofs["fma_tflops"], roofs["read_gbps"],
                   label=f"{name} FP32, measured ({roofs['fma_tflops']:.1f} TFLOP/s, "
                         f"{roofs['read_gbps'] / 1e3:.2f} TB/s)")
    for m in seeds.MACHINES:
        if m["gbps"] and "tensor" not in m["machine"]:
            plots.roofline(ax, m["tflops"], m["gbps"], label=f"{m['machine']}, {m['source']}",
                           style=plots.SEED)
    marks = (("naive 0.25", model.naive_intensity(4)),
             ("32² tiles: 8", model.tile_intensity(32)),
             ("128² blocks: 32", model.tile_intensity(128)),
             ("best at 4096³: 683", model.ideal_intensity(4096, 4096, 4096)))
    for label, x in marks:
        ax.axvline(x, color="grey", linewidth=0.8, alpha=0.6)
        ax.text(x * 1.1, 0.013, label, rotation=90, fontsize=7, va="bottom")
    ax.axvline(roofs["ridge"], color="C0", linewidth=0.8, linestyle=":",
               label=f"{name} ridge ({roofs['ridge']:.1f} FLOP/B)")
    ax.set_ylim(0.01, 200)
    return plots.finish_below(fig, ax)


# ----------------------------------------------------------------------------- this GPU

def measure_here():
    """On a GPU: re-measure the FMA and streaming-read roofs briefly (a few seconds) and return
    them as a table beside the H200 reference. Without a GPU: nothing (the introduction says
    once what the simulator skips)."""
    if not device.GPU:
        return None
    from numba import cuda

    from lab import bench

    ref = roofline.measured(results.REFERENCE_GPU)
    sms = device.provenance()["sm_count"]
    blocks, threads_per_block, trips = sms * 16, 256, 1024
    xy = cuda.to_device(np.array([0.9999, 1e-4], dtype=np.float32))
    out = cuda.device_array(blocks * threads_per_block, dtype=np.float32)
    fma = bench.time_gpu(lambda i: roofline.fma_kernel[blocks, threads_per_block](
        xy, out, np.int32(trips)), warmup=3, repeats=10)
    tflops = roofline.fma_flops(blocks * threads_per_block, trips) / (fma.median_ms * 1e-3) / 1e12
    nbytes = 2 ** 30
    x = cuda.to_device(np.ones(nbytes // 4, dtype=np.float32))
    sink = cuda.device_array(sms * 8 * 512, dtype=np.float32)
    read = bench.time_gpu(lambda i: roofline.read_kernel[sms * 8, 512](x, sink), repeats=10)
    gbps = nbytes / (read.median_ms * 1e-3) / 1e9
    here = page.gpu_label(device.provenance()["gpu"] or "this GPU")
    rows = [{"roof": "FP32 FMA chains", "here": tflops, "ref": ref["fma_tflops"],
             "unit": "TFLOP/s"},
            {"roof": "streaming read", "here": gbps / 1e3, "ref": ref["read_gbps"] / 1e3,
             "unit": "TB/s"}]
    return page.table(rows, ["roof", "here", "ref", "unit"],
                      {"here": f"{here} (now)", "ref": "H200 (reference)"})


# ----------------------------------------------------------------------------- glued values

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
        "gpu": page.gpu_label(roofs["gpu"]),
        "ideal_4096_bf16": f"{model.ideal_intensity(4096, 4096, 4096, 2):,.0f}",
        "ideal_4096_fp32": f"{model.ideal_intensity(4096, 4096, 4096, 4):,.0f}",
        "decode_intensity": f"{model.ideal_intensity(*DECODE, 2):.2f}",
        "naive_intensity": f"{model.naive_intensity(4):.2f}",
        "sm_count": str(roofs["sm_count"]),
        "clock_mhz": f"{roofs['max_clock_mhz']:,.0f}" if roofs["max_clock_mhz"] else "-",
        "lanes": str(lanes) if lanes else "-",
        "peak_calc": (f"{roofs['sm_count'] * lanes * 2 * roofs['max_clock_mhz'] / 1e6:.1f}"
                      if lanes and roofs["max_clock_mhz"] else "-"),
        "datasheet_tflops": f"{sheet['fp32_tflops']:g}" if sheet else "-",
        "datasheet_tbps": f"{sheet['hbm_tbps']:g}" if sheet else "-",
        "chains": str(roofline.CHAINS),
        "unroll": str(roofline.UNROLL),
        "fma_block": str(params["fma_block"]),
        "fma_blocks_per_sm": str(params["fma_blocks_per_sm"]),
        "fma_resident_blocks": str(model.SM90_LIMITS["threads"] // params["fma_block"]),
        "sm_threads": f"{model.SM90_LIMITS['threads']:,}",
        "loop_ffma": str(loop.get("FFMA", 0)),
        "loop_other": str(loop_total - loop.get("FFMA", 0)),
        "loop_other_mix": ", ".join(f"{op} ×{n}" for op, n in other.items()),
        "loop_share": f"{loop.get('FFMA', 0) / loop_total:.1%}",
        "fma_registers": str(fma.registers),
        "read_gib": f"{params['read_bytes'] / 2**30:g}",
        "loads_in_flight": str(roofline.LOADS),
        "fma_tflops": f"{roofs['fma_tflops']:.1f}",
        "fma_share": f"{roofs['fma_tflops'] / sheet['fp32_tflops']:.0%}" if sheet else "-",
        "read_tbps": f"{roofs['read_gbps'] / 1e3:.2f}",
        "read_share": f"{roofs['read_gbps'] / 1e3 / sheet['hbm_tbps']:.0%}" if sheet else "-",
        "copy_tbps": f"{roofs['copy_gbps'] / 1e3:.2f}",
        "memcpy_tbps": f"{roofs['memcpy_gbps'] / 1e3:.2f}",
        "sm_clock_after": str(by["fma_chains"].get("sm_clock_after_mhz") or "-"),
        "t4_read_gbps": f"{t4['gbps']:g}",
        "t4_rw_gbps": f"{seeds.READ_WRITE_T4_GBPS:g}",
        "ridge": f"{roofs['ridge']:.1f}",
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
