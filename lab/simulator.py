"""Numba's CUDA simulator, quickened: a block's barrier that waits instead of polling, a
shared array's call site read from one frame instead of the whole stack, a scalar cast such as
``int32(x)`` made by NumPy's ``int32`` itself while a kernel runs (numba's call around it took
most of a register-tiled kernel's time: two million casts in one 129×129×17 check), and a
block's threads switched every 50 ms rather than 5, and those threads kept from block to block
rather than started and joined for each.

Installed by :mod:`lab.device` whenever kernels run in the simulator (the tests, the notebooks
and the book's build alike); the kernels run the same code, one Python thread per CUDA thread
of a block, only Numba's bookkeeping around them changes (:func:`install`).
"""
from __future__ import annotations

import hashlib
import inspect
import sys
import threading

import numpy as np

#: numba-cuda 0.30.4's simulator code replaced below, by the sha256 of its source: the block's
#: scheduler (a loop that polls every thread), a thread's body and barrier, and the shared-array
#: allocator (which walks the whole call stack, reading every file's mtime, to name its caller).
_SIMULATOR_SHA256 = {
    "BlockManager.run": "54626c6819f55d514a598517b1467ed1cc2e7c3bf1f3b9814e13ef2a4ba3541f",
    "BlockThread.run": "39843339d822a4185f415650b10a9510cfe5812100f39aa44cd47c1618f8fa19",
    "BlockThread.syncthreads":
        "a5ed4d032654d0ee4e61ad1d4db99b0104cd8329ca7d3c1ab603d16c812ba507",
    "FakeCUDAShared.array": "46c69699220dd500ba43cd23a5eedb48ea3f2ea602876838c887e592d4055d75",
    # numba's scalar types called on a value (``int32(x)`` in a kernel): an import and an
    # abstract-class check on every call before NumPy makes the value
    "Integer.cast_python_value":
        "0c464a7031353c21c79ad6b0cd4a040ade7d0cab4851e4133fb62e46c37ba5e1",
    "Float.cast_python_value":
        "0c464a7031353c21c79ad6b0cd4a040ade7d0cab4851e4133fb62e46c37ba5e1",
    # the swap of a kernel module's ``cuda`` for the simulator's, around every launch and
    # device-function call
    "swapped_cuda_module": "09b129934152cee2d24d23eee09e8851d84130a1254f57149d248f21165ecdb0",
}

#: The interpreter's switch interval while a block runs (seconds; Python's default is 0.005).
#: A thread gives way at every barrier anyway; between barriers, switching ten times less often
#: halved the simulator's system time and took a fifth off a check of a tiled kernel.
SWITCH_S = 0.05


def _unchanged(*functions) -> bool:
    return all(hashlib.sha256(inspect.getsource(f).encode()).hexdigest()
               == _SIMULATOR_SHA256.get(f.__qualname__) for f in functions)


class _Barrier:
    """One block's ``__syncthreads``: it opens when every thread still running waits at it, as
    the simulator's poll decides (a finished thread no longer counts), and on a thread's error
    it opens for good, so that the others stop at their next barrier as the simulator's abort
    flag makes them."""

    def __init__(self, threads: int):
        self.cond = threading.Condition()
        self.live, self.waiting, self.round = threads, 0, 0
        self.failed = None                      # the first thread that raised

    def _open_if_all_wait(self):
        if self.failed is not None or (self.live and self.waiting == self.live):
            self.waiting = 0
            self.round += 1
            self.cond.notify_all()

    def wait(self):
        with self.cond:
            if self.failed is not None:
                raise RuntimeError("abort flag set on syncthreads call")
            round_ = self.round
            self.waiting += 1
            self._open_if_all_wait()
            while self.round == round_:
                self.cond.wait()
            if self.failed is not None:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self, thread):
        with self.cond:
            self.live -= 1
            if thread.exception and self.failed is None:
                self.failed = thread
            self._open_if_all_wait()
            if not self.live:
                self.cond.notify_all()          # the block is done: wake its launcher

    def wait_for_all(self):
        """Until every thread of the block has finished."""
        with self.cond:
            while self.live:
                self.cond.wait()


