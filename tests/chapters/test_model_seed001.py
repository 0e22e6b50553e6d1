"""Chapter 8: seed 001's model reproduced from lab.model, the H200 column from the results, and
the animation's counters against loads counted in kernels run under the simulator."""
from collections import Counter

import numpy as np
import pytest

import lab  # noqa: F401  (decides the simulator before numba is imported)
from lab import device, model, seeds
from lab.chapters import ch8
from lab.counting import count_accesses
from lab.kernels import k02_tiled
from numba import cuda  # a module global: the simulator swaps it inside kernels

RTOL = 0.02


@pytest.mark.parametrize("row", seeds.LADDER_MODEL_001, ids=lambda r: r["kernel"])
def test_seed_001_table_within_two_percent(row):
    a100 = model.rung_model(row["kernel"], model.DATASHEET["A100"])
    h100 = model.rung_model(row["kernel"], model.DATASHEET["H100"])
    assert a100["flop_per_byte"] == pytest.approx(row["flop_per_byte"], rel=RTOL)
    assert a100["seconds"] * 1e3 == pytest.approx(row["a100_ms"], rel=RTOL)
    assert h100["seconds"] * 1e3 == pytest.approx(row["h100_ms"], rel=RTOL)
    assert a100["bound"] == row["bound_a100"]


def test_seed_001_other_numbers():
    a100 = model.DATASHEET["A100"]
    ridge = model.ridge(a100["tensor_tflops"] * 1e12, a100["hbm_gbps"] * 1e9)
    assert ridge == pytest.approx(seeds.TENSOR_RIDGE_A100_001, rel=RTOL)
    assert model.rung_model("tensor", a100)["tflops"] == pytest.approx(
        seeds.TENSOR_TFLOPS_A100_001, rel=RTOL)
    # the course's tile formula leaves the store of C out: exactly 8 and 64
    assert model.kernel_model_4096("shared") == 8.0 and model.kernel_model_4096("tensor") == 64.0
    assert ch8.worst_seed_gap() < RTOL


def test_slice_traffic_counts():
    # one k of a 32 × 32 FP32 tile, one output per thread: 256 B of tiles, 8 KiB of reads
    t = model.slice_traffic(32, 32, 1)
    assert t == {"global": 256.0, "shared": 256.0 + 4 * 1024 * 2}
    # an 8 × 8 patch cuts the shared reads eight-fold
    reads = model.slice_traffic(128, 128, 1, 8, 8)["shared"] - 4 * 256
    assert reads * 8 == model.slice_traffic(128, 128, 1)["shared"] - 4 * 256
    assert model.slice_traffic(1, 1, 1, staged=False) == {"global": 8.0, "shared": 0.0}


def test_h200_column_reads_the_measured_rungs():
    rows = {r["ours"]: r for r in ch8.h200_rows()}
    assert list(rows) == ["naive", "tiled32", "block128", "tc_bf16"]
    for kind, name in ch8.OUR_KERNEL.items():
        m = ch8.measured_row(kind)
        assert m["kernel"] == name and m["m"] == m["n"] == m["k"] == 4096
        assert rows[name]["measured_ms"] == m["median_ms"] > 0
    # the misses the chapter explains, in the directions it states
    assert rows["naive"]["ratio"] < 0.5 and rows["tc_bf16"]["ratio"] < 1
    assert abs(rows["tiled32"]["ratio"] - 1) < 0.05 and rows["block128"]["ratio"] > 2


def test_step_counters_totals():
    steps = model.step_counters(16, 8, 4)
    assert len(steps) == 16 and steps[0]["tile"] == (0, 0) and steps[-1]["tile"] == (1, 1)
    last = steps[-1]
    assert last["fma"] == 16 ** 3 and last["naive_global"] == 2 * 16 ** 3
    assert last["tiled_global"] == 2 * 16 ** 3 // 8 == last["tiled_shared_stores"]
    assert last["tiled_shared_loads"] == 2 * 16 ** 3


simulator_only = pytest.mark.skipif(not device.SIMULATOR, reason="counts loads in the simulator")


@simulator_only
def test_animation_counters_equal_counted_loads():
    counted = ch8.counted_runs()
    assert counted["correct"]
    rows = ch8.counter_rows(counted)
    assert len(rows) == 16 and all(r["agree"] for r in rows)
    # per step, not only in total: every step of every counter
    model_steps = model.step_counters(16, 8, 4)
    prev = {"naive_global": 0, "tiled_global": 0, "tiled_shared_loads": 0}
    for r in model_steps:
        assert counted["naive"][r["step"]] == r["naive_global"] - prev["naive_global"]
        assert counted["tiled"]["global"][r["step"]] == r["tiled_global"] - prev["tiled_global"]
        assert (counted["tiled"]["shared_load"][r["step"]]
                == r["tiled_shared_loads"] - prev["tiled_shared_loads"])
        prev = r


@simulator_only
def test_counter_sees_a_changed_kernel():
    """The counter is not the model: a kernel that loads each operand twice counts double."""
    @cuda.jit
    def twice(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j] + 0.0 * A[i, k]
            C[i, j] = acc

    A, B = ch8.animation_inputs()
    C, events = count_accesses(lambda a, b, c: twice[(1, 1), (16, 16)](a, b, c), A, B)
    kinds = Counter((e[0], e[1], e[2]) for e in events)
    assert kinds[("global", "load", "A")] == 2 * 16 ** 3
    assert kinds[("global", "load", "B")] == 16 ** 3
    assert kinds[("global", "store", "C")] == 16 ** 2
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


@simulator_only
def test_tiled_copy_is_chapter_2s_algorithm():
    rows = ch8.same_algorithm_rows()
    assert [r["same"] for r in rows] == ["identical", "identical"]
    for r in rows:
        assert r["global"] == r["model_global"] == r["shared_stores"]
        assert r["shared_loads"] == 2 * 16 ** 3


@simulator_only
def test_counting_restores_the_simulator():
    from numba.cuda.simulator import kernel as sim_kernel, kernelapi

    before = (sim_kernel.FakeWithinKernelCUDAArray, kernelapi.FakeCUDAShared.array,
              sim_kernel.BlockThread.syncthreads)
    count_accesses(k02_tiled.make_tiled_study(8, 4), *ch8.animation_inputs())
    assert before == (sim_kernel.FakeWithinKernelCUDAArray, kernelapi.FakeCUDAShared.array,
                      sim_kernel.BlockThread.syncthreads)
    assert lab.matmul(*ch8.animation_inputs(), kernel="tiled8").shape == (16, 16)


def test_animation_is_light():
    out = ch8.animation()._repr_mimebundle_()
    assert out["text/plain"].startswith("[animation: 17 frames")
    assert len(out["text/html"]) < 600_000 and "<script" in out["text/html"]
    assert "http://" not in out["text/html"] and "https://" not in out["text/html"]
    assert 'class="fa' not in out["text/html"]
