"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import hashlib
import inspect
import textwrap
import time

import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)
from lab import device

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


@pytest.fixture
def rng():
    return np.random.default_rng()
