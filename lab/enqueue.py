"""Enqueueing kernels: launch plans (a kernel launch whose arguments are marshalled once,
launched by one driver call on the caller's stream), memoised launchers and CUDA graphs.

A Numba launch, ``kernel[grid, block, stream, shared](*args)``, does on every call what only
the first call needs: it types every argument to find the compiled overload, wraps and checks
every array, turns each array into its ABI fields (meminfo, parent, size, itemsize, data
pointer, shape…, strides…) and hands them to the driver through ``cuda.core`` — 39–83 µs of
host time for three array arguments on the H200. A :class:`LaunchPlan` does that work once per
(kernel, signature, grid, block, shared bytes, cluster, argument buffers and shapes): it keeps
the marshalled values and the ``void*[]`` that points at them alive, and each launch is one
call of the driver (``cuLaunchKernel``, or ``cuLaunchKernelEx`` with a cluster dimension) on
the stream asked for — so a launch can be captured into a CUDA graph (:class:`Graph`).

The convention every routed launcher follows (the Hopper rungs, the cluster launch, the
tensor-core launchers, :func:`lab.gemm`):

* it launches through :func:`launch` (never ``kernel[...]`` and never a fixed stream), which
  uses a cached plan on a GPU and Numba's own launch under the simulator;
* the stream is the one of :func:`stream` (a ``with`` block), else Numba's default stream;
* :func:`memo` wraps a whole launcher: its first call at given argument buffers records the
  plans it launched (and the buffers it made, e.g. padded operands and tensor maps, kept alive
  with them); later calls with the same buffers replay those plans and nothing else.

A plan holds no reference to the caller's arrays, only their addresses and shapes: the key of
the cache is exactly what the marshalled values depend on, so a buffer that changes (another
address, shape, stride or dtype) gets another plan, and a freed buffer whose address and shape
come back gets the same, still correct, one. Arrays must already be on the device: a host
array would be copied (and copied back) by Numba on every launch, which a plan cannot do.
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from lab import device
from lab.lru import LRU

#: Plans kept (least recently used dropped first).
PLANS_KEPT = 512
#: Launcher call plans kept by each :func:`memo`.
CALLS_KEPT = 256
#: A recorded call of several launches becomes one CUDA graph at this many replays.
GRAPH_AFTER = 2
#: Driver stream objects kept, by handle.
STREAMS_KEPT = 64

_PLANS = LRU(PLANS_KEPT)
_STREAMS: list = []            # the stack of :func:`stream` blocks (driver handles, ints)
_RECORDING: list = []          # the stack of :class:`_Recording` of :func:`memo`
#: True: route nothing — launch through Numba (``kernel[...]``) and marshal a cluster launch
#: on every call, as before launch plans existed (the ``launch_cost`` experiment's old path).
NUMBA_LAUNCH = False
#: True: a plan without clusters launches through ``libcuda``'s ``cuLaunchKernel`` by ctypes
#: (one C call); False: through ``cuda.bindings`` (the ``launch_cost`` experiment compares).
DIRECT = True
#: True: each new plan keeps its arguments (``.args``), to compare with Numba's marshalling.
KEEP_ARGS = False
STATS = {"plans_built": 0, "plan_hits": 0, "calls_built": 0, "call_hits": 0,
         "graph_failures": 0}


class LaunchError(ValueError):
    """An argument a plan cannot marshal, with the argument and the reason."""


# ----------------------------------------------------------------------------- marshalling

def array_interface(x) -> dict | None:
    """``x.__cuda_array_interface__`` (a device array of Numba, CuPy, PyTorch…), or None."""
    try:
        return x.__cuda_array_interface__
    except AttributeError:
        return None


def _strides(shape, itemsize: int, strides) -> tuple:
    if strides is not None:
        return tuple(int(s) for s in strides)
    out, step = [], itemsize
    for extent in reversed(shape):
        out.append(step)
        step *= int(extent)
    return tuple(reversed(out))


def array_fields(ty, value, label: str = "argument") -> list[int]:
    """The ABI fields Numba passes for an array argument of type ``ty`` (its ``_prepare_args``):
    meminfo 0, parent 0, size, itemsize, data pointer, the shape, the strides in bytes.

    ``value`` must be a device array (``__cuda_array_interface__``) of ``ty``'s dtype and
    number of dimensions, and C-contiguous when ``ty`` says so. LaunchError otherwise."""
    cai = array_interface(value)
    if cai is None:
        if isinstance(value, np.ndarray):
            raise LaunchError(f"{label} is a host numpy array: a launch plan takes device "
                              "arrays only (copy it with numba.cuda.to_device first)")
        raise LaunchError(f"{label} must be a device array (with __cuda_array_interface__) "
                          f"for {ty}, got {type(value).__name__}")
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    if len(shape) != ty.ndim:
        raise LaunchError(f"{label}: the kernel takes {ty.ndim}-D arrays, got shape {shape}")
    want = np.dtype(str(ty.dtype))
    if dtype != want:
        raise LaunchError(f"{label}: the kernel takes {want.name}, got {dtype.name}")
    strides = _strides(shape, dtype.itemsize, cai.get("strides"))
    if ty.layout == "C" and strides != _strides(shape, dtype.itemsize, None) and \
            all(s > 1 for s in shape):
        raise LaunchError(f"{label}: the kernel takes a C-contiguous array, got strides "
                          f"{strides} for shape {shape}")
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    return [0, 0, size, dtype.itemsize, int(cai["data"][0]), *shape, *strides]


def marshal(argument_types, args) -> list:
    """The kernel's arguments as Numba passes them to the driver: a list of ctypes values
    (pointer-sized integers as ``c_int64``), in order. Supports what our kernels take: arrays,
    integers, float16/32/64, booleans and raw pointers; anything else raises LaunchError."""
    from numba import types

    if len(argument_types) != len(args):
        raise LaunchError(f"the kernel takes {len(argument_types)} arguments, got {len(args)}")
    cells: list = []
    for i, (ty, value) in enumerate(zip(argument_types, args)):
        label = f"argument {i} ({ty})"
        if isinstance(ty, types.BaseTuple):
            if not isinstance(value, tuple) or len(value) != len(ty):
                raise LaunchError(f"{label}: a tuple of {len(ty)}, got {value!r:.60}")
            cells += marshal(tuple(ty), value)
        elif isinstance(ty, types.Array):
            cells += [ctypes.c_int64(v) for v in array_fields(ty, value, label)]
        elif isinstance(ty, types.CPointer):
            cells.append(ctypes.c_int64(int(value)))
        elif isinstance(ty, types.Boolean):
            cells.append(ctypes.c_bool(bool(value)))
        elif isinstance(ty, types.Integer):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise LaunchError(f"{label}: an integer, got {type(value).__name__}")
            cells.append(getattr(ctypes, f"c_{ty}")(int(value)))
        elif ty == types.float16:
            cells.append(ctypes.c_uint16(int(np.float16(value).view(np.uint16))))
        elif ty == types.float32:
            cells.append(ctypes.c_float(float(value)))
        elif ty == types.float64:
            cells.append(ctypes.c_double(float(value)))
        else:
            raise LaunchError(f"{label}: a launch plan cannot marshal {ty} "
                              f"({type(value).__name__})")
    return cells


def cell_values(cells) -> list:
    """The Python values of marshalled cells (for comparing with Numba's own list)."""
    return [c.value for c in cells]


def _arg_key(value):
    if isinstance(value, tuple):
        return tuple(_arg_key(v) for v in value)
    cai = array_interface(value)
    if cai is not None:
        return (int(cai["data"][0]), tuple(cai["shape"]), cai.get("strides"), cai["typestr"])
    if isinstance(value, np.ndarray):
        return ("host", id(value))
    return (type(value).__name__, value if not isinstance(value, np.generic) else value.item())


def args_key(args) -> tuple:
    """What a plan depends on in ``args``: each device array's address, shape, strides and
    type; each scalar's type and value."""
    return tuple(_arg_key(a) for a in args)


# ----------------------------------------------------------------------------- streams

_CU_STREAMS = LRU(STREAMS_KEPT)


def stream_handle(s=None) -> int:
    """The driver handle (an int) of ``s``: a Numba stream, a PyTorch or CuPy stream, an
    object with ``__cuda_stream__``, an int handle; None means the innermost :func:`stream`
    block's, else 0 (the legacy default stream, Numba's and PyTorch's default)."""
    if s is None:
        return _STREAMS[-1] if _STREAMS else 0
    if isinstance(s, (int, np.integer)):
        return int(s)
    if hasattr(s, "__cuda_stream__"):
        return int(s.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):             # torch.cuda.Stream, cupy Stream
        if hasattr(s, attr):
            return int(getattr(s, attr))
    handle = getattr(s, "handle", None)             # numba Stream
    if handle is None:
        raise TypeError(f"not a stream: {type(s).__name__}")
    handle = getattr(handle, "value", handle)
    return int(handle or 0)


@contextlib.contextmanager
def stream(s):
    """Routed launches inside the block go to stream ``s``."""
    _STREAMS.append(stream_handle(s))
    try:
        yield
    finally:
        _STREAMS.pop()


def _cu_stream(handle: int):
    cs = _CU_STREAMS.get(handle)
    if cs is None:
        from cuda.bindings import driver as cu
        cs = _CU_STREAMS[handle] = cu.CUstream(handle)
    return cs


def _check(res, what: str):
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")
    return res[1] if isinstance(res, tuple) and len(res) == 2 else None


def capturing(stream=None) -> bool:
    """Whether ``stream`` (see :func:`stream_handle`) is being captured into a graph (True too
    where the driver cannot say: the legacy stream while another stream captures)."""
    if device.SIMULATOR or not device.GPU:
        return False
    from cuda.bindings import driver as cu

    res = cu.cuStreamIsCapturing(_cu_stream(stream_handle(stream)))
    return int(res[0]) != 0 or res[1] != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


# ----------------------------------------------------------------------------- plans

def _dim3(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, (int, np.integer)) else tuple(d)
    if not 1 <= len(d) <= 3 or not all(isinstance(x, (int, np.integer)) and x >= 1 for x in d):
        raise LaunchError(f"a grid or block must be 1 to 3 positive ints, got {d!r}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


class LaunchPlan:
    """One kernel launch with its arguments marshalled: :meth:`launch` is a driver call.

    ``kernel`` a ``@cuda.jit`` dispatcher, ``signature`` its signature (string or tuple of
    types; None: typed from ``args``), ``grid``/``block`` up to three ints, ``shared`` dynamic
    shared bytes, ``cluster`` blocks per cluster along x (1: ``cuLaunchKernel``)."""

    def __init__(self, kernel, signature, grid, block, shared: int = 0, args=(),
                 cluster: int = 1):
        self.grid, self.block = _dim3(grid), _dim3(block)
        self.shared, self.cluster = int(shared), int(cluster)
        if self.shared < 0:
            raise LaunchError(f"dynamic shared memory must be >= 0 bytes, got {shared}")
        if self.cluster < 1 or self.grid[0] % self.cluster:
            raise LaunchError(f"{self.grid[0]} blocks do not make whole clusters of "
                              f"{self.cluster}")
        self.name = getattr(getattr(kernel, "py_func", None), "__name__", str(kernel))
        if device.SIMULATOR or not device.GPU:
            raise RuntimeError("a launch plan calls the driver: it needs a GPU (under the "
                               "simulator, lab.enqueue.launch uses Numba's launch)")
        from cuda.bindings import driver as cu

        self.signature = signature if signature is not None else _signature_of(args)
        self.args = tuple(args) if KEEP_ARGS else None
        compiled = kernel.compile(self.signature)
        self.cells = marshal(compiled.argument_types, args)
        self.pointers = (ctypes.c_void_p * max(1, len(self.cells)))(
            *[ctypes.addressof(c) for c in self.cells])
        self.params = ctypes.addressof(self.pointers)
        self.function = cu.CUfunction(int(compiled._codelibrary.get_cufunc().handle))
        self._cu = cu
        self._configs: dict = {}
        lib = _libcuda() if self.cluster == 1 and DIRECT else None
        self._direct = None
        if lib is not None:                  # one ctypes call: the cheapest way to the driver
            import functools
            self._direct = functools.partial(lib.cuLaunchKernel, int(self.function),
                                             *self.grid, *self.block, self.shared)

    def _config(self, handle: int):
        cfg = self._configs.get(handle)
        if cfg is None:
            cu = self._cu
            cfg = cu.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = self.grid
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.block
            cfg.sharedMemBytes = self.shared
            cfg.hStream = _cu_stream(handle)
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y = self.cluster, 1
            attr.value.clusterDim.z = 1
            cfg.attrs = [attr]
            cfg.numAttrs = 1
            cfg = self._configs[handle] = cfg
        return cfg

    # region: plan_launch
    def launch(self, stream=None) -> None:
        """One launch on ``stream`` (see :func:`stream_handle`)."""
        handle = stream_handle(stream)
        if self._direct is not None:
            err = self._direct(handle, self.params, None)
        else:
            if self.cluster == 1:
                g, b = self.grid, self.block
                res = self._cu.cuLaunchKernel(self.function, g[0], g[1], g[2], b[0], b[1],
                                              b[2], self.shared, _cu_stream(handle),
                                              self.params, 0)
            else:
                res = self._cu.cuLaunchKernelEx(self._config(handle), self.function,
                                                self.params, 0)
            err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise RuntimeError(f"launching {self.name} (grid {self.grid}, block {self.block}, "
                               f"{self.shared} bytes, clusters of {self.cluster}) failed: {err}")
    # endregion: plan_launch


_LIBCUDA: list = []


def _libcuda():
    """The driver library through ctypes, with ``cuLaunchKernel``'s and ``cuGraphLaunch``'s
    argument types set (None where it cannot be loaded: launches then go through
    ``cuda.bindings``)."""
    if not _LIBCUDA:
        lib = None
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            f = lib.cuLaunchKernel
            f.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
            f.restype = ctypes.c_int
            g = lib.cuGraphLaunch
            g.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            g.restype = ctypes.c_int
        except (OSError, AttributeError):
            lib = None
        _LIBCUDA.append(lib)
    return _LIBCUDA[0]


def _signature_of(args) -> tuple:
    from numba import typeof

    return tuple(typeof(a) for a in args)


def _context_id() -> int:
    from numba import cuda

    return id(cuda.current_context())


def launch_plan(kernel, signature, grid, block, shared: int = 0, args=(), cluster: int = 1
                ) -> LaunchPlan:
    """The cached :class:`LaunchPlan` for these exactly (built on first use)."""
    key = (id(kernel), signature, _dim3(grid), _dim3(block), int(shared), int(cluster),
           args_key(args))
    p = _PLANS.get(key)
    if p is None:
        p = LaunchPlan(kernel, signature, grid, block, shared, args, cluster)
        p.kernel = kernel                     # keeps id(kernel) from being reused
        _PLANS[key] = p
        STATS["plans_built"] += 1
    else:
        STATS["plan_hits"] += 1
    return p


def launch(kernel, signature, grid, block, shared: int = 0, args=(), *, cluster: int = 1,
           stream=None) -> None:
    """Launch ``kernel`` the routed way: on a GPU through its cached plan on ``stream`` (default:
    :func:`stream`'s); under the simulator through Numba (``kernel[grid, block, 0, shared]``,
    a cluster launch is refused there: the simulator has no clusters)."""
    if NUMBA_LAUNCH and not device.SIMULATOR:
        if cluster > 1:                    # marshalled per call, as the old cluster launch
            LaunchPlan(kernel, signature, grid, block, shared, args, cluster).launch(stream)
        else:
            from numba import cuda
            h = stream_handle(stream)
            kernel[grid, block, cuda.external_stream(h) if h else 0, shared](*args)
        return
    if device.SIMULATOR:
        if cluster > 1:
            raise RuntimeError(f"{getattr(kernel, '__name__', kernel)}: a cluster launch "
                               "needs a GPU of compute capability 9.0; the CUDA simulator has "
                               "no clusters")
        kernel[grid, block, 0, shared](*args)
        return
    p = launch_plan(kernel, signature, grid, block, shared, args, cluster)
    if _RECORDING:
        _RECORDING[-1].add(p, args)
    p.launch(stream)


# ----------------------------------------------------------------------------- memo

class _Recording:
    def __init__(self, inputs):
        self.plans: list[LaunchPlan] = []
        self.keep: list = []
        self.inputs = {id(x) for x in inputs}

    def add(self, p, args):
        self.plans.append(p)
        self.keep += [a for a in args if id(a) not in self.inputs
                      and (isinstance(a, tuple) or array_interface(a) is not None)]


# region: call_plan
class CallPlan:
    """The launches one launcher call made, replayable: :meth:`launch` re-issues them (one
    driver call each, or, once :meth:`as_graph` has run, one CUDA graph for them all)."""

    def __init__(self, plans, keep, result=None):
        self.plans = tuple(plans)
        self.keep = tuple(keep)
        self.result = result
        self.replays = 0
        self.graph = None
        self.tried = False

    def launch(self, stream=None) -> None:
        """Re-issue the call on ``stream``; from the :data:`GRAPH_AFTER`-th replay on, a call
        of several launches becomes one graph (:meth:`as_graph`; tried once, and not while
        the stream is being captured into another graph, where it cannot synchronise)."""
        self.replays += 1
        if (self.replays >= GRAPH_AFTER and len(self.plans) > 1 and not self.tried
                and not capturing(stream)):
            self.tried = True
            self.as_graph()
        if self.graph is not None:
            self.graph.launch(stream)
            return
        for p in self.plans:
            p.launch(stream)

    def as_graph(self) -> None:
        """From now on, launch the plans as one CUDA graph: a call that launches several
        kernels (pads, the kernel, a copy back) then costs the host one driver call, not one
        per kernel. The device is synchronised first, so that the graph's one run before its
        capture (:class:`Graph`) reads what the caller's streams wrote."""
        from numba import cuda

        cuda.synchronize()
        try:
            self.graph = Graph(lambda: [p.launch() for p in self.plans])
        except Exception:  # noqa: BLE001 - not capturable: launched one by one, as before
            STATS["graph_failures"] += 1

    @property
    def kernels(self) -> list[str]:
        return [p.name for p in self.plans]


# endregion: call_plan


def record(call, inputs=()) -> CallPlan:
    """Run ``call()`` once (on a GPU) and return the :class:`CallPlan` of what it launched;
    the arrays it made (not ``inputs``) are kept alive with the plan."""
    rec = _Recording(inputs)
    _RECORDING.append(rec)
    try:
        result = call()
    finally:
        _RECORDING.pop()
    STATS["calls_built"] += 1
    return CallPlan(rec.plans, rec.keep, result)


def memo(launcher):
    """``launcher(*arrays)`` made replayable: on a GPU the first call at given argument
    buffers runs it and records its plans (:func:`record`); a later call with the same
    buffers launches those plans and runs none of the launcher's Python. Under the
    simulator the launcher runs every time. ``.calls`` holds the recorded call plans,
    ``.plan_for(*args)`` returns (and builds) one."""
    calls = LRU(CALLS_KEPT)

    def plan_for(*args) -> CallPlan:
        key = args_key(args)
        cp = calls.get(key)
        if cp is None:
            cp = record(lambda: launcher(*args), args)
            calls[key] = cp
            return cp
        STATS["call_hits"] += 1
        cp.launch()
        return cp

    def run(*args):
        if device.SIMULATOR or not device.GPU or _RECORDING or NUMBA_LAUNCH:
            return launcher(*args)
        plan_for(*args)

    run.plan_for = plan_for
    run.calls = calls
    run.__wrapped__ = launcher
    run.__doc__ = launcher.__doc__
    run.__name__ = getattr(launcher, "__name__", "launch")
    for attr in ("splits", "bn", "mode"):
        if hasattr(launcher, attr):
            setattr(run, attr, getattr(launcher, attr))
    return run


def clear() -> None:
    """Forget every cached plan (the call plans of :func:`memo` launchers stay)."""
    _PLANS.clear()


# ----------------------------------------------------------------------------- graphs

class Graph:
    """A CUDA graph of what ``fn()`` launches through :func:`launch`, captured on a stream of
    its own, replayed by :meth:`launch` (one driver call, whatever ``fn`` launched).

    ``fn`` is called once before the capture (so plans and tensor maps exist, and nothing is
    allocated or copied from the host while capturing), then ``repeats`` times inside it."""

    def __init__(self, fn, repeats: int = 1):
        if device.SIMULATOR or not device.GPU:
            raise RuntimeError("CUDA graphs need a GPU")
        from cuda.bindings import driver as cu
        from numba import cuda

        self._cu = cu
        self.repeats = int(repeats)
        if self.repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        cuda.current_context()
        self._stream = _check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate")
        handle = int(self._stream)
        with stream(handle):
            fn()
        _check(cu.cuStreamSynchronize(self._stream), "cuStreamSynchronize")
        _check(cu.cuStreamBeginCapture(
            self._stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture")
        try:
            with stream(handle):
                for _ in range(self.repeats):
                    fn()
        finally:
            self._graph = _check(cu.cuStreamEndCapture(self._stream), "cuStreamEndCapture")
        self._exec = _check(cu.cuGraphInstantiate(self._graph, 0), "cuGraphInstantiate")
        err, nodes, count = cu.cuGraphGetNodes(self._graph, 0)
        self.nodes = int(count)
        lib = _libcuda() if DIRECT else None
        self._direct = None
        if lib is not None:                  # one ctypes call, as a plan's launch
            import functools
            self._direct = functools.partial(lib.cuGraphLaunch, int(self._exec))

    def launch(self, stream=None) -> None:
        """Replay the graph on ``stream`` (default: :func:`stream`'s, else the default)."""
        if self._direct is not None:
            err = self._direct(stream_handle(stream))
        else:
            res = self._cu.cuGraphLaunch(self._exec, _cu_stream(stream_handle(stream)))
            err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise RuntimeError(f"cuGraphLaunch failed: {err}")

    def __del__(self):
        try:
            cu = self._cu
            cu.cuGraphExecDestroy(self._exec)
            cu.cuGraphDestroy(self._graph)
            cu.cuStreamDestroy(self._stream)
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass
