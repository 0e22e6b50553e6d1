"""Chapter 1, section 2: what a warp asks memory for, under the sources' mapping and the swapped
one (sectors counted from the index arithmetic).
"""
from __future__ import annotations

import numpy as np

from lab import page
from lab.kernels import k01_naive


#: Lanes per warp and bytes per memory sector.
LANES = 32


SECTOR_BYTES = 32


#: Row length (elements) used to turn the warp's coordinates into addresses; any n ≥ 32 that is
#: a multiple of 8 gives the same sector counts.
ROW = 1024


#: The two thread mappings: which coordinate of C each thread index runs along.
MAPPINGS = ("naive", "naive_swapped")


def warp_coordinates(mapping: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the output each of the 32 lanes of the first warp computes.

    In a 16 × 16 block a warp is two rows of 16 threads (thread id = x + 16·y); the sources'
    mapping lays x along a row of C, the swapped one down a column.
    """
    lane = np.arange(LANES)
    tx, ty = lane % k01_naive.BLOCK, lane // k01_naive.BLOCK
    return (ty, tx) if mapping == "naive" else (tx, ty)


def touched(mapping: str, access: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) in the accessed matrix of each lane's element at step ``k``:
    ``access`` is ``"A"`` (A[row, k]), ``"B"`` (B[k, col]) or ``"C"`` (the store)."""
    row, col = warp_coordinates(mapping)
    if access == "A":
        return row, np.full(LANES, k)
    if access == "B":
        return np.full(LANES, k), col
    return row, col


def sectors(cells: tuple[np.ndarray, np.ndarray], row_length: int = ROW) -> set[int]:
    """The 32-byte sectors a set of FP32 elements of a row-major matrix falls in."""
    r, c = cells
    return set(((r * row_length + c) * 4 // SECTOR_BYTES).tolist())


def access_rows() -> list[dict]:
    """For each mapping and access: distinct elements and sectors at one k, the share of the
    moved bytes that are used, and the sectors touched over eight steps of k."""
    rows = []
    for mapping in MAPPINGS:
        for access, label in (("A", "load A[row, k]"), ("B", "load B[k, col]"),
                              ("C", "store C[row, col]")):
            first = touched(mapping, access, 0)
            elements = len(set(zip(*(a.tolist() for a in first))))
            one = len(sectors(first))
            steps = 8 if access != "C" else 1
            over8 = set().union(*(sectors(touched(mapping, access, k)) for k in range(steps)))
            rows.append({"mapping": mapping, "access": label, "elements": elements,
                         "sectors": one, "used": 4 * elements / (SECTOR_BYTES * one),
                         "sectors8": len(over8)})
    return rows


def access_table():
    """Sectors per warp access under the two mappings (geometry, no GPU)."""
    return page.table(access_rows(), ["mapping", "access", "elements", "sectors", "used",
                                      "sectors8"],
                      {"elements": "elements", "sectors": "sectors (1 k)",
                       "used": "used / moved", "sectors8": "sectors (8 k)"})


def warp_figure():
    """Concept figure: the elements the first warp touches at k = 0 in A, B and C, and the
    32-byte sectors they fall in, for the sources' mapping (top) and the swapped one (bottom)."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    window = 16
    fig, axes = plt.subplots(2, 3, figsize=(6.25, 5.0), dpi=110)
    names = {"A": "A[row, k], k = 0", "B": "B[k, col], k = 0", "C": "C[row, col]"}
    for i, mapping in enumerate(MAPPINGS):
        for j, access in enumerate("ABC"):
            ax = axes[i, j]
            cells = touched(mapping, access, 0)
            found = sorted(sectors(cells, window))
            for s in found:
                r, c0 = divmod(s * SECTOR_BYTES // 4, window)
                ax.add_patch(mpatches.Rectangle((c0 + 0.1, r + 0.1), SECTOR_BYTES // 4 - 0.2, 0.8,
                                                facecolor="C1", alpha=0.45, edgecolor="C3",
                                                linewidth=0.9))
            rr, cc = cells
            ax.scatter(cc + 0.5, rr + 0.5, s=9, color="C0", zorder=3)
            ax.set_xlim(0, window)
            ax.set_ylim(window, 0)
            ax.set_aspect("equal")
            ax.set_xticks(range(0, window + 1, 8))
            ax.set_yticks(range(0, window + 1, 4))
            ax.tick_params(labelsize=7.5, length=2)
            ax.grid(True, color="0.88", linewidth=0.6)
            ax.set_xticks(range(window + 1), minor=True)
            ax.set_yticks(range(window + 1), minor=True)
            ax.grid(True, which="minor", color="0.93", linewidth=0.4)
            ax.set_title(f"{names[access]}: {len(found)} sector{'s' if len(found) > 1 else ''}",
                         fontsize=8)
            ax.set_ylabel((f"{mapping}\n" if j == 0 else "") + ("k" if access == "B" else "row"),
                          fontsize=8.5 if j == 0 else 8)
            ax.set_xlabel("k" if access == "A" else "column", fontsize=8)
    handles = [mpatches.Patch(facecolor="C1", alpha=0.45, edgecolor="C3",
                              label="32-byte sector fetched (8 FP32 values)"),
               plt.Line2D([], [], linestyle="none", marker="o", markersize=4, color="C0",
                          label="element a lane needs")]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
