"""lab.grouped_gemm: every expert's rows against float64 in both layouts, on groups of 0, 1,
TILE - 1 and TILE + 1 rows; the scheduler's walk over the groups; bad input refused before any
launch, with the operand and the problem named."""
from __future__ import annotations

import numpy as np
import pytest

import lab
from lab.dispatch import GemmError
from lab.kernels import grouped as kernel

T = kernel.TILE
SIZES = (0, 1, T - 1, T + 1)          # rows routed to each expert
K, N = 20, 17                          # past one tile in both (16-bit runs: N within one tile)


def _reference(a, b, starts, counts):
    return [a[s:s + c].astype(np.float64) @ b[e].astype(np.float64)
            for e, (s, c) in enumerate(zip(starts, counts))]


def _inputs(rng, shape_a, dtype, n):
    a = rng.uniform(-1, 1, shape_a).astype(np.float32)
    b = rng.uniform(-1, 1, (len(SIZES), K, n)).astype(np.float32)
    if dtype == "bfloat16":             # lab's BF16: uint16 bits, rounded to nearest even
        from lab.fp8 import bf16_bits
        return bf16_bits(a), bf16_bits(b)
    return a.astype(dtype), b.astype(dtype)


def _as64(x, dtype):
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


TOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_contiguous_rows_match_float64_per_expert(dtype):
    rng = np.random.default_rng()
    offsets = np.concatenate([[0], np.cumsum(SIZES)])
    n = N if dtype == "float32" else T // 2 + 1       # the simulator's time: fewer columns
    a, b = _inputs(rng, (offsets[-1], K), dtype, n)
    out = np.full((offsets[-1], n), np.nan, np.float32)
    got = lab.grouped_gemm(a, b, out, offsets=offsets)
    assert got is out and not np.isnan(out).any()
    for e, ref in enumerate(_reference(_as64(a, dtype), _as64(b, dtype), offsets[:-1], SIZES)):
        rows = out[offsets[e]:offsets[e + 1]]
        assert rows.shape == ref.shape
        if SIZES[e]:
            assert np.abs(rows - ref).max() <= TOL[dtype] * np.abs(ref).max() + 1e-6


