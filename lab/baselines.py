"""cuBLAS as the yardstick, called through CuPy's low-level cuBLAS binding (GPU only).

Every chapter compares its kernels with the vendor library on the same GPU, in the same process
run. This module is the one place that knows how to ask cuBLAS for a product, so every chapter
gets the same call with the same precision settings.

Usage (numba device arrays in, result written into ``C``)::

    from lab import baselines
    baselines.available()                 # kinds that work here: [] without CuPy or a GPU
    baselines.launch("fp32", A, B, C)     # C = A @ B through cublasGemmEx
    baselines.launch_layout("TN", A_stored_transposed, B, C)   # A and/or B stored transposed

Kinds (:data:`KINDS`), inputs → output, and the cuBLAS compute type:

========================  ======================  ========  ==============================
kind                      A, B                    C         compute type / math mode
========================  ======================  ========  ==============================
``fp32``                  float32                 float32   COMPUTE_32F, default math
                                                            (TF32 **off**: true FP32 FFMA)
``tf32``                  float32                 float32   COMPUTE_32F_FAST_TF32 (tensor
                                                            cores, inputs rounded to TF32)
``fp16``                  float16                 float32   COMPUTE_32F (FP32 accumulate)
``fp16_out16``            float16                 float16   COMPUTE_32F (FP32 accumulate,
                                                            FP16 output)
``bf16``                  bfloat16 (uint16 bits)  float32   COMPUTE_32F (FP32 accumulate)
========================  ======================  ========  ==============================

bfloat16 travels as ``uint16`` bit patterns, the same convention as :mod:`lab.accuracy`
(``accuracy.to_format(x, np.uint16)``); cuBLAS is told the bits are ``CUDA_R_16BF``.

Why ``cublasGemmEx`` and not ``cupy.matmul``: CuPy decides TF32 from the ``CUPY_TF32``
environment variable read once at import, which a running notebook cannot change reliably;
``gemmEx`` takes the compute type per call, so "TF32 off" and "TF32 on" are explicit and both
can be measured in one process. For FP32 the handle's math mode is also set to
``CUBLAS_DEFAULT_MATH`` before the call, so nothing else can switch TF32 on behind our back.

Row-major trick: cuBLAS is column-major. A row-major M×N matrix is the column-major N×M matrix
of its transpose, so ``C = A·B`` (row-major) is computed as ``Cᵀ = Bᵀ·Aᵀ`` (column-major) with
no transposes: ``gemmEx(N, N, m=N, n=M, k=K, B, ldb=N, A, lda=K, C, ldc=N)``.

Streams: the call goes on CuPy's current stream, which by default is the legacy default stream
that Numba launches and CUDA events also use, so :func:`lab.timing.time_gpu` times it correctly.
CuPy is imported lazily: importing this module never needs CuPy or a GPU.

Each kind is also the provider ``cublas_<kind>`` of :mod:`lab.providers`, so
:func:`lab.bench.check` and :func:`lab.bench.time` take it by name (``cublas_fp32``, …).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab import device

# cudaDataType_t values (library_types.h) and cublasComputeType_t / math modes (cublas_api.h).
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_DEFAULT_MATH = 0
CUBLAS_OP_N = 0
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_POINTER_MODE_HOST = 0


@dataclass(frozen=True)
class Kind:
    """One way of asking cuBLAS for C = A·B."""
    name: str
    title: str
    in_dtype: type            # numpy dtype of A and B as stored (uint16 = bfloat16 bits)
    out_dtype: type           # numpy dtype of C
    in_cuda: int              # cudaDataType_t of A and B
    out_cuda: int             # cudaDataType_t of C
    compute: int              # cublasComputeType_t
    tolerance: float          # check tolerance vs float64 (both error measures)
    in_name: str = ""         # dtype name for tables ("bfloat16" for the uint16 bits)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("fp32", "cuBLAS FP32 (TF32 off)", np.float32, np.float32, CUDA_R_32F, CUDA_R_32F,
         CUBLAS_COMPUTE_32F, 1e-5, "float32"),
    Kind("tf32", "cuBLAS TF32 tensor cores", np.float32, np.float32, CUDA_R_32F, CUDA_R_32F,
         CUBLAS_COMPUTE_32F_FAST_TF32, 5e-3, "float32"),
    Kind("fp16", "cuBLAS FP16 in, FP32 out", np.float16, np.float32, CUDA_R_16F, CUDA_R_32F,
         CUBLAS_COMPUTE_32F, 1e-2, "float16"),
    Kind("fp16_out16", "cuBLAS FP16 in, FP16 out", np.float16, np.float16, CUDA_R_16F,
         CUDA_R_16F, CUBLAS_COMPUTE_32F, 1e-2, "float16"),
    Kind("bf16", "cuBLAS BF16 in, FP32 out", np.uint16, np.float32, CUDA_R_16BF, CUDA_R_32F,
         CUBLAS_COMPUTE_32F, 1e-2, "bfloat16"),
)}


def _cupy():
    import cupy  # noqa: F401  (optional dependency, GPU only)
    from cupy.cuda import cublas
    return cupy, cublas


def available() -> list[str]:
    """The kinds that can run here: all of :data:`KINDS` on a GPU with CuPy, else ``[]``."""
    if not device.GPU:
        return []
    try:
        _cupy()
    except Exception:  # noqa: BLE001 - CuPy missing or broken: no baselines
        return []
    return list(KINDS)


def get_kind(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown baseline {kind!r}; known: {', '.join(KINDS)}") from None


def _ptr(x) -> int:
    return int(x.__cuda_array_interface__["data"][0])


def _check_operands(spec: Kind, A, B, C) -> tuple[int, int, int]:
    m, k = A.shape
    k2, n = B.shape
    if k2 != k or tuple(C.shape) != (m, n):
        raise ValueError(f"shapes do not chain: A {A.shape}, B {B.shape}, C {C.shape}")
    for label, x, want in (("A", A, spec.in_dtype), ("B", B, spec.in_dtype),
                           ("C", C, spec.out_dtype)):
        if np.dtype(x.dtype) != np.dtype(want):
            raise ValueError(f"baseline {spec.name!r}: {label} must be {np.dtype(want).name}, "
                             f"got {np.dtype(x.dtype).name}")
        if not x.is_c_contiguous():
            raise ValueError(f"baseline {spec.name!r}: {label} must be C-contiguous")
    return m, n, k


_ONE = np.ones(1, dtype=np.float32)
_ZERO = np.zeros(1, dtype=np.float32)


def launch(kind: str, A, B, C) -> None:
    """``C = A @ B`` through ``cublasGemmEx`` as ``kind`` prescribes (numba device arrays)."""
    spec = get_kind(kind)
    m, n, k = _check_operands(spec, A, B, C)
    cupy, cublas = _cupy()
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, CUBLAS_DEFAULT_MATH)
    # Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands, swap m and n.
    cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
                  _ONE.ctypes.data, _ptr(B), spec.in_cuda, n,
                  _ptr(A), spec.in_cuda, k,
                  _ZERO.ctypes.data, _ptr(C), spec.out_cuda, n,
                  spec.compute, CUBLAS_GEMM_DEFAULT)


# ----------------------------------------------------------------------------- layouts

#: Storage layouts of A and B: first letter A's, second B's; ``T`` = stored transposed.
LAYOUTS = ("NN", "TN", "NT", "TT")
CUBLAS_OP_T = 1          # cublasOperation_t (cublas_api.h)


def gemm_arguments(layout: str, m: int, n: int, k: int) -> dict:
    """The column-major ``gemm`` arguments for row-major ``C = op(A)·op(B)`` stored as
    ``layout``: the first cuBLAS operand is B's storage, the second A's (pure arithmetic,
    tested against a NumPy model of column-major ``gemm`` in ``tests/experiments/test_shapes.py``)."""
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    return {"op_first": CUBLAS_OP_T if b_t else CUBLAS_OP_N,
            "op_second": CUBLAS_OP_T if a_t else CUBLAS_OP_N,
            "m": n, "n": m, "k": k, "ld_first": k if b_t else n,
            "ld_second": m if a_t else k, "ld_out": n}


def layout_operands(layout: str, a: np.ndarray, b: np.ndarray):
    """Host A (M×K) and B (K×N) stored as ``layout`` asks (transposed copies for ``T``)."""
    a_store = np.ascontiguousarray(a.T) if layout[0] == "T" else a
    b_store = np.ascontiguousarray(b.T) if layout[1] == "T" else b
    return a_store, b_store


def launch_layout(layout: str, A, B, C, kind: str = "fp16") -> None:
    """Row-major ``C = op(A) · op(B)`` through ``cublasGemmEx`` with its op flags.

    ``layout`` is two letters, A's then B's: ``N`` = stored as used (A is M×K, B is K×N),
    ``T`` = stored transposed (A as K×M, B as N×K), all C-contiguous. cuBLAS is column-major,
    so the call computes Cᵀ (N×M) = op(B-storage) · op(A-storage): a row-major K×N B is the
    column-major N×K matrix Bᵀ (no op, ld = N); a row-major N×K B is column-major K×N, which
    needs op T (ld = K). Likewise for A with ld K (as used) or M (transposed).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    spec = get_kind(kind)
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    m, n = C.shape
    k = A.shape[0] if a_t else A.shape[1]
    if (B.shape[1] if b_t else B.shape[0]) != k:
        raise ValueError(f"layout {layout}: shapes do not chain: A {A.shape}, B {B.shape}")
    if (A.shape[1] if a_t else A.shape[0]) != m or (B.shape[0] if b_t else B.shape[1]) != n:
        raise ValueError(f"layout {layout}: C {C.shape} does not match A {A.shape}, "
                         f"B {B.shape}")
    for name, x, want in (("A", A, spec.in_dtype), ("B", B, spec.in_dtype),
                          ("C", C, spec.out_dtype)):
        if np.dtype(x.dtype) != np.dtype(want) or not x.is_c_contiguous():
            raise ValueError(f"layout {layout}: {name} must be C-contiguous "
                             f"{np.dtype(want).name}")
    call = gemm_arguments(layout, m, n, k)
    cupy, cublas = _cupy()
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, CUBLAS_DEFAULT_MATH)
    cublas.gemmEx(handle, call["op_first"], call["op_second"], call["m"], call["n"], call["k"],
                  _ONE.ctypes.data, _ptr(B), spec.in_cuda, call["ld_first"],
                  _ptr(A), spec.in_cuda, call["ld_second"],
                  _ZERO.ctypes.data, _ptr(C), spec.out_cuda, call["ld_out"],
                  spec.compute, CUBLAS_GEMM_DEFAULT)


def check_layout(layout: str, m: int, n: int, k: int, kind: str = "fp16"):
    """One call of :func:`launch_layout` on fresh inputs against float64 (a CheckResult named
    ``cublas_<kind>_<layout>``)."""
    from numba import cuda

    from lab import accuracy

    spec = get_kind(kind)
    a, b = accuracy.random_inputs(m, n, k, spec.in_dtype)
    a_s, b_s = layout_operands(layout, a, b)
    d_c = cuda.to_device(accuracy.poisoned((m, n), spec.out_dtype))
    launch_layout(layout, cuda.to_device(a_s), cuda.to_device(b_s), d_c, kind)
    cuda.synchronize()
    return accuracy.compare(d_c.copy_to_host(), a, b, dtype_name=spec.in_name,
                            kernel=f"cublas_{kind}_{layout}")
