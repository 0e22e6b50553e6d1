"""Chapter 6: the wave/tail/split-K model, the cuBLAS layout arguments, and a dry run of the
``shapes`` experiment.

The experiment needs cuBLAS and a GPU. Here its logic still runs: cuBLAS is replaced by a
NumPy model of column-major ``gemm`` (the BLAS definition: element (i, j) of an r×c matrix with
leading dimension ld sits at i + j·ld, op T transposes), timing by one plain call, and the
tensor-core kernel (inline PTX) by a simulator-friendly one, at tiny sizes.
"""
from __future__ import annotations

import numpy as np
import pytest

from lab import baselines, bench, device, model, timing
from lab.experiments import shapes


# ----------------------------------------------------------------------------- the model

def test_waves_seed_example():
    # 140 tiles on 132 SMs, one block each: a full wave and a second one with 8 blocks.
    m = 140 * 128
    assert model.tile_grid(m, 128, 128, 128) == 140
    assert model.waves(m, 128, 128, 128, sms=132) == 2
    assert model.wave_efficiency(m, 128, 128, 128, sms=132) == pytest.approx(140 / 264)
    assert model.waves(132 * 128, 128, 128, 128) == 1
    assert model.wave_efficiency(132 * 128, 128, 128, 128) == 1.0


def test_waves_of_our_tensor_core_tiling():
    # 128x128 tiles, two blocks per SM: 4096 is 1024 tiles (3.9 waves -> 4), 4224 is 1089 (5).
    assert model.waves(4096, 4096, 128, 128, 132, 2) == 4
    assert model.waves(4097, 4097, 128, 128, 132, 2) == 5
    assert model.wave_efficiency(4097, 4097, 128, 128, 132, 2) == pytest.approx(1089 / 1320)


def test_tile_efficiency():
    assert model.tile_efficiency(4096, 4096, 128, 128) == 1.0
    assert model.tile_efficiency(130, 64, 64, 64) == pytest.approx(130 / 192)   # seed 002's M=130
    assert model.tile_efficiency(4097, 4097, 32, 32) == pytest.approx(4097 ** 2 / 4128 ** 2)


@pytest.mark.parametrize("threads,regs,smem,expect", [
    (128, 238, 98304, 2),     # tc_fp16: shared memory and registers both allow 2
    (128, 127, 12544, 4),     # warptile_tuned fast kernel: registers allow 4
    (128, 158, 12544, 3),     # its bounds-checked twin
    (1024, 32, 8192, 2),      # tiled32: threads allow 2
    (256, 0, 0, 8),           # nothing but threads
])
def test_blocks_per_sm(threads, regs, smem, expect):
    assert model.blocks_per_sm(threads, regs, smem) == expect


def test_split_k():
    assert model.split_k_tiles(256, 256, 128, 128, 8) == 32
    assert model.split_k_extra_bytes(256, 256, 1) == 0.0
    assert model.split_k_extra_bytes(256, 256, 4) == 2 * 4 * 256 * 256 * 4


# ----------------------------------------------------------------------------- layouts

