"""Grouped GEMM, the teaching kernel: many experts' products in one launch, each block finding
its expert by walking the groups.

A mixture-of-experts layer sends each token to a few experts; expert e multiplies the rows of A
routed to it by its own weights B[e]. One launch serves every expert: a grid of tile rows over
all groups, and a *scheduler* that turns a block's tile-row number into (expert, first row).
Two layouts of the routed rows:

* **contiguous** (training, prefill): A is ``[T, K]`` with expert e's rows at
  ``offsets[e] : offsets[e+1]``; C is ``[T, N]``.
* **masked** (decode under CUDA graphs): A is ``[E, M_max, K]``, a fixed buffer, with
  ``counts[e]`` valid rows of expert e; C is ``[E, M_max, N]``, its rows past a count untouched.
  The grid is sized for full buffers, so one launch (and one captured graph) serves any
  routing: blocks whose tile row lies past their expert's count return at once.

The scheduler (:func:`group_of`) walks the groups in order, subtracting each one's tile rows
from the block's number until it falls inside one: O(experts) steps per block, nothing computed
on the host from the routing, so the offsets or counts may live on the GPU and change between
replays. Offsets and counts read on the GPU are clamped to the buffers (a bad routing computes
wrong rows but never writes outside C). Inside a group, the block is ``tiled16``'s: T×T tiles of
A and B[e] in shared memory, zero-padded edges, FP32 accumulation. B is read as one
``[E·K, N]`` matrix, expert e's rows from ``e·K``.
"""
from __future__ import annotations

from numba import cuda, float32, int64

#: Tile edge (the block is TILE × TILE threads, as ``tiled16``).
TILE = 16


def scheduler(masked: bool):
    """The device function ``group_of(t, bounds, groups, mmax, rows) -> (e, begin, count, t)``:
    tile row ``t`` of the whole grid as expert ``e`` (``groups`` when past the last tile row),
    the expert's first row ``begin`` in A and C and its row ``count``, and ``t`` as the tile row
    inside the expert."""

    # region: group_of
    @cuda.jit(device=True, inline="always")
    def group_of(t, bounds, groups, mmax, rows):
        e = int64(0)
        begin = int64(0)
        count = int64(0)
        while e < groups:
            if masked:                        # fixed buffers: expert e's rows at e·M_max
                begin = e * mmax
                count = min(max(int64(bounds[e]), int64(0)), mmax)
            else:                             # packed rows: offsets[e] .. offsets[e+1]
                begin = min(max(int64(bounds[e]), int64(0)), rows)
                end = min(max(int64(bounds[e + 1]), begin), rows)
                count = end - begin
            tiles = (count + TILE - 1) // TILE
            if t < tiles:
                return e, begin, count, t
            t -= tiles
            e += 1
        return e, begin, count, t
    # endregion: group_of
    return group_of


def make_grouped(masked: bool):
    """The grouped kernel for one layout: ``kernel(A, B, C, bounds, mmax)`` with A ``[rows, K]``
    and C ``[rows, N]`` (FP32, the masked layout's ``[E, M_max, ·]`` seen as 2-D), B
    ``[E·K, N]``, ``bounds`` the offsets (``E + 1``) or counts (``E``)."""
    group_of = scheduler(masked)
    extra = 0 if masked else 1

    # region: grouped_kernel
    @cuda.jit
    def grouped_kernel(A, B, C, bounds, mmax):
        a_tile = cuda.shared.array((TILE, TILE), float32)
        b_tile = cuda.shared.array((TILE, TILE), float32)
        rows = int64(A.shape[0])
        k_total = int64(A.shape[1])
        n = int64(C.shape[1])
        groups = int64(bounds.shape[0] - extra)
        e, begin, count, t = group_of(int64(cuda.blockIdx.y), bounds, groups, int64(mmax), rows)
        if e >= groups:                        # past every expert's tile rows: nothing to do
            return                             # (the whole block: e is the block's)
        tx = int64(cuda.threadIdx.x)
        ty = int64(cuda.threadIdx.y)
        row_in = t * TILE + ty                 # this thread's row inside expert e
        row = begin + row_in
        col = int64(cuda.blockIdx.x) * TILE + tx
        b_first = e * k_total                  # expert e's weights: rows e·K .. e·K + K of B
        acc = float32(0.0)
        k0 = int64(0)
        while k0 < k_total:
            a_value = float32(0.0)
            if row_in < count and k0 + tx < k_total:
                a_value = A[row, k0 + tx]
            a_tile[ty, tx] = a_value
            b_value = float32(0.0)
            if k0 + ty < k_total and col < n:
                b_value = B[b_first + k0 + ty, col]
            b_tile[ty, tx] = b_value
            cuda.syncthreads()
            for i in range(TILE):
                acc += a_tile[ty, i] * b_tile[i, tx]
            cuda.syncthreads()
            k0 += TILE
        if row_in < count and col < n:
            C[row, col] = acc
    # endregion: grouped_kernel

    grouped_kernel.__name__ = f"grouped_{'masked' if masked else 'contiguous'}_kernel"
    return grouped_kernel


KERNELS = {False: make_grouped(False), True: make_grouped(True)}


def tile_rows(groups: int, rows: int, mmax: int, masked: bool) -> int:
    """The grid's tile rows: enough for any routing. Masked: every expert's full buffer;
    contiguous: ⌈T / TILE⌉ plus one partial tile row per expert."""
    if masked:
        return groups * -(-mmax // TILE)
    return -(-rows // TILE) + groups


# region: launch
def launch(A, B, C, bounds, mmax: int, masked: bool, stream=0) -> None:
    """A ``[rows, K]``, B ``[E·K, N]``, C ``[rows, N]`` FP32 device arrays, ``bounds`` int32 or
    int64 (offsets ``E + 1`` or counts ``E``): one launch, ⌈N / 16⌉ × :func:`tile_rows` blocks
    of 16 × 16 threads."""
    groups = bounds.shape[0] - (0 if masked else 1)
    grid = (-(-C.shape[1] // TILE), tile_rows(groups, A.shape[0], mmax, masked))
    if grid[1] == 0:
        return
    KERNELS[masked][grid, (TILE, TILE), stream](A, B, C, bounds, mmax)
# endregion: launch
