"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import hashlib
import inspect
import os
import textwrap
import time

import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)
from lab import device, workers

#: numba-cuda 0.30.4's ``BlockManager.run`` (sha256 of its source), the loop patched below.
_POLL_LOOP_SHA256 = "54626c6819f55d514a598517b1467ed1cc2e7c3bf1f3b9814e13ef2a4ba3541f"
_POLL_PAUSE_S = 2e-4


def _pause_the_simulator_poll() -> bool:
    """Numba's simulator runs a block's threads as Python threads, watched by a loop that polls
    them without pause; on a two-core machine that loop takes much of the CPU the threads need.
    For the tests it pauses 0.2 ms per round — the same loop otherwise, so kernels run exactly
    as before. Applied only to the loop this was written against (checked by hash)."""
    from numba.cuda.simulator import kernel as sim

    source = inspect.getsource(sim.BlockManager.run)
    if hashlib.sha256(source.encode()).hexdigest() != _POLL_LOOP_SHA256:
        return False
    head = "        while livethreads:\n"
    patched = source.replace(head, head + "            _time.sleep(_POLL_PAUSE_S)\n", 1)
    namespace = dict(vars(sim), _time=time, _POLL_PAUSE_S=_POLL_PAUSE_S)
    exec(compile(textwrap.dedent(patched), sim.__file__, "exec"), namespace)
    sim.BlockManager.run = namespace["run"]
    return True


if device.SIMULATOR:
    _pause_the_simulator_poll()


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
