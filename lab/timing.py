"""Timing on the GPU, the other half of the method.

:func:`event_samples` is the package's one CUDA-event loop (warm-up calls, then a pair of
events on a stream around each call or batch of calls); :func:`time_gpu` times with it: events
around each call after warm-up, at least 10 repeats, median with min and max (:class:`Timing`); inputs either cache-hot (one buffer set) or rotated through enough
buffer sets to exceed the L2 cache (:func:`buffer_sets`), so each call starts with cold operands.
Calls shorter than the host's launch path are timed queued behind a busy kernel
(:func:`time_queued`). :func:`lab.bench.time` checks a provider, then times it with these.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lab import device
from lab.accuracy import random_inputs


def compile_ahead(names=(), pairs=()) -> None:
    """Compile now, in one stretch, the kernels an experiment is about to launch: the
    ``(dispatcher, signature)`` pairs of the registered kernels ``names``
    (:attr:`lab.kernels.KernelSpec.compile`) and ``pairs``. In a process of ``measure --jobs
    N`` this stretch is spent off the GPU (:func:`lab.gpulock.off_gpu`), with one wait for the
    GPU after it instead of one after every kernel; elsewhere it only moves the compiles
    earlier. Nothing under the simulator. A pair that does not compile is left to its launch,
    which raises the error where the experiment reports it."""
    if device.SIMULATOR:
        return
    from lab.gpulock import off_gpu
    from lab.kernels import REGISTRY

    todo = [pair for name in names if name in REGISTRY for pair in REGISTRY[name].compile]
    with off_gpu():
        for dispatcher, signature in [*todo, *pairs]:
            try:
                dispatcher.compile(signature)
            except Exception:  # noqa: BLE001, S112 - the launch raises it again, reported there
                continue


@dataclass
class Timing:
    """Milliseconds per call over ``repeats`` timed calls (after ``warmup`` untimed ones)."""
    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int
    warmup: int
    rotated: bool
    samples_ms: list[float] = field(default_factory=list, repr=False)

    def tflops(self, flops: float) -> float:
        return flops / (self.median_ms * 1e-3) / 1e12

    def row(self) -> dict:
        return {"median_ms": self.median_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
                "repeats": self.repeats, "warmup": self.warmup, "rotated": self.rotated}


def require_gpu(what: str = "timing") -> None:
    if not device.GPU:
        raise RuntimeError(f"{what} needs a GPU; this session runs in mode {device.MODE!r}")


def event_samples(call: Callable[[int], None], *, warmup: int = 3, repeats: int = 20,
                  batch: int = 1, stream=None, before: Callable[[], None] | None = None
                  ) -> list[float]:
    """The CUDA-event loop: ``warmup`` untimed calls of ``call(i)`` (i = 0, 1, 2, …), the device
    synchronised, then ``repeats`` samples, each a pair of events recorded on ``stream`` (a
    driver handle or any stream :func:`lab.enqueue.stream_handle` takes; None: the default
    stream) around ``batch`` calls, with ``before()`` (untimed, e.g. :func:`flush_l2`) enqueued
    ahead of each sample's first event. Returns each sample's milliseconds per call."""
    require_gpu()
    if repeats < 1 or batch < 1 or warmup < 0:
        raise ValueError(f"event_samples needs repeats >= 1, batch >= 1 and warmup >= 0 (got "
                         f"{repeats}, {batch}, {warmup})")
    from numba import cuda

    from lab.enqueue import stream_handle

    handle = stream_handle(stream) if stream is not None else 0
    s = cuda.external_stream(handle) if handle else cuda.default_stream()
    for i in range(warmup):
        call(i)
    cuda.synchronize()
    starts = [cuda.event(timing=True) for _ in range(repeats)]
    stops = [cuda.event(timing=True) for _ in range(repeats)]
    i = warmup
    for r in range(repeats):
        if before is not None:
            before()
        starts[r].record(s)
        for _ in range(batch):
            call(i)
            i += 1
        stops[r].record(s)
    stops[-1].synchronize()
    return [cuda.event_elapsed_time(a, b) / batch for a, b in zip(starts, stops)]


#: L2 flush buffers, by context: twice the L2 cache (and, for a flush by reading, the reading
#: kernel's one float per thread).
_FLUSH: dict = {}
#: Blocks per SM and threads per block of a flush by reading.
READ_BLOCKS_PER_SM, READ_THREADS = 4, 256


def flush_l2(stream=None, *, read: bool = False) -> None:
    """Evict the operands of the last call from the L2 cache, enqueued on ``stream`` (a driver
    handle; None: the default stream), so that a call timed after it reads its operands from
    HBM, as a model's layer does its weights.

    By default a write of twice the L2's size (``cuMemsetD8Async``), as Triton's ``do_bench``
    zeroes a buffer before each timed call. That leaves the L2 full of dirty lines, and the
    timed call pays for writing them back as it evicts them: on the H200, 14336×4096 decode
    products timed 42-48 µs a call after it and 30-35 µs in a CUDA graph of back-to-back calls
    (the suite), about the 14 µs that writing 63 MB back takes. ``read=True`` reads the buffer
    instead (chapter 0's streaming-read kernel, :func:`lab.roofline.read_kernel`): the L2 is
    left holding clean lines, which cost nothing to evict. lab.gemm's first-call tuning flushes
    this way, since it ranks candidates whose times differ by less than that write-back."""
    require_gpu("flushing the L2 cache")
    from cuda.bindings import driver as cu
    from numba import cuda
    from numba.cuda.cudadrv import driver

    key = (id(cuda.current_context()), read)
    if key not in _FLUSH:
        dev = cuda.get_current_device()
        size = 2 * max(dev.L2_CACHE_SIZE, 1 << 20)
        if read:
            blocks = READ_BLOCKS_PER_SM * dev.MULTIPROCESSOR_COUNT
            _FLUSH[key] = (cuda.device_array(size // 4, dtype=np.float32),
                           cuda.device_array(blocks * READ_THREADS, dtype=np.float32), blocks)
        else:
            _FLUSH[key] = cuda.device_array(size, dtype=np.uint8)
    handle = int(stream) if stream is not None else 0
    if read:
        from lab.roofline import read_kernel

        buf, out, blocks = _FLUSH[key]
        s = cuda.external_stream(handle) if handle else cuda.default_stream()
        read_kernel[blocks, READ_THREADS, s](buf, out)
        return
    buf = _FLUSH[key]
    # the asynchronous memset on any stream, the default one included (Numba's
    # device_memset blocks the host there, and the timed call would then start late)
    err = cu.cuMemsetD8Async(cu.CUdeviceptr(driver.device_pointer(buf)), 0, buf.nbytes,
                             cu.CUstream(handle))
    err = err[0] if isinstance(err, tuple) else err
    if int(err) != 0:
        raise RuntimeError(f"cuMemsetD8Async failed: {err}")


def interleaved_medians(launches: list, *, warmup: int, repeats: int, stream=None,
                        before: Callable[[], None] | None = None) -> list[float]:
    """The median ms per call of each of ``launches`` (functions of no argument), timed in
    turn, one call each per round (a, b, c, a, b, c, …: every one sees the same clock as the
    board warms), ``repeats`` rounds after ``warmup`` untimed ones, by :func:`event_samples`
    with ``before()`` ahead of every timed call."""
    n = len(launches)
    samples = event_samples(lambda i: launches[i % n](), warmup=warmup * n,
                            repeats=repeats * n, stream=stream, before=before)
    return [float(np.median(samples[j::n])) for j in range(n)]


def time_gpu(call: Callable[[int], None], *, warmup: int = 3, repeats: int = 20,
             rotated: bool = False) -> Timing:
    """Time ``call(i)`` (i = 0, 1, 2, …) with CUDA events around each call
    (:func:`event_samples`); median/min/max in ms."""
    require_gpu()
    if repeats < 10:
        raise ValueError(f"repeats must be >= 10 (got {repeats})")
    samples = event_samples(call, warmup=warmup, repeats=repeats)
    return Timing(float(np.median(samples)), float(min(samples)), float(max(samples)),
                  repeats, warmup, rotated, samples)


#: The most input sets :func:`buffer_sets` rotates through. Past it, a set is smaller than
#: 2·L2 / 64 (under 2 MB on the H200): a product that small is timed as much by its launch as by
#: its loads, and cycling through thousands of tiny sets would allocate thousands of buffers
#: (201,006 sets for a 9×10×7 FP32 product) for nothing the timing could show.
MAX_BUFFER_SETS = 64


def buffer_sets(nbytes_per_set: int, rotate: bool, l2_bytes: int | None = None) -> int:
    """How many input sets to cycle through: 1 (cache-hot), or enough to exceed 2 × L2, at most
    :data:`MAX_BUFFER_SETS`."""
    if not rotate:
        return 1
    l2 = l2_bytes or device.provenance()["l2_bytes"] or 60 * 2**20
    return min(MAX_BUFFER_SETS, max(2, math.ceil(2 * l2 / max(nbytes_per_set, 1)) + 1))


class Operands:
    """Device operands shared by every provider at one shape and dtype (one host draw per
    shape and dtype, so all providers at a shape see the same values), and output buffers
    by shape and dtype; :meth:`clear` frees them before the next shape."""

    def __init__(self, seed: int = 6):
        self.rng = np.random.default_rng(seed)
        self.ops: dict = {}
        self.outs: dict = {}

    def operands(self, m: int, n: int, k: int, dtype):
        from numba import cuda

        key = (m, n, k, np.dtype(dtype).str)
        if key not in self.ops:
            a, b = random_inputs(m, n, k, dtype, self.rng)
            self.ops[key] = (cuda.to_device(a), cuda.to_device(b))
        return self.ops[key]

    def output(self, m: int, n: int, dtype):
        from numba import cuda

        key = (m, n, np.dtype(dtype).str)
        if key not in self.outs:
            self.outs[key] = cuda.device_array((m, n), dtype=dtype)
        return self.outs[key]

    def clear(self) -> None:
        self.ops.clear()
        self.outs.clear()



# ----------------------------------------------------------------------------- queued timing
# A call shorter than the host's launch path (tens of µs through CuPy or Numba) cannot be
# timed call by call: the GPU idles between the start event and the kernel while the host is
# still launching it, so the event pair measures the host. Queued timing first gives the GPU a
# busy kernel to chew on (a single thread running a dependent FMA chain for >= 1 ms), and
# records the start event, the batch of calls and the stop event while it runs: the calls then
# sit in the queue and execute back to back, and (stop - start) / batch is the GPU's own time
# per call, the small gaps between kernels included.

#: Defaults of :func:`time_queued`: calls per batch, batches, untimed calls, shortest spin.
QUEUE_BATCH = 20
QUEUE_BATCHES = 10
QUEUE_WARMUP = 3
SPIN_MIN_MS = 1.0


@functools.lru_cache(maxsize=1)
def _busy_kernel():
    from numba import cuda, float32, int32

    @cuda.jit
    def busy_kernel(iterations, out):
        """One thread, one dependent FMA chain: keeps the GPU occupied for a known time."""
        x = out[0]
        i = int32(0)
        while i < iterations:
            x = x * float32(0.9999999) + float32(1e-7)
            i += int32(1)
        out[0] = x
    return busy_kernel


class Spinner:
    """Launches a busy kernel for a requested number of milliseconds (calibrated once)."""

    CALIBRATION_ITERATIONS = 1 << 18

    def __init__(self):
        from numba import cuda

        self.out = cuda.to_device(np.ones(1, dtype=np.float32))
        t = time_gpu(lambda i: self.launch_iterations(self.CALIBRATION_ITERATIONS),
                     warmup=1, repeats=10)
        self.ms_per_iteration = t.median_ms / self.CALIBRATION_ITERATIONS

    def launch_iterations(self, iterations: int) -> None:
        _busy_kernel()[1, 1](np.int32(min(iterations, 2**31 - 1)), self.out)

    def launch(self, ms: float) -> None:
        self.launch_iterations(int(ms / self.ms_per_iteration) + 1)


@functools.lru_cache(maxsize=1)
def process_spinner() -> Spinner:
    """The process's one calibrated :class:`Spinner` (calibrated on first use)."""
    return Spinner()


def time_queued(call, *, spinner: Spinner | None = None, batch: int | None = None,
                batches: int | None = None, warmup: int | None = None,
                rotated: bool = False, spin_min_ms: float | None = None
                ) -> tuple[Timing, float]:
    """GPU time per call of ``call(i)`` with the launch path hidden: a :class:`Spinner` kernel
    runs while ``batch`` calls are queued between two events; ``batches`` such measurements,
    each divided by ``batch``, give median/min/max. Also returns the share of batches whose
    spin outlasted the host's enqueueing (1.0 = every batch ran back to back on the GPU).
    ``spinner`` defaults to one calibrated :class:`Spinner` per process."""
    import time as clock

    from numba import cuda

    spinner = spinner or process_spinner()
    batch = batch or QUEUE_BATCH
    batches = batches or QUEUE_BATCHES
    warmup = QUEUE_WARMUP if warmup is None else warmup
    spin_min_ms = SPIN_MIN_MS if spin_min_ms is None else spin_min_ms
    for i in range(warmup):
        call(i)
    cuda.synchronize()
    t0 = clock.perf_counter()
    for i in range(batch):
        call(i)
    cuda.synchronize()
    spin_ms = max(spin_min_ms, 3e3 * (clock.perf_counter() - t0))
    per_call, covered = [], 0
    for b in range(batches):
        e_spin, e_start, e_stop = (cuda.event(timing=True) for _ in range(3))
        h0 = clock.perf_counter()
        e_spin.record()
        spinner.launch(spin_ms)
        e_start.record()
        for i in range(batch):
            call(b * batch + i)
        e_stop.record()
        host_ms = 1e3 * (clock.perf_counter() - h0)
        e_stop.synchronize()
        covered += cuda.event_elapsed_time(e_spin, e_start) > host_ms
        per_call.append(cuda.event_elapsed_time(e_start, e_stop) / batch)
    t = Timing(float(np.median(per_call)), float(min(per_call)), float(max(per_call)),
               batches, warmup, rotated, per_call)
    return t, covered / batches
