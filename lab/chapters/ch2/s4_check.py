"""Chapter 2, section 4: run and check, every tiled kernel against float64 past its tile edges."""
from __future__ import annotations

from lab import bench, page
from lab.chapters.ch2.s2_model import TILES


KERNELS = tuple(f"tiled{t}" for t in TILES)


def check_shapes(tile: int) -> tuple[tuple[int, int, int], ...]:
    """A shape past one tile in M and K with N under a tile (every guard of the kernel runs:
    rows past M, columns past N, a partial last k-step), and one exact tile."""
    return ((tile + 1, 5, tile + 5), (tile, tile, tile))


def check_table():
    """Each tiled kernel at :func:`check_shapes` against float64 (output filled with NaN)."""
    rows = []
    for kernel, tile in zip(KERNELS, TILES):
        for i, shape in enumerate(check_shapes(tile)):
            v = bench.check(kernel, *shape, seed=i)
            rows.append({"kernel": kernel, "shape": "×".join(map(str, shape)),
                         "verdict": "PASS" if v.passed else "FAIL"})
    return page.table(rows, ["kernel", "shape", "verdict"], {"shape": "M×N×K"})