def test_masked_rows_match_float64_and_rows_past_a_count_are_untouched():
    rng = np.random.default_rng()
    mmax = T + 3
    counts = np.array([0, 1, T - 1, mmax], np.int32)      # empty, one, a partial tile, full
    n = T // 2 + 1
    a = rng.uniform(-1, 1, (len(counts), mmax, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (len(counts), K, n)).astype(np.float16)
    out = np.full((len(counts), mmax, n), np.nan, np.float16)
    lab.grouped_gemm(a, b, out, counts=counts)
    for e, c in enumerate(counts):
        ref = a[e, :c].astype(np.float64) @ b[e].astype(np.float64)
        if c:
            assert np.abs(out[e, :c] - ref).max() <= 2e-3 * np.abs(ref).max() + 1e-3
        assert np.isnan(out[e, c:].astype(np.float32)).all()


def test_a_new_out_is_zero_past_the_counts_and_the_inputs_type():
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (2, 5, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (2, K, N)).astype(np.float16)
    out = lab.grouped_gemm(a, b, counts=[2, 0])
    assert out.dtype == np.float16 and out.shape == (2, 5, N)
    assert not out[0, 2:].any() and not out[1].any() and out[0, :2].any()


def test_one_expert_of_one_row_one_column_one_k():
    a, b = np.array([[2.0]], np.float32), np.array([[[3.0]]], np.float32)
    assert lab.grouped_gemm(a, b, offsets=[0, 1]).tolist() == [[6.0]]


def _walk(bounds, masked, mmax=0, rows=0):
    """Every grid tile row through the scheduler, on the host (its Python source)."""
    group_of = kernel.scheduler(masked)
    group_of = getattr(group_of, "py_func", group_of)
    groups = len(bounds) - (0 if masked else 1)
    return [group_of(t, np.asarray(bounds), groups, mmax, rows)
            for t in range(kernel.tile_rows(groups, rows, mmax, masked))]


def test_the_scheduler_visits_each_experts_tile_rows_once_in_order():
    offsets = np.concatenate([[0], np.cumsum(SIZES)])
    seen = [(e, begin, t) for e, begin, count, t in _walk(offsets, False, rows=offsets[-1])
            if e < len(SIZES)]
    want = [(e, offsets[e], t) for e, s in enumerate(SIZES) for t in range(-(-s // T))]
    assert seen == want
    masked = [(e, begin, t) for e, begin, count, t in _walk([0, 1, T + 1], True, mmax=2 * T)
              if e < 3]
    assert masked == [(1, 2 * T, 0), (2, 4 * T, 0), (2, 4 * T, 1)]


def test_a_bad_routing_read_on_the_gpu_stays_inside_the_buffers():
    """Offsets past A, decreasing, negative; counts past M_max: clamped, never outside."""
    for e, begin, count, t in _walk([0, 40, 7, -3, 10], False, rows=10):
        assert 0 <= begin and begin + count <= 10
    for e, begin, count, t in _walk([-5, 99], True, mmax=8):
        assert count <= 8 and begin + count <= 16


def test_device_counts_unchecked_past_m_max_are_clamped():
    from numba import cuda

    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (1, 3, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, K, N)).astype(np.float32)
    out = lab.grouped_gemm(a, b, counts=cuda.to_device(np.array([50], np.int32)),
                           check_bounds=False)
    assert np.allclose(out[0], a[0].astype(np.float64) @ b[0], atol=1e-5)


@pytest.fixture
def no_launch(monkeypatch):
    def launch(*args, **kwargs):
        raise AssertionError("launched before the input was refused")
    monkeypatch.setattr(kernel, "launch", launch)


A2, B3 = np.zeros((5, 4), np.float32), np.zeros((2, 4, 3), np.float32)


@pytest.mark.parametrize("call, problem", [
    (lambda: lab.grouped_gemm(A2, B3), "exactly one"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[0, 5], counts=[1, 1]), "exactly one"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[0, 5]), r"offsets must hold 3 values"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[1, 2, 5]), r"offsets\[0\] = 1"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[0, 2, 4]), r"offsets\[2\] = 4, but A has 5"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[0, 6, 5]), "offsets decrease at expert 1"),
    (lambda: lab.grouped_gemm(A2, B3, offsets=[0.0, 2.0, 5.0]), "offsets must be integers"),
    (lambda: lab.grouped_gemm(A2, B3, counts=[1, 1]), r"A must be \[experts, M_max, K\]"),
    (lambda: lab.grouped_gemm(np.zeros((2, 3, 4), np.float32), B3, counts=[1, 4]),
     r"counts\[1\] = 4: each expert's count must lie in 0 … M_max = 3"),
    (lambda: lab.grouped_gemm(np.zeros((2, 3, 4), np.float32), B3, counts=[-1, 0]),
     r"counts\[0\] = -1"),
    (lambda: lab.grouped_gemm(np.zeros((3, 3, 4), np.float32), B3, counts=[0, 0, 0]),
     "A holds 3 experts' buffers but B 2"),
    (lambda: lab.grouped_gemm(A2, B3[0], offsets=[0, 5]), r"B must be \[experts, K, N\]"),
    (lambda: lab.grouped_gemm(np.zeros((5, 6), np.float32), B3, offsets=[0, 2, 5]),
     "A's rows hold 6 values but each B"),
    (lambda: lab.grouped_gemm(A2, B3.astype(np.float16), offsets=[0, 2, 5]),
     "A is float32 but B is float16"),
    (lambda: lab.grouped_gemm(A2.astype(np.int32), B3, offsets=[0, 2, 5]), "A is int32"),
    (lambda: lab.grouped_gemm(A2, B3, np.zeros((5, 4), np.float32), offsets=[0, 2, 5]),
     r"out has shape \(5, 4\); the product is \(5, 3\)"),
    (lambda: lab.grouped_gemm(A2, B3, np.zeros((5, 3), np.float16), offsets=[0, 2, 5]),
     "a float32 product can be written as float32"),
    (lambda: lab.grouped_gemm(np.zeros((4, 5), np.float32).T, B3, offsets=[0, 2, 5]),
     "A is not a packed row-major array"),
    (lambda: lab.grouped_gemm(np.zeros((70000, 1, 4), np.float32),
                              np.zeros((70000, 4, 3), np.float32), counts=np.zeros(70000, int)),
     "need 70,000 tile rows; one launch of the teaching kernel takes at most 65,535"),
])
def test_bad_input_is_refused_before_any_launch(no_launch, call, problem):
    with pytest.raises((GemmError, TypeError), match=problem):
        call()


