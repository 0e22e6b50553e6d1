"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import os

import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)
from lab import device, workers


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
