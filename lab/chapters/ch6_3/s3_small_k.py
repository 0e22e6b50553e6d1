"""Section "Small K, measured": at M = N = 4096 and small K, our product, the element-wise
kernel alone, the two unfused, the fused kernel and cuBLAS's product (``splitk``)."""
from __future__ import annotations

from lab import page, plots, results

#: Our kernel of each design.
DESIGN_KERNEL = {"fp16": "tc_fp16", "fp32": "warptile_tuned"}


def small_k_rows() -> list[dict]:
    """Per design and K: µs per call of each variant (and how each was timed), the time
    fusion saved and the element-wise kernel's share of the unfused call."""
    by: dict = {}
    for r in results.rows("splitk", part="small_k"):
        row = by.setdefault((r["design"], r["k"]), {"design": r["design"], "k": r["k"]})
        name = "cublas" if r["impl"] == "cublas" else r["variant"]
        row[name] = r["median_ms"] * 1e3
        row[f"{name}_timing"] = r["timing"]
        if name == "epilogue_only":
            row["epilogue_gbps"] = r["gbps"]
    rows = list(by.values())
    for row in rows:
        row["saved"] = row["unfused"] - row["fused"]
        row["epi_share"] = row["epilogue_only"] / row["unfused"]
    return rows


def small_k_table():
    """Small K, measured."""
    return page.table(small_k_rows(), ["design", "k", "gemm", "cublas", "epilogue_only",
                                       "unfused", "fused", "saved", "epi_share"],
                      {"k": "K", "gemm": "our GEMM (µs)", "cublas": "cuBLAS GEMM (µs)",
                       "epilogue_only": "epilogue kernel (µs)", "unfused": "unfused (µs)",
                       "fused": "fused (µs)", "saved": "saved (µs)",
                       "epi_share": "epilogue's share, unfused"},
                      source=results.source_line("splitk"))


def small_k_figure():
    """Unfused against fused time over K for both designs, with cuBLAS's bare product."""
    rows = small_k_rows()
    fig, ax = plots.axes("", "K", "µs per call (M = N = 4096)", logx=True)
    for design, colour in (("fp16", "C0"), ("fp32", "C1")):
        pts = sorted((r for r in rows if r["design"] == design), key=lambda r: r["k"])
        ks = [r["k"] for r in pts]
        name = DESIGN_KERNEL[design]
        ax.plot(ks, [r["unfused"] for r in pts], color=colour, linestyle="--", marker="s",
                markersize=3, linewidth=1.1, label=f"{name} + epilogue kernel")
        ax.plot(ks, [r["fused"] for r in pts], color=colour, marker="o", markersize=3,
                linewidth=1.4, label=f"{name}, epilogue fused")
        ax.plot(ks, [r["cublas"] for r in pts], color=colour, linestyle=":", linewidth=1.0,
                label=f"cuBLAS {design.upper()}, product only")
    ax.set_xscale("log", base=2)
    return page.figure(plots.finish(fig, ax, loc="below"))


def values() -> dict:
    """The measurement's numbers: how the unfused pair was timed, the FP32 case timed queued
    throughout, where fusion won or lost, and the element-wise kernel alone."""
    rows = small_k_rows()
    by = {(r["design"], r["k"]): r for r in rows}
    queued = [r for (d, _), r in sorted(by.items()) if d == "fp32" and all(
        r[f"{x}_timing"] == "queued" for x in ("gemm", "epilogue_only", "fused"))]
    r32 = queued[0]
    elem = [r for r in rows if r["epilogue_only_timing"] == "queued"]
    read = next(r for r in results.rows("roofline") if r["kernel"] == "stream_read")["gbps"]
    return {"smallk_unfused_timing": ", ".join(sorted({r["unfused_timing"] for r in rows})),
            "sk_queue_below_ms": f"{results.load('splitk')['parameters']['queue_below_ms']:g}",
            "smallk_kmin": str(r32["k"]),
            "smallk_fp32_gpu_unfused": f"{r32['gemm'] + r32['epilogue_only']:.0f}",
            "smallk_fp32_fused": f"{r32['fused']:.0f}",
            "smallk_fp32_unfused": f"{r32['unfused']:.0f}",
            "smallk_fp32_won": f"{sum(1 for (d, _), r in by.items() if d == 'fp32' and r['saved'] > 0)}"
                               f" of {sum(1 for d, _ in by if d == 'fp32')}",
            "smallk_fp16_lost_ks": ", ".join(str(k) for (d, k), r in sorted(by.items())
                                             if d == "fp16" and r["saved"] < 0) or "none",
            "epi_elem_us": f"{min(r['epilogue_only'] for r in elem):.0f}",
            "epi_elem_share": f"{max(r['epilogue_gbps'] for r in elem) / read:.0%}"}
