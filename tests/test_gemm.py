"""lab.gemm offline: the choice by capability, dtype and shape, refusals before any launch, and
results under the simulator (SIMT path) against float64, output poisoned with NaN first."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import lab
from lab import gemm as G
from lab import dispatch, enqueue
from lab.accuracy import random_inputs, to_float64
from numba import cuda


def host(m, n, k, dtype=np.float16):
    return np.zeros((m, k), dtype), np.zeros((k, n), dtype)


@pytest.mark.parametrize("cc, big, small", [
    ((9, 0), "wgmma_table_fp16", "tc_small_m_fp16"),
    ((8, 0), "tc_fp16", "tc_small_m_fp16"),
    ((8, 9), "tc_fp16", "tc_small_m_fp16"),
    ((7, 5), "warptile_tuned", "warptile_tuned_splitk"),
])
def test_the_kernel_follows_the_capability(cc, big, small):
    assert lab.gemm.explain(*host(4096, 4096, 4096), cc=cc).kernel == big
    choice = lab.gemm.explain(*host(1, 4096, 4096), cc=cc)
    assert choice.kernel == small and choice.splits > 1
    assert "split" in str(choice)


@pytest.mark.parametrize("m, rows", [(1, 16), (16, 16), (17, 32), (33, 64), (64, 64)])
def test_small_m_takes_the_small_tile_and_writes_16_bit_itself(m, rows):
    choice = lab.gemm.explain(*host(m, 4096, 4096), cc=(9, 0), sms=132)
    assert choice.kernel == "tc_small_m_fp16"
    assert f"{rows}-row tiles" in str(choice) and "A not padded" in str(choice)
    assert choice.native_out and not choice.narrow and not choice.widen
    assert {c.splits for c in choice.candidates} and \
        {c.kernel for c in choice.candidates} == {choice.kernel, "wgmma_table_fp16",
                                                  "wgmma_streamk_fp16"}
    # BF16, FP32 out: the same kernel, nothing narrowed
    c = lab.gemm.explain(*host(m, 4096, 4096, np.uint16), out_dtype="float32", cc=(8, 0))
    assert c.kernel == "tc_small_m_bf16" and not c.native_out and not c.narrow


def test_small_m_covers_decode_and_stops_past_128_rows_and_for_fp32():
    assert GM.SMALL_M == 128
    assert lab.gemm.explain(*host(129, 4096, 4096), cc=(9, 0)).kernel == "wgmma_table_fp16"
    assert lab.gemm.explain(*host(129, 2048, 4096), cc=(8, 0)).kernel == "tc_fp16_splitk"
    for m in (65, 128):
        choice = lab.gemm.explain(*host(m, 14336, 4096), cc=(9, 0))
        assert choice.kernel == "tc_small_m_fp16"
        assert {"wgmma_table_fp16", "wgmma_streamk_fp16"} <= {c.kernel
                                                              for c in choice.candidates}
        assert "tile-table wgmma" in str(choice) and "stream-K wgmma" in str(choice)
        # no wgmma on 8.x: only the small-M kernel's own variants are timed
        c8 = lab.gemm.explain(*host(m, 14336, 4096), cc=(8, 0))
        assert {c.kernel for c in c8.candidates} == {"tc_small_m_fp16"}
    assert lab.gemm.explain(*host(1, 4096, 4096, np.float32), cc=(9, 0)).kernel.startswith(
        "warptile")
    # N <= 128 with a long M: the transposed product would need column-major operands
    assert lab.gemm.explain(*host(8192, 64, 8192), cc=(9, 0)).kernel == "wgmma_table_fp16"


@pytest.mark.parametrize("m", [1, 64, 128])
def test_small_m_times_both_tile_widths(m):
    choice = lab.gemm.explain(*host(m, 4096, 4096), cc=(9, 0), sms=132)
    small = [choice] + [c for c in choice.candidates if c.kernel == choice.kernel]
    assert {c.bn for c in small} == {128, 64}
    assert len({(c.bn, c.splits, c.bm) for c in small}) == len(small), "a variant timed twice"
    assert ({c.bm for c in small} == {0, 64}) == (m > 64)
    assert f"{choice.bn}-column tiles" in str(choice)


def test_small_m_split_fills_one_wave():
    from lab.kernels import small_m
    for m, n, k in ((1, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096), (1, 14336, 4096),
                    (1, 4096, 14336), (127, 4099, 4096)):
        choice = lab.gemm.explain(*host(m, n, k), cc=(9, 0), sms=132)
        for c in (choice, *choice.candidates):
            if c.kernel != choice.kernel:
                continue
            cfg = small_m.config_for(m, bn=c.bn, bm=c.bm)
            blocks = small_m.tiles(m, n, cfg) * c.splits
            assert blocks <= small_m.blocks_per_sm(cfg) * 132, (m, n, k, c.bn, c.splits)
            chunk, slices = small_m.k_slices(k, c.splits)
            assert slices == c.splits and (slices - 1) * chunk < k <= slices * chunk
        cfg = small_m.config_for(m, bn=choice.bn)
        assert small_m.tiles(m, n, cfg) * choice.splits >= 132, "the first choice leaves SMs idle"


GM = sys.modules["lab.gemm"]          # the module (lab.gemm is the function)


def test_small_m_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(dispatch, "SMALL_M_ON", False)
    assert lab.gemm.explain(*host(1, 4096, 4096), cc=(9, 0)).kernel == "wgmma_table_fp16"
    assert lab.gemm.explain(*host(1, 4096, 4096), cc=(8, 0)).kernel == "tc_fp16_splitk"


class FakeTensor:
    """What the hot path reads of a PyTorch tensor."""
    def __init__(self, ptr, shape, dtype="float16"):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype
        self._stride = (shape[1], 1)

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self._stride


class FakePlan:
    def __init__(self):
        self.params = 1234
        self.calls = []
        self._direct = lambda handle, params, extra: self.calls.append((handle, params)) or 0

    def launch(self, handle):
        self.calls.append((handle, self.params))


def _hot(monkeypatch, plans):
    A, B, out = FakeTensor(1 << 20, (1, 64)), FakeTensor(2 << 20, (64, 64)), \
        FakeTensor(3 << 20, (1, 64))
    hot = GM.Hot(GM._torch_state, (A, B, out), enqueue.CallPlan(plans, ()), lambda: 77)
    monkeypatch.setitem(GM._HOT, (id(A), id(B), id(out), None), hot)
    return A, B, out


def test_a_repeat_replays_without_revalidating(monkeypatch):
    plan = FakePlan()
    A, B, out = _hot(monkeypatch, (plan,))
    monkeypatch.setattr(GM, "validate", None)          # a hit must not validate
    assert lab.gemm(A, B, out) is out
    assert plan.calls == [(77, 1234)]


def test_a_repeat_of_several_launches_replays_one_graph(monkeypatch):
    """Pads, the product and a copy back: the hot path hands them to the call plan, which
    turns them into one CUDA graph at its GRAPH_AFTER-th replay."""
    plans = (FakePlan(), FakePlan(), FakePlan())
    graph = FakePlan()

    def as_graph(self):
        self.graph = graph
    monkeypatch.setattr(enqueue.CallPlan, "as_graph", as_graph)
    A, B, out = _hot(monkeypatch, plans)
    for _ in range(enqueue.GRAPH_AFTER + 1):
        assert lab.gemm(A, B, out) is out
    before = enqueue.GRAPH_AFTER - 1
    assert all(p.calls == [(77, 1234)] * before for p in plans)
    assert graph.calls == [(77, 1234)] * 2


@pytest.mark.parametrize("change", ["ptr", "shape", "stride", "dtype"])
def test_a_changed_operand_takes_the_checked_path(monkeypatch, change):
    plan = FakePlan()
    A, B, out = _hot(monkeypatch, (plan,))
    if change == "ptr":
        B.ptr += 2
    elif change == "shape":
        B.shape = (32, 128)
    elif change == "stride":
        B._stride = (1, 64)
    else:
        B.dtype = "bfloat16"
    with pytest.raises(TypeError):                     # the fakes are no arrays: refused
        lab.gemm(A, B, out)
    assert plan.calls == []


def test_the_hit_path_costs_little_host_time(monkeypatch):
    """The Python of a hit with a stub launch: a few µs at most on any machine that runs the
    suite (on the H200's host the driver call is added)."""
    import timeit
    plan = FakePlan()
    plan._direct = lambda handle, params, extra: 0
    A, B, out = _hot(monkeypatch, (plan,))
    per_call = min(timeit.repeat(lambda: lab.gemm(A, B, out), number=2000, repeat=5)) / 2000
    assert per_call < 8e-6, f"{per_call * 1e6:.2f} us per hit"


def test_dtype_and_output_paths():
    a, b = host(512, 512, 512, np.float32)
    assert lab.gemm.explain(a, b, cc=(9, 0)).kernel == "warptile_tuned"
    c = lab.gemm.explain(*host(2048, 2048, 2048, np.uint16), cc=(8, 0))      # BF16 bits
    assert c.kernel == "tc_bf16" and c.dtype == "bfloat16" and c.narrow
    c = lab.gemm.explain(*host(2048, 2048, 2048), cc=(7, 5))
    assert c.widen and c.narrow and "no mma.sync" in str(c)
    c = lab.gemm.explain(*host(2048, 2048, 2048), out_dtype="float32", cc=(8, 0))
    assert not c.narrow and c.out_dtype == "float32"


@pytest.mark.parametrize("args, kwargs, problem", [
    ((np.zeros((4, 3), np.float64), np.zeros((3, 2), np.float64)), {}, "float64"),
    ((np.zeros((4, 3), np.float16), np.zeros((3, 2), np.float32)), {}, "convert one"),
    ((np.zeros((4, 3), np.float32), np.zeros((5, 2), np.float32)), {}, "inner dimensions"),
    ((np.zeros((4, 3, 1), np.float32), np.zeros((3, 2), np.float32)), {}, "2-dimensional"),
    ((np.zeros((0, 3), np.float32), np.zeros((3, 2), np.float32)), {}, "empty"),
    ((np.zeros((3, 4), np.float32).T, np.zeros((3, 2), np.float32)), {}, "row-major"),
    ((np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)),
     {"out": np.zeros((4, 3), np.float32)}, "A·B is 4x2"),
    ((np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)),
     {"out_dtype": "float16"}, "written as float32"),
    ((np.zeros((4, 3), np.float16), np.zeros((3, 2), np.float16)),
     {"out_dtype": "int8"}, "out_dtype"),
])
def test_bad_input_is_refused_before_any_launch(args, kwargs, problem):
    with pytest.raises(G.GemmError, match=problem):
        lab.gemm(*args, **kwargs)


