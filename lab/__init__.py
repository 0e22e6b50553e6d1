"""lab — the code behind the course "GEMM on GPUs".

``import lab`` decides first whether kernels run on a GPU or in Numba's CUDA simulator
(:mod:`lab.device`), then exposes :func:`matmul` and the kernel :data:`REGISTRY`.
"""
from lab import device  # noqa: F401  (must come before anything imports numba)
from lab.api import matmul, validate  # noqa: E402
from lab.kernels import REGISTRY, KernelSpec, get_spec  # noqa: E402
from lab.gemm import gemm  # noqa: E402  (lab.gemm.explain says which kernel and why)

__all__ = ["device", "matmul", "validate", "REGISTRY", "KernelSpec", "get_spec", "gemm"]
