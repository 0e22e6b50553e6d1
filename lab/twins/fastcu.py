"""fast.cu's kernel 12 (pranjalssh/fast.cu, MIT), built on this GPU and launched from Python on our
own buffers, so that it is timed with our CUDA events beside our kernels and cuBLAS.

:data:`HARNESS` (``fastcu_k12.cu``, ours) includes the peer's ``examples/matmul/matmul_12.cuh``
unchanged from the checkout named by ``LAB_FASTCU`` (or ``.peers/fast.cu`` in the repository),
and exports one C function; :func:`build` compiles it with ``nvcc -gencode
arch=compute_90a,code=sm_90a`` into a shared library, :func:`load` opens it with ctypes.

The kernel's own rules, which :func:`launcher` enforces before any launch: BF16 in and out;
A (M×K) row-major, B given as Bᵀ (N×K) row-major, C written column-major (an N×M row-major
buffer); M a multiple of 256 (its 2-block clusters of 128-row tiles), N of 256, K of 64; a
grid of 128 blocks (its constant ``NUM_SM``) that walk a Hilbert-curve tile order computed on
the host. Its launcher encodes the tensor maps once per M and reuses them while M stays the same
(the pointers, N and K are not compared); our entry point compares the whole call and has them
encoded again whenever M, N, K or a buffer changes. :func:`launcher`'s ``call`` holds the three
arrays, so that none is freed while a launch may still read it.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

HARNESS = Path(__file__).resolve().parent / "fastcu_k12.cu"
SOURCE = "pranjalssh/fast.cu (38eb642e), examples/matmul/matmul_12.cuh, unchanged"
ARCH_FLAGS = ("-gencode", "arch=compute_90a,code=sm_90a")


def source_dir() -> Path | None:
    """The fast.cu checkout: ``LAB_FASTCU``, else ``.peers/fast.cu`` beside ``lab``."""
    for path in (os.environ.get("LAB_FASTCU"),
                 Path(__file__).resolve().parents[2] / ".peers" / "fast.cu"):
        if path and (Path(path) / "examples" / "matmul" / "matmul_12.cuh").is_file():
            return Path(path)
    return None


def nvcc_path() -> str | None:
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def missing() -> str | None:
    """Why kernel 12 cannot be built here, or None."""
    if source_dir() is None:
        return "needs a checkout of pranjalssh/fast.cu (LAB_FASTCU or .peers/fast.cu)"
    if nvcc_path() is None:
        return "needs the CUDA toolkit's nvcc"
    return None


def build_command(src: Path, out: Path) -> list[str]:
    """Its Makefile's flags (``-DNDEBUG``: one of its asserts names an undefined variable;
    ``--use_fast_math``, ``--expt-relaxed-constexpr``) for a shared library."""
    return [nvcc_path(), "-O3", "-std=c++17", "-DNDEBUG", "-w", "--expt-relaxed-constexpr",
            "--expt-extended-lambda", "--use_fast_math", "-shared", "-Xcompiler", "-fPIC",
            *ARCH_FLAGS, "-I", str(src), str(HARNESS), "-lcuda", "-o", str(out)]


def build_flags() -> str:
    """The nvcc command as a results file records it: flags, and the two inputs by role (no
    paths of the machine that built it)."""
    flags = build_command(Path("FASTCU"), Path("libfastcu_k12.so"))[1:]
    return " ".join(flags).replace(str(HARNESS), "lab/twins/" + HARNESS.name).replace(
        "-I FASTCU", "-I <fast.cu checkout>")


def build(out_dir: Path) -> Path:
    """Compile the harness and kernel 12 into ``out_dir/libfastcu_k12.so``."""
    why = missing()
    if why:
        raise RuntimeError(f"fast.cu kernel 12: {why}")
    lib = Path(out_dir) / "libfastcu_k12.so"
    run = subprocess.run(build_command(source_dir(), lib), capture_output=True, text=True,
                         timeout=600)
    if run.returncode:
        raise RuntimeError(f"nvcc could not build fast.cu kernel 12: {run.stderr.strip()[-800:]}")
    return lib


def load(lib: Path):
    handle = ctypes.CDLL(str(lib))
    fn = handle.fastcu_k12
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def shape_problem(m: int, n: int, k: int) -> str | None:
    """What kernel 12 cannot take at M×N×K, or None."""
    if m % 256 or n % 256 or k % 64 or min(m, n, k) < 1:
        return f"{m}×{n}×{k}: kernel 12 needs M and N multiples of 256 and K of 64"
    return None


def _pointer(x) -> int:
    return int(x.__cuda_array_interface__["data"][0])


def launcher(fn, a, bt, c):
    """``call()`` launching kernel 12 on device arrays a (M×K), bt (N×K), c (N×M, C
    column-major), all 2-byte BF16 bits, C-contiguous; ValueError first on a bad shape."""
    m, k = a.shape
    n = bt.shape[0]
    problem = shape_problem(m, n, k)
    if problem:
        raise ValueError(problem)
    if tuple(bt.shape) != (n, k) or tuple(c.shape) != (n, m):
        raise ValueError(f"fast.cu kernel 12: bt must be (N, K) = {(n, k)} and c (N, M) = "
                         f"{(n, m)}, got {tuple(bt.shape)} and {tuple(c.shape)}")
    for label, x in (("a", a), ("bt", bt), ("c", c)):
        if x.dtype.itemsize != 2:
            raise ValueError(f"fast.cu kernel 12: {label} must hold BF16 bits (2 bytes)")
    pa, pb, pc = _pointer(a), _pointer(bt), _pointer(c)

    def call(i=0):
        err = fn(m, n, k, pa, pb, pc)
        if err:
            raise RuntimeError(f"fast.cu kernel 12 launch failed: CUDA error {err}")
    call.keep = (a, bt, c)       # the buffers live as long as the call that launches on them
    return call