def test_not_an_array_and_an_old_gpu():
    with pytest.raises(TypeError, match="device array"):
        lab.gemm([[1.0]], [[1.0]])
    with pytest.raises(G.GemmError, match="compute capability 7.0"):
        lab.gemm.explain(*host(8, 8, 8), cc=(7, 0))


@pytest.mark.parametrize("dtype, out", [(np.float32, np.float32), (np.float16, np.float16),
                                        (np.float16, np.float32), (np.uint16, np.uint16),
                                        (np.uint16, np.float32)])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (5, 9, 7), (33, 17, 40)])
def test_results_in_the_simulator(dtype, out, m, n, k):
    a, b = random_inputs(m, n, k, dtype)
    # poisoned: NaN, or for BF16 output (its bits in uint16) the bits of a BF16 NaN
    c = cuda.to_device(np.full((m, n), 0x7FC0, out) if out == np.uint16
                       else np.full((m, n), np.nan, out))
    assert np.isnan(to_float64(c.copy_to_host())).all()
    lab.gemm(cuda.to_device(a), cuda.to_device(b), c)
    got = to_float64(c.copy_to_host())
    ref = to_float64(a) @ to_float64(b)
    assert not np.isnan(got).any()
    tol = 1e-5 if out == np.float32 and dtype == np.float32 else \
        (2e-6 if out == np.float32 else 1e-2)
    assert np.abs(got - ref).max() <= tol * max(1.0, np.abs(ref).max())


