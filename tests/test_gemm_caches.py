"""Every address-keyed cache on lab.gemm's path, driven on the CPU with fakes: a call whose
operands differ from the recorded ones in anything the recorded plan depends on (address,
shape, strides, dtype, stream, table inputs) must not replay it; the same call must. And a
graph keeps alive every buffer it will touch."""
from __future__ import annotations

import gc
import sys
import types
import weakref

import numpy as np
import pytest

import lab
from lab import device, enqueue
from lab.lru import LRU

GM = sys.modules["lab.gemm"]
OPERANDS = ("A", "B", "out")
CHANGES = ("ptr", "shape", "stride", "dtype", "transposed")


class Checked(Exception):
    """The call took the checked path (no cache hit)."""


class TorchLike:
    """What lab.gemm's fast paths read of a PyTorch tensor (square, FP16, row-major)."""

    def __init__(self, ptr, n=64):
        self.ptr, self.shape, self.dtype, self._stride = ptr, (n, n), "float16", (n, 1)
        self.device = types.SimpleNamespace(type="cuda", index=0)

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self._stride


TorchLike.__module__ = "torch.fake"           # the fast paths tell a tensor by its module


def change(x: TorchLike, how: str) -> None:
    if how == "ptr":
        x.ptr += 256
    elif how == "shape":
        x.shape = (32, 128)
        x._stride = (128, 1)
    elif how == "stride":
        x._stride = (128, 1)                  # a row pitch of 128 elements
    elif how == "dtype":
        x.dtype = "bfloat16"
    else:
        x._stride = x._stride[::-1]           # a transposed view: same address, shape, dtype


class FakeCallPlan:
    def __init__(self, plans=()):
        self.plans, self.launches = tuple(plans), []

    def launch(self, handle=None):
        self.launches.append(handle)


@pytest.fixture
def gpu(monkeypatch):
    """lab.gemm as on a GPU (8.0, 132 SMs), the caches empty, the current stream 7; the
    checked path raises Checked unless a test lets it run."""
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(device, "SIMULATOR", False)
    for name in ("_CALLS", "_SHAPES", "_HOT", "_TUNED", "_WORK"):
        monkeypatch.setattr(GM, name, LRU(64))
    stream = {"current": 7}
    monkeypatch.setattr(GM, "_torch_stream", lambda x: stream["current"])
    monkeypatch.setattr(GM, "describe", lambda *a: (_ for _ in ()).throw(Checked()))
    monkeypatch.setattr(GM, "_device_cc", lambda: (8, 0))
    monkeypatch.setattr(GM, "_sm_count", lambda: 132)
    return stream


def _operands():
    return {"A": TorchLike(1 << 20), "B": TorchLike(2 << 20), "out": TorchLike(3 << 20)}


# ----------------------------------------------------------------------- the PyTorch fast path

@pytest.mark.parametrize("how", CHANGES)
@pytest.mark.parametrize("which", OPERANDS)
def test_the_fast_key_replays_only_the_same_tensors(gpu, which, how):
    ops = _operands()
    plan = FakeCallPlan()
    GM._CALLS[GM._fast_key(ops["A"], ops["B"], ops["out"], None)] = plan
    assert lab.gemm(ops["A"], ops["B"], ops["out"]) is ops["out"]
    assert plan.launches == [7]
    change(ops[which], how)
    with pytest.raises(Checked):
        lab.gemm(ops["A"], ops["B"], ops["out"])
    assert plan.launches == [7], f"{which} changed ({how}) and the old plan was replayed"


def test_the_fast_key_replays_only_on_the_stream_it_was_recorded_on(gpu):
    ops = _operands()
    plan = FakeCallPlan()
    GM._CALLS[GM._fast_key(ops["A"], ops["B"], ops["out"], None)] = plan
    gpu["current"] = 8                   # another stream: its plan has its own workspaces
    with pytest.raises(Checked):
        lab.gemm(ops["A"], ops["B"], ops["out"])
    assert plan.launches == []
    with pytest.raises(Checked):         # out_dtype asked differently: another key
        lab.gemm(ops["A"], ops["B"], ops["out"], out_dtype="float32")


@pytest.fixture
def fake_torch(monkeypatch):
    made = []

    def empty(shape, dtype, device):
        made.append(TorchLike(9 << 20, shape[0]))
        return made[-1]
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        empty=empty, float16="float16", float32="float32", bfloat16="bfloat16"))
    return made


