"""What the sections of chapter 9 share: its providers in the order of the stack, its sizes and
two small formatters."""
from __future__ import annotations

#: The providers of the chapter, in the order of the stack (FP16, then FP32).
FP16 = ("tc_fp16", "cublas_fp16", "cublas_fp16_out16", "cublaslt_fp16", "triton_fp16")
FP32 = ("warptile_tuned", "cublas_fp32", "cublaslt_fp32", "triton_fp32")
SIZES = (4096, 4097, 8192)
CHECK_SHAPES = ((1000, 1030, 999), (1024, 1024, 1024))


def pct(x: float) -> str:
    return f"{x:.0%}"


def short_kernel_name(name: str) -> str:
    """A launched kernel's name without C++ wrapping: ``void cutlass::Kernel2<X>(X::Params)``
    reads ``X``."""
    if "<" in name and ">" in name:
        return name[name.index("<") + 1:name.rindex(">")]
    return name
