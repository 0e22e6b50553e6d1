"""CUDA C twins: the seeds' kernels, re-typed as plain CUDA C, run through CuPy's RawModule.

A twin runs the *same algorithm* as one of our Numba kernels, written the way the seed wrote it
and compiled by NVRTC (CuPy) on the same GPU, in the same process, with the same timing code.
The ratio ``twin time / Numba time`` then measures only what the two compilers made of the two
spellings of one loop (≥ 1 means Numba is at least as fast).

Sources (re-typed, our own names): ``seed003.cu`` (``matmulNaive``, ``matmulTiled`` with
TILE 16) and ``seed004.cu`` (``mm_naive``, its swapped-index variant, ``mm_tiled<T>`` for
T = 8, 16, 32, and ``s004_regs4``, the register kernel — 64×64 block, 16×16 threads, 4×4
patch, BK 16 — of which the seed shows only the multiply-add loop; its loads and barriers are
ours, the same as Numba's ``patch4``). Seed 004's tiled and register kernels have no bounds
checks: they are only launched on shapes that are multiples of their tile (:func:`supports`
says which).

Usage (numba device arrays; CuPy is imported lazily, GPU only)::

    from lab import twins
    twins.available()                        # [] without a GPU and CuPy
    twins.launch("s003_naive", A, B, C)
    twins.TWINS["s003_naive"].twin_of        # "naive": the Numba kernel it twins
    row = bench.time("s004_tiled16", 1024, 1024, 1024)   # a twin is a provider by name

Offline (no GPU): :func:`compile_report` compiles a twin with ``nvcc -O3 -arch=sm_90`` and gives
the same register / hottest-loop mix as :func:`lab.compiler.report` does for Numba kernels.
"""
from __future__ import annotations

import functools
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lab import device

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Twin:
    name: str            # our name for the twin
    title: str
    source: str          # .cu file in this folder
    function: str        # kernel name (a name expression for templates)
    twin_of: str         # the registered Numba kernel with the same algorithm
    seed: str            # "003" / "004"
    arg_order: str       # "mkn" (seed 004) or "mkn"-permutation as the seed passes them
    block: int           # threads per block along x and y
    multiple_of: int = 1  # shapes must be multiples of this (no bounds checks), else 1
    rows_on_x: bool = False  # threadIdx.x runs along rows (the swapped mapping)
    tile: int = 0         # C elements per block along x and y (0: one per thread, = block)

    @property
    def block_tile(self) -> int:
        return self.tile or self.block


TWINS: dict[str, Twin] = {t.name: t for t in (
    Twin("s003_naive", "seed 003 matmulNaive", "seed003.cu", "s003_naive", "naive", "003",
         "mkn", 16),
    Twin("s003_tiled16", "seed 003 matmulTiled (TILE 16)", "seed003.cu", "s003_tiled16",
         "tiled16", "003", "mkn", 16),
    Twin("s004_naive", "seed 004 mm_naive", "seed004.cu", "s004_naive", "naive", "004",
         "mnk", 16),
    Twin("s004_naive_swapped", "seed 004 mm_naive, one index swapped", "seed004.cu",
         "s004_naive_swapped", "naive_swapped", "004", "mnk", 16, rows_on_x=True),
    Twin("s004_tiled8", "seed 004 mm_tiled<8>", "seed004.cu", "s004_tiled<8>", "tiled8",
         "004", "mnk", 8, multiple_of=8),
    Twin("s004_tiled16", "seed 004 mm_tiled<16>", "seed004.cu", "s004_tiled<16>", "tiled16",
         "004", "mnk", 16, multiple_of=16),
    Twin("s004_tiled32", "seed 004 mm_tiled<32>", "seed004.cu", "s004_tiled<32>", "tiled32",
         "004", "mnk", 32, multiple_of=32),
    Twin("s004_regs4", "seed 004 register kernel (64x64 block, 4x4 patch, BK 16)",
         "seed004.cu", "s004_regs4", "patch4", "004", "mnk", 16, multiple_of=64, tile=64),
)}

#: Mangled-name fragment of each template instantiation (for picking its SASS).
_MANGLED = {"s004_tiled<8>": "s004_tiledILi8E", "s004_tiled<16>": "s004_tiledILi16E",
            "s004_tiled<32>": "s004_tiledILi32E"}


def get_twin(name: str) -> Twin:
    try:
        return TWINS[name]
    except KeyError:
        raise ValueError(f"unknown twin {name!r}; known: {', '.join(TWINS)}") from None