def test_host_and_device_operands_are_not_mixed(no_launch):
    from numba import cuda

    with pytest.raises(GemmError, match="B is on the GPU but A is on the host"):
        lab.grouped_gemm(A2, cuda.to_device(B3), offsets=[0, 2, 5])


def test_out_overlapping_an_input_on_the_device_is_refused(no_launch):
    from numba import cuda

    big = cuda.to_device(np.zeros((12, 3), np.float32))
    b = cuda.to_device(np.zeros((2, 3, 3), np.float32))
    with pytest.raises(GemmError, match="out overlaps A"):
        lab.grouped_gemm(big[0:6], b, big[4:10], offsets=[0, 2, 6])


def test_more_rows_than_one_conversion_launch_covers(monkeypatch):
    """16-bit weights of many experts are widened a chunk of rows at a time: 256 experts of
    7168 rows make more rows than one launch of lab.convert's grid reaches (the driver refused
    it on the H200). Here the chunk is 8 rows, so B's 2·20 rows take five launches."""
    from lab import convert

    monkeypatch.setattr(convert, "CHUNK_ROWS", 8)
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (19, 20)).astype(np.float16)
    b = rng.uniform(-1, 1, (2, 20, 17)).astype(np.float16)
    out = lab.grouped_gemm(a, b, offsets=[0, 9, 19])
    ref = np.concatenate([a[:9].astype(np.float64) @ b[0], a[9:].astype(np.float64) @ b[1]])
    assert np.abs(out.astype(np.float64) - ref).max() <= 2e-3 * np.abs(ref).max()


