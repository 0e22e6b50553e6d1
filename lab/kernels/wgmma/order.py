"""The tile-order slot: which tile a persistent block's work unit u is.

A persistent block walks units u = first, first + blocks, … and must turn each number into a
tile row and column. :func:`tile_order` does it with divisions (grouped: ``group_m`` tile rows
at a time, column by column inside a group, for L2): ``//``
and ``%`` of Python integers are 64-bit, and a GPU has no 64-bit divide instruction, so each is
a call of a division routine of a few dozen instructions (``__cuda_sm20_div_s64``), between one
tile's main loop and the next, in the producer, the consumers and the store threads. The table
moves that arithmetic to the host, once per shape: two ``int32`` per tile (tile row, first
column), in the same grouped order, read with two loads (``HopperConfig.table``, Hopper
rungs 18 and 19: :func:`tile_table`).

:func:`order_slot` gives the skeleton its two readers of the order: the producer's (a block row
past M, with clusters of two, reloads the last one) and the consumers' and store threads'.
"""
from __future__ import annotations

import numpy as np

from numba import cuda, int32


def tile_order(group_m: int):
    # region: tile_order
    @cuda.jit(device=True, inline="always")
    def tile_coords(tile, tiles_m, tiles_n):
        """Tile number → (tile row, tile column): GROUP_M tile-rows at a time, column by
        column inside a group, so tiles running together share A and B panels in L2."""
        per_group = group_m * tiles_n
        first_m = tile // per_group * group_m
        rows_here = min(tiles_m - first_m, group_m)
        in_group = tile - tile // per_group * per_group
        return first_m + in_group % rows_here, in_group // rows_here
    # endregion: tile_order
    return tile_coords


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


def order_slot(cfg):
    """``(producer_tile, consumer_tile)``: work unit → (tile row, first column of the tile), as
    the producer and as the consumers (and store threads) need it; from the table of tiles
    (``cfg.table``) or by the grouped order's divisions. ``table`` is the kernel's table
    argument (unused without one); ``rank`` the block's place in its cluster."""
    BN, CLUSTER = cfg.bn, cfg.cluster
    tile_coords = tile_order(cfg.group_m)

    if cfg.table:
        # region: table_tiles
        @cuda.jit(device=True, inline="always")
        def table_tile(unit, table, units_m, tiles_n, tiles_m, rank):
            """Two loads: the tile's row and first column, written by the launcher."""
            return table[2 * unit], table[2 * unit + 1]
        # endregion: table_tiles
        return table_tile, table_tile

    @cuda.jit(device=True, inline="always")
    def producer_tile(unit, table, units_m, tiles_n, tiles_m, rank):
        unit_m, block_n = tile_coords(unit, units_m, tiles_n)
        # a block row past M (odd tile rows, cluster 2) reloads the last one
        return min(unit_m * CLUSTER + rank, tiles_m - 1), block_n * BN

    @cuda.jit(device=True, inline="always")
    def consumer_tile(unit, table, units_m, tiles_n, tiles_m, rank):
        unit_m, block_n = tile_coords(unit, units_m, tiles_n)
        return unit_m * CLUSTER + rank, block_n * BN

    return producer_tile, consumer_tile


def group_order(cfg):
    """The tile order of a grouped launch (``cfg.grouped``): ``(row_tiles, group_tile)``.

    The groups are expert e's rows: ``offsets[e] : offsets[e+1]`` of C (``"offsets"``), or the
    first ``counts[e]`` rows of its ``M_max``-row buffer (``"counts"``), both read on the GPU
    and clamped to C. Each group is cut into tile rows of ``bm`` (its last one partial); the
    launch's tiles are every group's tile rows × C's tile columns, in the grouped order of
    :func:`tile_order` over the tile rows of all groups. ``row_tiles`` counts them (once per
    block: a loop over the experts). ``group_tile(unit, …, e, before)`` turns a work unit
    into (first row, first column, the group's end row, expert ``e``, ``before``) by walking
    the groups from the last call's ``e`` (whose first tile row is ``before``): a block's
    increasing units make that a step or two each."""
    BM, BN = cfg.bm, cfg.bn
    MASKED = cfg.grouped == "counts"
    tile_coords = tile_order(cfg.group_m)

    # region: group_order
    @cuda.jit(device=True, inline="always")
    def group_rows(bounds, e, mmax, rows):
        """Expert e's first row of C and its row count, clamped to C."""
        if MASKED:
            return int32(e * mmax), int32(min(max(int32(bounds[e]), int32(0)), mmax))
        begin = int32(min(max(int32(bounds[e]), int32(0)), rows))
        end = int32(min(max(int32(bounds[e + 1]), begin), rows))
        return begin, int32(end - begin)

    @cuda.jit(device=True, inline="always")
    def row_tiles(bounds, groups, mmax, rows):
        """Tile rows of every group together."""
        total = int32(0)
        for e in range(groups):
            count = group_rows(bounds, e, mmax, rows)[1]
            total = int32(total + (count + BM - 1) // BM)
        return total

    @cuda.jit(device=True, inline="always")
    def group_tile(unit, bounds, mmax, rows, tiles_r, tiles_n, e, before):
        r, c = tile_coords(unit, tiles_r, tiles_n)
        if r < before:                        # (the grouped order went back: walk again)
            e = int32(0)
            before = int32(0)
        begin, count = group_rows(bounds, e, mmax, rows)
        tiles = (count + BM - 1) // BM
        while r >= before + tiles:            # past expert e's tile rows: the next expert
            before = int32(before + tiles)
            e = int32(e + 1)
            begin, count = group_rows(bounds, e, mmax, rows)
            tiles = (count + BM - 1) // BM
        return int32(begin + (r - before) * BM), int32(c * BN), int32(begin + count), e, before
    # endregion: group_order

    return row_tiles, group_tile