def twins_of(kernel: str) -> list[str]:
    """Names of the twins of the registered Numba kernel ``kernel``."""
    return [t.name for t in TWINS.values() if t.twin_of == kernel]


def supports(name: str, m: int, n: int, k: int) -> bool:
    """Whether the twin computes a correct product at this shape (seed 004's tiles need
    multiples of T)."""
    t = get_twin(name)
    return all(x % t.multiple_of == 0 for x in (m, n, k))


def available() -> list[str]:
    """Twins that can run here: all of them on a GPU with CuPy, else ``[]``."""
    if not device.GPU:
        return []
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001
        return []
    return list(TWINS)


@functools.lru_cache(maxsize=None)
def _module(source: str):
    import cupy

    names = [t.function for t in TWINS.values() if t.source == source and "<" in t.function]
    return cupy.RawModule(code=(HERE / source).read_text(), options=("-std=c++17",),
                          name_expressions=names or None)


@functools.lru_cache(maxsize=None)
def _function(name: str):
    t = get_twin(name)
    return _module(t.source).get_function(t.function)


def launch(name: str, A, B, C) -> None:
    """``C = A @ B`` with the twin ``name`` (numba device arrays, float32, C-contiguous)."""
    import cupy

    t = get_twin(name)
    m, k = A.shape
    n = B.shape[1]
    if not supports(name, m, n, k):
        raise ValueError(f"twin {name!r} has no bounds checks: M, N, K must be multiples of "
                         f"{t.multiple_of} (got {m}x{n}x{k})")
    a, b, c = (cupy.asarray(x) for x in (A, B, C))   # shares the numba allocations
    dims = ((np.int32(m), np.int32(k), np.int32(n)) if t.seed == "003"
            else (np.int32(m), np.int32(n), np.int32(k)))
    along_x, along_y = (m, n) if t.rows_on_x else (n, m)
    tile = t.block_tile
    grid = ((along_x + tile - 1) // tile, (along_y + tile - 1) // tile)
    _function(name)(grid, (t.block, t.block), (a, b, c, *dims))


def _function_sass(sass: str, fragment: str) -> str:
    """The part of an ``nvdisasm`` listing that belongs to the function named ``fragment``."""
    out, keep = [], False
    for line in sass.splitlines():
        if ".section" in line and ".text." in line:
            section = line.split(".text.", 1)[1].split(",")[0].strip()
            keep = section == fragment or (section.startswith("_Z") and fragment in section)
        if keep:
            out.append(line)
    return "\n".join(out)


@functools.lru_cache(maxsize=None)
def compile_report(name: str):
    """nvcc -O3 -arch=sm_90 facts for one twin, as a :class:`lab.compiler.CompileReport`
    (needs the ``nvcc`` of the nvidia-cuda-nvcc wheel; no GPU)."""
    from lab import compiler

    known = compiler.stored("twin", name)
    if known is not None:
        return compiler.CompileReport(**known)
    t = get_twin(name)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "twin.cubin"
        run = subprocess.run([compiler.tool("nvcc"), "-O3", "-arch=sm_90", "-cubin",
                              "-Xptxas", "-v", "-o", str(cubin), str(HERE / t.source)],
                             capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"nvcc failed for {name}: {run.stderr.strip()}")
        sass = subprocess.run([compiler.tool("nvdisasm"), "-c", str(cubin)],
                              capture_output=True, text=True, check=True).stdout
    fragment = _MANGLED.get(t.function, t.function)
    mine = _function_sass(sass, fragment)
    facts = _ptxas_facts(run.stderr, fragment)
    instrs, labels = compiler.parse_sass(mine)
    report = compiler.CompileReport(kernel=name, function=t.function, **facts,
                                    instructions=len(instrs), mix=compiler.mix_of(instrs),
                                    loop_mix=compiler.mix_of(compiler.hottest_loop(instrs,
                                                                                   labels)),
                                    sass=mine)
    compiler.record("twin", name, asdict(report))
    return report


def _ptxas_facts(log: str, fragment: str) -> dict:
    """Registers/spills/stack/smem for one function out of ``ptxas -v``'s log."""
    from lab import compiler

    blocks, current = {}, None
    for line in log.splitlines():
        if "Compiling entry function" in line:
            current = line.split("'")[1] if "'" in line else line
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line)
    for func, lines in blocks.items():
        if func == fragment or (func.startswith("_Z") and fragment in func):
            return compiler.parse_ptxas("\n".join(lines))
    return compiler.parse_ptxas("")
