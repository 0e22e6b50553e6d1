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

Edges: a bounds check (``row < M and col < N``), so any shape works.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from lab.kernels import KernelSpec

#: Threads per block along x and y, as in the seeds (16 × 16 = 256 threads).
BLOCK = 16

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"


@cuda.jit
def naive_kernel(A, B, C):
    m, k_total = A.shape
    n = B.shape[1]
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x   # neighbouring lanes: columns
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < m and col < n:
        acc = float32(0.0)
        for k in range(k_total):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


@cuda.jit
def naive_swapped_kernel(A, B, C):
    m, k_total = A.shape
    n = B.shape[1]
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x   # neighbouring lanes: rows
    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < m and col < n:
        acc = float32(0.0)
        for k in range(k_total):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def _blocks(extent: int) -> int:
    return (extent + BLOCK - 1) // BLOCK


def launch_naive(A, B, C) -> None:
    """Grid of ⌈N/16⌉ × ⌈M/16⌉ blocks of 16 × 16 threads; x runs along N."""
    m, n = C.shape
    naive_kernel[(_blocks(n), _blocks(m)), (BLOCK, BLOCK)](A, B, C)


def launch_naive_swapped(A, B, C) -> None:
    """Grid of ⌈M/16⌉ × ⌈N/16⌉ blocks of 16 × 16 threads; x runs along M."""
    m, n = C.shape
    naive_swapped_kernel[(_blocks(m), _blocks(n)), (BLOCK, BLOCK)](A, B, C)


SPECS = [
    KernelSpec("naive", "naive, one thread per output (seeds' mapping)", np.float32,
               launch_naive, chapter=1, compile=((naive_kernel, SIGNATURE),)),
    KernelSpec("naive_swapped", "naive, thread x along rows (uncoalesced)", np.float32,
               launch_naive_swapped, chapter=1, compile=((naive_swapped_kernel, SIGNATURE),)),
]
