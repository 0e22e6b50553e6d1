"""``lab.scaled.scaled_gemm``: an FP8 product as production calls it, C = (sa·A)·(sb·B), on
chapter 7b's kernels.

* ``A``: M×K FP8 codes; ``Bt``: N×K codes of Bᵀ (a linear layer's weight as stored, and the
  layout of cuBLASLt's FP8 "TN" GEMM and ``torch._scaled_mm``'s second operand transposed).
  PyTorch's ``float8_e4m3fn`` / ``float8_e5m2`` tensors, or uint8 codes (Numba, CuPy, PyTorch
  or NumPy) with ``fmt="e4m3"`` or ``"e5m2"`` saying which format they hold.
* ``scale_a``, ``scale_b``: float32. Per-tensor: a number or an array of shape (1, 1) each.
  Block scales (e4m3): one per 1×128 block of A, shape (M, ⌈K/128⌉), and one per 128×128 block
  of Bᵀ, (⌈N/128⌉, ⌈K/128⌉), as DeepSeek-V3 and DeepGEMM scale.
* ``out``: M×N, BF16 or FP32 (``out_dtype`` when ``out`` is None; BF16 by default).

The kernel (:func:`choose`): per-tensor e4m3 with a BF16 C, ``fp8_e4m3_tile`` (whole-tile
staging, a grid of 128); with an FP32 C ``fp8_e4m3``, or with ``promote=True`` the kernel that
adds the tensor cores' partial sums into FP32 registers every 128 k (``fp8_e4m3_promote``);
block scales, ``fp8_e4m3_block`` (BF16 C, promotion at every block); e5m2, ``fp8_e5m2`` (FP32
C). Other combinations are refused, naming what is there.

Everything is checked before anything is copied or launched: the formats, shapes and layouts,
the scales' shapes and type, and (``check_scales=True``, the default) their values, finite and
above zero — scales on the GPU are copied to the host for that, which waits for the GPU;
``check_scales=False`` skips the copy (a call in a CUDA graph). The kernels use ``wgmma``: a GPU
of compute capability 9.0 runs them, and anywhere else the call is refused.
"""
from __future__ import annotations

import numpy as np

from lab.dispatch import GemmError
from lab.lru import LRU
from lab.operands import (Operand, as_numba, check_scale_values, describe, fp8_format,
                          refuse_overlap, refuse_unpacked, scale_operand, upload_codes)

#: Block scaling's block: 1×128 of A, 128×128 of Bᵀ.
BLOCK = 128
#: (format, scaling, C's dtype, promote) -> the registered kernel.
KERNELS = {("e4m3", "tensor", "bfloat16", False): "fp8_e4m3_tile",
           ("e4m3", "tensor", "float32", False): "fp8_e4m3",
           ("e4m3", "tensor", "float32", True): "fp8_e4m3_promote",
           ("e4m3", "block", "bfloat16", True): "fp8_e4m3_block",
           ("e5m2", "tensor", "float32", False): "fp8_e5m2"}


def choose(fmt: str, scaling: str, out_dtype: str, promote: bool) -> str:
    """The registered kernel for this format, scaling and C (block scales always promote);
    GemmError naming the combinations there are."""
    key = (fmt, scaling, out_dtype, promote or scaling == "block")
    if key not in KERNELS:
        there = "; ".join(f"{f} with {s} scales, {o} C" + (", promote" if p and s == "tensor"
                                                              else "")
                          for f, s, o, p in KERNELS)
        raise GemmError(f"no FP8 kernel for {fmt} with {scaling} scales, a {out_dtype} C"
                        + (" and promotion" if promote else "") + f": there are {there}")
    return KERNELS[key]


def _packed(x: Operand) -> None:
    if len(x.shape) != 2:
        raise GemmError(f"{x.label} must be 2-D, got shape {x.shape}")
    if 0 in x.shape:
        raise GemmError(f"{x.label} has an empty dimension (shape {x.shape})")
    refuse_unpacked(x)


