"""The ladder's kernels, in order, and the registry that names them.

Each rung lives in its own module (``k01_naive.py``, ``k02_tiled.py``, …) with a docstring
saying what changed since the previous rung, its constants, its ``@cuda.jit`` kernel(s) and the
``launch`` functions that own the grid/block arithmetic. Each module exposes ``SPECS``, a list of
:class:`KernelSpec`; :data:`REGISTRY` collects them in ladder order.

Every spec declares its block tile (so checks can aim at its edges: :func:`shapes_for`)
and the oldest compute capability it runs on; :func:`runnable` answers, with one line, whether
this device (or a given capability) can run a kernel, and :func:`lab.matmul` raises
:class:`KernelUnavailable` with that line instead of launching. :func:`validate` checks host
operands against a kernel (:func:`lab.matmul` and the fused-epilogue runner both call it).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lab import device  # (simulator decided before numba is imported)

#: The oldest compute capability the pinned toolkit (CUDA 13: NVVM and ptxas) generates code
#: for. Plain FP32 kernels need nothing newer: their PTX (FFMA, 4- and 16-byte loads and
#: stores, barriers) exists on every capability this toolkit supports.
TOOLKIT_MIN_CC = (7, 5)
TOOLKIT_NEEDS = "CUDA 13 generates no code for older GPUs"

#: The book's pages in reading order, each named as a chapter is named (``_toc.yml``'s ladder:
#: ``book/06_1_waves`` is "6.1", ``book/07b_fp8`` is "7b").
PAGES = ("0", "1", "2", "3", "4", "5", "6.1", "6.2", "6.3", "7.1", "7.2", "7b", "8", "9", "9b",
         "10")


def page_order(chapter: str) -> int:
    """Where page ``chapter`` comes in the book (:data:`PAGES`): the key to sort chapters by,
    "10" after "9b"; ValueError naming ``chapter`` and the pages when it is not one."""
    try:
        return PAGES.index(chapter)
    except ValueError:
        raise ValueError(f"chapter {chapter!r} is not a page of the book; pages: "
                         f"{', '.join(PAGES)}") from None


@dataclass(frozen=True)
class KernelSpec:
    """One registered kernel: what it takes, where it runs, how to launch and compile it.

    ``launch(A, B, C)`` takes device arrays (A: M×K, B: K×N, C: M×N float32, all C-contiguous)
    and owns every grid/block decision. ``compile`` lists ``(dispatcher, signature)`` pairs
    that :mod:`lab.compiler` turns into PTX/SASS offline. ``tile`` is the block tile
    ``(BM, BN, BK)``: the rows and columns of C one block owns and the k-step it walks.
    ``min_cc`` is the oldest compute capability the kernel runs on, ``needs`` what sets it
    (instructions, or the toolkit); ``max_cc`` is set only for code built for one architecture
    (``sm_90a`` features run on compute capability 9.0 alone). ``paths(m, n, k)`` names the
    code path the launch takes at a shape, for kernels that switch or pad (:meth:`code_path`).
    ``check`` is set only for a kernel that computes more than its ``launch`` shows (a fused
    epilogue): ``check(m, n, k, seed=None) -> lab.accuracy.CheckResult`` checks all of it
    against its own float64 reference; :func:`lab.bench.check` picks it over the plain product
    check. ``config`` is the configuration a rung's kernel and launch were built from (a
    frozen dataclass: tile, stages, loaders, …) for the rungs built from one, None for the
    fixed early rungs: the one place a kernel's settings are read from. ``chapter`` is the
    page that teaches the kernel, one of :data:`PAGES` ("6.1", "7b", …).
    """
    name: str
    title: str
    dtype: type
    launch: Callable
    simulator: bool = True
    chapter: str = "1"
    compile: tuple = field(default=(), repr=False)
    edges: str = "bounds checks in the kernel"
    dtype_name: str = ""
    tile: tuple[int, int, int] | None = None
    min_cc: tuple[int, int] = TOOLKIT_MIN_CC
    max_cc: tuple[int, int] | None = None
    needs: str = TOOLKIT_NEEDS
    paths: Callable[[int, int, int], str] | None = field(default=None, repr=False,
                                                        compare=False)
    check: Callable | None = field(default=None, repr=False)
    config: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if not self.dtype_name:
            object.__setattr__(self, "dtype_name", np.dtype(self.dtype).name)
        try:
            page_order(self.chapter)
        except ValueError as exc:
            raise ValueError(f"kernel {self.name!r}: {exc}") from None
        if self.tile is not None and (len(self.tile) != 3 or not all(
                isinstance(t, int) and t >= 1 for t in self.tile)):
            raise ValueError(f"kernel {self.name!r}: tile must be three positive ints "
                             f"(BM, BN, BK), got {self.tile!r}")
        for label, cc in (("min_cc", self.min_cc), ("max_cc", self.max_cc)):
            if cc is not None and (len(cc) != 2 or not all(isinstance(c, int) for c in cc)):
                raise ValueError(f"kernel {self.name!r}: {label} must be (major, minor), "
                                 f"got {cc!r}")

    def code_path(self, m: int, n: int, k: int) -> str:
        """Which code path the launch takes at M×N×K (no GPU needed): ``paths(m, n, k)``
        where the kernel switches or pads by shape, else its one kernel and how it meets the
        edges."""
        return self.paths(m, n, k) if self.paths else f"one kernel, {self.edges}"

    def target(self, cc: tuple[int, int]) -> tuple:
        """The numba ``compile_ptx`` target for capability ``cc``: ``cc`` itself, or
        ``(*cc, "a")`` for code built for one architecture (``sm_90a``)."""
        return (*cc, "a") if self.max_cc is not None else tuple(cc)


#: Rung modules in ladder order.
RUNGS = ("k01_naive", "k02_tiled", "k03_registers", "k04_vectorized", "k05_pipelined",
         "k06_warptile", "k07_wmma", "k07_tensor_core", "k08_tc_pipeline",
         "wgmma.rungs", "wgmma.fp8",
         "fused_epilogue", "splitk", "small_m")


#: Teaching kernels outside the ladder whose compiler facts the book prints, as
#: :func:`lab.compiler.report` names them (``module:function``, signature from the module's
#: ``SIGNATURES``): chapter 0's dependent FMA chains and chapter 3's first, signed-index builds
#: of its register kernels (compiled offline only, never registered).
TEACHING = ("lab.roofline:fma_kernel",
            *(f"lab.kernels.k03_registers:int32_{name}"
              for name in ("patch1", "patch2", "patch4", "patch8", "block128")))


# The modules of RUNGS, in its order, imported by a plain statement so that the import graph
# (``lint-imports``) holds the registry's dependence on each (tests/test_import_contracts.py checks
# the two lists agree). The rungs import KernelSpec and the constants above from this module, so
# this comes after them; what lies below (get_spec, runnable, …) a rung imports inside functions.
from lab.kernels import (  # noqa: E402
    k01_naive, k02_tiled, k03_registers, k04_vectorized, k05_pipelined, k06_warptile, k07_wmma,
    k07_tensor_core, k08_tc_pipeline, fused_epilogue, splitk, small_m)
from lab.kernels.wgmma import fp8 as _wgmma_fp8, rungs as _wgmma_rungs  # noqa: E402


def _collect() -> dict[str, KernelSpec]:
    registry: dict[str, KernelSpec] = {}
    for rung in RUNGS:
        module = sys.modules.get(f"{__name__}.{rung}")
        if module is None:
            raise RuntimeError(f"rung {rung!r} is in RUNGS but the registry does not import it")
        for spec in module.SPECS:
            if spec.name in registry:
                raise RuntimeError(f"kernel name {spec.name!r} registered twice ({rung})")
            if spec.tile is None:
                raise RuntimeError(f"kernel {spec.name!r} ({rung}) declares no block tile")
            registry[spec.name] = spec
    return registry


REGISTRY: dict[str, KernelSpec] = _collect()


def get_spec(name: str) -> KernelSpec:
    """The spec registered as ``name``; ValueError naming the known kernels otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"kernel name must be a str, got {type(name).__name__}")
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown kernel {name!r}; registered kernels: "
                         f"{', '.join(REGISTRY)}") from None