@pytest.mark.parametrize("how", CHANGES)
@pytest.mark.parametrize("which", ("A", "B"))
def test_the_shape_memo_of_out_none_follows_the_inputs(gpu, fake_torch, which, how):
    """out=None: the output's shape is remembered by the inputs' key (_SHAPES), the call by
    the allocated output's (_CALLS); a changed input finds neither."""
    ops = _operands()
    GM._SHAPES[GM._fast_key(ops["A"], ops["B"], None, None)] = (64, 64, "float16")
    plan = FakeCallPlan()
    GM._CALLS[GM._fast_key(ops["A"], ops["B"], TorchLike(9 << 20), None)] = plan
    got = lab.gemm(ops["A"], ops["B"])
    assert got is fake_torch[-1] and plan.launches == [7]
    change(ops[which], how)
    with pytest.raises(Checked):
        lab.gemm(ops["A"], ops["B"])
    assert plan.launches == [7] and len(fake_torch) == 1, "allocated as for the old inputs"


# ----------------------------------------------------------------------- the hot path

@pytest.mark.parametrize("how", CHANGES + ("stream",))
@pytest.mark.parametrize("which", OPERANDS)
def test_the_hot_path_confirms_every_operand(gpu, which, how):
    ops = _operands()
    plan = FakeCallPlan()
    arrays = (ops["A"], ops["B"], ops["out"])
    hot = GM.Hot(GM._torch_state, arrays, plan, lambda: gpu["current"], 7)
    GM._HOT[(id(ops["A"]), id(ops["B"]), id(ops["out"]), None)] = hot
    assert lab.gemm(*arrays) is ops["out"] and plan.launches == [7]
    if how == "stream":
        gpu["current"] = 8
    else:
        change(ops[which], how)
    with pytest.raises(Checked):
        lab.gemm(*arrays)
    assert plan.launches == [7], f"{which} changed ({how}) and the hot path replayed"


# ----------------------------------------------------------------------- the checked path's key

class DeviceLike:
    """A device array as far as lab.gemm can tell: ``__cuda_array_interface__`` only."""

    def __init__(self, ptr, shape, typestr="<f2", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides,
                                         "version": 3}


@pytest.fixture
def recording(gpu, monkeypatch):
    """The checked path as on a GPU, each recorded call a FakeCallPlan (listed)."""
    from lab.operands import describe
    monkeypatch.setattr(GM, "describe", describe)
    monkeypatch.setattr(GM, "as_numba", lambda x: x.obj)
    monkeypatch.setattr(GM, "tune", lambda choice, *a: choice)
    monkeypatch.setattr(GM, "run", lambda *a: None)
    recorded = []

    def record(call, inputs=()):
        call()
        recorded.append(FakeCallPlan())
        return recorded[-1]
    monkeypatch.setattr(enqueue, "record", record)
    return recorded


class NumbaLike(DeviceLike):
    """A Numba device array as lab.gemm tells one (by its module): uint16 is BF16 bits."""


NumbaLike.__module__ = "numba.fake"


def _device_operands():
    """A (1×64: its row pitch is free), B (64×64), out (1×64), FP16."""
    return {"A": NumbaLike(1 << 20, (1, 64)), "B": NumbaLike(2 << 20, (64, 64)),
            "out": NumbaLike(3 << 20, (1, 64))}


def _alter(ops, which, how):
    cai = ops[which].__cuda_array_interface__
    if how == "ptr":
        cai["data"] = (cai["data"][0] + 4096, False)
    elif how == "stride":                 # a one-row matrix's row pitch: still row-major
        cai["strides"] = (4096, 2)
    elif how == "dtype" and which == "out":      # an FP32 C for the same FP16 product
        ops["out"] = NumbaLike(cai["data"][0], (1, 64), "<f4")
    elif how == "dtype":                  # BF16 bits at the same addresses: a BF16 product
        for x in ("A", "B", "out"):
            ops[x].__cuda_array_interface__["typestr"] = "<u2"
    elif how == "shape":                  # two rows of A, two of out
        for x in ("A", "out"):
            ops[x].__cuda_array_interface__["shape"] = (2, 64)


@pytest.mark.parametrize("which, how", [
    ("A", "ptr"), ("B", "ptr"), ("out", "ptr"), ("A", "stride"), ("out", "stride"),
    ("out", "dtype"), ("A", "dtype"), ("A", "shape"), ("stream", "explicit"), ("stream", "block")])
def test_the_call_key_replays_only_the_same_buffers_and_stream(recording, which, how):
    ops = _device_operands()
    lab.gemm(ops["A"], ops["B"], ops["out"])
    lab.gemm(ops["A"], ops["B"], ops["out"])
    assert len(recording) == 1 and recording[0].launches == [0], "a repeat must replay"
    if which == "stream" and how == "explicit":
        lab.gemm(ops["A"], ops["B"], ops["out"], stream=5)
    elif which == "stream":
        with enqueue.stream(5):
            lab.gemm(ops["A"], ops["B"], ops["out"])
    else:
        _alter(ops, which, how)
        lab.gemm(ops["A"], ops["B"], ops["out"])
    assert len(recording) == 2 and recording[0].launches == [0], \
        f"{which} changed ({how}) and the old plan was replayed"


