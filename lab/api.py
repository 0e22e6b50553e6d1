"""``lab.matmul``: host arrays in, float32 host array out, through any registered kernel."""
from __future__ import annotations

import numpy as np

from lab.kernels import KernelSpec, get_spec


def validate(A, B, spec: KernelSpec) -> tuple[int, int, int]:
    """Raise TypeError/ValueError naming the problem; return (M, N, K) when the inputs are fine."""
    for label, x in (("A", A), ("B", B)):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{label} must be a numpy.ndarray, got {type(x).__name__}")
    for label, x in (("A", A), ("B", B)):
        if x.ndim != 2:
            raise ValueError(f"{label} must be 2-dimensional, got ndim={x.ndim} "
                             f"(shape {x.shape})")
    for label, x in (("A", A), ("B", B)):
        if 0 in x.shape:
            raise ValueError(f"{label} has an empty dimension (shape {x.shape}); "
                             "every dimension must be >= 1")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: A is {A.shape[0]}x{A.shape[1]} but B is "
                         f"{B.shape[0]}x{B.shape[1]} (A.shape[1] must equal B.shape[0])")
    want = np.dtype(spec.dtype)
    for label, x in (("A", A), ("B", B)):
        if x.dtype != want:
            raise ValueError(f"kernel {spec.name!r} takes {spec.dtype_name} inputs "
                             f"(numpy {want.name}); {label} is {x.dtype.name}")
    for label, x in (("A", A), ("B", B)):
        if not x.flags.c_contiguous:
            raise ValueError(f"{label} is not C-contiguous (a transposed or strided view?); "
                             f"pass numpy.ascontiguousarray({label})")
    return A.shape[0], B.shape[1], A.shape[1]


def matmul(A: np.ndarray, B: np.ndarray, kernel: str = "naive") -> np.ndarray:
    """C = A @ B with the registered kernel ``kernel``; the float32 result as a host array.

    Inputs are validated before anything is copied or launched (see :func:`validate`). The
    output buffer is filled with NaN first, so an element the kernel fails to write stays NaN.
    """
    spec = get_spec(kernel)
    m, n, _ = validate(A, B, spec)
    from numba import cuda

    d_a = cuda.to_device(A)
    d_b = cuda.to_device(B)
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    spec.launch(d_a, d_b, d_c)
    return d_c.copy_to_host()
