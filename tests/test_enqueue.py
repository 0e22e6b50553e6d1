"""lab.enqueue offline: what a plan marshals, its cache key, and bad input refused."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import lab  # noqa: F401  (simulator decided first)
from lab import enqueue
from numba import types


class DeviceLike:
    """A device array as far as a plan can tell: only ``__cuda_array_interface__``."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides,
                                         "version": 3}


def numba_fields(ptr, shape, itemsize):
    """Numba's ``_prepare_args`` for a C-contiguous array, written out: meminfo, parent,
    size, itemsize, data, shape…, strides…"""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return [0, 0, int(np.prod(shape)), itemsize, ptr, *shape, *strides]


def test_an_array_marshals_as_numba_does():
    ty = types.Array(types.float32, 2, "C")
    cells = enqueue.marshal([ty], [DeviceLike(0x7000, (3, 5))])
    assert enqueue.cell_values(cells) == numba_fields(0x7000, (3, 5), 4)
    assert all(isinstance(c, ctypes.c_int64) for c in cells)


def test_scalars_tuples_and_order():
    arr = types.Array(types.float16, 2, "C")
    tup = types.Tuple((types.int32, types.Array(types.float32, 3, "C")))
    cells = enqueue.marshal([arr, types.int32, tup, types.float32],
                           [DeviceLike(16, (2, 2), "<f2"), np.int32(7),
                            (np.int32(64), DeviceLike(4096, (2, 1, 3))), 1.5])
    values = enqueue.cell_values(cells)
    assert values[:9] == numba_fields(16, (2, 2), 2)
    assert values[9] == 7 and isinstance(cells[9], ctypes.c_int32)
    assert values[10] == 64
    assert values[11:11 + 11] == numba_fields(4096, (2, 1, 3), 4)
    assert values[-1] == 1.5 and isinstance(cells[-1], ctypes.c_float)


@pytest.mark.parametrize("value, problem", [
    (np.zeros((2, 2), np.float32), "host numpy array"),
    (DeviceLike(16, (2, 2), "<f8"), "takes float32"),
    (DeviceLike(16, (4,)), "2-D"),
    (DeviceLike(16, (2, 3), strides=(4, 8)), "C-contiguous"),
    ("nope", "device array"),
])
def test_bad_arrays_are_refused_with_the_reason(value, problem):
    with pytest.raises(enqueue.LaunchError, match=problem):
        enqueue.marshal([types.Array(types.float32, 2, "C")], [value])


def test_wrong_argument_count_and_types():
    with pytest.raises(enqueue.LaunchError, match="takes 2 arguments"):
        enqueue.marshal([types.int32, types.int32], [1])
    with pytest.raises(enqueue.LaunchError, match="an integer"):
        enqueue.marshal([types.int32], [1.5])


def test_the_key_changes_when_a_buffer_changes():
    a, b = DeviceLike(256, (4, 4)), DeviceLike(512, (4, 4))
    key = enqueue.args_key((a, np.int32(3)))
    assert key == enqueue.args_key((DeviceLike(256, (4, 4)), np.int32(3)))   # same buffer
    assert key != enqueue.args_key((b, np.int32(3)))                        # another address
    assert key != enqueue.args_key((DeviceLike(256, (2, 8)), np.int32(3)))  # another shape
    assert key != enqueue.args_key((DeviceLike(256, (4, 4), "<f2"), 3))     # another dtype
    assert key != enqueue.args_key((a, np.int32(4)))                        # another scalar


def test_streams_resolve_to_handles():
    class TorchLike:
        cuda_stream = 1234

    assert enqueue.stream_handle(None) == 0
    assert enqueue.stream_handle(TorchLike()) == 1234
    with enqueue.stream(99):
        assert enqueue.stream_handle(None) == 99
    assert enqueue.stream_handle(None) == 0
    with pytest.raises(TypeError):
        enqueue.stream_handle(object())


def test_a_plan_needs_a_gpu_and_bad_geometry_is_refused():
    with pytest.raises(enqueue.LaunchError, match="whole clusters"):
        enqueue.LaunchPlan(None, None, 3, 128, 0, (), cluster=2)
    with pytest.raises(enqueue.LaunchError, match="positive"):
        enqueue.LaunchPlan(None, None, 0, 128)
    with pytest.raises(RuntimeError, match="GPU"):
        enqueue.LaunchPlan(None, None, 2, 128)


def test_memo_runs_the_launcher_every_time_in_the_simulator():
    calls = []

    def launcher(x):
        calls.append(x)
    launcher.splits = 4
    run = enqueue.memo(launcher)
    run(1)
    run(1)
    assert calls == [1, 1] and run.splits == 4


def test_a_repeated_call_of_several_launches_becomes_one_graph(monkeypatch):
    launched, graphs = [], []

    class Fake:
        def __init__(self, name):
            self.name = name

        def launch(self, stream=None):
            launched.append(self.name)

    def fake_record(call, inputs=()):
        n = call()
        return enqueue.CallPlan([Fake(f"k{i}") for i in range(n)], ())

    def fake_graph(self):
        graphs.append(self.kernels)
        self.graph = Fake("graph")

    monkeypatch.setattr(enqueue, "record", fake_record)
    monkeypatch.setattr(enqueue.CallPlan, "as_graph", fake_graph)
    run = enqueue.memo(lambda n: n)
    for _ in range(enqueue.GRAPH_AFTER + 2):
        run.plan_for(3)                   # pads, the kernel, a copy back: three launches
    assert graphs == [["k0", "k1", "k2"]]        # converted once, at the GRAPH_AFTER-th replay
    replays = ["k0", "k1", "k2"] * (enqueue.GRAPH_AFTER - 1)
    assert launched == replays + ["graph"] * 2
    launched.clear()
    for _ in range(enqueue.GRAPH_AFTER + 2):
        run.plan_for(1)                   # one launch: never a graph
    assert graphs == [["k0", "k1", "k2"]] and launched == ["k0"] * (enqueue.GRAPH_AFTER + 1)


def test_no_graph_is_made_while_the_stream_is_being_captured(monkeypatch):
    """A call replayed inside another graph's capture (lab.gemm.graph, torch.cuda.graph)
    cannot synchronise to make its own: it waits for a replay outside the capture."""
    graphs, state = [], {"capturing": True}

    class Fake:
        def launch(self, stream=None):
            pass

    def fake_graph(self):
        graphs.append(self.replays)
        self.graph = Fake()

    monkeypatch.setattr(enqueue.CallPlan, "as_graph", fake_graph)
    monkeypatch.setattr(enqueue, "capturing", lambda stream=None: state["capturing"])
    cp = enqueue.CallPlan([Fake(), Fake()], ())
    for _ in range(enqueue.GRAPH_AFTER + 3):
        cp.launch()
    assert graphs == [] and cp.graph is None
    state["capturing"] = False
    cp.launch()
    cp.launch()
    assert graphs == [enqueue.GRAPH_AFTER + 4]
