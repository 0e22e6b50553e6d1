"""Chapter 0, section 1: how much work and how many bytes a product asks for (the model)."""
from __future__ import annotations

from lab import model, page, plots, roofline


#: The square sizes of the problem table.
SIZES = (1024, 4096, 8192)


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


#: The decode-time shape of the problem table's footnote: one token through a 4096² FP16 layer.
DECODE = (1, 4096, 4096)


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    v = {}
    v["the_gpu"] = page.gpu_label(roofs["gpu"])
    v["ideal_4096_bf16"] = f"{model.ideal_intensity(4096, 4096, 4096, 2):,.0f}"
    v["ideal_4096_fp32"] = f"{model.ideal_intensity(4096, 4096, 4096, 4):,.0f}"
    v["decode_intensity"] = f"{model.ideal_intensity(*DECODE, 2):.2f}"
    v["naive_intensity"] = f"{model.naive_intensity(4):.2f}"
    return v
