"""lab — the code behind the course "GEMM on GPUs".

``import lab`` decides first whether kernels run on a GPU or in Numba's CUDA simulator
(:mod:`lab.device`), then exposes :func:`matmul`, the kernel :data:`REGISTRY`, :func:`gemm` and
:func:`grouped_gemm` (with :func:`grouped_scaled_gemm` for FP8).
"""
from lab import device  # noqa: F401  (must come before anything imports numba)
from lab.api import matmul, validate  # noqa: E402
from lab.kernels import REGISTRY, KernelSpec, get_spec  # noqa: E402
from lab.gemm import gemm  # noqa: E402  (lab.gemm.explain says which kernel and why)
from lab.grouped import grouped_gemm, grouped_scaled_gemm  # noqa: E402  (a MoE layer, one launch)

__all__ = ["device", "matmul", "validate", "REGISTRY", "KernelSpec", "get_spec", "gemm",
           "grouped_gemm", "grouped_scaled_gemm"]
