"""Chapter 10, section 1: four ways to split one product, drawn."""
from __future__ import annotations


def split_figure():
    """How A, B and C are split (colour = the GPU that holds the block; grey = on every GPU)."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    colours = {0: "#4c72b0", 1: "#dd8452", "all": "#bbbbbb"}
    cases = [
        ("column-parallel", {"A": [("all", 0, 0, 1, 1)], "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                             "C": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)]}),
        ("row-parallel", {"A": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                          "B": [(0, 0, .5, 1, .5), (1, 0, 0, 1, .5)],
                          "C": [(0, 0, .5, 1, .5), (1, 0, 0, 1, .5)]}),
        ("SUMMA 1 × 2", {"A": [(0, 0, 0, .25, 1), (0, .25, 0, .25, 1), (1, .5, 0, .25, 1),
                               (1, .75, 0, .25, 1)],
                         "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                         "C": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)]}),
        ("overlapped gather", {"A": [("all", 0, 0, 1, 1)],
                               "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                               "C": [(r, .5 * r, 1 - .25 * (j + 1), .5, .25)
                                     for j in range(4) for r in (0, 1)]}),
    ]
    fig, axes = plt.subplots(len(cases), 3, figsize=(6.2, 7.4), dpi=110)
    for row, (name, mats) in enumerate(cases):
        for col, mat in enumerate("ABC"):
            ax = axes[row][col]
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xticks([])
            ax.set_yticks([])
            for owner, x, y, w, h in mats[mat]:
                ax.add_patch(mpatches.Rectangle((x, y), w, h, facecolor=colours[owner],
                                                edgecolor="white", linewidth=2))
            if row == 0:
                ax.set_title(mat, fontsize=11)
            if col == 0:
                ax.set_ylabel(name, fontsize=9)
    handles = [mpatches.Patch(color=colours[0], label="GPU 0"),
               mpatches.Patch(color=colours[1], label="GPU 1"),
               mpatches.Patch(color=colours["all"], label="on both GPUs")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
