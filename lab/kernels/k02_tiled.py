"""Rung 2 — shared-memory tiles: a block loads a T×T tile of A and of B once, then every
thread reads them T times each.

A block of T×T threads owns a T×T tile of C. For each step along k it copies one T×T tile of A
and one of B into shared memory (one element per thread), waits at a barrier, does T
multiply-adds from shared memory, and waits again before the next step overwrites the tiles.
Each element fetched from global memory now serves T outputs instead of one: the intensity
against global memory rises from 1/4 to T/4 FLOP/byte (2, 4, 8 for T = 8, 16, 32), and the
traffic falls by a factor of T. What the kernel pays: two barriers per step, and two
shared-memory loads per multiply-add (the next bottleneck, chapter 3).

The two barriers: the first so nobody reads a tile before every thread has written its element;
the second so nobody overwrites a tile for the next step while a neighbour is still reading it.

Edges: threads outside A or B store a zero into the tile (zero-padding), so partial tiles add
nothing and any M, N, K works; only the final store is guarded.

:func:`make_tiled` builds one kernel per tile size T (T is a closure constant, so the inner
loop is fully unrolled and the shared arrays have a static size). Every index is ``uint32``:
an unsigned index can never be negative, so Numba emits no wraparound select for it and the
address arithmetic stays 32-bit until the final widening (hottest loop at T = 16: 71 SASS
instructions for 16 FFMA, nvcc's twin 60; with signed ``int32`` indices it was 88).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint32

from lab.kernels import KernelSpec

#: Tile sizes registered as ``tiled8``, ``tiled16``, ``tiled32``.
TILES = (8, 16, 32)

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"


def make_tiled(tile: int):
    """The tiled kernel for tiles of ``tile``×``tile`` elements (block of tile×tile threads)."""

    # region: tiled_kernel
    @cuda.jit
    def tiled_kernel(A, B, C):
        a_tile = cuda.shared.array((tile, tile), float32)
        b_tile = cuda.shared.array((tile, tile), float32)
        m = uint32(C.shape[0])
        n = uint32(C.shape[1])
        k_total = uint32(A.shape[1])
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        row = uint32(cuda.blockIdx.y) * uint32(tile) + ty
        col = uint32(cuda.blockIdx.x) * uint32(tile) + tx
        acc = float32(0.0)
        k0 = uint32(0)
        while k0 < k_total:
            a_col = k0 + tx                          # this thread's element of the A tile
            a_value = float32(0.0)                   # zero padding past the edge
            if row < m and a_col < k_total:
                a_value = A[row, a_col]
            a_tile[ty, tx] = a_value
            b_row = k0 + ty                          # ...and of the B tile
            b_value = float32(0.0)
            if b_row < k_total and col < n:
                b_value = B[b_row, col]
            b_tile[ty, tx] = b_value
            cuda.syncthreads()                       # tiles complete before anyone reads
            for i in range(uint32(tile)):
                acc += a_tile[ty, i] * b_tile[i, tx]
            cuda.syncthreads()                       # everyone done before the next overwrite
            k0 += uint32(tile)
        if row < m and col < n:
            C[row, col] = acc
    # endregion: tiled_kernel

    tiled_kernel.__name__ = f"tiled{tile}_kernel"
    return tiled_kernel


KERNELS = {tile: make_tiled(tile) for tile in TILES}


def make_launch(tile: int):
    kernel = KERNELS[tile]

    # region: launch
    def launch(A, B, C) -> None:
        m, n = C.shape
        grid = ((n + tile - 1) // tile, (m + tile - 1) // tile)
        kernel[grid, (tile, tile)](A, B, C)
    # endregion: launch

    launch.__doc__ = (f"Grid of ⌈N/{tile}⌉ × ⌈M/{tile}⌉ blocks of {tile} × {tile} threads; "
                      "x runs along N.")
    return launch


def make_tiled_study(block: int, bk: int | None = None, pad: int = 0):
    """The tiled kernel with two knobs the chapters study, for the simulator's access counts
    (not a registered rung): k in slices of ``bk`` ≤ ``block`` (the threads of the first ``bk``
    columns load the A slice, those of the first ``bk`` rows the B slice), and each shared tile
    ``pad`` elements wider than it needs (only the addresses move; the padding is never read).
    With ``bk == block`` and ``pad == 0`` its accesses equal ``tiled{block}``'s one for one.
    Returns the launch function."""
    bk = block if bk is None else bk

    @cuda.jit
    def tiled_study(A, B, C):
        a_tile = cuda.shared.array((block, bk + pad), float32)
        b_tile = cuda.shared.array((bk, block + pad), float32)
        m = uint32(C.shape[0])
        n = uint32(C.shape[1])
        k_total = uint32(A.shape[1])
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        row = uint32(cuda.blockIdx.y) * uint32(block) + ty
        col = uint32(cuda.blockIdx.x) * uint32(block) + tx
        acc = float32(0.0)
        k0 = uint32(0)
        while k0 < k_total:
            if tx < uint32(bk):
                a_col = k0 + tx
                a_value = float32(0.0)
                if row < m and a_col < k_total:
                    a_value = A[row, a_col]
                a_tile[ty, tx] = a_value
            if ty < uint32(bk):
                b_row = k0 + ty
                b_value = float32(0.0)
                if b_row < k_total and col < n:
                    b_value = B[b_row, col]
                b_tile[ty, tx] = b_value
            cuda.syncthreads()
            for i in range(uint32(bk)):
                acc += a_tile[ty, i] * b_tile[i, tx]
            cuda.syncthreads()
            k0 += uint32(bk)
        if row < m and col < n:
            C[row, col] = acc

    def launch(A, B, C):
        m, n = C.shape
        tiled_study[((n + block - 1) // block, (m + block - 1) // block), (block, block)](A, B, C)

    return launch


# region: shuffle_kernel
@cuda.jit
def tiled32_shuffle_kernel(A, B, C):
    """``tiled32`` without the A tile: a warp is one row of the 32 × 32 block, so the row's 32
    values of A for this k-step sit one per lane, in registers, and reach the other lanes by
    warp shuffle."""
    b_tile = cuda.shared.array((32, 32), float32)
    m = uint32(C.shape[0])
    n = uint32(C.shape[1])
    k_total = uint32(A.shape[1])
    tx = uint32(cuda.threadIdx.x)                # the lane: the warp is row ty of the block
    ty = uint32(cuda.threadIdx.y)
    row = uint32(cuda.blockIdx.y) * uint32(32) + ty
    col = uint32(cuda.blockIdx.x) * uint32(32) + tx
    acc = float32(0.0)
    k0 = uint32(0)
    while k0 < k_total:
        a_col = k0 + tx
        a_value = float32(0.0)                   # stays in this lane's register
        if row < m and a_col < k_total:
            a_value = A[row, a_col]
        b_row = k0 + ty
        b_value = float32(0.0)
        if b_row < k_total and col < n:
            b_value = B[b_row, col]
        b_tile[ty, tx] = b_value
        cuda.syncthreads()
        for i in range(uint32(32)):              # lane i's value of A, sent to the whole warp
            acc += cuda.shfl_sync(0xFFFFFFFF, a_value, i) * b_tile[i, tx]
        cuda.syncthreads()
        k0 += uint32(32)
    if row < m and col < n:
        C[row, col] = acc
# endregion: shuffle_kernel


def launch_tiled32_shuffle(A, B, C) -> None:
    m, n = C.shape
    tiled32_shuffle_kernel[((n + 31) // 32, (m + 31) // 32), (32, 32)](A, B, C)


SPECS = [
    KernelSpec(f"tiled{tile}", f"shared-memory tiles {tile}×{tile}, zero-padded edges",
               np.float32, make_launch(tile), chapter="2",
               compile=((KERNELS[tile], SIGNATURE),),
               edges="zero-padded tiles in shared memory; guarded store",
               tile=(tile, tile, tile), paths=lambda m, n, k: "one kernel, zero-padded tiles")
    for tile in TILES
] + [
    KernelSpec("tiled32_shuffle", "tiled32 with A passed by warp shuffle instead of shared memory",
               np.float32, launch_tiled32_shuffle, chapter="2", simulator=False,
               compile=((tiled32_shuffle_kernel, SIGNATURE),),
               edges="zero-padded A values and B tile; guarded store", tile=(32, 32, 32),
               needs="warp shuffles (shfl.sync)"),
]
