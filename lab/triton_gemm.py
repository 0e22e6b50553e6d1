"""A plain Triton matmul of ours, autotuned over a few block shapes (GPU only: imports Triton
and PyTorch, so :mod:`lab.libraries` imports this module only where both are present).

One program computes one BM×BN tile of C: it walks K in BK-deep slices, loads a BM×BK tile of A
and a BK×BN tile of B (masked at the edges, zeros outside), multiplies them with ``tl.dot`` into
an FP32 accumulator and stores the tile in C's dtype. Programs are numbered in groups of
GROUP_M block rows so that neighbours share tiles of B in L2 — the block order of our
``tc_fp16``. Everything else — shared-memory staging, the pipeline depth, the swizzle, which
tensor-core instruction (``mma.sync`` or, on Hopper, ``wgmma`` fed by TMA) — is Triton's
compiler's choice, made per configuration; the autotuner times each configuration at the first
call of a new (M, N, K) and keeps the fastest.

FP16 inputs run on the tensor cores; FP32 inputs use ``input_precision="ieee"`` (true FP32 on
the CUDA cores, as our FP32 kernels and cuBLAS FP32 with TF32 off).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# region: configs
FP16_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
]
FP32_CONFIGS = [
    triton.Config({"BM": 128, "BN": 128, "BK": 16, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 64, "BK": 16, "GROUP_M": 8}, num_stages=3, num_warps=4),
    triton.Config({"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8}, num_stages=3, num_warps=4),
]
# endregion: configs


# region: kernel
@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUP_M: tl.constexpr, IEEE: tl.constexpr):
    # which tile of C: block rows in groups of GROUP_M, so neighbours share B in L2
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_here = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here

    rows = tile_m * BM + tl.arange(0, BM)
    cols = tile_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_tile = a_ptr + rows[:, None] * lda + ks[None, :]
    b_tile = b_ptr + ks[:, None] * ldb + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BK)):
        left = K - step * BK                       # k values not yet consumed
        a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < left), other=0.0)
        b = tl.load(b_tile, mask=(ks[:, None] < left) & (cols[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_tile += BK
        b_tile += BK * ldb
    c_tile = c_ptr + rows[:, None] * ldc + cols[None, :]
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))
# endregion: kernel


#: One autotuner per input precision: each keeps, per (M, N, K), the fastest configuration.
TUNED = {
    "fp16": triton.autotune(configs=FP16_CONFIGS, key=["M", "N", "K"])(gemm_kernel),
    "fp32": triton.autotune(configs=FP32_CONFIGS, key=["M", "N", "K"])(gemm_kernel),
}


def bind(a: "torch.Tensor", b: "torch.Tensor", c: "torch.Tensor", precision: str):
    """A zero-argument call computing ``c = a @ b`` (row-major, contiguous CUDA tensors)."""
    m, k = a.shape
    n = b.shape[1]
    tuner = TUNED[precision]
    grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)  # noqa: E731
    ieee = precision == "fp32"

    def call():
        tuner[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), IEEE=ieee)
    return call


def chosen(precision: str, m: int, n: int, k: int) -> str | None:
    """The configuration the autotuner kept for M×N×K (None before the first call there)."""
    for key, config in TUNED[precision].cache.items():
        if tuple(key[:3]) == (m, n, k):
            kw = config.kwargs
            return (f"{kw['BM']}x{kw['BN']}x{kw['BK']} tile, group {kw['GROUP_M']}, "
                    f"{config.num_warps} warps, {config.num_stages} stages")
    return None