def _colmajor(buf: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    assert ld >= rows
    return buf.ravel()[np.arange(rows)[:, None] + ld * np.arange(cols)[None, :]]


def gemm_model(call: dict, first: np.ndarray, second: np.ndarray, out: np.ndarray) -> None:
    """Column-major C = op(X)·op(Y) with the call's m, n, k and leading dimensions."""
    m, n, k = call["m"], call["n"], call["k"]
    x = (_colmajor(first, k, m, call["ld_first"]).T if call["op_first"] == baselines.CUBLAS_OP_T
         else _colmajor(first, m, k, call["ld_first"]))
    y = (_colmajor(second, n, k, call["ld_second"]).T
         if call["op_second"] == baselines.CUBLAS_OP_T else _colmajor(second, k, n, call["ld_second"]))
    flat = out.reshape(-1)
    idx = np.arange(m)[:, None] + call["ld_out"] * np.arange(n)[None, :]
    flat[idx] = x.astype(np.float64) @ y.astype(np.float64)


@pytest.mark.parametrize("layout", baselines.LAYOUTS)
def test_layout_arguments(layout, rng):
    m, n, k = 5, 7, 3
    a = rng.uniform(-1, 1, (m, k))
    b = rng.uniform(-1, 1, (k, n))
    a_s, b_s = baselines.layout_operands(layout, a, b)
    assert a_s.shape == ((k, m) if layout[0] == "T" else (m, k))
    assert b_s.shape == ((n, k) if layout[1] == "T" else (k, n))
    c = np.full((m, n), np.nan)
    gemm_model(baselines.gemm_arguments(layout, m, n, k), b_s, a_s, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)


def test_path_of():
    assert shapes.path_of("tiled32", 4097, 4097, 4097) == "one kernel, zero-padded tiles"
    assert shapes.path_of("warptile_tuned", 4096, 4096, 4096) == "16-byte kernel"
    assert shapes.path_of("warptile_tuned", 4104, 4104, 4104).startswith("bounds-checked")
    assert shapes.path_of("tc_fp16", 4096, 4096, 4096) == "no padding"
    assert shapes.path_of("tc_fp16", 1, 4096, 4096) == "pads to 128x4096x4096"


# ----------------------------------------------------------------------------- dry run

@pytest.mark.skipif(device.GPU, reason="the dry run replaces cuBLAS; on a GPU run the real one")
def test_dry_run(monkeypatch, fake_events):
    """run() end to end at tiny sizes: cuBLAS -> NumPy model, timing -> one call,
    tc_fp16 -> tiled16, warptile_tuned -> tiled8, tiled32 -> naive."""
    def fake_launch(kind, A, B, C):
        spec = baselines.get_kind(kind)
        a = bench.to_float64(A.copy_to_host())
        b = bench.to_float64(B.copy_to_host())
        C.copy_to_device((a @ b).astype(spec.out_dtype))

    def fake_layout(layout, A, B, C, kind="fp16"):
        spec = baselines.get_kind(kind)
        m, n = C.shape
        k = A.shape[0] if layout[0] == "T" else A.shape[1]
        out = np.zeros((m, n))
        gemm_model(baselines.gemm_arguments(layout, m, n, k), B.copy_to_host(),
                   A.copy_to_host(), out)
        C.copy_to_device(out.astype(spec.out_dtype))

    def fake_time(call, *, warmup=3, repeats=20, rotated=False):
        assert repeats >= 10
        call(0)
        return bench.Timing(1.0, 0.9, 1.1, repeats, warmup, rotated, [1.0] * repeats)

    monkeypatch.setattr(baselines, "available", lambda: list(baselines.KINDS))
    monkeypatch.setattr(baselines, "launch", fake_launch)
    monkeypatch.setattr(baselines, "launch_layout", fake_layout)
    monkeypatch.setattr(bench, "time_gpu", fake_time)
    monkeypatch.setattr(bench, "require_gpu", lambda what="": None)
    monkeypatch.setattr(bench, "buffer_sets", lambda nbytes, rotate, l2=None: 2 if rotate else 1)
    monkeypatch.setattr(shapes, "_l2_bytes", lambda: 60 * 2**20)

    class FakeSpinner:                 # the simulator would run the busy loop in Python
        ms_per_iteration = 1e-6

        def launch(self, ms):
            pass

    monkeypatch.setattr(bench, "Spinner", FakeSpinner)
    fake_events(5.0)
    monkeypatch.setattr(shapes, "QUEUED_SIZES", (16,))
    monkeypatch.setattr(timing, "QUEUE_BATCHES", 1)
    monkeypatch.setattr(timing, "QUEUE_BATCH", 1)
    monkeypatch.setattr(timing, "QUEUE_WARMUP", 0)
    monkeypatch.setattr(shapes, "BURST_IDLE_S", 0.0)
    # tiny shapes; tc_fp16 (inline PTX) replaced by tiled16, warptile_tuned by tiled8, tiled32
    # (1024-thread blocks, slow in the simulator) by naive
    swap = {"tc_fp16": "tiled16", "warptile_tuned": "tiled8", "tiled32": "naive"}
    fix = lambda impls: tuple(swap.get(n, n) for n in impls)  # noqa: E731
    for name in ("SIZE_IMPLS", "ALIGN_IMPLS", "SKINNY_IMPLS"):
        monkeypatch.setattr(shapes, name, fix(getattr(shapes, name)))
    monkeypatch.setattr(shapes, "SIZES", (16, 24))
    monkeypatch.setattr(shapes, "ALIGN_SIZES", (16, 17))
    monkeypatch.setattr(shapes, "SKINNY_M", (1, 3))
    monkeypatch.setattr(shapes, "SKINNY_KN", 32)
    monkeypatch.setattr(shapes, "LAYOUT_SIZE", 24)
    monkeypatch.setattr(shapes, "CHECK_SHAPES", ((8, 8, 8), (9, 10, 7)))
    monkeypatch.setattr(shapes, "CUBLAS_CHECK_SHAPES", ((8, 8, 8),))
    monkeypatch.setattr(shapes, "LAYOUT_CHECK_SHAPE", (9, 10, 7))

    out = shapes.run(lambda it, **kw: it)
    rows = out["rows"]
    parts = {r["part"] for r in rows}
    assert parts == {"check", "size", "alignment", "shuffled", "skinny", "layout", "burst",
                     "size_queued", "skinny_queued"}
    queued = [r for r in rows if r["part"].endswith("_queued")]
    assert all(r["timing"] == "queued" and 0.0 <= r["spin_covered"] <= 1.0 for r in queued)
    assert len([r for r in queued if r["part"] == "skinny_queued"]) == 2 * 2 * 2
    assert all(r["passed"] for r in rows if r["part"] == "check")
    assert {r["kernel"] for r in rows if r["part"] == "check"} >= {
        "cublas_fp32", "cublas_fp16", "tiled16", "tiled8", "naive", "cublas_fp16_TT"}
    shuffled = [r for r in rows if r["part"] == "shuffled"]
    assert len(shuffled) == shapes.ROUNDS * 2 * len(shapes.SHUFFLED_IMPLS)
    skinny = [r for r in rows if r["part"] == "skinny"]
    assert {r["rotated"] for r in skinny} == {False, True}
    assert all("weight_gbps" in r for r in skinny)
    assert [r["layout"] for r in rows if r["part"] == "burst"] == list(baselines.LAYOUTS)
    from lab import results
    results.validate({"schema_version": results.SCHEMA_VERSION, "experiment": "shapes",
                      "parameters": out["parameters"], "rows": rows, "command": "test",
                      "provenance": device.provenance(),
                      "row_fields": out["row_fields"]})
