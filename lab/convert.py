"""16-bit <-> FP32 on the GPU, element by element: the widening and narrowing passes that sit
around a kernel whose input or output type differs from the caller's (FP16, and BF16 held as
uint16 bits). Widening is exact; narrowing rounds to nearest even (BF16: NaN stays a NaN).
:func:`bf16_bits` is the GPU's one BF16 rounding (:func:`lab.fp8.bf16_bits` the host's).

:func:`widen` and :func:`narrow` pick the kernel by the 16-bit side's dtype and launch it
through :mod:`lab.enqueue` on the caller's stream, one thread per element in 32 × 8 blocks.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint16, uint32

from lab import device
from lab import enqueue

if device.SIMULATOR:
    def _as_bits(x):
        return np.float32(x).view(np.uint32)
else:
    @cuda.jit(device=True, inline="always")
    def _as_bits(x):
        return uint32(cuda.libdevice.float_as_int(x))


@cuda.jit(device=True, inline="always")
def bf16_bits(x):
    """The BF16 code (uint16) of float32 ``x``, rounded to nearest even; past the largest BF16
    an infinity, a NaN the quiet NaN of its sign — as :func:`lab.fp8.bf16_bits` on the host."""
    bits = uint32(_as_bits(x))
    if x != x:
        return uint16(((bits >> uint32(16)) & uint32(0x8000)) | uint32(0x7FC0))
    return uint16((bits + uint32(0x7FFF) + ((bits >> uint32(16)) & uint32(1))) >> uint32(16))


@cuda.jit
def widen_f16(src, dst):
    """dst (float32) = src (FP16), exactly."""
    j, i = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = float32(src[i, j])


@cuda.jit
def widen_bf16(src, dst):
    """dst (the bits of float32) = src (BF16 bits) << 16: the same value, exactly."""
    j, i = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = uint32(src[i, j]) << uint32(16)


@cuda.jit
def narrow_f16(src, dst):
    """dst (FP16) = src (float32), rounded to nearest even."""
    j, i = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[i, j]


@cuda.jit
def narrow_bf16(src, dst):
    """dst (BF16 bits) = src (float32), rounded to nearest even; a NaN stays a NaN."""
    j, i = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = bf16_bits(src[i, j])


#: Rows that one launch covers: 8 rows a block, and a grid at most 65,535 blocks tall (CUDA's
#: limit on ``gridDim.y``); more rows take a launch per chunk (a grouped GEMM's B of 256
#: experts × 7168 rows is 1.8 M rows, and one launch of it was refused by the driver).
CHUNK_ROWS = 8 * 65535


def _launch(kernel, src, dst) -> None:
    m, n = dst.shape
    for r in range(0, m, CHUNK_ROWS):
        s, d = (src, dst) if m <= CHUNK_ROWS else (src[r:r + CHUNK_ROWS], dst[r:r + CHUNK_ROWS])
        enqueue.launch(kernel, None, (-(-n // 32), -(-d.shape[0] // 8)), (32, 8), 0, (s, d))


def widen(src, dst) -> None:
    """dst (float32 device array) = src (FP16, or BF16 as uint16 bits), exactly."""
    if src.dtype == np.float16:
        _launch(widen_f16, src, dst)
    elif src.dtype == np.uint16:
        _launch(widen_bf16, src, dst.view(np.uint32))
    else:
        raise ValueError(f"widen takes FP16 or BF16 (uint16) input, not {src.dtype}")


def narrow(src, dst) -> None:
    """dst (FP16, or BF16 as uint16 bits) = src (float32), rounded to nearest even."""
    if dst.dtype == np.float16:
        _launch(narrow_f16, src, dst)
    elif dst.dtype == np.uint16:
        _launch(narrow_bf16, src, dst)
    else:
        raise ValueError(f"narrow writes FP16 or BF16 (uint16) output, not {dst.dtype}")
