"""Chapter 10, section 7: beyond two GPUs, the model alone."""
from __future__ import annotations

from lab import model, results
from lab.chapters.ch10 import s0_rows
from lab.chapters.ch10.s6_model import startup


#: Model curves: GPUs, and the schemes drawn for each (SUMMA on a square grid where one exists).
MODEL_GPUS = (4, 8, 64)


GRIDS = {4: (2, 2), 8: (2, 4), 64: (8, 8)}


def scaling_figure(dtype: str = "float16"):
    """The model alone: efficiency against n for 4, 8 and 64 GPUs (measured one-GPU rate and
    two-GPU link inside a host; :data:`lab.model.INTER_HOST_GBPS` between hosts)."""
    import matplotlib.pyplot as plt

    data = results.load("multi_gpu")
    fitted = model.fit_link(s0_rows.part_rows("bandwidth", data))
    h = startup(dtype, data)["startup_s"]
    ones = {r["n"]: model.work_rate(r["n"], r["median_ms"], h)
            for r in s0_rows.part_rows("one_gpu", data, dtype=dtype)}
    sizes = [2**i for i in range(12, 18)]
    e = 2 if dtype == "float16" else 4
    fig, axes = plt.subplots(1, len(MODEL_GPUS), figsize=(6.25, 3.3), dpi=110, sharey=True)
    for ax, p in zip(axes, MODEL_GPUS):
        lk = model.link_for(p, fitted)
        for s, grid, label in (("column_gather", None, "column + all-gather"),
                               ("column_overlap", None, "column, overlapped"),
                               ("row_allreduce", None, "row + all-reduce"),
                               ("summa", GRIDS[p], "SUMMA (grid in the title)")):
            eff = []
            for n in sizes:
                rate = ones.get(n, ones[max(ones)])
                t = model.scheme_seconds(s, n, n, n, p, rate_tflops=rate, link=lk, e=e,
                                         grid=grid, startup_s=h)["total"]
                eff.append((2.0 * n ** 3 / (rate * 1e12) + h) / t / p)
            ax.plot(sizes, eff, label=label, linestyle="-.", marker=".")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes[::2], [f"{n:,}" for n in sizes[::2]], fontsize=8)
        ax.minorticks_off()
        ax.tick_params(axis="y", labelsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{p} GPUs, SUMMA {GRIDS[p][0]} × {GRIDS[p][1]}", fontsize=9)
        ax.set_xlabel("n", fontsize=8)
        ax.grid(True, alpha=0.25)
    axes[0].set_ylabel("efficiency (model)", fontsize=8)
    handles, labels = axes[-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))      # the legend below the panels, over no data
    return fig
