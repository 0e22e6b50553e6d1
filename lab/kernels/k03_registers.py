"""Rung 3 — each thread owns a P × P patch of C, held in registers.

What changed since chapter 2's shared-memory tiles: a thread no longer computes one output.
It keeps a ``P × P`` patch of accumulators in registers and, for every k of the tile, reads
``P`` values of A and ``P`` of B from shared memory and combines them into ``P²`` multiply-adds.
Shared-memory reads per multiply-add fall from 2 (one output per thread) to ``2/P``, and the
thread gains ``P²`` independent FMA chains to keep the pipeline busy while loads are pending.
The price is registers: ``P²`` accumulators plus ``2P`` operands plus indices.

The patch sweep keeps *everything else fixed*: 16 × 16 = 256 threads per block, a k-slice of
``BK = 16``, so the block tile grows with the patch (16·P × 16·P). Registered as ``patch1``,
``patch2``, ``patch4`` and ``patch8``.

``block128`` is the classic shape of the register-blocked kernel: a 128 × 128 block tile,
``BK = 8``, 256 threads with an 8 × 8 patch each (64 accumulators).

Deliberately plain: 4-byte loads and stores, A and B tiles stored as they are read from memory,
a thread's patch contiguous. Chapter 4 changes these one at a time.

Numba notes: every loop over a patch dimension runs over ``range(int32(CONST))`` with a closure
constant, so NVVM unrolls it and the ``cuda.local.array`` patch is indexed only by constants —
it lives in registers (the tests check ``stack_bytes == 0``). The k-loop over the tile is left
rolled: at ``P = 8`` its body (64 FFMA) is too long for NVVM to unroll, which costs ~20
bookkeeping instructions per k — one of the things chapter 4 fixes.

Edges: bounds checks in the load phase (zeros outside A and B) and in the store phase, so any
shape works; the multiply-add loop has no checks.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32

from lab.kernels import KernelSpec

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
#: Threads per block along x (columns of C) and y (rows), fixed for the whole sweep.
THREADS = 16


def make_patch(P: int, BK: int = 16):
    """The register-patch kernel for a P × P patch per thread and a BK-deep k-slice."""
    BM = BN = THREADS * P            # block tile
    NT = THREADS * THREADS
    A_PER = BM * BK // NT            # elements of the A tile each thread loads
    B_PER = BK * BN // NT

    @cuda.jit
    def patch(A, B, C):
        As = cuda.shared.array((BM, BK), float32)
        Bs = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((P, P), float32)
        a = cuda.local.array(P, float32)
        b = cuda.local.array(P, float32)

        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_total = int32(A.shape[1])
        tx = int32(cuda.threadIdx.x)
        ty = int32(cuda.threadIdx.y)
        tid = int32(ty * int32(THREADS) + tx)
        bm = int32(int32(cuda.blockIdx.y) * int32(BM))
        bn = int32(int32(cuda.blockIdx.x) * int32(BN))

        for i in range(int32(P)):
            for j in range(int32(P)):
                acc[i, j] = float32(0.0)

        k0 = int32(0)
        while k0 < k_total:
            # load phase: each thread copies A_PER + B_PER elements, zeros outside the matrices
            for l in range(int32(A_PER)):
                e = int32(tid + l * int32(NT))
                r = int32(e // int32(BK))
                c = int32(e % int32(BK))
                As[r, c] = A[bm + r, k0 + c] if (bm + r < m and k0 + c < k_total) \
                    else float32(0.0)
            for l in range(int32(B_PER)):
                e = int32(tid + l * int32(NT))
                r = int32(e // int32(BN))
                c = int32(e % int32(BN))
                Bs[r, c] = B[k0 + r, bn + c] if (k0 + r < k_total and bn + c < n) \
                    else float32(0.0)
            cuda.syncthreads()
            # compute phase: P + P shared reads, P·P multiply-adds per k
            for kk in range(int32(BK)):
                for i in range(int32(P)):
                    a[i] = As[ty * int32(P) + i, kk]
                for j in range(int32(P)):
                    b[j] = Bs[kk, tx * int32(P) + j]
                for i in range(int32(P)):
                    for j in range(int32(P)):
                        acc[i, j] += a[i] * b[j]
            cuda.syncthreads()
            k0 = int32(k0 + int32(BK))

        for i in range(int32(P)):
            row = int32(bm + ty * int32(P) + i)
            for j in range(int32(P)):
                col = int32(bn + tx * int32(P) + j)
                if row < m and col < n:
                    C[row, col] = acc[i, j]

    def launch(A, B, C):
        m, n = C.shape
        grid = ((n + BN - 1) // BN, (m + BM - 1) // BM)
        patch[grid, (THREADS, THREADS)](A, B, C)

    return patch, launch


#: The sweep of seed 004's experiment: patch size is the only variable.
PATCHES = (1, 2, 4, 8)
_SWEEP = {f"patch{p}": make_patch(p, 16) for p in PATCHES}
#: The 128 × 128 block tile with 8 × 8 patches of seeds 000/001.
block128_kernel, launch_block128 = make_patch(8, 8)

SPECS = [
    KernelSpec(name, f"register patch {p}x{p} per thread, 16x16 threads, BK 16", np.float32,
               launch, chapter=3, compile=((kernel, SIGNATURE),),
               edges="bounds checks in the load and store phases")
    for (name, (kernel, launch)), p in zip(_SWEEP.items(), PATCHES)
] + [
    KernelSpec("block128", "128x128 block tile, BK 8, 8x8 patch per thread (256 threads)",
               np.float32, launch_block128, chapter=3,
               compile=((block128_kernel, SIGNATURE),),
               edges="bounds checks in the load and store phases"),
]


def patch_facts(p: int) -> dict:
    """Seed 001/004's per-thread model for a p × p patch (for tables beside the compiler)."""
    from lab import model
    return {"patch": f"{p}x{p}", "smem_reads_per_fma": model.smem_reads_per_fma(p),
            "smem_intensity": model.smem_intensity(p), "accumulators": p * p,
            "block_tile": f"{THREADS * p}x{THREADS * p}"}
