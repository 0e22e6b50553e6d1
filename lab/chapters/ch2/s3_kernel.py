"""Chapter 2, section 3: the kernel, shown from :mod:`lab.kernels.k02_tiled` by named region, and
how its launch pads the grid for shapes that are not tile multiples.
"""
from __future__ import annotations

from lab import page
from lab.kernels import k02_tiled
from lab.chapters.ch2.s2_model import TILES


#: Shapes of the padding table: tiny, just under a round size, round, and one past it.
PADDING_SHAPES = ((17, 33, 5), (1000, 1030, 999), (1024, 1024, 1024), (1025, 1025, 1025),
                  (4097, 4097, 4097))


def padding_rows() -> list[dict]:
    """Share of the multiply-adds spent on zero padding, per shape and tile size."""
    rows = []
    for m, n, k in PADDING_SHAPES:
        row = {"shape": f"{m}×{n}×{k}"}
        for tile in TILES:
            work = 1
            for extent in (m, n, k):
                work *= -(-extent // tile) * tile
            row[f"t{tile}"] = 100 * (1 - m * n * k / work)
        rows.append(row)
    return rows


def padding_table():
    """Zero padding's share of the work."""
    return page.table(padding_rows(), ["shape", *(f"t{t}" for t in TILES)],
                      {"shape": "M×N×K", **{f"t{t}": f"T = {t} (%)" for t in TILES}}, digits=2)


def source(region: str):
    """A named region of :mod:`lab.kernels.k02_tiled`, highlighted."""
    return page.source(k02_tiled, region)


#: The most threads one block may have (every compute capability since 2.0).
MAX_THREADS_PER_BLOCK = 1024


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    v["max_threads"] = f"{MAX_THREADS_PER_BLOCK:,}"
    return v