class _Pool:
    """Simulated threads kept between blocks and launches: starting an OS thread, then joining
    it, cost about 100 µs, which the kernel checks paid for each of some 250,000 threads. A
    worker (:func:`_worker_class`) runs one CUDA thread at a time and waits for the next."""

    def __init__(self, worker_class):
        self.worker_class = worker_class
        self.idle: list = []
        self.lock = threading.Lock()

    def take(self, n: int) -> list:
        with self.lock:
            workers, self.idle = self.idle[:n], self.idle[n:]
        workers = [w for w in workers if w.is_alive()]
        while len(workers) < n:
            worker = self.worker_class()
            worker.start()
            workers.append(worker)
        return workers

    def give(self, workers: list) -> None:
        with self.lock:
            self.idle.extend(workers)


def install() -> list[str]:
    """Numba's simulator runs a block's threads as Python threads. Its scheduler polls every
    thread in a loop (on a two-core machine the loop took much of the CPU the threads need) and
    names a shared array's call site by extracting the whole stack (a ``stat`` of every file on
    it, per thread and array). A barrier of a condition variable takes the poll's
    place — it opens on the same condition, and an error aborts the block's other threads at
    their next barrier and is raised as the simulator raises it — and the call site is read from
    the caller's frame (the same file and line). While a block runs, the interpreter switches
    threads every :data:`SWITCH_S` seconds, and while a kernel module runs its numba scalar
    types are NumPy's (:func:`_swapped_module`). A block's threads come from a pool (:class:`_Pool`) instead of
    being started and joined for every block. The kernels run the same code, one Python thread
    per CUDA thread of the block. Each replacement applies only to the code it was written
    against (checked by hash), and once; the names of those applied are returned."""
    from numba.core.types import scalars
    from numba.cuda.simulator import kernel as sim
    from numba.cuda.simulator import kernelapi

    applied = []
    if _unchanged(sim.BlockManager.run, sim.BlockThread.run, sim.BlockThread.syncthreads):
        thread_body = sim.BlockThread.run

        pool = _Pool(_worker_class(sim, thread_body))

        def run(self, grid_point, *args):
            def target():
                self._f(*args)

            points = list(np.ndindex(*self._block_dim))
            workers = pool.take(len(points))
            barrier = _Barrier(len(points))
            previous = sys.getswitchinterval()
            sys.setswitchinterval(max(previous, SWITCH_S))
            try:
                for worker, point in zip(workers, points):
                    worker.assign(target, self, grid_point, point, self._debug, barrier)
                barrier.wait_for_all()
            finally:
                sys.setswitchinterval(previous)
            failed = barrier.failed.exception if barrier.failed is not None else None
            pool.give(workers)
            if failed is not None:
                raise failed[0].with_traceback(failed[1])

        def syncthreads(self):
            self.barrier.wait()

        sim.BlockManager.run = run
        sim.BlockThread.syncthreads = syncthreads
        applied.append("barrier")
    if _unchanged(kernelapi.FakeCUDAShared.array):
        allocate = kernelapi.FakeCUDAShared.array

        def array(self, shape, dtype, alignment=None):
            if isinstance(dtype, type) and issubclass(dtype, np.generic):
                dtype = np.dtype(dtype)               # (a kernel module's int32 is NumPy's)
            if alignment is not None or shape == 0:
                return allocate(self, shape, dtype, alignment)
            if isinstance(dtype, kernelapi.types.Type):
                dtype = kernelapi.numpy_support.as_dtype(dtype)
            caller = sys._getframe(1)
            site = (caller.f_code.co_filename, caller.f_lineno)
            res = self._allocations.get(site)
            if res is None:
                res = self._allocations[site] = np.empty(shape, dtype)
            return res

        kernelapi.FakeCUDAShared.array = array
        applied.append("shared arrays")
    swap = getattr(kernelapi.swapped_cuda_module, "__wrapped__", None)
    if (swap is not None and "shared arrays" in applied
            and _unchanged(swap, scalars.Integer.cast_python_value,
                           scalars.Float.cast_python_value)):
        kernelapi.swapped_cuda_module = sim.swapped_cuda_module = _swapped_module(kernelapi)
        applied.append("scalar types in kernel modules")
    return applied


