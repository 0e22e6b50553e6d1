"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import hashlib
import inspect
import os
import sys
import threading

import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)
from lab import device, workers

#: numba-cuda 0.30.4's simulator code replaced below, by the sha256 of its source: the block's
#: scheduler (a loop that polls every thread), a thread's body and barrier, and the shared-array
#: allocator (which walks the whole call stack, reading every file's mtime, to name its caller).
_SIMULATOR_SHA256 = {
    "BlockManager.run": "54626c6819f55d514a598517b1467ed1cc2e7c3bf1f3b9814e13ef2a4ba3541f",
    "BlockThread.run": "39843339d822a4185f415650b10a9510cfe5812100f39aa44cd47c1618f8fa19",
    "BlockThread.syncthreads":
        "a5ed4d032654d0ee4e61ad1d4db99b0104cd8329ca7d3c1ab603d16c812ba507",
    "FakeCUDAShared.array": "46c69699220dd500ba43cd23a5eedb48ea3f2ea602876838c887e592d4055d75",
}


def _unchanged(*functions) -> bool:
    return all(hashlib.sha256(inspect.getsource(f).encode()).hexdigest()
               == _SIMULATOR_SHA256[f.__qualname__] for f in functions)


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


def _quicken_the_simulator() -> list[str]:
    """Numba's simulator runs a block's threads as Python threads. Its scheduler polls every
    thread in a loop (on a two-core machine the loop took much of the CPU the threads need) and
    names a shared array's call site by extracting the whole stack (a ``stat`` of every file on
    it, per thread and array). For the tests, a barrier of a condition variable takes the poll's
    place — it opens on the same condition, and an error aborts the block's other threads at
    their next barrier and is raised as the simulator raises it — and the call site is read from
    the caller's frame (the same file and line). The kernels run the same code, in the same
    threads. Each replacement applies only to the code it was written against (checked by
    hash); the names of those applied are returned."""
    import numpy as np
    from numba.cuda.simulator import kernel as sim
    from numba.cuda.simulator import kernelapi

    applied = []
    if _unchanged(sim.BlockManager.run, sim.BlockThread.run, sim.BlockThread.syncthreads):
        thread_body = sim.BlockThread.run

        def run(self, grid_point, *args):
            def target():
                self._f(*args)

            threads = [sim.BlockThread(target, self, grid_point, point, self._debug)
                       for point in np.ndindex(*self._block_dim)]
            barrier = _Barrier(len(threads))
            for t in threads:
                t.barrier = barrier
                t.start()
            for t in threads:
                t.join()
            if barrier.failed is not None:
                failed = barrier.failed.exception
                raise failed[0].with_traceback(failed[1])

        def body(self):
            try:
                thread_body(self)
            finally:
                self.barrier.leave(self)

        def syncthreads(self):
            self.barrier.wait()

        sim.BlockManager.run, sim.BlockThread.run = run, body
        sim.BlockThread.syncthreads = syncthreads
        applied.append("barrier")
    if _unchanged(kernelapi.FakeCUDAShared.array):
        allocate = kernelapi.FakeCUDAShared.array

        def array(self, shape, dtype, alignment=None):
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
    return applied


if device.SIMULATOR:
    _quicken_the_simulator()


def _offline_worker(test_file: str, flag: str) -> dict:
    """Run ``python <test_file> <flag>`` with ``LAB_DEVICE=compile`` (real numba-cuda, no GPU)
    and return the JSON it prints last, or the answer committed or cached for the same key
    (:func:`lab.workers.answer`: the code-generating sources, the toolchain, the worker's own
    code): an unchanged worker compiles its kernels once, and a changed kernel source misses."""
    try:
        return workers.answer(test_file, flag)
    except workers.WorkerFailed as failed:
        pytest.fail(str(failed))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per CPU core under the simulator, where
    every test is CPU-bound; on a GPU (and with ``LAB_DEVICE=compile``) one process, so that
    no two tests share the GPU and its clocks."""
    return (os.cpu_count() or 1) if device.SIMULATOR else 0


#: Tests whose cases xdist may hand out one by one under ``--dist loadfile``: long parametrized
#: runs under the simulator that share nothing between cases but the module (no module or class
#: fixture). The rest of their file, like every other file, stays on one worker.
SPREAD = ("tests/kernels/test_kernels.py::test_matches_float64[",
          "tests/kernels/test_tensor_cores.py::test_kernel_logic_under_emulated_intrinsics[")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the cases of :data:`SPREAD` as units of their own: the kernel
    checks (about a third of the suite's seconds under the simulator) no longer run on one
    worker while the other waits at the end. xdist hands out the largest files first and these
    single cases last, where they even out the two workers' finish."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(SPREAD) else super()._split_scope(nodeid)

    return SpreadScheduling(config, log)


@pytest.fixture(scope="session")
def offline_worker():
    """``offline_worker(__file__, flag)``: the JSON of a test file's compile worker."""
    return _offline_worker


class FakeEvent:
    """A CUDA event that records nothing (the simulator's events take no timing flag)."""

    def __init__(self, timing=True):
        pass

    def record(self, stream=0):
        pass

    def synchronize(self):
        pass


@pytest.fixture
def fake_events(monkeypatch):
    """``fake_events(ms)``: Numba's CUDA events replaced by ones that record nothing, with
    ``ms`` between any two, for dry runs of an experiment's timing under the simulator."""
    from numba import cuda

    def install(ms: float) -> None:
        monkeypatch.setattr(cuda, "event", FakeEvent)
        monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: ms, raising=False)
    return install


@pytest.fixture
def rng():
    return np.random.default_rng()
