"""lab.simulator: the quickened simulator keeps Numba's semantics."""
from __future__ import annotations

import numpy as np
import pytest

from lab import device  # (before numba: it decides the simulator)
from numba import cuda, float32, int32, uint8  # noqa: E402

pytestmark = pytest.mark.skipif(not device.SIMULATOR, reason="the CUDA simulator's scheduler")


def test_installed_once_by_lab_device():
    """Both replacements are in place (the pinned numba-cuda's code matched its hashes), and a
    second install finds nothing left to replace."""
    from numba.cuda.simulator import kernel, kernelapi

    from lab import simulator

    assert kernel.BlockManager.run.__module__ == "lab.simulator"
    assert kernelapi.FakeCUDAShared.array.__module__ == "lab.simulator"
    assert kernelapi.swapped_cuda_module.__module__ == "lab.simulator"
    assert kernel.swapped_cuda_module is kernelapi.swapped_cuda_module
    assert simulator.install() == []


def test_a_scalar_cast_gives_what_numba_gives():
    """NumPy's int32(x), which a kernel module calls while it runs, gives numba's int32(x):
    the same value and type, or the same error, for every kind of value; a type called on types
    is still a signature."""
    from numba import float32, float64, int32, int64, uint8, uint32
    from numba.core.types.abstract import Type

    def outcome(call):
        try:
            value = call()
        except Exception as e:                   # noqa: BLE001 - the error is the outcome
            return type(e).__name__
        return type(value), (repr(value) if value == value else "nan")

    for value in (0, -1, 7, 2 ** 40, 3.9, -2.5, float("nan"), True, np.float32(2.5),
                  np.int64(300), np.uint8(255)):
        for kind in (int32, uint32, int64, uint8, float32, float64):
            assert (outcome(lambda: getattr(np, kind.name)(value))
                    == outcome(lambda: Type.__call__(kind, value))), (kind, value)
    assert str(int32(int32, float32)) == "(int32, float32) -> int32"


def test_a_block_runs_with_the_longer_switch_interval_and_restores_it():
    """(A simulated kernel is Python: it can read the interpreter's setting itself.)"""
    import sys

    from lab import simulator

    @cuda.jit
    def record(out):
        out[cuda.threadIdx.x] = sys.getswitchinterval()

    before = sys.getswitchinterval()
    out = np.zeros(4)
    record[2, 4](out)
    assert out == pytest.approx([max(before, simulator.SWITCH_S)] * 4)
    assert sys.getswitchinterval() == before

def test_a_barrier_orders_writes_and_reads_across_the_block():
    """Each thread writes its slot, waits, reads its neighbour's: only a real barrier gives
    every thread its neighbour's value, in every one of several blocks."""
    @cuda.jit
    def rotate(out):
        s = cuda.shared.array(64, dtype=np.int64)
        t = cuda.threadIdx.x
        s[t] = t + 100 * cuda.blockIdx.x
        cuda.syncthreads()
        v = s[(t + 1) % 64]
        cuda.syncthreads()
        s[t] = v * 2
        cuda.syncthreads()
        out[cuda.blockIdx.x, t] = s[(t + 1) % 64]

    out = np.zeros((3, 64), np.int64)
    rotate[3, 64](out)
    t = np.arange(64)
    for b in range(3):
        assert (out[b] == 2 * ((t + 2) % 64 + 100 * b)).all()


def test_threads_that_return_early_no_longer_count_at_the_barrier():
    @cuda.jit
    def early(out):
        t = cuda.threadIdx.x
        if t >= 20:
            return                      # these never reach the barrier
        s = cuda.shared.array(32, dtype=np.int64)
        s[t] = t
        cuda.syncthreads()
        out[t] = s[19 - t]

    out = np.full(32, -1, np.int64)
    early[1, 32](out)
    assert (out[:20] == 19 - np.arange(20)).all() and (out[20:] == -1).all()


def test_syncthreads_count_counts_the_block():
    @cuda.jit
    def count(out):
        t = cuda.threadIdx.x
        out[t] = cuda.syncthreads_count(t % 3 == 0)

    out = np.zeros(30, np.int64)
    count[1, 30](out)
    assert (out == 10).all()


def test_an_exception_in_one_thread_is_raised_from_the_launch_and_stops_the_rest():
    @cuda.jit
    def fails(out):
        t = cuda.threadIdx.x
        cuda.syncthreads()
        if t == 5:
            out[1000] = 1               # out of bounds: IndexError in the simulator
        cuda.syncthreads()
        out[t] = 1

    out = np.zeros(16, np.int64)
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\]"):
        fails[1, 16](out)
    assert not out.any()                # nobody passed the second barrier


def test_a_kernel_modules_scalar_types_are_numpys_while_it_runs():
    """While a kernel of this module runs, its int32 is np.int32 (the same cast, without
    numba's call around it), its types still name arrays' dtypes (dynamic shared memory
    included), and numba's types are back after the launch."""
    from numba.core import types

    @cuda.jit
    def probe(out):
        t = cuda.threadIdx.x
        dyn = cuda.shared.array(0, dtype=uint8)
        loc = cuda.local.array(2, float32)
        loc[0] = float32(1.5)
        out[t, 0] = int32 is np.int32
        out[t, 1] = type(int32(7.9)) is np.int32 and int32(7.9) == 7
        out[t, 2] = dyn.dtype == np.uint8 and dyn.size == 16
        out[t, 3] = loc.dtype == np.float32 and loc[0] == 1.5

    out = np.zeros((4, 4), np.int64)
    probe[1, 4, 0, 16](out)
    assert out.all(), out
    assert int32 is types.int32 and float32 is types.float32 and uint8 is types.uint8


def test_threads_are_reused_and_start_each_cuda_thread_afresh():
    """A block's threads come from a pool: a second launch starts no new OS thread, and what
    one launch left on its threads (an attribute, a finished exception) is gone in the next."""
    import threading

    @cuda.jit
    def mark(out):
        t = threading.current_thread()
        out[cuda.threadIdx.x, 0] = hasattr(t, "left_by_last_launch")
        out[cuda.threadIdx.x, 1] = t.exception is None and not t.abort
        t.left_by_last_launch = True

    @cuda.jit
    def fails(out):
        if cuda.threadIdx.x == 3:
            out[1000, 0] = 1

    out = np.zeros((32, 2), np.int64)
    mark[1, 32](out)
    with pytest.raises(IndexError):
        fails[1, 32](out)
    threads = threading.active_count()
    mark[2, 32](out)
    assert threading.active_count() == threads
    assert (out[:, 0] == 0).all() and (out[:, 1] == 1).all()
