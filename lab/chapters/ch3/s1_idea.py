"""Chapter 3, section 1: the idea, reuse inside the thread: the patch drawn and the per-thread model."""
from __future__ import annotations

from lab import model, page
from lab.kernels import k03_registers


def model_rows() -> list[dict]:
    """The step-by-step model/004's per-thread model for each patch size of the sweep."""
    rows = []
    for p in k03_registers.PATCHES:
        r = k03_registers.patch_facts(p)
        tile = k03_registers.THREADS * p
        rows.append(dict(r, patch=f"{p}×{p}", block_tile=f"{tile}×{tile}"))
    return rows


def model_table():
    """Patch size, block tile, accumulators, shared reads per FMA and shared intensity."""
    return page.table(model_rows(), ["patch", "block_tile", "accumulators",
                                     "smem_reads_per_fma", "smem_intensity"],
                      {"block_tile": "block tile", "smem_reads_per_fma": "shared reads / FMA",
                       "smem_intensity": "shared FLOP/B"})


def patch_figure(p: int = 4, thread=(5, 9), k: int = 6):
    """Concept figure: the A and B tiles in shared memory and the C block tile of a
    ``p`` × ``p`` patch kernel (16 × 16 threads, BK 16), one thread's patch, and the p + p
    values it reads at one ``k``. Geometry only, no measurement."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    threads, bk = k03_registers.THREADS, 16
    tile = threads * p
    ty, tx = thread
    gap = 6
    fig, ax = plt.subplots(figsize=(6.4, 5.4), dpi=110)

    def box(x, y, w, h, label=None, **kw):
        ax.add_patch(Rectangle((x, y), w, h, label=label, **kw))

    cx, cy = bk + gap, bk + gap                      # C block tile's corner
    # A tile (tile × bk) left of C, B tile (bk × tile) above it
    box(0, cy, bk, tile, facecolor="#eef3fb", edgecolor="0.3", linewidth=1)
    box(cx, 0, tile, bk, facecolor="#eef3fb", edgecolor="0.3", linewidth=1)
    box(cx, cy, tile, tile, facecolor="white", edgecolor="0.3", linewidth=1)
    for i in range(1, threads):                       # the 16 × 16 thread grid
        ax.plot([cx, cx + tile], [cy + i * p] * 2, color="0.85", linewidth=0.6)
        ax.plot([cx + i * p] * 2, [cy, cy + tile], color="0.85", linewidth=0.6)
    r0, c0 = ty * p, tx * p
    box(k, cy, 1, tile, facecolor="#c9d8f0", edgecolor="none")
    box(cx, k, tile, 1, facecolor="#c9d8f0", edgecolor="none")
    box(k, cy + r0, 1, p, facecolor="C0", edgecolor="none", label=f"{p} values of A at one k")
    box(cx + c0, k, p, 1, facecolor="C2", edgecolor="none", label=f"{p} values of B at one k")
    box(cx + c0, cy + r0, p, p, facecolor="C1", edgecolor="none",
        label=f"one thread's {p}×{p} patch of C ({p * p} accumulators)")
    ax.text(bk / 2, cy - 1.5, f"A tile\n{tile}×{bk}", ha="center", va="bottom", fontsize=8)
    ax.text(cx - 1.5, bk / 2, f"B tile {bk}×{tile}", ha="right", va="center", fontsize=8)
    ax.text(cx + tile / 2, cy + tile + 2.5,
            f"C block tile {tile}×{tile}: {threads}×{threads} threads, {p}×{p} outputs each",
            ha="center", va="top", fontsize=8)
    ax.set_xlim(-1, cx + tile + 1)
    ax.set_ylim(cy + tile + 8, -1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def _f(x: float, digits: int = 1) -> str:
    """A float with ``digits`` decimals, for glued values."""
    return f"{x:.{digits}f}"


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    v["smem_p1"] = f"{model.smem_intensity(1):g}"
    v["smem_p8"] = f"{model.smem_intensity(8):g}"
    return v
