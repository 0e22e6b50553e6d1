"""``lab.matmul``: host arrays in, float32 host array out, through any registered kernel."""
from __future__ import annotations

import numpy as np

from lab import device
from lab.kernels import KernelSpec, KernelUnavailable, get_spec, runnable

#: The largest product M·N·K :func:`matmul` runs in the CUDA simulator: 256³. The simulator
#: runs every GPU thread as a Python thread, some 10⁵ multiply-adds a second, so this takes
#: minutes and a 1024³ product would take hours.
SIMULATOR_MAX_PRODUCT = 256 ** 3


def fits_simulator(m: int, n: int, k: int) -> None:
    """ValueError, saying the limit and why, when ``M·N·K`` exceeds
    :data:`SIMULATOR_MAX_PRODUCT` and the kernels run in the simulator; nothing on a GPU."""
    if device.SIMULATOR and m * n * k > SIMULATOR_MAX_PRODUCT:
        raise ValueError(
            f"{m}x{n}x{k} is too large for the CUDA simulator: {m * n * k:,} multiply-adds, "
            f"and the simulator runs each GPU thread as a Python thread at some 10⁵ "
            f"multiply-adds a second, so it would run for about "
            f"{m * n * k / 1e5 / 60:,.0f} minutes. Under the simulator M·N·K may be at most "
            f"{SIMULATOR_MAX_PRODUCT:,} (256x256x256); use smaller matrices, or a GPU")


def validate(A, B, spec: KernelSpec) -> tuple[int, int, int]:
    """Check the operands of ``A @ B`` for the kernel ``spec`` and return ``(M, N, K)``.

    Raises TypeError for something that is not a plain ``numpy.ndarray`` (a masked array's mask
    would be silently dropped, so it is refused too) and ValueError, naming the operand and the
    problem, for a wrong number of dimensions, an empty dimension, inner dimensions that differ,
    a non-native byte order, a dtype the kernel does not take, or a non-contiguous layout.
    """
    for label, x in (("A", A), ("B", B)):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{label} must be a numpy.ndarray, got {type(x).__name__}")
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{label} is a numpy.ma.MaskedArray: its mask would be ignored; "
                            f"pass {label}.filled(value) or numpy.asarray({label}) explicitly")
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
    for label, x in (("A", A), ("B", B)):
        if not x.dtype.isnative:
            order = "big" if x.dtype.byteorder == ">" else "little"
            raise ValueError(f"{label} is {order}-endian ({x.dtype.str}), not this machine's "
                             f"byte order; pass {label}.astype({label}.dtype.newbyteorder('='))")
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

    Inputs are validated first (see :func:`validate`), then the kernel's availability here
    (:func:`lab.kernels.runnable`): a kernel the simulator cannot run, or one that needs a newer
    GPU, raises :class:`lab.kernels.KernelUnavailable` (a RuntimeError) naming the kernel and the
    reason; under the simulator a product larger than :data:`SIMULATOR_MAX_PRODUCT` raises
    ValueError (:func:`fits_simulator`). Nothing is copied or launched before these pass. The
    output buffer is filled with NaN first, so an element the kernel fails to write stays NaN.
    """
    spec = get_spec(kernel)
    m, n, k = validate(A, B, spec)
    ok, why = runnable(spec)
    if ok:
        fits_simulator(m, n, k)
    if not ok:
        raise KernelUnavailable(why)
    from numba import cuda

    d_a = cuda.to_device(A)
    d_b = cuda.to_device(B)
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    spec.launch(d_a, d_b, d_c)
    return d_c.copy_to_host()