def test_host_arrays_come_back_as_host_arrays():
    a, b = random_inputs(6, 5, 4, np.float16)
    c = lab.gemm(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float16 and c.shape == (6, 5)


@pytest.mark.parametrize("dtype", [np.float16, np.uint16])
@pytest.mark.parametrize("out_dtype", ["float32", None])
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (8192, 64, 8192), (128, 14336, 4096),
                                   (1, 4096, 4096)])
def test_every_hopper_choice_is_a_registered_kernel_writing_that_c(dtype, out_dtype, shape):
    """The launcher runs the registered kernel's own configuration: a 16-bit C only from a
    rung that writes one, an FP32 C only from rung 7 (or narrowed after it)."""
    from lab.kernels import get_spec
    choice = lab.gemm.explain(*host(*shape, dtype), out_dtype=out_dtype, cc=(9, 0), sms=132)
    hopper = [c for c in (choice, *choice.candidates) if c.kernel.startswith("wgmma_")]
    assert hopper or shape[0] == 1 and out_dtype == "float32"
    for c in hopper:
        cfg = get_spec(c.kernel).config
        assert cfg.kind == ("bf16" if dtype is np.uint16 else "f16")
        assert (cfg.out != "f32") == c.native_out
        assert c.out_dtype == "float32" or c.native_out or c.narrow
        if c.out_dtype == "float32":
            assert cfg.out == "f32" and not c.narrow


