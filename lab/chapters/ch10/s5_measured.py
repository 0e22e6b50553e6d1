"""Chapter 10, section 5: the schemes measured on two H200s: times, shares, rates and the link."""
from __future__ import annotations

from lab import page, plots, results
from lab.multi import schemes
from lab.chapters.ch10 import s0_rows
from lab.chapters.ch10.s0_rows import EXPERIMENT
from lab.chapters.ch10.s2_prediction import LABELS


KERNEL_OF = {"float16": "tc_fp16", "float32": "warptile_tuned"}


def measured_rows(dtype: str = "float16") -> list[dict]:
    data = s0_rows.load()
    out = []
    for r in s0_rows.part_rows("one_gpu", data, dtype=dtype) + s0_rows.part_rows("scheme", data, dtype=dtype):
        out.append({"n": r["n"], "scheme": LABELS[r["scheme"]], "ms": r["median_ms"],
                    "spread": f"{r['min_ms']:.3g}–{r['max_ms']:.3g}",
                    "per_gpu": r["tflops_per_gpu"], "speedup": r.get("speedup", 1.0),
                    "eff": r.get("efficiency", 1.0)})
    return sorted(out, key=lambda r: r["n"])


def measured_table(dtype: str = "float16"):
    rows = measured_rows(dtype)
    return page.table(rows, ["n", "scheme", "ms", "spread", "per_gpu", "speedup", "eff"],
                      show=lambda r: r["n"] in (4096, 16384), headers={"ms": "median (ms)", "spread": "min–max (ms)",
                       "per_gpu": "TFLOP/s per GPU", "speedup": "× one GPU",
                       "eff": "efficiency"},
                      title=f"{dtype} inputs, {KERNEL_OF[dtype]} on each GPU",
                      source=results.source_line(EXPERIMENT))


def share_table(dtype: str = "float16"):
    """Per scheme and size: arithmetic alone, communication alone, the whole, and the share."""
    rows = s0_rows.part_rows("scheme", dtype=dtype)
    out = [{"n": r["n"], "scheme": LABELS[r["scheme"]], "compute": r["compute_ms"],
            "comm": r["comm_ms"], "whole": r["median_ms"], "exposed": r["exposed_comm_ms"],
            "share": r["comm_share"]} for r in rows if r["scheme"] != "column"]
    return page.table(sorted(out, key=lambda r: r["n"]),
                      ["n", "scheme", "compute", "comm", "whole", "exposed", "share"],
                      show=lambda r: r["n"] in (4096, 16384),
                      headers={"compute": "compute alone (ms)", "comm": "comm alone (ms)",
                       "whole": "whole (ms)", "exposed": "not hidden (ms)",
                       "share": "comm / whole"}, source=results.source_line(EXPERIMENT))


def rate_figure():
    """TFLOP/s per GPU against n: one line per scheme, the one-GPU line, FP16 and FP32."""
    import matplotlib.pyplot as plt

    data = s0_rows.load()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.0), dpi=110)
    for ax, dtype in zip(axes, ("float16", "float32")):
        rows = s0_rows.part_rows("one_gpu", data, dtype=dtype) + s0_rows.part_rows("scheme", data, dtype=dtype)
        for s in ("one_gpu", *schemes.SCHEMES):
            pts = sorted((r["n"], r["tflops_per_gpu"]) for r in rows if r["scheme"] == s)
            if pts:
                style = dict(plots.OURS, linestyle="--" if s == "one_gpu" else "-")
                ax.plot(*zip(*pts), label=LABELS[s], **style)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype} ({KERNEL_OF[dtype]})", fontsize=10)
        ax.set_xlabel("n (square product)")
        ax.set_ylabel("TFLOP/s per GPU")
        ax.grid(True, alpha=0.25)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def bandwidth_table():
    rows = s0_rows.part_rows("bandwidth")
    out = [{"what": r["what"], "mib": r["bytes"] / 2**20, "ms": r["median_ms"],
            "alg": r["algbw_gbps"], "bus": r["busbw_gbps"]} for r in rows]
    largest = {}
    for i, r in enumerate(out):
        if r["mib"] >= out[largest.get(r["what"], i)]["mib"]:
            largest[r["what"]] = i
    return page.table(out, ["what", "mib", "ms", "alg", "bus"], show=sorted(largest.values()),
                      headers={"what": "collective", "mib": "buffer (MiB)", "ms": "median (ms)",
                       "alg": "algbw (GB/s)", "bus": "busbw (GB/s)"},
                      source=results.source_line(EXPERIMENT))
