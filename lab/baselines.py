"""cuBLAS as the yardstick, called through CuPy's low-level cuBLAS binding (GPU only).

Every chapter compares its kernels with the vendor library on the same GPU, in the same process
run. This module is the one place that knows how to ask cuBLAS for a product, so every chapter
gets the same call with the same precision settings.

Usage (numba device arrays in, result written into ``C``)::

    from lab import baselines
    baselines.available()                 # kinds that work here: [] without CuPy or a GPU
    baselines.launch("fp32", A, B, C)     # C = A @ B through cublasGemmEx
    row = baselines.time("fp32", 4096, 4096, 4096)   # checked, then timed like bench.time_kernel

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

bfloat16 travels as ``uint16`` bit patterns, the same convention as :mod:`lab.bench`
(``bench.to_format(x, np.uint16)``); cuBLAS is told the bits are ``CUDA_R_16BF``.

Why ``cublasGemmEx`` and not ``cupy.matmul``: CuPy decides TF32 from the ``CUPY_TF32``
environment variable read once at import, which a running notebook cannot change reliably;
``gemmEx`` takes the compute type per call, so "TF32 off" and "TF32 on" are explicit and both
can be measured in one process. For FP32 the handle's math mode is also set to
``CUBLAS_DEFAULT_MATH`` before the call, so nothing else can switch TF32 on behind our back.

Row-major trick: cuBLAS is column-major. A row-major M×N matrix is the column-major N×M matrix
of its transpose, so ``C = A·B`` (row-major) is computed as ``Cᵀ = Bᵀ·Aᵀ`` (column-major) with
no transposes: ``gemmEx(N, N, m=N, n=M, k=K, B, ldb=N, A, lda=K, C, ldc=N)``.

Streams: the call goes on CuPy's current stream, which by default is the legacy default stream
that Numba launches and CUDA events also use, so :func:`lab.bench.time_gpu` times it correctly.
CuPy is imported lazily: importing this module never needs CuPy or a GPU.
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


def check(kind: str, m: int, n: int, k: int, *, seed: int | None = None):
    """One call on fresh random inputs against float64; a :class:`lab.bench.CheckResult`."""
    from numba import cuda

    from lab import bench

    spec = get_kind(kind)
    seed = bench.new_seed() if seed is None else seed
    a, b = bench.random_inputs(m, n, k, spec.in_dtype, np.random.default_rng(seed))
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=spec.out_dtype))
    launch(kind, cuda.to_device(a), cuda.to_device(b), d_c)
    cuda.synchronize()
    # FP32 runs on CUDA cores; TF32 rounds the inputs to 10 stored bits, which the reference
    # does not see; the FP16 output of fp16_out16 is accounted for by compare() itself.
    return bench.compare(d_c.copy_to_host(), a, b, kernel=f"cublas_{kind}", seed=seed,
                         tensor_cores=kind != "fp32", dtype_name=spec.in_name,
                         input_unit=bench.TF32_INPUT_UNIT if kind == "tf32" else 0.0)


def time(kind: str, m: int, n: int, k: int, *, rotate: bool = False, warmup: int = 3,
         repeats: int = 20, check_first: bool = True) -> dict:
    """Check, then time ``kind`` at one shape; a results row shaped like
    :func:`lab.bench.time_kernel`'s (``kernel`` is ``"cublas_<kind>"``)."""
    from numba import cuda

    from lab import bench

    bench.require_gpu()
    spec = get_kind(kind)
    verdict = check(kind, m, n, k) if check_first else None
    if verdict is not None and not verdict.passed:
        raise AssertionError(f"cuBLAS {kind} failed its check: {verdict.line()}")
    per_set = (np.dtype(spec.in_dtype).itemsize * (m * k + k * n)
               + np.dtype(spec.out_dtype).itemsize * m * n)
    sets = []
    for _ in range(bench.buffer_sets(per_set, rotate)):
        a, b = bench.random_inputs(m, n, k, spec.in_dtype)
        sets.append((cuda.to_device(a), cuda.to_device(b),
                     cuda.device_array((m, n), dtype=spec.out_dtype)))
    timing = bench.time_gpu(lambda i: launch(kind, *sets[i % len(sets)]),
                            warmup=warmup, repeats=repeats, rotated=rotate)
    row = {"kernel": f"cublas_{kind}", "m": m, "n": n, "k": k, "dtype": spec.in_name,
           "out_dtype": np.dtype(spec.out_dtype).name, **timing.row(),
           "tflops": timing.tflops(2.0 * m * n * k)}
    if verdict is not None:
        row.update(rel_frobenius=verdict.rel_frobenius,
                   max_err_over_max_entry=verdict.max_err_over_max_entry)
    return row
