"""Counting loads: every element a kernel reads or writes, recorded under the CUDA simulator.

:func:`count_accesses` runs a kernel under the simulator with three of the simulator's hooks
replaced for the duration of the launch — the wrapper it puts around each array argument, the
factory of shared arrays, and the barrier — so every element a thread reads or writes in global
or shared memory is recorded with the thread, its block and the number of barriers it has
passed. The kernel's code is not changed. Counted are element accesses as the source spells
them; the compiled kernel may merge neighbours into wider loads, which moves the same bytes in
fewer instructions. On a GPU, :func:`in_simulator` runs such a count in a child Python.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

import numpy as np

from lab import device
from numba import cuda  # after lab.device: the simulator is decided


class _Recorder:
    """The accesses of one launch: (space, op, array, index, block, thread, barriers)."""

    def __init__(self, names):
        self.names = list(names)
        self.next_arg = 0
        self.shared_names: dict = {}
        self.events: list[tuple] = []

    def record(self, space: str, op: str, array: str, index) -> None:
        t = threading.current_thread()
        idx = tuple(int(i) for i in (index if isinstance(index, tuple) else (index,)))
        self.events.append((space, op, array, idx, tuple(t.blockIdx), tuple(t.threadIdx),
                            getattr(t, "lab_barriers", 0)))


@contextmanager
def _counting(recorder: _Recorder):
    """Replace the simulator's argument wrapper, shared-array factory and barrier for the
    duration of one launch so that ``recorder`` sees every access (restored afterwards)."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi

    base_wrapper = sim_kernel.FakeWithinKernelCUDAArray
    base_shared = kernelapi.FakeCUDAShared.array
    base_sync = sim_kernel.BlockThread.syncthreads

    class CountedArgument(base_wrapper):
        def __init__(self, item):
            super().__init__(item)
            i = recorder.next_arg
            recorder.next_arg += 1
            self.__dict__["lab_name"] = (recorder.names[i] if i < len(recorder.names)
                                         else f"arg{i}")

        def __getitem__(self, idx):
            recorder.record("global", "load", self.__dict__["lab_name"], idx)
            return super().__getitem__(idx)

        def __setitem__(self, idx, val):
            recorder.record("global", "store", self.__dict__["lab_name"], idx)
            super().__setitem__(idx, val)

    class CountedShared(np.ndarray):
        def __getitem__(self, idx):
            recorder.record("shared", "load", self.lab_name, idx)
            return np.ndarray.__getitem__(self, idx)

        def __setitem__(self, idx, val):
            recorder.record("shared", "store", self.lab_name, idx)
            np.ndarray.__setitem__(self, idx, val)

    made = threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):
        # One array per line of the kernel that asks for it, as the simulator does.
        frame = sys._getframe(1)
        where = (frame.f_code.co_filename, frame.f_lineno)
        with made:  # threads of one block ask at once: exactly one of them creates the array
            found = recorder.shared_names.get(where)
            if found is None:
                from numba.core import types
                from numba.np import numpy_support
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                found = np.zeros(shape, dtype).view(CountedShared)
                found.lab_name = f"shared{len(recorder.shared_names)}"
                recorder.shared_names[where] = found
        return found

    def syncthreads(self):
        self.lab_barriers = getattr(self, "lab_barriers", 0) + 1
        base_sync(self)

    sim_kernel.FakeWithinKernelCUDAArray = CountedArgument
    kernelapi.FakeCUDAShared.array = shared_array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield recorder
    finally:
        sim_kernel.FakeWithinKernelCUDAArray = base_wrapper
        kernelapi.FakeCUDAShared.array = base_shared
        sim_kernel.BlockThread.syncthreads = base_sync


def count_accesses(launch, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Run ``launch(A, B, C)`` (a lab launch function) under the simulator and record every
    global and shared access; returns the product and the events (see :class:`_Recorder`).
    Raises RuntimeError on a GPU: only the simulator can be watched this way."""
    if not device.SIMULATOR:
        raise RuntimeError("counting loads needs the CUDA simulator (LAB_DEVICE=simulator)")
    recorder = _Recorder(["A", "B", "C"])
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.to_device(np.zeros((A.shape[0], B.shape[1]), np.float32))
    with _counting(recorder):
        launch(dA, dB, dC)
    return dC.copy_to_host(), recorder.events


def in_simulator(name: str, module: str):
    """Call ``name`` (a function of ``module`` returning JSON-able data) in a child Python on
    the CUDA simulator: on a GPU the simulator cannot be switched on in this process. Integer
    keys that JSON turned into strings come back as integers."""
    import json
    import os
    import subprocess

    env = dict(os.environ, LAB_DEVICE="simulator")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    code = (f"import json, importlib, lab; m = importlib.import_module({module!r}); "
            f"print(json.dumps(m.{name}()))")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return _int_keys(json.loads(out.strip().splitlines()[-1]))


def _int_keys(value):
    """JSON turns the integer keys of the step counters into strings; turn them back."""
    if isinstance(value, dict):
        return {(int(k) if isinstance(k, str) and k.isdigit() else k): _int_keys(v)
                for k, v in value.items()}
    return value
