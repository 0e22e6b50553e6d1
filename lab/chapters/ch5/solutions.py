"""Chapter 5's exercises, worked: one function per exercise, ``ex05_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex05_N_key``.
"""
from __future__ import annotations

import numpy as np

from lab import fp8, model, page, results
from lab.chapters import common


def ex05_1() -> dict:
    """256 × 128 block tiles with 64 × 64 warp tiles: registers, blocks per SM, shared memory."""
    tune = results.load("tc_tune")["rows"]
    base = next(r for r in tune if r["config"].startswith("128x128x32 warp 64x64 s3"))
    wide = next(r for r in tune if r["config"].startswith("128x256x32 warp 64x64 s3"))
    bm, bn, bk, stages = 256, 128, 32, 3
    smem = (bm + bn) * bk * 2 * stages
    threads = (bm // 64) * (bn // 64) * 32
    regs = base["regs"]
    return {"ex05_1_threads": threads, "ex05_1_regs": regs, "ex05_1_smem_kb": smem / 1024,
            "ex05_1_blocks": model.blocks_per_sm(threads, regs, smem),
            "ex05_1_blocks_base": base["blocks_per_sm"],
            "ex05_1_intensity": model.tile_intensity(bm, bn, 2),
            "ex05_1_intensity_base": model.tile_intensity(128, 128, 2),
            "ex05_1_tflops_base": base["tflops"], "ex05_1_tflops_128x256": wide["tflops"],
            "ex05_1_blocks_128x256": wide["blocks_per_sm"]}


def ex05_2(row_bytes: int = 128) -> dict:
    """Wavefronts of the ldmatrix reads and the cp.async writes of one tile, swizzle on and off.

    A tile row is ``row_bytes`` (64 FP16 values of k); 16-byte chunk ``c`` of row ``r`` sits at
    chunk ``c ^ (r % 8)`` when swizzled.
    """
    from lab import fragments

    def addr(r, c, swizzle):
        return r * row_bytes + 16 * ((c ^ (r % 8)) if swizzle else c)

    chunks = row_bytes // 16

    def ldmatrix(swizzle):      # 8 lanes give 8 consecutive rows at the same chunk of k
        return max(fragments.wavefronts([addr(r, c, swizzle) for r in range(8)])
                   for c in range(chunks))

    def cpasync(swizzle):       # 8 consecutive threads write the 8 chunks of one row
        return max(fragments.wavefronts([addr(r, c, swizzle) for c in range(chunks)])
                   for r in range(8))

    return {"ex05_2_ldmatrix_plain": ldmatrix(False), "ex05_2_ldmatrix_swz": ldmatrix(True),
            "ex05_2_cpasync_plain": cpasync(False), "ex05_2_cpasync_swz": cpasync(True)}


def ex05_3(scale: float = 1e4, n: int = 256, seed: int = 5) -> dict:
    """Inputs around ``scale``: which format overflows first (NumPy emulation, FP32 sums)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (n, n)) * scale
    B = rng.uniform(-1, 1, (n, n)) * scale
    ref = A @ B
    out = {"ex05_3_scale": scale, "ex05_3_fp16_max": float(np.finfo(np.float16).max),
           "ex05_3_max_entry": float(np.abs(ref).max())}
    a16, b16 = A.astype(np.float16), B.astype(np.float16)
    out["ex05_3_fp16_inputs_finite"] = bool(np.isfinite(a16).all() and np.isfinite(b16).all())
    c32 = a16.astype(np.float32) @ b16.astype(np.float32)
    out["ex05_3_fp16_out32_err"] = float(np.linalg.norm(c32 - ref) / np.linalg.norm(ref))
    with np.errstate(over="ignore"):
        c16 = c32.astype(np.float16)
    out["ex05_3_fp16_out16_inf"] = float(np.isinf(c16).mean())
    # bfloat16: float32 with the low 16 bits of the mantissa rounded away
    def bf16(x):
        return fp8.bf16_bits_to_float32(fp8.bf16_bits(x))
    cb = bf16(A) @ bf16(B)
    out["ex05_3_bf16_err"] = float(np.linalg.norm(cb - ref) / np.linalg.norm(ref))
    out["ex05_3_bf16_finite"] = bool(np.isfinite(cb).all())
    with np.errstate(over="ignore"):
        big = np.float16(10 * np.finfo(np.float16).max)
    out["ex05_3_fp16_big_inputs_inf"] = bool(np.isinf(big))
    return out


def ex05_4(seed: int = 7) -> dict:
    """B (16 × 8, [k, n]) stored k-major needs ldmatrix.trans; stored n-major, plain ldmatrix."""
    from lab import fragments

    rng = np.random.default_rng(seed)
    B = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    want = fragments.b_fragment(B)
    k_major = B.ravel()                                   # row k holds 8 values of n
    starts_k = [8 * (8 * (l // 8) + l % 8) for l in range(16)]
    n_major = np.ascontiguousarray(B.T).ravel()           # row n holds 16 values of k
    starts_n = [16 * (l % 8) + 8 * (l // 8) for l in range(16)]
    def loads(memory, starts, trans):
        return bool((fragments.ldmatrix(memory, starts, 2, trans) == want).all())

    return {"ex05_4_k_major_trans": loads(k_major, starts_k, True),
            "ex05_4_k_major_plain": loads(k_major, starts_k, False),
            "ex05_4_n_major_plain": loads(n_major, starts_n, False),
            "ex05_4_n_major_trans": loads(n_major, starts_n, True)}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex05_N_key``, as text."""
    return common.solution_values(globals(), "ex05_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
