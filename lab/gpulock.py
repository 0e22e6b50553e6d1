"""Several measuring processes on one GPU, one at a time on the GPU.

``python -m lab measure all`` spends much of its time compiling: Numba takes seconds per
kernel (three to seven for a warp-tiled FP32 one), on one CPU core, while the GPU waits. With
``--jobs N`` (four unless told) it runs N experiments at once, each in its own process, and every process
holds an exclusive lock on the GPU — a lock file — except while Numba compiles. So compiles run
side by side on the host's cores, and everything that touches the GPU (launches, copies,
timing, the child processes of ncu and compute-sanitizer) runs in one process at a time, as in
a serial run. Before it lets go of the lock a process waits for its queued GPU work to end, so
no kernel of one experiment runs while another experiment times.

The lock file is the results folder's (:func:`folder_lock`), so it is shared by every
``measure`` process writing there on this machine: the processes of one ``--jobs N`` run, and
a second ``measure`` started beside it (serial runs take their turns too).

Every wait costs a turn of whoever holds the GPU then (up to the 40 s of a sanitizer run), so
an experiment that compiled one kernel at a time between launches would wait once per kernel;
:func:`lab.bench.compile_ahead` compiles an experiment's kernels in one stretch first. (Lending
a turn to the ``ncu`` child processes, so that they too let go while compiling, was tried and
made things worse: twenty children each waiting for a turn took 241 s instead of 82.)
"""
from __future__ import annotations

import contextlib
import fcntl
import threading
import time

_STATE = threading.local()
#: The lock of this process, when it is one of a ``--jobs N`` run.
CURRENT: "GpuLock | None" = None
#: How the line a process prints about its turns begins.
SUMMARY_HEAD = "GPU turns:"


class GpuLock:
    """An exclusive lock on a file shared by the measuring processes of one run. It keeps the
    seconds this process waited for it and held it (``waited_s``, ``held_s``)."""

    def __init__(self, path: str, *, synchronize=None):
        self._file = open(path, "a")  # noqa: SIM115 - held for the life of the process
        self.fd = self._file.fileno()
        self._synchronize = synchronize or _cuda_synchronize
        self.held = False
        self.waited_s = self.held_s = 0.0
        self._since = 0.0

    def acquire(self) -> None:
        t0 = time.perf_counter()
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self._since = time.perf_counter()
        self.waited_s += self._since - t0
        self.held = True

    def release(self) -> None:
        self._synchronize()          # this process's queued GPU work ends before another starts
        if self.held:
            self.held_s += time.perf_counter() - self._since
        self.held = False
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def held_seconds(self) -> float:
        """Seconds this process has held the GPU so far, the current turn included."""
        return self.held_s + (time.perf_counter() - self._since if self.held else 0.0)

    def close(self) -> None:
        """Let go of the lock file for good (the lock too, if held)."""
        if self._file.closed:
            return
        if self.held:
            self.release()
        self._file.close()

    def summary(self) -> str:
        return (f"{SUMMARY_HEAD} held {self.held_seconds():.0f} s, waited "
                f"{self.waited_s:.0f} s")


def folder_lock(folder) -> str:
    """The GPU lock file of the results folder ``folder`` (:func:`lab.results.lock_file`).
    Every ``measure`` process that writes to one folder — one GPU's — takes its turns on the
    GPU through it."""
    from lab import results

    return results.lock_file(folder, "gpu")


def _cuda_synchronize() -> None:
    from numba import cuda

    cuda.synchronize()


def off_gpu():
    """Let go of this process's turn on the GPU for host-only work inside (compiling many
    kernels), and take it back after; nothing when there is no lock to let go of. Worth it only
    for long work: taking the turn back means waiting for whoever took it."""
    return _let_go(CURRENT)


@contextlib.contextmanager
def _let_go(lock: GpuLock | None):
    """``lock`` released (after a synchronize) inside, taken back after; nothing when it is not
    held or is already let go of by an outer ``_let_go``."""
    if lock is None or not lock.held or getattr(_STATE, "depth", 0):
        yield
        return
    lock.release()
    _STATE.depth = 1
    try:
        yield
    finally:
        _STATE.depth = 0
        lock.acquire()


def _already_compiled(dispatcher, sig) -> bool:
    if getattr(dispatcher, "specialized", False):
        return True
    try:
        from numba.cuda.core import sigutils

        argtypes, _ = sigutils.normalize_signature(sig)
    except Exception:  # noqa: BLE001 - an unusual signature: let compile decide, lock released
        return False
    return tuple(argtypes) in dispatcher.overloads


def release_while_compiling(cls, lock: GpuLock) -> None:
    """Make ``cls.compile`` (a Numba dispatcher's) give up ``lock`` while it compiles a new
    signature and take it back before returning; a signature already compiled (the lookup a
    launcher may make on every call) keeps the lock, so no timed loop is ever interrupted."""
    original = getattr(cls.compile, "__wrapped_by_gpulock__", cls.compile)

    def compile(self, sig):
        if _already_compiled(self, sig):
            return original(self, sig)
        with _let_go(lock):
            return original(self, sig)

    compile.__wrapped_by_gpulock__ = original
    compile.__doc__ = original.__doc__
    cls.compile = compile


def share(path: str) -> GpuLock:
    """In this process: take the GPU lock at ``path`` now and hold it, except while Numba
    compiles (:func:`release_while_compiling` on the CUDA dispatcher) or inside
    :func:`off_gpu`."""
    global CURRENT
    from numba.cuda.dispatcher import CUDADispatcher

    CURRENT = GpuLock(path)
    CURRENT.acquire()
    if hasattr(CUDADispatcher, "compile"):      # (the simulator's kernels compile nothing)
        release_while_compiling(CUDADispatcher, CURRENT)
    return CURRENT


def unshare(lock: GpuLock) -> None:
    """Undo :func:`share` of ``lock``: the dispatcher compiles as before and the lock file is
    closed."""
    global CURRENT
    from numba.cuda.dispatcher import CUDADispatcher

    original = getattr(getattr(CUDADispatcher, "compile", None), "__wrapped_by_gpulock__", None)
    if original is not None:
        CUDADispatcher.compile = original
    lock.close()
    if CURRENT is lock:
        CURRENT = None