def test_a_transposed_view_of_a_square_b_never_reaches_a_plan(recording):
    ops = _device_operands()
    lab.gemm(ops["A"], ops["B"], ops["out"])
    ops["B"].__cuda_array_interface__["strides"] = (2, 128)        # Bᵀ: same address, shape
    with pytest.raises(lab.gemm.GemmError, match="B is not row-major"):
        lab.gemm(ops["A"], ops["B"], ops["out"])
    assert recording[0].launches == []


# ----------------------------------------------------------------------- workspaces and tuning

def test_workspaces_are_kept_per_stream(monkeypatch):
    monkeypatch.setattr(GM, "_WORK", LRU(8))
    with enqueue.stream(1):
        one = GM._workspace("C", (4, 4), np.float32)
        assert GM._workspace("C", (4, 4), np.float32) is one
    with enqueue.stream(2):
        assert GM._workspace("C", (4, 4), np.float32) is not one, \
            "two streams' calls would share one workspace"
    assert GM._workspace("C", (4, 8), np.float32) is not one


def test_a_tuned_choice_is_kept_for_the_choice_it_was_timed_for(gpu, monkeypatch):
    """4096³ on 132 SMs runs 128 blocks, on 114 SMs 103: the winner timed for one GPU is not
    handed to the other (nor to another setting that changes the candidates)."""
    from lab import compiler, timing
    from lab.operands import describe
    monkeypatch.setattr(GM, "describe", describe)
    monkeypatch.setattr(GM, "_from_disk", lambda choice: None)
    monkeypatch.setattr(GM, "_disk_key", lambda choice: "this GPU")
    monkeypatch.setattr(compiler, "remember", lambda *a: None)
    monkeypatch.setattr(enqueue, "record", lambda call, inputs=(): FakeCallPlan())
    monkeypatch.setattr(timing, "event_samples", lambda call, *, repeats, **k: [1.0] * repeats)
    host = np.zeros((4096, 4096), np.float16)
    for sms in (132, 114):
        choice = lab.gemm.explain(host, host, cc=(9, 0), sms=sms)
        own = {(c.kernel, c.bn, c.blocks, c.fixup) for c in (choice, *choice.candidates)}
        best = GM.tune(choice, None, None, None)
        assert (best.kernel, best.bn, best.blocks, best.fixup) in own, \
            f"{sms} SMs got a winner timed for another choice ({best.blocks} blocks)"
    assert len(GM._TUNED) == 2


# ----------------------------------------------------------------------- lab.enqueue's caches