def shapes_for(spec, *, gpu: bool) -> list[tuple[int, int, int]]:
    """The (M, N, K) shapes a kernel is checked on, derived from its block tile (BM, BN, BK).

    Always (small enough for the simulator): 1×1×1; ``(BM+1, BN+1, BK+1)`` — a second block row
    and a second block column that hold one row/column each, a tail in every dimension and a
    second, partial k-step; ``(2·BM, BN, 2·BK)`` — round (the unchecked path where a kernel has
    one), two block rows, two full k-steps; mixed edges, round in two dimensions and ragged in
    the third — ``(BM, BN, BK+1)``, ``(BM, BN+1, BK)``, ``(BM+1, BN, BK)`` — so that a kernel
    which takes a fast path when "the shape fits" is caught if its test forgets a dimension;
    for a split-K launch (``spec.launch.splits`` = s), a K of p k-steps, p the first prime
    above s, its last one partial, so the slices (⌈p/s⌉ steps each) do not divide the k-steps
    and the last slice is short. With ``gpu=True`` also odd shapes just past two tiles (a third
    block row with three k-steps; a third block column with K inside one step; both at once),
    mixed edges past two tiles, and two large ones, odd and round.
    """
    if not isinstance(spec, KernelSpec):
        raise TypeError(f"shapes_for takes a KernelSpec, got {type(spec).__name__}")
    if spec.tile is None:
        raise ValueError(f"kernel {spec.name!r} declares no block tile")
    bm, bn, bk = spec.tile
    shapes = [(1, 1, 1), (bm + 1, bn + 1, bk + 1), (2 * bm, bn, 2 * bk),
              (bm, bn, bk + 1), (bm, bn + 1, bk), (bm + 1, bn, bk)]
    splits = getattr(spec.launch, "splits", 1)
    if splits > 1:
        steps = next(p for p in range(splits + 1, 4 * splits + 4)
                     if all(p % d for d in range(2, p)))
        shapes.append((bm, bn, (steps - 1) * bk + 1))
    if gpu:
        shapes += [(2 * bm + 1, 3, 2 * bk + 1), (5, 2 * bn + 1, bk // 2 + 1),
                   (2 * bm + 1, 2 * bn + 1, 2 * bk + 1),
                   (2 * bm, 2 * bn, 3 * bk + 1), (2 * bm, 2 * bn + 1, 3 * bk),
                   (2 * bm + 1, 2 * bn, 3 * bk), (1000, 1030, 999), (1024, 1024, 1024)]
    return list(dict.fromkeys(shapes))


class KernelUnavailable(RuntimeError):
    """The kernel cannot run here (simulator, compile-only mode, or too old a GPU); the
    message is :func:`runnable`'s one line."""


def current_cc() -> tuple[int, int] | None:
    """Compute capability of the current GPU, or None without one (simulator, compile mode)."""
    if not device.GPU:
        return None
    from numba import cuda

    return tuple(cuda.get_current_device().compute_capability)


def _cc(cc) -> str:
    return f"{cc[0]}.{cc[1]}"


def runnable(kernel: str | KernelSpec, cc: tuple[int, int] | None = None) -> tuple[bool, str]:
    """Whether ``kernel`` can run on this device, or on a GPU of capability ``cc``, and one line
    saying why not (or where it runs).

    Without ``cc`` the answer is for this process's device: under the simulator, kernels built
    on inline PTX or warp shuffles cannot run; in compile-only mode nothing runs; on a GPU its compute capability
    is compared with the kernel's ``min_cc`` (and ``max_cc``). The line names the capability,
    e.g. ``tc_fp16 needs compute capability 8.0 (mma.sync m16n8k16, …); this GPU is 7.5``.
    """
    spec = kernel if isinstance(kernel, KernelSpec) else get_spec(kernel)
    if cc is None:
        if device.SIMULATOR:
            if spec.simulator:
                return True, f"{spec.name} runs in the CUDA simulator"
            return False, (f"{spec.name} needs a GPU: the CUDA simulator cannot run "
                           f"{spec.needs}")
        cc = current_cc()
        if cc is None:
            return False, f"{spec.name} cannot run: no GPU (device mode {device.MODE!r})"
        where = "this GPU"
    else:
        if len(cc) != 2 or not all(isinstance(c, int) for c in cc):
            raise ValueError(f"cc must be (major, minor), got {cc!r}")
        where = "the GPU"
    cc = tuple(cc)
    if cc < spec.min_cc:
        return False, (f"{spec.name} needs compute capability {_cc(spec.min_cc)} "
                       f"({spec.needs}); {where} is {_cc(cc)}")
    if spec.max_cc is not None and cc > spec.max_cc:
        return False, (f"{spec.name} runs on compute capability {_cc(spec.min_cc)} only "
                       f"({spec.needs}); {where} is {_cc(cc)}")
    return True, f"{spec.name} runs on compute capability {_cc(cc)}"


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
