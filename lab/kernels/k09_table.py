"""Rungs 18 and 19's tile table (:mod:`lab.kernels.k09_hopper`, ``HopperConfig.table``).

A persistent block walks tiles u = first, first + blocks, … and must turn each number into a
tile row and column. :func:`lab.kernels.k09_parts.tile_order` does it with divisions: ``//``
and ``%`` of Python integers are 64-bit, and a GPU has no 64-bit divide instruction, so each is
a call of a division routine of a few dozen instructions (``__cuda_sm20_div_s64``), between one
tile's main loop and the next, in the producer, the consumers and the store threads. The table
moves that arithmetic to the host, once per shape: two ``int32`` per tile (tile row, first
column), in the same grouped order, read with two loads.
"""
from __future__ import annotations

import numpy as np

from lab.kernels.k09_parts import tile_order


def tile_table(m: int, n: int, cfg) -> np.ndarray:
    """The tiles of an m×n C for ``cfg`` (its ``bm``, ``bn`` and ``group_m``) in the order of
    ``tile_order``, by its own function run on the host: ``group_m`` tile rows at a time,
    column by column inside a group. Returns ``[row_0, col_0, row_1, col_1, …]`` (int32; the
    column in elements, the row in tiles)."""
    tiles_m, tiles_n = -(-m // cfg.bm), -(-n // cfg.bn)
    if tiles_m * tiles_n * cfg.bn >= 2 ** 31 or n >= 2 ** 31:
        raise ValueError(f"a tile table holds int32: {m}×{n} has too many tiles")
    coords = tile_order(cfg.group_m)
    coords = getattr(coords, "py_func", coords)        # (a device function's Python source)
    out = np.empty((tiles_m * tiles_n, 2), np.int32)
    for u in range(tiles_m * tiles_n):
        row, col = coords(u, tiles_m, tiles_n)
        out[u] = row, col * cfg.bn
    return out.reshape(-1)
