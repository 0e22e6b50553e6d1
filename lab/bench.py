"""The face the chapters and experiments call: check and time any provider by name.

:func:`check` runs a provider (:mod:`lab.providers`: one of our kernels, ``cublas_<kind>``, a
CUDA C twin or a library peer) once on fresh random inputs with its output poisoned with NaN and
compares the result with float64 (:mod:`lab.accuracy` says what passes); :func:`time` checks it,
then times it with CUDA events (:mod:`lab.timing`). The names of those two modules that chapters
and experiments use are re-exported here, so ``bench`` is the one module they import for both.
"""
from __future__ import annotations

import numpy as np

from lab import providers, twins
from lab.accuracy import (LAMBDA, TENSOR_CORE_FACTOR, TF32_INPUT_UNIT, UNIT, CheckResult,
                          bound_factor, compare, new_seed, poisoned, random_inputs, to_float64,
                          to_format)
from lab.api import matmul
from lab.kernels import REGISTRY, shapes_for
from lab.timing import (QUEUE_BATCH, QUEUE_BATCHES, QUEUE_WARMUP, SPIN_MIN_MS, Operands, Spinner,
                        Timing, buffer_sets, compile_ahead, process_spinner, require_gpu,
                        time_gpu, time_queued)

#: The face: :func:`check` and :func:`time`, and what chapters and experiments use of
#: :mod:`lab.accuracy`, :mod:`lab.timing` and :mod:`lab.kernels` beside them.
__all__ = ["check", "time", "shapes_for",
           "UNIT", "LAMBDA", "TENSOR_CORE_FACTOR", "TF32_INPUT_UNIT", "CheckResult",
           "bound_factor", "compare", "new_seed", "random_inputs", "to_float64", "to_format",
           "QUEUE_BATCH", "QUEUE_BATCHES", "QUEUE_WARMUP", "SPIN_MIN_MS", "Operands", "Spinner",
           "Timing", "buffer_sets", "compile_ahead", "process_spinner", "require_gpu",
           "time_gpu", "time_queued"]


def check(name: str, m: int, n: int, k: int, *, seed: int | None = None) -> CheckResult:
    """Run provider ``name`` (:mod:`lab.providers`: one of our kernels, ``cublas_<kind>``, a
    twin, a library) once on random inputs drawn from ``seed`` (fresh when None), its output
    poisoned with NaN, and compare with float64; the result carries the seed, so
    ``check(name, m, n, k, seed=s)`` replays it. A registered kernel that computes more than the
    product (a fused epilogue) is checked whole, by its own ``KernelSpec.check``.

    An unknown name raises ValueError listing the known ones; a provider that cannot run here
    (or at this shape) raises :class:`lab.providers.ProviderUnavailable` (a
    :class:`lab.kernels.KernelUnavailable`) with its reason, before anything is allocated."""
    provider = providers.get(name)
    if provider.family == "numba":
        spec = REGISTRY[name]
        if spec.check is not None:
            return spec.check(m, n, k, seed=seed)
        seed = new_seed() if seed is None else seed
        a, b = random_inputs(m, n, k, provider.dtype, np.random.default_rng(seed))
        out = matmul(a, b, kernel=name)
        return compare(out, a, b, kernel=name, seed=seed, dtype_name=provider.dtype_name)
    provider.require(m, n, k)
    from numba import cuda

    seed = new_seed() if seed is None else seed
    a, b = random_inputs(m, n, k, provider.dtype, np.random.default_rng(seed))
    d_c = cuda.to_device(poisoned((m, n), provider.out_dtype))
    provider.prepare(cuda.to_device(a), cuda.to_device(b), d_c)()
    cuda.synchronize()
    return compare(d_c.copy_to_host(), a, b, kernel=name, seed=seed,
                   tensor_cores=provider.tensor_cores, input_unit=provider.input_unit,
                   dtype_name=provider.dtype_name)


def time(name: str, m: int, n: int, k: int, *, rotate: bool = False, warmup: int = 3,
         repeats: int = 20, check_first: bool = True) -> dict:
    """Check, then time provider ``name`` at one shape with CUDA events; a results row:
    kernel, m, n, k, dtype (out_dtype and twin_of where the provider is not one of our
    kernels), median/min/max ms, repeats, warmup, rotated, tflops and, when checked, the
    check's errors. ``rotate`` cycles through enough buffer sets to exceed the L2 cache.

    An unknown name raises ValueError, a provider that cannot run here
    :class:`lab.providers.ProviderUnavailable`, both before anything is launched; a failed
    check raises AssertionError before anything is timed."""
    from numba import cuda

    provider = providers.get(name)
    provider.require(m, n, k)
    require_gpu()
    verdict = check(name, m, n, k) if check_first else None
    if verdict is not None and not verdict.passed:
        raise AssertionError(f"{name} failed its check before timing: {verdict.line()}")
    per_set = (np.dtype(provider.dtype).itemsize * (m * k + k * n)
               + np.dtype(provider.out_dtype).itemsize * m * n)
    calls = []
    for _ in range(buffer_sets(per_set, rotate)):
        a, b = random_inputs(m, n, k, provider.dtype)
        calls.append(provider.prepare(cuda.to_device(a), cuda.to_device(b),
                                      cuda.device_array((m, n), dtype=provider.out_dtype)))
    timing = time_gpu(lambda i: calls[i % len(calls)](), warmup=warmup, repeats=repeats,
                      rotated=rotate)
    row = {"kernel": name}
    if provider.family == "twin":
        row["twin_of"] = twins.get_twin(name).twin_of
    row.update(m=m, n=n, k=k, dtype=provider.dtype_name)
    if provider.family != "numba":
        row["out_dtype"] = np.dtype(provider.out_dtype).name
    row.update(**timing.row(), tflops=timing.tflops(2.0 * m * n * k))
    if verdict is not None:
        row.update(rel_frobenius=verdict.rel_frobenius,
                   max_err_over_max_entry=verdict.max_err_over_max_entry,
                   err_over_bound=verdict.err_over_bound)
    return row

