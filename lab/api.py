"""``lab.matmul``: host arrays in, float32 host array out, through any registered kernel."""
from __future__ import annotations

import numpy as np

from lab import device
from lab.kernels import KernelUnavailable, get_spec, runnable, validate

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


def matmul(A: np.ndarray, B: np.ndarray, kernel: str = "naive") -> np.ndarray:
    """C = A @ B with the registered kernel ``kernel``; the float32 result as a host array.

    Inputs are validated first (see :func:`lab.kernels.validate`), then the kernel's availability
    here (:func:`lab.kernels.runnable`): a kernel the simulator cannot run, or one that needs a
    newer GPU, raises :class:`lab.kernels.KernelUnavailable` (a RuntimeError) naming the kernel and
    the reason; under the simulator a product larger than :data:`SIMULATOR_MAX_PRODUCT` raises
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
