"""One house style for every figure: our measurements solid, the seeds' numbers hollow and
dashed, log axes where sizes span orders of magnitude, units on every axis."""
from __future__ import annotations

import matplotlib.pyplot as plt

OURS = {"linestyle": "-", "marker": "o", "linewidth": 1.8, "markersize": 5}
SEED = {"linestyle": "--", "marker": "s", "linewidth": 1.2, "markersize": 5,
        "markerfacecolor": "none", "alpha": 0.8}
LIBRARY = {"linestyle": ":", "marker": "^", "linewidth": 1.5, "markersize": 5}


def axes(title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False,
         size=(7.0, 4.2)):
    """A new figure and axes in the house style."""
    fig, ax = plt.subplots(figsize=size, dpi=110)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.25)
    return fig, ax


def roofline(ax, peak_tflops: float, bandwidth_gbps: float, *, label: str, style=None,
             x_range=(0.05, 2000.0)) -> None:
    """Draw min(peak, I × bandwidth) in TFLOP/s against intensity I in FLOP/byte."""
    import numpy as np

    xs = np.logspace(np.log10(x_range[0]), np.log10(x_range[1]), 200)
    ys = np.minimum(peak_tflops, xs * bandwidth_gbps / 1e3)
    line = {k: v for k, v in (style or {"linewidth": 2}).items() if not k.startswith("marker")}
    ax.plot(xs, ys, label=label, **line)
    ax.set_xscale("log")
    ax.set_yscale("log")


def point(ax, intensity: float, tflops: float, label: str, *, seed: bool = False) -> None:
    """A kernel as a point on a roofline, labelled."""
    st = SEED if seed else OURS
    ax.plot([intensity], [tflops], linestyle="none", marker=st["marker"],
            markerfacecolor=st.get("markerfacecolor"), markersize=7)
    ax.annotate(label, (intensity, tflops), textcoords="offset points", xytext=(5, 4),
                fontsize=8)


def finish(fig, ax, *, legend: bool = True, loc: str = "outside"):
    """Lay the figure out; the legend goes outside the axes (right) so it never covers data.

    ``loc="below"`` puts it under the axes instead; any matplotlib location string puts it
    inside (only where the chapter has checked that corner is empty).
    """
    if legend:
        if loc == "outside":
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      borderaxespad=0.0, frameon=False)
        elif loc == "below":
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18),
                      ncol=3, frameon=False)
        else:
            ax.legend(fontsize=8, loc=loc)
    fig.tight_layout()
    return fig


def finish_below(fig, ax, *, ncol: int = 2, handles=None):
    """Lay the figure out with the legend under the axes in ``ncol`` columns: for legends whose
    labels are long enough that a legend at the right would squeeze the axes."""
    kwargs = {"handles": handles} if handles is not None else {}
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol,
              frameon=False, **kwargs)
    fig.tight_layout()
    return fig