@pytest.mark.parametrize("layout", ["offsets", "counts"])
@pytest.mark.parametrize("per_group", [64, 200])
def test_the_hopper_kernels_walk_visits_each_groups_tiles_once(layout, per_group):
    """The tile order of the Hopper grouped kernel (run on the host): over every persistent
    block's units, each expert's tile rows × C's tile columns once, with the expert's end row."""
    from lab import grouped
    from lab.kernels.wgmma import order

    cfg = grouped.tile_config("bfloat16", layout == "counts", per_group)
    row_tiles, group_tile = (getattr(f, "py_func", f) for f in order.group_order(cfg))
    counts = np.array([0, 1, cfg.bm - 1, cfg.bm + 1, 0, 3 * cfg.bm + 5])
    n, mmax = 600, int(counts.max())
    if layout == "counts":
        bounds, starts, rows = counts, np.arange(len(counts)) * mmax, len(counts) * mmax
    else:
        bounds = np.concatenate([[0], np.cumsum(counts)])
        starts, rows = bounds[:-1], int(bounds[-1])
    groups = len(counts)
    tiles_r = row_tiles(bounds, groups, mmax, rows)
    tiles_n = -(-n // cfg.bn)
    want = {(int(starts[e]) + t * cfg.bm, c * cfg.bn, int(starts[e] + counts[e]), e)
            for e in range(groups) for t in range(-(-int(counts[e]) // cfg.bm))
            for c in range(tiles_n)}
    assert tiles_r * tiles_n == len(want)
    seen = []
    for first in range(7):                       # 7 persistent blocks
        e, before = 0, 0
        for unit in range(first, tiles_r * tiles_n, 7):
            row0, col0, end, e, before = group_tile(unit, bounds, mmax, rows, tiles_r, tiles_n,
                                                    e, before)
            seen.append((int(row0), int(col0), int(end), int(e)))
    assert sorted(seen) == sorted(want)


def test_the_hopper_kernels_tiles_follow_the_rows_per_expert():
    from lab import grouped

    small = grouped.tile_config("float16", True, grouped.SMALL_GROUPS)
    large = grouped.tile_config("bfloat16", False, grouped.SMALL_GROUPS + 0.5)
    assert (small.bm, small.consumers, small.kind, small.out) == (64, 1, "f16", "f16")
    assert (large.bm, large.consumers, large.kind, large.out) == (128, 2, "bf16", "bf16")
    assert small.grouped == "counts" and large.grouped == "offsets"
    assert not grouped.hopper_config("bfloat16", "bfloat16", 8, 64, 8, 2, 0, False, None)


def test_a_grouped_configuration_keeps_to_its_rules():
    from dataclasses import replace

    from lab import grouped

    cfg = grouped.tile_config("bfloat16", False, 100)
    for bad in (dict(grouped="rows"), dict(table=True), dict(store="boxes"),
                dict(cluster=2, regs=224, producer_regs=56)):
        with pytest.raises(ValueError, match="grouped"):
            replace(cfg, **bad).validate()


# ----------------------------------------------------------------------- the repeat path

class _Tensor:
    """What the repeat path reads of a PyTorch tensor (its module named ``torch``)."""

    def __init__(self, ptr, shape, dtype="bfloat16"):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return (1,) if len(self.shape) == 1 else (self.shape[1], 1)


_Tensor.__module__ = "torch"


class _Plan:
    def __init__(self):
        self.params, self.launches = 99, []
        self._direct = lambda handle, params, extra: self.launches.append(handle) or 0


class _Checked(Exception):
    """The checked path was taken."""


@pytest.fixture
def repeat(monkeypatch):
    """A recorded contiguous call of (A, B, out, offsets) on stream 0, the checked path
    raising _Checked."""
    import lab.grouped as G
    from lab import enqueue
    from lab.gemm import Hot, _torch_state

    monkeypatch.setattr(G, "_HOT", lab.lru.LRU(8))
    monkeypatch.setattr(G, "describe", lambda *a: (_ for _ in ()).throw(_Checked()))
    arrays = (_Tensor(1 << 20, (40, 64)), _Tensor(2 << 20, (4, 64, 128)),
              _Tensor(3 << 20, (40, 128)), _Tensor(4 << 20, (5,), "int64"))
    plan = _Plan()
    stream = {"current": 0}
    hot = Hot(_torch_state, arrays[:3], enqueue.CallPlan([plan], ()),
              lambda: stream["current"], 0)
    A, B, out, offs = arrays
    G._HOT[(id(A), id(B), id(out), id(offs), id(None), None)] = (hot, (_torch_state(offs),))
    return arrays, plan, stream


def test_a_repeat_with_unchecked_bounds_is_one_driver_call(repeat):
    (A, B, out, offs), plan, _ = repeat
    assert lab.grouped_gemm(A, B, out, offsets=offs, check_bounds=False) is out
    assert plan.launches == [0]


@pytest.mark.parametrize("change", ["offsets moved", "A moved", "out reshaped", "stream",
                                    "bounds checked", "counts instead"])
def test_a_repeat_confirms_the_routing_the_operands_and_the_stream(repeat, change):
    (A, B, out, offs), plan, stream = repeat
    kw = dict(offsets=offs, check_bounds=False)
    if change == "offsets moved":
        offs.ptr += 256
    elif change == "A moved":
        A.ptr += 256
    elif change == "out reshaped":
        out.shape = (20, 256)
    elif change == "stream":
        stream["current"] = 5
    elif change == "bounds checked":
        kw["check_bounds"] = True            # the offsets are read and checked every call
    else:
        kw = dict(counts=offs, check_bounds=False)
    with pytest.raises(_Checked):
        lab.grouped_gemm(A, B, out, **kw)
    assert plan.launches == []


def test_the_first_unchecked_call_records_its_launch_for_the_repeats(monkeypatch):
    """_remember launches through a recorded call plan and keeps the repeat path for torch
    arrays on the current stream; arrays of mixed libraries get none."""
    import sys
    import types

    import lab.grouped as G
    from lab import enqueue

    monkeypatch.setattr(G, "_HOT", lab.lru.LRU(8))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0)))
    launched, plan = [], _Plan()

    def record(call, inputs=()):
        call()
        return enqueue.CallPlan([plan], ())
    monkeypatch.setattr(enqueue, "record", record)
    A, B, out, offs = (_Tensor(1 << 20, (40, 64)), _Tensor(2 << 20, (4, 64, 128)),
                       _Tensor(3 << 20, (40, 128)), _Tensor(4 << 20, (5,), "int64"))
    for t in (A, B, out, offs):
        t.device = types.SimpleNamespace(index=0)
    a = types.SimpleNamespace(family="torch", obj=A)
    G._remember("key", lambda *args: launched.append(args), (1, 2), a, (A, B, out), (),
                (offs,))
    assert launched == [(1, 2)]
    hot, state = G._HOT["key"]
    assert state == ((4 << 20, (5,), (1,), "int64"),) and hot.same(A, B, out)
    G._remember("other", lambda *args: launched.append(args), (3,), a, (A, B, out), (),
                (np.zeros(5, np.int64),))
    assert launched[-1] == (3,) and "other" not in G._HOT