@pytest.mark.parametrize("how", ["ptr", "shape", "transposed", "dtype", "scalar"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_memo_launcher_replays_only_the_same_arguments(which, how):
    calls = []
    run = enqueue.memo(lambda *args: calls.append(args))
    args = [DeviceLike(1 << 20, (64, 64)), DeviceLike(2 << 20, (64, 64)),
            DeviceLike(3 << 20, (64, 64)), np.int32(64)]
    run.plan_for(*args)
    run.plan_for(*args)
    assert len(calls) == 1
    i = 3 if how == "scalar" else which
    cai = getattr(args[i], "__cuda_array_interface__", None)
    if how == "ptr":
        cai["data"] = (cai["data"][0] + 256, False)
    elif how == "shape":
        cai["shape"] = (32, 128)
    elif how == "transposed":
        cai["strides"] = (2, 128)
    elif how == "dtype":
        cai["typestr"] = "<u2"
    else:
        args[3] = np.int32(65)
    run.plan_for(*args)
    assert len(calls) == 2, f"argument {i} changed ({how}) and the old plan was replayed"


@pytest.mark.parametrize("what", ["args", "transposed", "grid", "block", "shared", "cluster"])
def test_a_launch_plan_is_kept_for_exactly_its_launch(monkeypatch, what):
    built = []

    class Plan:
        def __init__(self, *a):
            built.append(a)
    monkeypatch.setattr(enqueue, "LaunchPlan", Plan)
    monkeypatch.setattr(enqueue, "_PLANS", LRU(8))
    launch = dict(grid=(4, 1), block=128, shared=0, cluster=1,
                  args=(DeviceLike(1 << 20, (64, 64)), DeviceLike(2 << 20, (64, 64))))
    kernel = object()
    first = enqueue.launch_plan(kernel, "sig", **launch)
    assert enqueue.launch_plan(kernel, "sig", **launch) is first
    if what == "args":
        launch["args"] = (launch["args"][0], DeviceLike(3 << 20, (64, 64)))
    elif what == "transposed":
        launch["args"] = (launch["args"][0], DeviceLike(2 << 20, (64, 64), strides=(2, 128)))
    elif what == "grid":
        launch["grid"] = (8, 1)
    elif what == "block":
        launch["block"] = 256
    elif what == "shared":
        launch["shared"] = 1024
    else:
        launch["grid"], launch["cluster"] = (4, 1), 2
    assert enqueue.launch_plan(kernel, "sig", **launch) is not first and len(built) == 2


# ----------------------------------------------------------------------- the tile table

@pytest.mark.parametrize("first, then", [((256, 512), (256, 1024)), ((256, 512), (512, 512)),
                                         ((300, 520), (300, 264))])
def test_the_tile_table_follows_the_whole_shape(monkeypatch, first, then):
    """Rung 18's launcher keeps one table of tiles per C shape: a second shape with the same M
    (or the same N) gets its own table, equal to tile_table(M, N)."""
    from lab.kernels import get_spec
    from lab.kernels.wgmma import host
    from lab.kernels.wgmma.order import tile_table
    cfg = get_spec("wgmma_table_fp16").config
    for name, fake in (("require_hopper", lambda: None), ("kernel_for", lambda cfg: "kernel"),
                       ("_sm_count", lambda: 132),
                       ("tma_operands", lambda A, B, cfg: ("map_a", "map_b", A.shape[1], ()))):
        monkeypatch.setattr(host, name, fake)
    monkeypatch.setattr(host.hopper, "allow_dynamic_shared", lambda *a: None)
    monkeypatch.setattr(host.hopper, "tensor_map_2d", lambda *a, **k: "map_c")
    tables = []
    monkeypatch.setattr(host.enqueue, "launch",
                        lambda kernel, sig, grid, block, shared, args: tables.append(args[-1]))
    launch = host.launcher(cfg)
    for m, n in (first, then, first):
        launch(types.SimpleNamespace(shape=(m, 64)), types.SimpleNamespace(shape=(64, n)),
               types.SimpleNamespace(shape=(m, n), dtype=np.float16))
        got = tables[-1].copy_to_host()
        assert np.array_equal(got, tile_table(m, n, cfg)), f"{m}x{n} got another shape's table"


# ----------------------------------------------------------------------- graphs keep buffers

class FakeDriver:
    """The driver calls lab.enqueue.Graph makes, answered as a driver would (no GPU)."""
    CUstream_flags = types.SimpleNamespace(CU_STREAM_NON_BLOCKING=1)
    CUstreamCaptureMode = types.SimpleNamespace(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL=1)
    CUstreamCaptureStatus = types.SimpleNamespace(CU_STREAM_CAPTURE_STATUS_NONE=0)

    def __getattr__(self, name):
        answers = {"cuStreamCreate": (0, 4242), "cuStreamEndCapture": (0, "graph"),
                   "cuGraphInstantiate": (0, "exec"), "cuGraphGetNodes": (0, None, 1)}
        return lambda *a: answers.get(name, (0,))


class Buffer(DeviceLike):
    """A device array a weak reference can follow."""


@pytest.mark.parametrize("how", ["graph", "graph_of"])
def test_a_graph_keeps_every_buffer_it_will_touch(recording, monkeypatch, how):
    import cuda.bindings
    monkeypatch.setattr(cuda.bindings, "driver", FakeDriver(), raising=False)
    monkeypatch.setattr(enqueue, "_LIBCUDA", [None])
    bufs = {"A": Buffer(1 << 20, (1, 64)), "B": Buffer(2 << 20, (64, 64)),
            "out": Buffer(3 << 20, (1, 64))}
    refs = {k: weakref.ref(v) for k, v in bufs.items()}
    if how == "graph":
        g = lab.gemm.graph(bufs["A"], bufs["B"], bufs["out"], repeats=2)
    else:                                # the buffers reached through a dict, later emptied
        g = lab.gemm.graph_of(lambda: lab.gemm(bufs["A"], bufs["B"], bufs["out"]))
    plan = recording[-1]
    assert plan.launches, "the capture replayed the recorded call"
    bufs.clear()
    GM._CALLS.clear()                    # the plan cache may drop the call plan
    gc.collect()
    for name, ref in refs.items():
        assert ref() is not None, f"the graph keeps no reference to {name}"
    assert plan in g.held, "the graph keeps no reference to the call plan it replays"
    del g
    gc.collect()
    assert all(ref() is None for ref in refs.values())
