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
it lives in registers (the tests check ``stack_bytes == 0``). Every *index* is ``uint32`` and
every sum of indices is wrapped in ``uint32(...)``, as in chapter 2: an unsigned index cannot be
negative, so Numba emits no wrap-around compare-and-select for it, and the wrapping keeps the
arithmetic 32-bit (Numba widens ``uint32 + uint32`` to 64 bits otherwise). The first version of
this module used signed ``int32`` indices; ptxas (sm_90) then gave, per kernel, before → after:
registers 29/54/96/168/138 → 32/32/62/102/122 (patch1/2/4/8, block128), and an 8 × 8 patch's
hottest loop went from 156 instructions for 64 FFMA (FFMA share 0.41) to 87 (0.74). The extra
registers of the signed version cost occupancy: patch8 fitted one block per SM instead of two.
The k-loop over the tile is still not fully unrolled by NVVM at P ≥ 2 (its body would be too
long); the loop counter costs a few instructions per k — one of the things chapter 4 fixes.

Edges: bounds checks in the load phase (zeros outside A and B) and in the store phase, so any
shape works; the multiply-add loop has no checks.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32, uint32

from lab.kernels import KernelSpec

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
#: Threads per block along x (columns of C) and y (rows), fixed for the whole sweep.
THREADS = 16


# region: patch_kernel
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

        # region: patch_indices
        m = uint32(C.shape[0])
        n = uint32(C.shape[1])
        k_total = uint32(A.shape[1])
        tx = uint32(cuda.threadIdx.x)
        ty = uint32(cuda.threadIdx.y)
        tid = uint32(ty * uint32(THREADS) + tx)
        bm = uint32(uint32(cuda.blockIdx.y) * uint32(BM))
        bn = uint32(uint32(cuda.blockIdx.x) * uint32(BN))
        # endregion: patch_indices
        row0 = uint32(ty * uint32(P))            # this thread's patch inside the block tile
        col0 = uint32(tx * uint32(P))

        for i in range(int32(P)):
            for j in range(int32(P)):
                acc[i, j] = float32(0.0)

        k0 = uint32(0)
        while k0 < k_total:
            # region: patch_load
            # load phase: each thread copies A_PER + B_PER elements, zeros outside the matrices
            for l in range(int32(A_PER)):
                e = uint32(tid + uint32(l * int32(NT)))
                r = uint32(e // uint32(BK))
                c = uint32(e % uint32(BK))
                gr = uint32(bm + r)
                gc = uint32(k0 + c)
                v = float32(0.0)
                if gr < m and gc < k_total:
                    v = A[gr, gc]
                As[r, c] = v
            for l in range(int32(B_PER)):
                e = uint32(tid + uint32(l * int32(NT)))
                r = uint32(e // uint32(BN))
                c = uint32(e % uint32(BN))
                gr = uint32(k0 + r)
                gc = uint32(bn + c)
                v = float32(0.0)
                if gr < k_total and gc < n:
                    v = B[gr, gc]
                Bs[r, c] = v
            # endregion: patch_load
            cuda.syncthreads()
            # region: compute_phase
            # compute phase: P + P shared reads, P·P multiply-adds per k
            for kk in range(int32(BK)):
                k = uint32(kk)
                for i in range(int32(P)):
                    a[i] = As[uint32(row0 + uint32(i)), k]
                for j in range(int32(P)):
                    b[j] = Bs[k, uint32(col0 + uint32(j))]
                for i in range(int32(P)):
                    for j in range(int32(P)):
                        acc[i, j] += a[i] * b[j]
            # endregion: compute_phase
            cuda.syncthreads()
            k0 = uint32(k0 + uint32(BK))

        for i in range(int32(P)):
            row = uint32(bm + uint32(row0 + uint32(i)))
            for j in range(int32(P)):
                col = uint32(bn + uint32(col0 + uint32(j)))
                if row < m and col < n:
                    C[row, col] = acc[i, j]

    # endregion: patch_kernel
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
               launch, chapter="3", compile=((kernel, SIGNATURE),),
               edges="bounds checks in the load and store phases",
               tile=(THREADS * p, THREADS * p, 16))
    for (name, (kernel, launch)), p in zip(_SWEEP.items(), PATCHES)
] + [
    KernelSpec("block128", "128x128 block tile, BK 8, 8x8 patch per thread (256 threads)",
               np.float32, launch_block128, chapter="3",
               compile=((block128_kernel, SIGNATURE),),
               edges="bounds checks in the load and store phases", tile=(128, 128, 8)),
]


def patch_facts(p: int) -> dict:
    """Seed 001/004's per-thread model for a p × p patch (for tables beside the compiler)."""
    from lab import model
    return {"patch": f"{p}x{p}", "smem_reads_per_fma": model.smem_reads_per_fma(p),
            "smem_intensity": model.smem_intensity(p), "accumulators": p * p,
            "block_tile": f"{THREADS * p}x{THREADS * p}"}


# ------------------------------------------------------------------ the first, signed version
def make_patch_int32(P: int, BK: int = 16):
    """The same kernel with *signed* ``int32`` indices — this module's first version, kept
    (unregistered, compiled offline only) so chapter 3 can show what Numba's negative-index
    wrap-around costs: a compare and a select per shared-memory access, more registers, and
    therefore fewer resident blocks. Same tiles, same loads, same arithmetic as
    :func:`make_patch`."""
    BM = BN = THREADS * P
    NT = THREADS * THREADS
    A_PER = BM * BK // NT
    B_PER = BK * BN // NT

    @cuda.jit
    def patch_int32(A, B, C):
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
            # region: compute_int32
            for kk in range(int32(BK)):
                for i in range(int32(P)):
                    a[i] = As[ty * int32(P) + i, kk]
                for j in range(int32(P)):
                    b[j] = Bs[kk, tx * int32(P) + j]
                for i in range(int32(P)):
                    for j in range(int32(P)):
                        acc[i, j] += a[i] * b[j]
            # endregion: compute_int32
            cuda.syncthreads()
            k0 = int32(k0 + int32(BK))
        for i in range(int32(P)):
            row = int32(bm + ty * int32(P) + i)
            for j in range(int32(P)):
                col = int32(bn + tx * int32(P) + j)
                if row < m and col < n:
                    C[row, col] = acc[i, j]

    return patch_int32


#: The signed versions, for ``lab.compiler.report("lab.kernels.k03_registers:int32_patch8")``.
int32_patch1, int32_patch2, int32_patch4, int32_patch8 = (make_patch_int32(p) for p in PATCHES)
int32_block128 = make_patch_int32(8, 8)
SIGNATURES = {f"int32_{name}": SIGNATURE
              for name in ("patch1", "patch2", "patch4", "patch8", "block128")}