def validate(A: Operand, Bt: Operand, out: Operand | None, fmt, out_dtype, sa, sb):
    """``(format, scaling, M, N, K, C's dtype, scale operands and host values)`` after every
    check; GemmError naming the operand and the problem."""
    fa, fb = fp8_format(A, fmt, "scaled_gemm"), fp8_format(Bt, fmt, "scaled_gemm")
    if fa != fb:
        raise GemmError(f"A holds {fa} codes but Bt {fb}; both must be one format")
    for x in (A, Bt):
        _packed(x)
    (m, k), (n, kb) = A.shape, Bt.shape
    if kb != k:
        raise GemmError(f"A is {m}x{k} but Bt is {n}x{kb}: Bt is B transposed, N×K, so its "
                        f"rows must hold K = {k} codes")
    if out is not None:
        _packed(out)
        if out.shape != (m, n):
            raise GemmError(f"out has shape {out.shape}; the product is {(m, n)}")
        if out.dtype not in ("bfloat16", "float32"):
            raise GemmError(f"out is {out.dtype}; an FP8 product is written as bfloat16 or "
                            "float32")
        if out_dtype is not None and out_dtype != out.dtype:
            raise GemmError(f"out is {out.dtype} but out_dtype says {out_dtype}")
    odt = out.dtype if out is not None else (out_dtype or "bfloat16")
    if odt not in ("bfloat16", "float32"):
        raise GemmError(f"out_dtype is {odt}; an FP8 product is written as bfloat16 or float32")
    for x in (Bt,) + ((out,) if out is not None else ()):
        if x.host != A.host:
            raise GemmError(f"{x.label} is {'on the host' if x.host else 'on the GPU'} but A "
                            f"is {'on the host' if A.host else 'on the GPU'}: keep them together")
    refuse_overlap(out, (A, Bt))
    kblocks = -(-k // BLOCK)
    (da, ha, shape_a), (db, hb, shape_b) = (scale_operand(sa, "scale_a"),
                                            scale_operand(sb, "scale_b"))
    tensor = shape_a == (1, 1) and shape_b == (1, 1)
    scaling = "tensor" if tensor else "block"
    if not tensor:
        want = {"scale_a": (m, kblocks), "scale_b": (-(-n // BLOCK), kblocks)}
        for label, shape in (("scale_a", shape_a), ("scale_b", shape_b)):
            if tuple(shape) != want[label]:
                raise GemmError(f"{label} has shape {tuple(shape)}: per-tensor scales are "
                                f"(1, 1) each; block scales are (M, ceil(K/128)) = "
                                f"{want['scale_a']} for A and (ceil(N/128), ceil(K/128)) = "
                                f"{want['scale_b']} for Bt")
    for x in (da, db):
        if x is not None:
            if len(x.shape) == 2:
                _packed(x)
            if A.host:
                raise GemmError(f"{x.label} is on the GPU but A is on the host: keep them "
                                "together")
    return fa, scaling, m, n, k, odt, (da, ha), (db, hb)


_LAUNCHERS = LRU(8)                     # kernel name -> its (memoised) launcher


def scaled_gemm(A, Bt, out=None, *, scale_a, scale_b, fmt: str | None = None,
                out_dtype=None, promote: bool = False, check_scales: bool = True):
    """C = (scale_a·A)·(scale_b·B) for FP8 codes A (M×K) and Bt (N×K, B transposed), as the
    module docstring says; returns ``out`` (when None, a new array of A's library: BF16 by
    default, or ``out_dtype``)."""
    from lab import device
    from lab.operands import dtype_name

    a, bt = describe(A, "A"), describe(Bt, "Bt")
    o = describe(out, "out") if out is not None else None
    fmt_, scaling, m, n, k, odt, (da, ha), (db, hb) = validate(
        a, bt, o, fmt, dtype_name(out_dtype), scale_a, scale_b)
    name = choose(fmt_, scaling, odt, promote)
    check_scale_values({"scale_a": (da, ha), "scale_b": (db, hb)}, check_scales)
    if not device.GPU:
        raise GemmError(f"{name} uses wgmma and runs on a GPU of compute capability 9.0; this "
                        f"session runs in {device.MODE} mode")
    from numba import cuda

    from lab.kernels import get_spec, runnable

    ok, line = runnable(name)
    if not ok:
        raise GemmError(line)
    target = out if out is not None else _new(a, (m, n), odt)
    t = describe(target, "out")
    codes = [upload_codes(x) if x.host else as_numba(x, np.uint8) for x in (a, bt)]
    scales = [cuda.to_device(np.ascontiguousarray(h, np.float32)) if h is not None
              else as_numba(d, np.float32, (1, 1) if scaling == "tensor" else d.shape)
              for d, h in ((da, ha), (db, hb))]
    c = cuda.to_device(np.zeros((m, n), np.uint16 if odt == "bfloat16" else np.float32)) \
        if t.host else as_numba(t)
    from lab.kernels import wgmma

    cfg = get_spec(name).config
    launch = _LAUNCHERS.get_or_make(name, lambda: wgmma.launcher(cfg))
    launch(codes[0], codes[1], c, *scales)
    if t.host:
        host = c.copy_to_host()
        target[...] = host.view(target.dtype) if odt == "bfloat16" else host
    return target


def _new(like: Operand, shape, dtype: str):
    """A new C of A's library (NumPy for host codes: float32, or ml_dtypes' bfloat16 bits as
    uint16 when ml_dtypes is absent)."""
    if like.family == "torch":
        import torch
        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.obj.device)
    if like.host:
        if dtype == "float32":
            return np.empty(shape, np.float32)
        try:
            import ml_dtypes
            return np.empty(shape, ml_dtypes.bfloat16)
        except ImportError:
            return np.empty(shape, np.uint16)
    from numba import cuda
    if like.family == "cupy" and dtype == "float32":
        import cupy
        return cupy.empty(shape, np.float32)
    return cuda.device_array(shape, np.uint16 if dtype == "bfloat16" else np.float32)
