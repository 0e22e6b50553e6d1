"""The ladder's kernels, in order, and the registry that names them.

Each rung lives in its own module (``k01_naive.py``, ``k02_tiled.py``, …) with a docstring
saying what changed since the previous rung, its constants, its ``@cuda.jit`` kernel(s) and the
``launch`` functions that own the grid/block arithmetic. Each module exposes ``SPECS``, a list of
:class:`KernelSpec`; :data:`REGISTRY` collects them in ladder order.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import lab.device  # noqa: F401  (simulator decided before numba is imported)


@dataclass(frozen=True)
class KernelSpec:
    """One registered kernel: what it takes, where it runs, how to launch and compile it.

    ``launch(A, B, C)`` takes device arrays (A: M×K, B: K×N, C: M×N float32, all C-contiguous)
    and owns every grid/block decision. ``compile`` lists ``(dispatcher, signature)`` pairs
    that :mod:`lab.compiler` turns into PTX/SASS offline.
    """
    name: str
    title: str
    dtype: type
    launch: Callable
    simulator: bool = True
    chapter: int = 1
    compile: tuple = field(default=(), repr=False)
    edges: str = "bounds checks in the kernel"
    dtype_name: str = ""

    def __post_init__(self):
        if not self.dtype_name:
            object.__setattr__(self, "dtype_name", np.dtype(self.dtype).name)


#: Rung modules in ladder order.
RUNGS = ("k01_naive", "k02_tiled", "k03_registers", "k04_vectorized", "k05_pipelined",
         "k06_warptile", "k07_tensor_core", "k08_tc_pipeline", "k09_hopper")


def _collect() -> dict[str, KernelSpec]:
    registry: dict[str, KernelSpec] = {}
    for rung in RUNGS:
        module = importlib.import_module(f"lab.kernels.{rung}")
        for spec in module.SPECS:
            if spec.name in registry:
                raise RuntimeError(f"kernel name {spec.name!r} registered twice ({rung})")
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
