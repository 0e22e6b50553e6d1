"""Chapter 2, section 1: the idea, fetch a tile once and use it T times, drawn step by step."""
from __future__ import annotations
from lab.chapters import common
from lab import seeds


def tile_walk_figure(steps: int = 6, block_row: int = 2, block_col: int = 4, step: int = 2):
    """Concept figure: the block owning one T × T tile of C walks along k; at each step it
    stages one tile of A's row band and one of B's column band in shared memory. Cells are
    numbered by the step that loads them; the current step is highlighted."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(8.6, 3.4), dpi=110)
    titles = ("A (M × K), in tiles", "B (K × N), in tiles", "C (M × N), in tiles")
    for ax, title in zip(axes, titles):
        ax.set_xlim(0, steps)
        ax.set_ylim(steps, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(steps + 1))
        ax.set_yticks(range(steps + 1))
        ax.tick_params(labelbottom=False, labelleft=False, length=0)
        ax.grid(True, color="0.8")
        ax.set_title(title, fontsize=9.5)

    def cell(ax, col, row, colour, alpha, label=None, text_colour="black"):
        ax.add_patch(mpatches.Rectangle((col, row), 1, 1, facecolor=colour, alpha=alpha,
                                        edgecolor="0.4", linewidth=0.6))
        if label is not None:
            ax.text(col + 0.5, row + 0.5, label, ha="center", va="center", fontsize=9,
                    color=text_colour)

    for s in range(steps):
        colour, alpha = (("C1", 0.9) if s == step else ("C0", 0.45) if s < step
                         else ("C0", 0.12))
        cell(axes[0], s, block_row, colour, alpha, str(s))
        cell(axes[1], block_col, s, colour, alpha, str(s))
    cell(axes[2], block_col, block_row, "C2", 0.85, "acc")
    handles = [mpatches.Patch(facecolor="C1", alpha=0.9, label=f"step {step}: in shared memory now"),
               mpatches.Patch(facecolor="C0", alpha=0.45, label="steps already done"),
               mpatches.Patch(facecolor="C0", alpha=0.12, label="steps still to come"),
               mpatches.Patch(facecolor="C2", alpha=0.85,
                              label="the block's outputs, summed in registers")]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    v["the_gpu"] = common.gpu()
    v["seed004_edge"] = f"{seeds.TILED_EDGE_T4[0]['extra_time_pct']:g}%"
    return v
