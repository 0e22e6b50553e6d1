"""Chapter 0, section 4: the ridge point, beside the sources' machines, and the roofline."""
from __future__ import annotations

from lab import model, page, plots, roofline, seeds


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
                      {"tflops": "TFLOP/s", "gbps": "GB/s", "ridge": "ridge (FLOP/B)"})


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
        ax.text(x * 1.1, 0.013, label, rotation=90, fontsize=8, va="bottom")
    ax.axvline(roofs["ridge"], color="C0", linewidth=0.8, linestyle=":",
               label=f"{name} ridge ({roofs['ridge']:.1f} FLOP/B)")
    ax.set_ylim(0.01, 200)
    return plots.finish_below(fig, ax)


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    machines = {m["machine"]: m for m in seeds.MACHINES}
    h100 = machines["H100 SXM (FP32)"]
    t4 = machines["Tesla T4 (measured, FP32)"]
    rtx = machines["RTX 3090 (FP32)"]
    v = {}
    v["ridge_measured"] = f"{roofs['ridge']:.1f}"
    v["h100_ridge"] = f"{model.ridge(h100['tflops'] * 1e12, h100['gbps'] * 1e9):.0f}"
    v["t4_ridge"] = f"{model.ridge(t4['tflops'] * 1e12, t4['gbps'] * 1e9):.0f}"
    v["rtx_ridge"] = f"{model.ridge(rtx['tflops'] * 1e12, rtx['gbps'] * 1e9):.1f}"
    v["naive_short"] = f"{roofs['ridge'] / model.naive_intensity(4):.0f}"
    h200 = roofline.DATASHEETS["NVIDIA H200"]
    v["h200_bandwidth_vs_h100"] = f"{h200['hbm_tbps'] * 1e3 / h100['gbps']:.1f}"
    return v