@pytest.mark.parametrize("tiles, sms, blocks", [(512, 132, 128), (384, 132, 128),
                                                 (288, 132, 96), (133, 132, 67), (1, 132, 1),
                                                 (2048, 132, 128), (264, 132, 132)])
def test_balanced_blocks_finish_in_the_same_waves(tiles, sms, blocks):
    assert dispatch.balanced_blocks(tiles, sms) == blocks
    waves = -(-tiles // sms)
    assert -(-tiles // blocks) == waves and -(-tiles // (blocks - 1 or 1)) >= waves


def test_the_tile_menu_ranks_by_waves():
    """3072³: 288 tiles of 128×256 fill 2.2 waves of 132 SMs, 384 of 128×192 fill 2.9: the
    narrower tile first, on 128 blocks (3 whole waves); 4096³ keeps 128×256 on 128 blocks,
    and the next tiles are timed beside it; a 16-bit C on rung 18, FP32 on rung 19."""
    odd = lab.gemm.explain(*host(3072, 3072, 3072), cc=(9, 0), sms=132)
    assert (odd.kernel, odd.bn, odd.blocks) == ("wgmma_table_fp16", 192, 128)
    assert "3 wave(s) of 128 blocks" in str(odd)
    square = lab.gemm.explain(*host(4096, 4096, 4096), cc=(9, 0), sms=132)
    assert (square.kernel, square.bn, square.blocks) == ("wgmma_table_fp16", 0, 128)  # own
    assert {c.bn for c in square.candidates} == {128, 192}
    assert not any(c.fixup for c in square.candidates)        # a full wave: no stream-K
    wide = lab.gemm.explain(*host(4096, 4096, 4096), out_dtype="float32", cc=(9, 0), sms=132)
    assert wide.kernel == "wgmma_handoff_table_fp16" and wide.blocks == 128
    assert not wide.narrow


def test_less_than_one_wave_of_wgmma_tiles_times_stream_k():
    few = lab.gemm.explain(*host(512, 4096, 4096), cc=(9, 0), sms=132)
    assert few.kernel == "wgmma_table_fp16"
    streamk = [c for c in few.candidates if c.kernel == "wgmma_streamk_fp16"]
    assert [(c.bn, c.fixup) for c in streamk] == [(0, "atomic"), (128, "atomic")]
    assert "stream-K" in str(few)
    wide = lab.gemm.explain(*host(512, 4096, 4096), out_dtype="float32", cc=(9, 0), sms=132)
    assert not any(c.fixup for c in wide.candidates)      # stream-K writes a 16-bit C only


def test_variants_are_the_configurations_gemm_builds_beyond_the_registry():
    got = lab.gemm.variants()
    assert len(got) == 28          # (2 outputs × 6 other tiles + 2 stream-K) × 2 types
    assert {c.bn for c in got} == {256, 192, 128, 64}
    assert {(c.bm, c.consumers) for c in got} == {(128, 2), (64, 1)}
    assert all(c.fixup == "atomic" for c in got if c.streamk)
    assert {c.kind for c in got} == {"f16", "bf16"}
    assert all(c.shared_bytes + 1024 <= 227 * 1024 and c.stages >= 3 for c in got)


def test_the_suite_checks_what_the_launcher_runs():
    """Every Hopper candidate lab.gemm may time beyond a registered kernel is one of the
    configurations the suite checks (lab.gemm.variants), built the same way."""
    checked = set(lab.gemm.variants())
    for shape in [(128, 14336, 4096), (8192, 64, 8192), (128, 4096, 14336), (512, 4096, 4096),
                  (3072, 3072, 3072), (12345, 768, 2048), (64, 4096, 4096), (512, 512, 512),
                  (1024, 1024, 1024)]:
        for c in lab.gemm.explain(*host(*shape), cc=(9, 0), sms=132).candidates:
            if c.kernel.startswith("wgmma_") and (c.bn or c.bm or c.fixup):
                cfg = lab.gemm.hopper_config(c.kernel, 0, c.fixup, c.bn, c.bm)
                assert cfg in checked, (shape, c)
