"""Section 1, the result: every rung against cuBLAS at 4096³ and 8192³, FP16 and BF16, as the
median over three processes with the range they spanned."""
from __future__ import annotations

from lab import page, plots, results
from lab.chapters.ch7 import common

LABELS = {"tc": "ch. 5\nmma.sync", "wgmma_cpasync": "1 wgmma", "wgmma_tma": "2 TMA",
          "wgmma_2wg": "3 two WGs", "wgmma_ws": "4 producer", "wgmma_persistent": "5 persistent",
          "wgmma_pingpong": "6 ping-pong", "wgmma_tmastore": "7 TMA store",
          "wgmma_cluster": "8 cluster"}


def ladder_figure():
    """Each rung's median ratio to cuBLAS (same type, size and process), one panel per size:
    timed call by call with events (solid, the processes' range as bars) and with the launch
    path hidden (dashed)."""
    import matplotlib.pyplot as plt

    names = list(LABELS)
    fig, axes = plt.subplots(2, 1, figsize=(6.25, 6.6), dpi=110, sharex=True)
    for ax, size in zip(axes, common.SIZES):
        for kind, color in (("fp16", "C0"), ("bf16", "C1")):
            rows = [common.summary(f"{k}_{kind}", size) for k in names]
            mid = [r["ratio_to_cublas"] for r in rows]
            err = [[m - r["ratio_min"] for m, r in zip(mid, rows)],
                   [r["ratio_max"] - m for m, r in zip(mid, rows)]]
            ax.errorbar(range(len(names)), mid, yerr=err, color=color, capsize=2,
                        label=f"{kind.upper()}, events per call", **plots.OURS)
            ax.plot(range(len(names)), [r["queued_ratio_to_cublas"] for r in rows],
                    color=color, linestyle="--", marker="s", markersize=4,
                    markerfacecolor="none", label=f"{kind.upper()}, launch hidden")
        ax.axhline(1.0, color="0.3", linestyle=":", linewidth=1.2)
        ax.set_title(f"{size}³", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, alpha=0.25)
        ax.set_ylim(0.4, 1.08)
        ax.set_ylabel("× cuBLAS", fontsize=8)
    axes[-1].set_xticks(range(len(names)), [LABELS[k] for k in names], fontsize=8,
                        rotation=45, ha="right")
    data = results.load("hopper_profile")
    fig.suptitle(f"The Hopper ladder on the {page.gpu_label(data['provenance']['gpu'])} "
                 f"(median of {data['parameters']['processes']} processes;\n"
                 "× cuBLAS of the same input type, in the same process)", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def headline_table():
    """Rung 7 and rung 8 against cuBLAS at both sizes and types (medians, ranges), timed call
    by call with events and, launch path hidden, as calls queued behind a busy kernel."""
    rows = []
    for size in common.SIZES:
        for kind in ("fp16", "bf16"):
            for rung in ("wgmma_tmastore", "wgmma_cluster"):
                r = common.summary(f"{rung}_{kind}", size)
                ref = common.summary(f"cublas_{kind}", size)
                rows.append({"size": f"{size}³", "type": kind.upper(),
                             "rung": f"{common.NUMBER[rung]} {rung}", "TFLOP/s": r["tflops"],
                             "cuBLAS TFLOP/s": ref["tflops"], "× cuBLAS": r["ratio_to_cublas"],
                             "range over processes": common.spread(r),
                             "× cuBLAS, launch hidden": r["queued_ratio_to_cublas"],
                             "range (launch hidden)": common.spread(r, "queued_")})
    return page.table(rows, digits=3, source=results.source_line("hopper_profile"))


def values() -> dict:
    """The numbers the summary and the result paragraph quote."""
    t7 = common.summary("wgmma_tmastore_fp16", 4096)
    c8 = common.summary("wgmma_cluster_fp16", 8192)
    b8 = common.summary("wgmma_cluster_bf16", 8192)
    every7 = [common.summary(f"wgmma_tmastore_{k}", s) for s in common.SIZES
              for k in ("fp16", "bf16")]
    return {"result_tmastore_fp16_4096": f"{t7['ratio_to_cublas']:.3f}",
            "result_tmastore_fp16_4096_range": common.spread(t7),
            "result_tmastore_lowest": f"{min(r['ratio_to_cublas'] for r in every7):.3f}",
            "result_cluster_fp16_8192": f"{c8['ratio_to_cublas']:.3f}",
            "result_cluster_fp16_8192_range": common.spread(c8),
            "result_cluster_bf16_8192": f"{b8['ratio_to_cublas']:.3f}",
            "result_tmastore_fp16_4096_queued": f"{t7['queued_ratio_to_cublas']:.3f}",
            "result_cluster_fp16_4096_queued":
                f"{common.summary('wgmma_cluster_fp16', 4096)['queued_ratio_to_cublas']:.3f}",
            "result_processes": str(results.load("hopper_profile")["parameters"]["processes"]),
            "the_gpu": page.gpu_label(results.load("hopper_profile")["provenance"]["gpu"])}
