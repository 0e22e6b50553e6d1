"""Rung 1 — one thread per output element, straight from global memory.

Each thread owns ``C[row, col]`` and walks the whole k dimension, reading one element of A and
one of B for every multiply-add: 8 bytes per 2 FLOPs, an intensity of 0.25 FLOP/byte against
global memory. Nothing is reused on purpose; whatever reuse happens is the caches' doing.

Two mappings of threads to outputs, identical arithmetic:

* ``naive`` (the seeds' mapping): ``threadIdx.x`` runs along a row of C, so the 32 lanes of a
  warp read 32 neighbouring elements of a row of B (one coalesced access) and the *same* element
  of A (a broadcast).
* ``naive_swapped``: ``threadIdx.x`` runs down a column of C, so a warp's loads from A are K
  elements apart (32 separate sectors) and its stores to C are N elements apart.

Two ways of writing the same loop in Numba:

* ``naive_literal`` — the CUDA C translated word for word: ``for k in range(K)`` on the shape
  (a 64-bit Python int) and ``A[row, k]`` with signed 64-bit indices. Numba must handle negative
  indices (``A[-1]`` means the last element), so every load carries a compare-and-select for
  wraparound, and all index arithmetic is 64-bit. The hottest loop is 144 SASS instructions for
  4 FFMA (nvcc's twin: 73 for 16).
* ``naive`` / ``naive_swapped`` — the same algorithm with every index an ``int32`` (shapes,
  thread coordinates, the loop counter) and the k loop unrolled by hand by four with a remainder
  loop. LLVM can then prove the indices never wrap, drops the wraparound selects, and unrolls
  the loop further (16 multiply-adds per trip, ~94 instructions). The arithmetic and the order
  of the additions are exactly those of the literal kernel.

Edges: a bounds check (``row < M and col < N``), so any shape works; the remainder loop takes
the last ``K mod 4`` terms.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32

from lab.kernels import KernelSpec

#: Threads per block along x and y, as in the seeds (16 × 16 = 256 threads).
BLOCK = 16

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"


# region: naive_literal
@cuda.jit
def naive_literal_kernel(A, B, C):
    m, k_total = A.shape
    n = B.shape[1]
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x   # neighbouring lanes: columns
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < m and col < n:
        acc = float32(0.0)
        for k in range(k_total):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
# endregion: naive_literal


# region: naive
@cuda.jit
def naive_kernel(A, B, C):
    m = int32(C.shape[0])
    n = int32(C.shape[1])
    k_total = int32(A.shape[1])
    col = int32(cuda.blockIdx.x) * int32(cuda.blockDim.x) + int32(cuda.threadIdx.x)  # lanes: columns
    row = int32(cuda.blockIdx.y) * int32(cuda.blockDim.y) + int32(cuda.threadIdx.y)
    if row < m and col < n:
        acc = float32(0.0)
        k = int32(0)
        while k + int32(4) <= k_total:             # four terms per trip
            acc += A[row, k] * B[k, col]
            acc += A[row, k + int32(1)] * B[k + int32(1), col]
            acc += A[row, k + int32(2)] * B[k + int32(2), col]
            acc += A[row, k + int32(3)] * B[k + int32(3), col]
            k += int32(4)
        while k < k_total:                          # the last K mod 4 terms
            acc += A[row, k] * B[k, col]
            k += int32(1)
        C[row, col] = acc
# endregion: naive


@cuda.jit
def naive_swapped_kernel(A, B, C):
    m = int32(C.shape[0])
    n = int32(C.shape[1])
    k_total = int32(A.shape[1])
    # region: swapped_mapping
    row = int32(cuda.blockIdx.x) * int32(cuda.blockDim.x) + int32(cuda.threadIdx.x)  # lanes: rows
    col = int32(cuda.blockIdx.y) * int32(cuda.blockDim.y) + int32(cuda.threadIdx.y)
    # endregion: swapped_mapping
    if row < m and col < n:
        acc = float32(0.0)
        k = int32(0)
        while k + int32(4) <= k_total:
            acc += A[row, k] * B[k, col]
            acc += A[row, k + int32(1)] * B[k + int32(1), col]
            acc += A[row, k + int32(2)] * B[k + int32(2), col]
            acc += A[row, k + int32(3)] * B[k + int32(3), col]
            k += int32(4)
        while k < k_total:
            acc += A[row, k] * B[k, col]
            k += int32(1)
        C[row, col] = acc


def _blocks(extent: int) -> int:
    return (extent + BLOCK - 1) // BLOCK


def launch_naive_literal(A, B, C) -> None:
    """Grid of ⌈N/16⌉ × ⌈M/16⌉ blocks of 16 × 16 threads; x runs along N."""
    m, n = C.shape
    naive_literal_kernel[(_blocks(n), _blocks(m)), (BLOCK, BLOCK)](A, B, C)


# region: launch_naive
def launch_naive(A, B, C) -> None:
    """Grid of ⌈N/16⌉ × ⌈M/16⌉ blocks of 16 × 16 threads; x runs along N."""
    m, n = C.shape
    naive_kernel[(_blocks(n), _blocks(m)), (BLOCK, BLOCK)](A, B, C)
# endregion: launch_naive


# region: launch_swapped
def launch_naive_swapped(A, B, C) -> None:
    """Grid of ⌈M/16⌉ × ⌈N/16⌉ blocks of 16 × 16 threads; x runs along M."""
    m, n = C.shape
    naive_swapped_kernel[(_blocks(m), _blocks(n)), (BLOCK, BLOCK)](A, B, C)
# endregion: launch_swapped


SPECS = [
    KernelSpec("naive", "naive, one thread per output (seeds' mapping)", np.float32,
               launch_naive, chapter="1", compile=((naive_kernel, SIGNATURE),),
               tile=(BLOCK, BLOCK, 4)),
    KernelSpec("naive_swapped", "naive, thread x along rows (uncoalesced)", np.float32,
               launch_naive_swapped, chapter="1", compile=((naive_swapped_kernel, SIGNATURE),),
               tile=(BLOCK, BLOCK, 4)),
    KernelSpec("naive_literal", "naive, literal translation (64-bit indices, no unroll)",
               np.float32, launch_naive_literal, chapter="1",
               compile=((naive_literal_kernel, SIGNATURE),), tile=(BLOCK, BLOCK, 1)),
]