def _swapped_module(kernelapi):
    """numba's ``swapped_cuda_module`` (a kernel module's globals that are ``numba.cuda`` become
    the simulator's module while any kernel or device function of it runs), which also makes
    the module's numba integer and float types (``int32``, ``float32``, ...) NumPy's types of
    the same name for as long: ``int32(x)`` in a kernel is then NumPy's call, which is what
    numba's makes (``cast_python_value``) after an import and a type check, and a type given as
    an array's dtype is the same dtype."""
    import contextlib

    from numba import cuda
    from numba.core.types import scalars

    kinds = (scalars.Integer, scalars.Float)

    @contextlib.contextmanager
    def swapped_cuda_module(fn, fake_cuda_module):
        globs = fn.__globals__
        gid = id(globs)
        with kernelapi._locks_register_lock:
            lock = kernelapi._globals_locks[gid]
        with lock:
            if kernelapi._swap_refcount[gid] == 0:          # the first to enter swaps
                orig = {}
                for name, value in globs.items():
                    if value is cuda:
                        orig[name] = value
                        globs[name] = fake_cuda_module
                    elif type(value) in kinds:
                        orig[name] = value
                        globs[name] = getattr(np, value.name)
                kernelapi._swap_orig[gid] = orig
            kernelapi._swap_refcount[gid] += 1
        try:
            yield
        finally:
            with lock:
                kernelapi._swap_refcount[gid] -= 1
                if kernelapi._swap_refcount[gid] == 0:      # the last to leave restores
                    globs.update(kernelapi._swap_orig.pop(gid))
                    del kernelapi._swap_refcount[gid]

    return swapped_cuda_module


def _worker_class(sim, thread_body):
    """A simulated thread that outlives its CUDA thread: a ``BlockThread`` (what the simulator's
    ``threading.current_thread()`` lookups and lab's warp stand-ins expect) that waits for a
    CUDA thread of a block, runs it as ``BlockThread.run`` does, leaves the block's barrier and
    waits again. Each assignment sets what ``BlockThread.__init__`` sets and drops whatever
    else a launch left on it (a count of barriers, say)."""
    from numba.cuda.simulator.kernelapi import Dim3

    class Worker(sim.BlockThread):
        def __init__(self):
            threading.Thread.__init__(self, daemon=True)
            self._go = threading.Semaphore(0)
            self._own = None

        def assign(self, f, manager, block, point, debug, barrier):
            if self._own is None:                  # (started: the thread's own fields are set)
                self._own = set(self.__dict__) | {
                    "_target", "_args", "_kwargs", "_manager", "barrier", "debug", "blockIdx",
                    "threadIdx", "exception", "abort", "syncthreads_blocked", "thread_id"}
            for name in [k for k in self.__dict__ if k not in self._own]:
                del self.__dict__[name]
            self._target, self._args, self._kwargs = f, (), {}
            self._manager, self.barrier, self.debug = manager, barrier, debug
            self.blockIdx, self.threadIdx = Dim3(*block), Dim3(*point)
            self.exception, self.abort, self.syncthreads_blocked = None, False, False
            dim = Dim3(*manager._block_dim)
            self.thread_id = self.threadIdx.x + dim.x * (self.threadIdx.y
                                                         + dim.y * self.threadIdx.z)
            self._go.release()

        def run(self):
            while True:
                self._go.acquire()
                errors = np.geterr()
                try:
                    if self.debug:                 # as BlockThread's debug wrapper
                        np.seterr(divide="raise")
                    thread_body(self)
                finally:
                    np.seterr(**errors)
                    self.barrier.leave(self)

    return Worker

