"""Several measuring processes on one GPU, one at a time on the GPU.

``python -m lab measure all`` spends most of its time compiling: Numba takes seconds per kernel
(seven for a warp-tiled FP32 one), on one CPU core, while the GPU waits. With ``--jobs N`` it
runs N experiments at once, each in its own process, and every process holds an exclusive lock
on the GPU — a lock file — except while Numba compiles a kernel. So compiles run side by side on
the host's cores, and everything that touches the GPU (launches, copies, timing, the float64
references, the child processes of ncu and compute-sanitizer) runs in one process at a time, as
in a serial run. Before it lets go of the lock a process waits for its queued GPU work to end,
so no kernel of one experiment runs while another experiment times.
"""
from __future__ import annotations

import fcntl
import threading

_STATE = threading.local()


class GpuLock:
    """An exclusive lock on a file shared by the measuring processes of one run."""

    def __init__(self, path: str, *, synchronize=None):
        self.path = path
        self._file = open(path, "a")  # noqa: SIM115 - held for the life of the process
        self._synchronize = synchronize or _cuda_synchronize
        self.held = False

    def acquire(self) -> None:
        fcntl.flock(self._file, fcntl.LOCK_EX)
        self.held = True

    def release(self) -> None:
        self._synchronize()          # this process's queued GPU work ends before another starts
        self.held = False
        fcntl.flock(self._file, fcntl.LOCK_UN)


def _cuda_synchronize() -> None:
    from numba import cuda

    cuda.synchronize()


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
        outer = getattr(_STATE, "depth", 0) == 0
        if not outer or _already_compiled(self, sig):
            return original(self, sig)
        lock.release()
        _STATE.depth = 1
        try:
            return original(self, sig)
        finally:
            _STATE.depth = 0
            lock.acquire()

    compile.__wrapped_by_gpulock__ = original
    compile.__doc__ = original.__doc__
    cls.compile = compile


def share(path: str) -> GpuLock:
    """In this process: take the GPU lock at ``path`` now and hold it, except while Numba
    compiles (:func:`release_while_compiling` on the CUDA dispatcher)."""
    from numba.cuda.dispatcher import CUDADispatcher

    lock = GpuLock(path)
    lock.acquire()
    release_while_compiling(CUDADispatcher, lock)
    return lock
