"""FP8 on Hopper — chapter 7's best kernel with e4m3 / e5m2 inputs, scaled as production does.

Nothing new in the structure: the kernels are :mod:`lab.kernels.wgmma`'s persistent,
warp-specialized kernel with the TMA-store epilogue (rung 7), built for another input type
(``HopperConfig.kind``). What the type changes:

* ``wgmma.mma_async.m64nNk32.f32.e4m3.e4m3`` (or ``.e5m2``): 32 one-byte values per k-step —
  still 32 bytes of a 128-byte swizzled row, so a stage holds 128 k instead of 64, in the same
  48 KB, and the tensor cores do twice the work per byte of shared memory;
* the FP8 form has no transpose: B must be K-major too, so the kernels read **Bᵀ** (N×K, the
  layout of a weight matrix in a linear layer, and of cuBLASLt's FP8 "TN" GEMM); one TMA box
  of BN rows × 128 k per stage;
* the result leaves as FP32 or BF16 (``out``), and the scales come in: per-tensor scales
  multiply the accumulators in the epilogue; block scales (1×128 for A, 128×128 for B) and
  the *promotion* of the tensor cores' partial sums into FP32 registers every ``promote`` k
  happen in the main loop (:mod:`lab.kernels.wgmma.promote`).

The tensor cores' FP8 accumulation keeps about 13 bits below the largest addend (it truncates
the rest): promotion bounds how much it can lose. Promotion doubles the accumulator registers
(partial sums and FP32 sums), so a promoting kernel takes a 128×128 tile (64 + 64 registers per
thread) instead of 128×256.

Registered (sm_90a only; the simulator cannot run inline PTX): ``fp8_e4m3`` and ``fp8_e5m2``
(per-tensor scales, tensor-core accumulation, FP32 out), ``fp8_e4m3_bf16`` (BF16 out),
``fp8_e4m3_promote`` (promotion every 128 k) and ``fp8_e4m3_block`` (block scales at each
promotion, BF16 out, as DeepGEMM). ``lab.matmul(A, B, kernel=...)`` takes FP8 codes as uint8
(A: M×K, B: K×N; the launch transposes B on the GPU) with unit scales; :func:`run` is the
production entry, with Bᵀ and scales; each kernel's ``check`` runs it with real scales.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import cuda

from lab import accuracy, convert, fp8
from lab.kernels import KernelSpec
from lab.kernels import wgmma as K

#: Tensor-core FP8 accumulation: addends below about 2⁻¹³ of the largest in one wgmma are
#: dropped (truncated toward zero) — measured on the H200.
TC_FP8_UNIT = 2.0 ** -13

_BASE = replace(K.RUNG_CONFIGS["wgmma_tmastore"], kind="e4m3", scales="tensor")
#: 128×128 tiles for promotion (two sets of accumulators); 6 stages of 32 KB fit.
_PROMOTING = replace(_BASE, bn=128, stages=6, promote=128)

CONFIGS = {
    "fp8_e4m3": _BASE,
    "fp8_e5m2": replace(_BASE, kind="e5m2"),
    "fp8_e4m3_bf16": replace(_BASE, out="bf16"),
    "fp8_e4m3_promote": replace(_PROMOTING, steps=True, counters=True),
    # the promoting main loop with slot counters and descriptor steps (rung 13's), so that a
    # k-block costs about 160 instructions rather than 450 (a division by the 6 stages, and
    # each descriptor built from an address, were most of them): the loop no longer outlasts
    # the two warpgroups' wgmma
    "fp8_e4m3_block": replace(_PROMOTING, scales="block", out="bf16", steps=True,
                              counters=True),
    # chapter 7's rung 8 for FP8: clusters of 2 blocks, Bᵀ rows multicast (half each)
    "fp8_e4m3_cluster": replace(_BASE, out="bf16", cluster=2, regs=224, producer_regs=56),
    # chapter 7's rungs 10 and 11 for FP8: BF16 C staged a whole tile at a time, 3 stages, a
    # grid of 128 blocks
    "fp8_e4m3_tile": replace(_BASE, out="bf16", stages=3, store="tile", grid=128),
}
TITLES = {
    "fp8_e4m3": "e4m3 wgmma (k32), Bᵀ, per-tensor scales, tensor-core accumulation, FP32 out",
    "fp8_e5m2": "e5m2 wgmma (k32), Bᵀ, per-tensor scales, tensor-core accumulation, FP32 out",
    "fp8_e4m3_bf16": "e4m3, per-tensor scales, BF16 out",
    "fp8_e4m3_promote": "e4m3, promotion to FP32 every 128 k, 128×128 tile",
    "fp8_e4m3_block": "e4m3, 1×128 / 128×128 block scales at each promotion, BF16 out",
    "fp8_e4m3_cluster": "e4m3, clusters of 2 blocks sharing Bᵀ by TMA multicast, BF16 out",
    "fp8_e4m3_tile": "e4m3, BF16 out staged a whole tile at a time, 3 stages, grid of 128",
}


# ----------------------------------------------------------------------------- launching

@cuda.jit
def _transpose(src, dst):
    """dst = srcᵀ (FP8 codes; B → Bᵀ for the registry's A·B entry)."""
    j, i = cuda.grid(2)
    if i < src.shape[0] and j < src.shape[1]:
        dst[j, i] = src[i, j]


def _grid(rows: int, cols: int):
    return (-(-cols // 32), -(-rows // 8)), (32, 8)


def unit_scales(cfg: K.HopperConfig, m: int, n: int, k: int):
    """Device scale arrays of ones in the shapes ``cfg`` takes
    (:func:`lab.kernels.wgmma.host.scale_shapes`)."""
    sa, sb = K.scale_shapes(cfg, m, n, k)
    return cuda.to_device(np.ones(sa, np.float32)), cuda.to_device(np.ones(sb, np.float32))


def run(cfg: K.HopperConfig, A, Bt, C, sa, sb) -> None:
    """C = (sa·A)·(sb·B) on the GPU: device arrays A (M×K codes), Bt (N×K codes of Bᵀ),
    C (M×N float32, or uint16 BF16 bits for ``out="bf16"``), float32 scales ``sa``/``sb``."""
    K.launcher(cfg)(A, Bt, C, sa, sb)


def registry_launch(cfg: K.HopperConfig):
    """``launch(A, B, C)`` of the registry contract (B: K×N codes, C: float32) with unit
    scales: B is transposed on the GPU, a BF16 result widened into C."""
    launch = K.launcher(cfg)

    def launch_ab(A, B, C) -> None:
        m, k = A.shape
        n = B.shape[1]
        bt = cuda.device_array((n, k), dtype=np.uint8)
        _transpose[_grid(k, n)](B, bt)
        sa, sb = unit_scales(cfg, m, n, k)
        if cfg.out == "bf16":
            out = cuda.device_array((m, n), dtype=np.uint16)
            launch(A, bt, out, sa, sb)
            convert.widen(out, C)
        else:
            launch(A, bt, C, sa, sb)
        launch_ab.keep = (bt, sa, sb)

    return launch_ab


# ----------------------------------------------------------------------------- checking

def operands(m: int, n: int, k: int, cfg: K.HopperConfig, rng: np.random.Generator,
             outliers: bool = False):
    """Random FP8 operands quantized as ``cfg`` scales them: (A codes M×K, Bᵀ codes N×K, sa,
    sb), host arrays. Normal values whose size changes by powers of two from one 128-k block
    to the next (so a wrong block scale shows); ``outliers`` makes a few columns of A (k
    indices) 100× larger, as LLM activations have."""
    a = rng.standard_normal((m, k)) * 2.0 ** rng.integers(-3, 4, size=(m, -(-k // 128))
                                                         ).repeat(128, axis=1)[:, :k]
    if outliers:
        cols = rng.choice(k, size=max(1, k // 256), replace=False)
        a[:, cols] *= 100.0
    bt = rng.standard_normal((n, k)) * 2.0 ** rng.integers(-3, 4, size=(-(-n // 128), -(-k // 128))
                                                          ).repeat(128, 0).repeat(128, 1)[:n, :k]
    blocks = cfg.scales == "block"
    qa, sa = fp8.quantize(a, cfg.kind, fp8.ACT_BLOCK if blocks else None)
    qb, sb = fp8.quantize(bt, cfg.kind, fp8.WEIGHT_BLOCK if blocks else None)
    return qa, qb, sa, sb


def bound_factor(k: int, out: str) -> float:
    """The error bound's factor on ``|A|·|B|`` (dequantised operands) for an FP8 kernel:
    :func:`lab.accuracy.bound_factor`'s form with the unit of the tensor cores' FP8 accumulation
    (:data:`TC_FP8_UNIT`) instead of FP32's, plus a few FP32 roundings for the scales and the
    promotion, plus BF16's unit for a BF16 result. Promotion only makes the error smaller."""
    scaled = accuracy.bound_factor(k, tensor_cores=True) * (TC_FP8_UNIT / accuracy.UNIT)
    return scaled + 4 * accuracy.UNIT + (2.0 ** -8 if out == "bf16" else 0.0)


def compare(out, qa, qb, sa, sb, cfg: K.HopperConfig, *, kernel: str = "?",
            seed: int | None = None):
    """A kernel's result (float32, or BF16 bits) against :func:`lab.fp8.reference`, elementwise
    within :func:`bound_factor` · (|A|·|B|); a :class:`lab.accuracy.CheckResult`."""

    m, k = qa.shape
    out = np.asarray(out)
    value = fp8.bf16_bits_to_float32(out) if out.dtype == np.uint16 else out
    blocks = cfg.scales == "block"
    ref = fp8.reference(qa, qb, sa, sb, cfg.kind, blocks)
    a64 = fp8.dequantize(qa, sa, cfg.kind, fp8.ACT_BLOCK if blocks else None)
    b64 = fp8.dequantize(qb, sb, cfg.kind, fp8.WEIGHT_BLOCK if blocks else None)
    factor = bound_factor(k, cfg.out)
    bound = factor * (np.abs(a64) @ np.abs(b64).T) + k * 2.0 ** -149
    return accuracy.judge(value, ref, bound, kernel=kernel, shape=(m, qb.shape[0], k),
                       dtype_name=fp8.get_format(cfg.kind).numpy_type.__name__,
                       factor=factor, seed=seed, what="the FP8 bound")


def checker(name: str, cfg: K.HopperConfig):
    """``check(m, n, k, seed=None)``: fresh scaled FP8 operands, the output poisoned with NaN,
    :func:`run`, :func:`compare`; :class:`lab.kernels.KernelUnavailable` with its one line,
    before anything is allocated, where the kernel cannot run."""
    def check(m: int, n: int, k: int, *, seed: int | None = None):
        from lab.kernels import REGISTRY, KernelUnavailable, runnable   # (after the registry)

        ok, why = runnable(name) if name in REGISTRY else (True, "")
        if not ok:
            raise KernelUnavailable(why)
        seed = accuracy.new_seed() if seed is None else seed
        qa, qb, sa, sb = operands(m, n, k, cfg, np.random.default_rng(seed))
        poison = np.full((m, n), np.nan, np.float32)
        if cfg.out == "bf16":
            poison = np.full((m, n), 0x7FC0, np.uint16)      # BF16 NaN
        out = cuda.to_device(poison)
        run(cfg, cuda.to_device(qa), cuda.to_device(qb), out, cuda.to_device(sa),
            cuda.to_device(sb))
        return compare(out.copy_to_host(), qa, qb, sa, sb, cfg, kernel=name, seed=seed)
    return check


# ----------------------------------------------------------------------------- registry

def needs(cfg: K.HopperConfig) -> str:
    return (f"sm_90a: wgmma {cfg.kind} (QGMMA), TMA, mbarriers, setmaxnreg, TMA store")


def _spec(name: str, cfg: K.HopperConfig) -> KernelSpec:
    f = fp8.get_format(cfg.kind)
    return KernelSpec(name, f"FP8 on Hopper: {TITLES[name]}", np.uint8, registry_launch(cfg),
                      simulator=False, chapter="7b",
                      compile=((K.kernel_for(cfg), K.signature(cfg)),),
                      edges=K.edges(cfg) + "; K is padded to a multiple of 16 (bytes of a row)",
                      dtype_name=f.numpy_type.__name__, tile=(cfg.bm, cfg.bn, cfg.bk),
                      min_cc=(9, 0), max_cc=(9, 0), needs=needs(cfg),
                      check=checker(name, cfg), config=cfg)


SPECS = [_spec(name, cfg.validate()) for name, cfg in CONFIGS.items()]

#: Variants the ``fp8`` experiment times beside the registered kernels (one change each).
SWEEP_CONFIGS = {
    "e4m3 promote every 256": replace(_PROMOTING, promote=256),
    "e4m3 promote every 512": replace(_PROMOTING, promote=512),
    "e4m3 block scales, FP32 out": replace(CONFIGS["fp8_e4m3_block"], out="f32"),
    "e4m3 128x128, no promotion": replace(_PROMOTING, promote=0),
    "e4m3 128x192": replace(_BASE, bn=192),
    "e4m3 128x192, promote every 128": replace(_PROMOTING, bn=192, stages=4),
    # the block-scaled kernel's main loop as it was (the slot by a division, each descriptor
    # from an address), timed beside the counted one
    "e4m3 block scales, divided slots": replace(CONFIGS["fp8_e4m3_block"], counters=False,
                                                steps=False),
}

