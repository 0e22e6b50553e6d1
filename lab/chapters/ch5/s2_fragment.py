"""Section 'The documented fragment of mma.sync': the m16n8k16 fragment map drawn, and the NumPy
model of the instruction checked against ``A @ B + C``.
"""
from __future__ import annotations

import numpy as np

from lab import fragments, plots


def fragment_figure():
    """Concept figure: the m16n8k16 operand tiles A (16×16), B (16×8) and C (16×8), every
    element labelled with the lane that holds it (:mod:`lab.fragments`), coloured by group of
    four lanes; lane 0's elements outlined."""
    from matplotlib.patches import Rectangle

    fig, axes = plots.plt.subplots(1, 3, figsize=(6.25, 3.4), dpi=110,
                                   gridspec_kw={"width_ratios": [16, 8, 8]})
    colours = plots.plt.get_cmap("tab10")
    titles = {"A": "A (16×16)\nindexed [m, k]", "B": "B (16×8)\nindexed [k, n]",
              "C": "C (16×8)\nindexed [m, n]"}
    for ax, operand in zip(axes, "ABC"):
        owner = fragments.owner_map(operand)
        rows, cols = owner.shape
        for r in range(rows):
            for c in range(cols):
                lane = int(owner[r, c])
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colours(lane // 4), alpha=0.35,
                                       edgecolor="black" if lane == 0 else "white",
                                       linewidth=1.6 if lane == 0 else 0.5))
                ax.text(c + 0.5, r + 0.5, str(lane), ha="center", va="center", fontsize=6.6)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks([0, cols // 2, cols])
        ax.set_yticks([0, 8, 16])
        ax.tick_params(labelsize=7.5)
        ax.set_title(titles[operand], fontsize=9)
        ax.set_xlabel({"A": "k", "B": "n", "C": "n"}[operand], fontsize=8)
        ax.set_ylabel({"A": "m", "B": "k", "C": "m"}[operand], fontsize=8)
    fig.tight_layout()
    return fig


def random_tiles(seed: int = 0):
    """A 16×16 FP16 A tile, a 16×8 FP16 B tile and a 16×8 FP32 accumulator, uniform in
    [−1, 1)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    c = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    return a, b, c


def compare_with_numpy(a, b, c, d_regs) -> str:
    """The fragment model's result, unpacked from the lanes' registers, against ``a @ b + c``
    in float64; returns a one-line verdict."""
    exact = a.astype(np.float64) @ b.astype(np.float64) + c
    err = float(np.abs(fragments.c_matrix(d_regs) - exact).max())
    return (f"max |model − (A @ B + C)| = {err:.1e} over {exact.size} outputs: "
            f"{'PASS' if err < 1e-5 else 'FAIL'}")


def model_mma(a, b, c) -> np.ndarray:
    """The lanes' registers of ``mma.sync.m16n8k16`` applied to tiles ``a``, ``b``, ``c``: pack
    each lane's fragments, apply the instruction's definition (:func:`lab.fragments.mma`), and
    return the (32, 4) result registers."""
    return fragments.mma(fragments.a_fragment(a), fragments.b_fragment(b),
                         fragments.c_fragment(c))
