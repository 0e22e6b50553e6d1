"""The library layers above cuBLAS as providers: cuBLASLt (through PyTorch) and Triton.

* ``cublaslt_fp16``, ``cublaslt_fp32`` — ``torch.mm`` with PyTorch's preferred BLAS library
  set to cuBLASLt for the call (``torch.backends.cuda.preferred_blas_library("cublaslt")``):
  the matmul goes through ``cublasLtMatmul`` with the algorithm cuBLASLt's heuristic ranks
  first. FP16 in, FP16 out (what ``torch.mm`` on half tensors writes), FP32 accumulation with
  reduced-precision reductions off; FP32 with TF32 off. :func:`kernels_launched` names the
  kernel the heuristic picked.
* ``triton_fp16``, ``triton_fp32`` — our autotuned Triton matmul (:mod:`lab.triton_gemm`),
  FP32 out, like ``tc_fp16`` and ``cublas_fp16``.

Device buffers are numba device arrays; each is wrapped once as a PyTorch tensor over the same
memory (``__cuda_array_interface__``) when a provider is prepared. PyTorch and Triton launch on
the legacy default stream, as Numba and CuPy do, so CUDA events bracket their kernels.
Nothing here imports PyTorch or Triton until a provider is prepared or asked if it can run.

The CUTLASS Python DSL is not a provider: :func:`cutlass_reason` says why.
"""
from __future__ import annotations

import importlib.util

from lab import device

#: The CUTLASS Python DSL's wheels for CPython 3.11, x86-64 (``pip download --no-deps``,
#: version 4.8.1): the package itself is a 10 kB stub; its compiler and runtime come in the
#: libs wheels (plus ``nvidia-cutlass-dsl-libs-core``), MB each.
CUTLASS_DSL_WHEELS_MB = {"nvidia-cutlass-dsl": 0.01, "nvidia-cutlass-dsl-libs-base": 3.1,
                         "nvidia-cutlass-dsl-libs-cu13": 92.0}


def torch_reason() -> str | None:
    """Why PyTorch cannot run a GPU matmul here, or None."""
    if not device.GPU:
        return f"needs a GPU (device mode {device.MODE!r})"
    if importlib.util.find_spec("torch") is None:
        return "needs PyTorch (not installed)"
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken install: say how
        return f"needs PyTorch ({type(exc).__name__}: {exc})"
    if not torch.cuda.is_available():
        return "needs PyTorch built with CUDA (torch.cuda.is_available() is False)"
    return None


def triton_reason() -> str | None:
    """Why our Triton matmul cannot run here, or None."""
    why = torch_reason()
    if why is not None:
        return why
    if importlib.util.find_spec("triton") is None:
        return "needs Triton (not installed)"
    try:
        import lab.triton_gemm  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"needs a working Triton ({type(exc).__name__}: {exc})"
    return None


def cutlass_reason() -> str:
    """Why the chapter has no CUTLASS DSL row on this machine (a sentence)."""
    total = sum(CUTLASS_DSL_WHEELS_MB.values())
    if importlib.util.find_spec("cutlass") is None:
        return (f"the CUTLASS Python DSL (nvidia-cutlass-dsl, about {total:.0f} MB of wheels, "
                f"the CUDA 13 libs wheel alone "
                f"{CUTLASS_DSL_WHEELS_MB['nvidia-cutlass-dsl-libs-cu13']:.0f} MB) was not "
                f"installed on the measuring machine")
    return ("the CUTLASS Python DSL is installed, but the course has no CuTe DSL GEMM of its "
            "own yet")


def as_tensor(x):
    """A PyTorch CUDA tensor over the memory of a numba device array (no copy)."""
    import torch

    return torch.as_tensor(x, device="cuda")


def torch_settings() -> dict:
    """Set and return the PyTorch matmul settings the cuBLASLt providers run under: TF32 off
    for FP32, no reduced-precision reductions for FP16 (the error bound assumes FP32 sums)."""
    import torch

    matmul = torch.backends.cuda.matmul
    matmul.allow_fp16_reduced_precision_reduction = False
    try:
        matmul.fp32_precision = "ieee"
    except (AttributeError, RuntimeError):
        matmul.allow_tf32 = False
    return {"allow_fp16_reduced_precision_reduction": False, "fp32": "ieee (TF32 off)",
            "preferred_blas_library": "cublaslt, set around each call"}


def lt_prepare(A, B, C):
    """Bind A, B, C (numba device arrays) to one ``torch.mm`` call that prefers cuBLASLt."""
    import torch

    torch_settings()
    a, b, c = as_tensor(A), as_tensor(B), as_tensor(C)
    prefer = torch.backends.cuda.preferred_blas_library

    def call():
        before = prefer()
        prefer("cublaslt")
        try:
            torch.mm(a, b, out=c)
        finally:
            prefer(before)
    return call


def triton_prepare(precision: str):
    """The ``prepare`` of the Triton provider of ``precision`` (``fp16`` or ``fp32``)."""
    def prepare(A, B, C):
        from lab import triton_gemm

        return triton_gemm.bind(as_tensor(A), as_tensor(B), as_tensor(C), precision)
    return prepare


def triton_choice(name: str, m: int, n: int, k: int) -> str:
    """The configuration Triton's autotuner kept for ``triton_fp16``/``triton_fp32`` at M×N×K."""
    from lab import triton_gemm

    return (triton_gemm.chosen(name.split("_")[1], m, n, k)
            or "autotuner's choice (not yet tuned at this shape)")


def kernels_launched(call) -> list[str]:
    """Names of the GPU kernels one ``call()`` launches, from PyTorch's profiler (CUPTI sees
    every kernel of the process, whichever library launched it); copies and fills left out."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events()
             if e.device_type == torch.autograd.DeviceType.CUDA}
    return sorted(n for n in names if not n.lower().startswith(("memcpy", "memset")))
