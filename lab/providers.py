"""One face for everything that computes ``C = A·B``: our kernels, cuBLAS, the CUDA C twins and
the library peers, each an entry of one registry that :func:`lab.bench.check` and
:func:`lab.bench.time` accept by name.

A :class:`Provider` says what it takes (``dtype``), what it writes (``out_dtype``), whether it
can run here (``available() -> None`` or the reason it cannot) and how to run: ``prepare(A, B,
C)`` binds one set of device buffers (numba device arrays, C-contiguous) and returns a
zero-argument call that computes ``C = A·B`` into them. Binding once keeps per-call host work
(wrapping buffers for another library, computing a grid) out of the timed loop.

Families (``family``, the ``impl`` of a results row):

==========  ==============================================  ==================================
family      names                                           from
==========  ==============================================  ==================================
``numba``   every registered kernel (``naive`` … ``tc_fp16``)  :mod:`lab.kernels`
``cublas``  ``cublas_<kind>`` (``cublas_fp32``, ``cublas_fp16``…)  :mod:`lab.baselines` (CuPy)
``twin``    ``s003_naive``, ``s004_tiled16`` …                 :mod:`lab.twins` (CuPy, NVRTC)
``library`` ``cublaslt_fp16``, ``cublaslt_fp32``,              :mod:`lab.libraries` (PyTorch,
            ``triton_fp16``, ``triton_fp32``                   Triton)
==========  ==============================================  ==================================

Our kernels are looked up in :data:`lab.kernels.REGISTRY` on every call (so a replaced spec is
seen); the other families are fixed. Optional dependencies (CuPy, PyTorch, Triton) are imported
only when a provider is prepared or asked whether it is available.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lab import baselines, device, kernels, libraries, twins
from lab.accuracy import TF32_INPUT_UNIT
from lab.kernels import KernelUnavailable

#: The layer of the software stack each family (or library provider) belongs to.
LAYERS = ("ours", "CUDA C twin", "cuBLAS", "cuBLASLt", "Triton", "CUTLASS")


class ProviderUnavailable(KernelUnavailable):
    """The provider cannot run here; the message is its ``available()`` reason."""


@dataclass(frozen=True)
class Provider:
    """One way of computing ``C = A·B`` (see the module docstring).

    ``supports(m, n, k)`` returns why a shape cannot be computed (a kernel without bounds
    checks) or None; ``tensor_cores`` and ``input_unit`` set the error bound of
    :func:`lab.accuracy.compare` (None: decided by the input width); ``describe(m, n, k)`` names
    the code path the provider takes at a shape (our kernels' switches, a library's choice).
    """
    name: str
    title: str
    family: str
    layer: str
    dtype: type
    out_dtype: type
    prepare: Callable = field(repr=False)
    available: Callable[[], str | None] = field(repr=False)
    needs_gpu: bool = True
    dtype_name: str = ""
    tensor_cores: bool | None = None
    input_unit: float = 0.0
    supports: Callable[[int, int, int], str | None] | None = field(default=None, repr=False)
    describe: Callable[[int, int, int], str] | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.dtype_name:
            object.__setattr__(self, "dtype_name", np.dtype(self.dtype).name)

    def reason(self) -> str | None:
        """Why this provider cannot run here (a line naming it), or None."""
        return self.available()

    def require(self, m: int | None = None, n: int | None = None, k: int | None = None):
        """Raise :class:`ProviderUnavailable` with :meth:`reason` unless it can run here, and
        ValueError when it cannot compute M×N×K (``supports``)."""
        why = self.available()
        if why is not None:
            raise ProviderUnavailable(why)
        if m is not None and self.supports is not None:
            why = self.supports(m, n, k)
            if why is not None:
                raise ValueError(why)

    def launch(self, A, B, C) -> None:
        """One call on these buffers (binds them first; time a :meth:`prepare`'d call)."""
        self.prepare(A, B, C)()

    def path(self, m: int, n: int, k: int) -> str:
        """The code path at M×N×K (``describe``), or the library's own choice."""
        return self.describe(m, n, k) if self.describe else "library's choice"


# ----------------------------------------------------------------------------- our kernels

def _ours(spec) -> Provider:
    name = spec.name

    def prepare(A, B, C):
        launch = kernels.get_spec(name).launch
        return lambda: launch(A, B, C)

    def available():
        ok, why = kernels.runnable(kernels.get_spec(name))
        return None if ok else why

    return Provider(name, spec.title, "numba", "ours", spec.dtype, np.float32, prepare,
                    available, needs_gpu=not spec.simulator, dtype_name=spec.dtype_name,
                    describe=lambda m, n, k: kernels.get_spec(name).code_path(m, n, k))


# ----------------------------------------------------------------------------- cuBLAS, twins

def _gpu_with_cupy() -> str | None:
    if not device.GPU:
        return f"needs a GPU (device mode {device.MODE!r})"
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - missing or broken: say which
        return f"needs CuPy (pip install -r requirements-gpu.txt): {type(exc).__name__}: {exc}"
    return None


def _cublas(kind) -> Provider:
    def prepare(A, B, C):
        return lambda: baselines.launch(kind.name, A, B, C)

    def available():
        if kind.name in baselines.available():
            return None
        return f"cublas_{kind.name} {_gpu_with_cupy() or 'is not available here'}"

    return Provider(f"cublas_{kind.name}", kind.title, "cublas", "cuBLAS", kind.in_dtype,
                    kind.out_dtype, prepare, available, dtype_name=kind.in_name,
                    tensor_cores=kind.name != "fp32",
                    input_unit=TF32_INPUT_UNIT if kind.name == "tf32" else 0.0)


def _twin(t) -> Provider:
    def prepare(A, B, C):
        return lambda: twins.launch(t.name, A, B, C)

    def available():
        if t.name in twins.available():
            return None
        return f"{t.name} {_gpu_with_cupy() or 'is not available here'}"

    def supports(m, n, k):
        if twins.supports(t.name, m, n, k):
            return None
        return (f"twin {t.name!r} has no bounds checks: M, N, K must be multiples of "
                f"{t.multiple_of} (got {m}x{n}x{k})")

    return Provider(t.name, t.title, "twin", "CUDA C twin", np.float32, np.float32, prepare,
                    available, supports=supports,
                    describe=lambda m, n, k: f"CUDA C twin of {t.twin_of}")


# ----------------------------------------------------------------------------- libraries

@functools.lru_cache(maxsize=1)
def _fixed() -> dict[str, Provider]:
    out: dict[str, Provider] = {}
    for kind in baselines.KINDS.values():
        p = _cublas(kind)
        out[p.name] = p
    for t in twins.TWINS.values():
        out[t.name] = _twin(t)
    for p in _libraries():
        out[p.name] = p
    return out


def _named(name: str, reason):
    """``available()`` for provider ``name``: ``reason()``'s line, prefixed with the name."""
    def available():
        why = reason()
        return None if why is None else f"{name} {why}"
    return available


def _libraries() -> list[Provider]:
    """The library providers (:mod:`lab.libraries`), in the order of the stack."""
    return [
        Provider("cublaslt_fp16", "cuBLASLt via torch.mm, FP16 in, FP16 out", "library",
                 "cuBLASLt", np.float16, np.float16, libraries.lt_prepare,
                 _named("cublaslt_fp16", libraries.torch_reason)),
        Provider("cublaslt_fp32", "cuBLASLt via torch.mm, FP32 (TF32 off)", "library",
                 "cuBLASLt", np.float32, np.float32, libraries.lt_prepare,
                 _named("cublaslt_fp32", libraries.torch_reason), tensor_cores=False),
        Provider("triton_fp16", "Triton matmul (ours), FP16 in, FP32 out", "library",
                 "Triton", np.float16, np.float32, libraries.triton_prepare("fp16"),
                 _named("triton_fp16", libraries.triton_reason),
                 describe=lambda m, n, k: libraries.triton_choice("triton_fp16", m, n, k)),
        Provider("triton_fp32", "Triton matmul (ours), FP32, IEEE (no TF32)", "library",
                 "Triton", np.float32, np.float32, libraries.triton_prepare("fp32"),
                 _named("triton_fp32", libraries.triton_reason), tensor_cores=False,
                 describe=lambda m, n, k: libraries.triton_choice("triton_fp32", m, n, k)),
    ]


def names() -> list[str]:
    """Every provider: our kernels in ladder order, then cuBLAS, twins, libraries."""
    return list(kernels.REGISTRY) + [n for n in _fixed() if n not in kernels.REGISTRY]


def get(name: str) -> Provider:
    """The provider ``name``; ValueError listing every known name otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"provider name must be a str, got {type(name).__name__}")
    if name in kernels.REGISTRY:
        return _ours(kernels.REGISTRY[name])
    try:
        return _fixed()[name]
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; known: {', '.join(names())}") from None


def available(family: str | None = None) -> list[str]:
    """The providers (of ``family``, if given) that can run here."""
    out = []
    for n in names():
        p = get(n)
        if (family is None or p.family == family) and p.reason() is None:
            out.append(n)
    return out


@contextmanager
def registered(provider: Provider):
    """Add ``provider`` to the registry for the duration of a ``with`` block (a reader's own
    provider, a fake in a test); a name already taken raises ValueError."""
    if provider.name in names():
        raise ValueError(f"provider name {provider.name!r} is taken")
    fixed = _fixed()
    fixed[provider.name] = provider
    try:
        yield provider
    finally:
        del fixed[provider.name]
