"""Tensor cores, rung 1 — one warp per 16×16 tile of C, fragments straight from global memory.

What changed: the arithmetic. Instead of one FFMA per thread per step, a warp issues
``mma.sync.m16n8k16`` (:mod:`lab.ptx`): 16 × 8 × 16 = 2,048 multiply-adds per instruction,
16-bit inputs, FP32 accumulation. Each warp owns a 16×16 tile of C (two such instructions per
k-step, one per 8-column half) and walks k in steps of 16, every lane loading *its own* elements
of A and B — the ones the fragment layout (:mod:`lab.fragments`) assigns to it — straight from
global memory, two 16-bit loads per packed register.

What did not change: nothing is staged or shared. A warp reads a 16×K strip of A and a K×16
strip of B for 2·16·16·K FLOPs: 16·16·2·K / ((16·K + 16·K) · 2 bytes) = 8 FLOP/byte, the same
intensity as the FP32 kernel with 32×32 shared-memory tiles — far left of the FP16 ridge
(≈ 990 TFLOP/s ÷ 4.8 TB/s ≈ 200 FLOP/byte on the H200). Prediction: memory-bound, a few
percent of cuBLAS FP16 — "using" the tensor cores, not "feeding" them.

Edges: the launch pads A and B with zeros to multiples of 16 (a small copy kernel; the padded
buffers are cached per shape), and the kernel's stores check ``row < M`` and ``col < N``.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32

from lab import enqueue
from lab import ptx
from lab.kernels import KernelSpec
from lab.lru import LRU

#: Edge of the C tile one warp owns, and the k-step of one mma.sync.
TILE = 16
#: Warps per block (each with its own tile; they share nothing).
WARPS = 4

SIGNATURE_FP16 = "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])"
SIGNATURE_BF16 = "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"


# ----------------------------------------------------------------------------- padding

@cuda.jit
def pad_kernel(src, dst):
    """dst[i, j] = src[i, j] inside src, 0 outside (dst as large as src or larger; or smaller,
    to crop). Column j runs along x, so a warp reads and writes 32 neighbours of one row
    (coalesced)."""
    j, i = cuda.grid(2)
    rows, cols = dst.shape
    if i < rows and j < cols:
        if i < src.shape[0] and j < src.shape[1]:
            dst[i, j] = src[i, j]
        else:
            dst[i, j] = 0


#: Padded copies kept, by slot, shape and dtype.
_PAD_CACHE = LRU(16)


def round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def pad_operand(x, rows: int, cols: int, slot: str):
    """``x`` itself if it is already ``rows × cols``, else a zero-padded device copy.

    The padded buffer is allocated once per (slot, shape, dtype) and reused, so repeated calls
    at one shape pay for the copy kernel only, not for an allocation.
    """
    if x.shape == (rows, cols):
        return x
    dst = _PAD_CACHE.get_or_make((slot, rows, cols, x.dtype.str),
                                 lambda: cuda.device_array((rows, cols), dtype=x.dtype))
    pad_into(x, dst)
    return dst


def pad_into(x, dst) -> None:
    """Launch :func:`pad_kernel`: ``dst`` = ``x`` zero-padded (32 × 8 threads per block)."""
    rows, cols = dst.shape
    enqueue.launch(pad_kernel, None, (round_up(cols, 32) // 32, round_up(rows, 8) // 8),
                  (32, 8), 0, (x, dst))


def pad_inputs(A, B, tile_m: int, tile_n: int, tile_k: int):
    """A padded to (⌈M⌉, ⌈K⌉) and B to (⌈K⌉, ⌈N⌉), each rounded up to its tile edge."""
    m, k = A.shape
    n = B.shape[1]
    kp = round_up(k, tile_k)
    return (pad_operand(A, round_up(m, tile_m), kp, "A"),
            pad_operand(B, kp, round_up(n, tile_n), "B"))


# ----------------------------------------------------------------------------- kernel

def make_naive_kernel(mma):
    """The rung-1 kernel for one ``mma`` intrinsic (``ptx.mma_f16`` or ``ptx.mma_bf16``)."""

    # region: tc_naive_kernel
    @cuda.jit
    def tc_naive_kernel(A, B, C):
        # A: Mp×Kp, B: Kp×Np, both padded to multiples of 16; C: M×N float32.
        tid = int32(cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
        warp = tid >> 5
        lane = tid & 31
        tiles_n = int32(B.shape[1]) // TILE
        if warp >= int32(A.shape[0]) // TILE * tiles_n:
            return
        group = lane >> 2                       # fragment row (A, C) / column (B)
        pair = lane & 3                         # which pair of k (A, B) / n (C) values
        row0 = warp // tiles_n * TILE + group
        row1 = row0 + 8
        col0 = warp % tiles_n * TILE + group   # B column for the left 16×8 half
        col1 = col0 + 8                         # … and for the right half
        left = (float32(0), float32(0), float32(0), float32(0))
        right = left
        for k0 in range(0, int32(A.shape[1]), TILE):
            k = int32(k0) + 2 * pair
            a = (ptx.pack_b16(A[row0, k], A[row0, k + 1]),
                 ptx.pack_b16(A[row1, k], A[row1, k + 1]),
                 ptx.pack_b16(A[row0, k + 8], A[row0, k + 9]),
                 ptx.pack_b16(A[row1, k + 8], A[row1, k + 9]))
            b_left = (ptx.pack_b16(B[k, col0], B[k + 1, col0]),
                      ptx.pack_b16(B[k + 8, col0], B[k + 9, col0]))
            b_right = (ptx.pack_b16(B[k, col1], B[k + 1, col1]),
                       ptx.pack_b16(B[k + 8, col1], B[k + 9, col1]))
            left = mma(a, b_left, left)
            right = mma(a, b_right, right)
        # region: tc_naive_store
        m, n = C.shape
        col = warp % tiles_n * TILE + 2 * pair
        for half in range(2):
            acc = left if half == 0 else right
            c = col + 8 * half
            if row0 < m:
                if c < n:
                    C[row0, c] = acc[0]
                if c + 1 < n:
                    C[row0, c + 1] = acc[1]
            if row1 < m:
                if c < n:
                    C[row1, c] = acc[2]
                if c + 1 < n:
                    C[row1, c + 1] = acc[3]
        # endregion: tc_naive_store
    # endregion: tc_naive_kernel

    return tc_naive_kernel


naive_fp16_kernel = make_naive_kernel(ptx.mma_f16)
naive_bf16_kernel = make_naive_kernel(ptx.mma_bf16)


def _launcher(kernel):
    def launch(A, B, C) -> None:
        """Pad A, B to multiples of 16; one warp per 16×16 tile of C, 4 warps per block."""
        a, b = pad_inputs(A, B, TILE, TILE, TILE)
        warps = (a.shape[0] // TILE) * (b.shape[1] // TILE)
        blocks = -(-warps // WARPS)
        kernel[blocks, 32 * WARPS](a, b, C)
    return launch


launch_naive_fp16 = _launcher(naive_fp16_kernel)
launch_naive_bf16 = _launcher(naive_bf16_kernel)

EDGES = "launch pads A and B with zeros to multiples of 16; stores check row < M, col < N"

SPECS = [
    KernelSpec("tc_naive_fp16", "tensor cores, one warp per 16×16 tile, fragments from global "
               "(FP16 in, FP32 acc)", np.float16, launch_naive_fp16, simulator=False,
               chapter="5", compile=((naive_fp16_kernel, SIGNATURE_FP16),), edges=EDGES,
               tile=(TILE, TILE, TILE), min_cc=(8, 0), needs="mma.sync m16n8k16, FP16"),
    KernelSpec("tc_naive_bf16", "tensor cores, one warp per 16×16 tile, fragments from global "
               "(BF16 in, FP32 acc)", np.uint16, launch_naive_bf16, simulator=False,
               chapter="5", compile=((naive_bf16_kernel, SIGNATURE_BF16),), edges=EDGES,
               dtype_name="bfloat16", tile=(TILE, TILE, TILE), min_cc=(8, 0),
               needs="mma.sync m16n8k16, BF16"),
]
