"""Chapter 10: the multi-GPU schemes on two simulated ranks (threads, our kernels in the CUDA
simulator or a float64 stand-in), the model's formulas, the results folder of a 2-GPU run, and
the refusals that come before any launch. GPU-only tests skip without two GPUs."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from lab import compiler, model, results
from lab.multi import comm as mcomm
from lab.multi import launch, schemes

SHAPE = (37, 45, 29)          # M, N, K: N and K odd, so the two ranks' shards differ


def _inputs(dtype, shape=SHAPE, seed=0):
    m, n, k = shape
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype))


@pytest.mark.parametrize("scheme", schemes.SCHEMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_every_scheme_matches_float64_on_two_ranks(scheme, dtype):
    A, B = _inputs(dtype)
    out = schemes.simulate(scheme, A, B, matmul_fn=schemes.numpy_matmul, chunks=3)
    assert out["verdict"].passed, out["verdict"].line()
    for C in out["C"]:
        assert np.isfinite(C).all()
    expect = len(out["views"]) if scheme in schemes.FULL_C_ON_EVERY_RANK else 1
    assert len(out["C"]) == expect


@pytest.mark.parametrize("scheme", ["column_overlap", "row_reduce_scatter", "summa"])
def test_schemes_with_our_fp32_kernel_in_the_simulator(scheme):
    A, B = _inputs(np.float32)
    out = schemes.simulate(scheme, A, B, kernel="warptile_tuned", chunks=2)
    assert out["verdict"].passed, out["verdict"].line()


def test_three_ranks_and_uneven_everything():
    A, B = _inputs(np.float32, (10, 7, 5))
    for scheme in schemes.SCHEMES:
        out = schemes.simulate(scheme, A, B, world=3, matmul_fn=schemes.numpy_matmul,
                               chunks=3, panels_per_rank=2)
        assert out["verdict"].passed, (scheme, out["verdict"].line())


def test_shards_are_balanced_and_padded():
    assert schemes.split(45, 2) == [(0, 23), (23, 45)]
    assert schemes.split(29, 2) == [(0, 15), (15, 29)]
    assert schemes.split(7, 3) == [(0, 3), (3, 5), (5, 7)]
    A, B = _inputs(np.float32)
    out = schemes.simulate("column", A, B, matmul_fn=schemes.numpy_matmul)
    c0, c1 = out["views"]
    assert c0["c"].shape == c1["c"].shape == (37, 23)
    assert np.all(c1["c"][:, 22] == 0)          # the padding column of rank 1's B block


def test_overlap_chunks_add_no_waves():
    # tc_fp16 (128 × 128 tiles) at n = 4096 on 132 SMs, 2048 columns per GPU: one launch is
    # 512 tiles, four waves; four chunks of 128 tiles are one wave each (four), three chunks of
    # 176 and 168 tiles two waves each (six): four it is.
    tile16 = (128, 128, 64)
    assert model.waves(4096, 2048, 128, 128, 132) == 4
    assert schemes.chunk_ranges(4096, 3, 128) == [(0, 1408), (1408, 2816), (2816, 4096)]
    assert [model.waves(r1 - r0, 2048, 128, 128, 132)
            for r0, r1 in schemes.chunk_ranges(4096, 3, 128)] == [2, 2, 2]
    assert schemes.overlap_chunks(4096, 2048, tile16, 132) == 4
    assert schemes.overlap_chunks(4096, 2048, tile16, 132, most=3) == 2     # 2 + 2 waves
    # n = 16384: 63 waves in one launch, 64 in four chunks (within 5%)
    assert schemes.overlap_chunks(16384, 8192, tile16, 132) == 4
    # a block of one wave: any chunking doubles the waves, so no overlap
    assert schemes.overlap_chunks(1001, 516, tile16, 132) == 1
    assert schemes.overlap_chunks(4096, 2048, (64, 128, 8), 132) == 4
    # with tc_fp16's real occupancy (two blocks per SM, 264 slots) one launch is two waves, and
    # four chunks of 128 tiles are four half-empty ones: two chunks (one wave each) it is
    assert compiler.resident_blocks("tc_fp16") == 2
    assert model.waves(4096, 2048, 128, 128, 132, 2) == 2
    assert schemes.overlap_chunks(4096, 2048, tile16, 132, blocks_per_sm=2) == 2
    assert schemes.overlap_chunks(16384, 8192, tile16, 132, blocks_per_sm=2) == 4
    assert schemes.chunk_ranges(37, 3) == schemes.split(37, 3)
    A, B = _inputs(np.float32, (40, 9, 7))
    sim = mcomm.SimWorld(1)
    mine = schemes.prepare(mcomm.SimComm(0, sim, schemes.numpy_matmul), "column_overlap",
                           A, B, chunks=3, row_tile=16)
    assert [(r0, r1) for r0, r1, _ in mine.chunks] == [(0, 16), (16, 32), (32, 40)]
    out = schemes.simulate("column_overlap", A, B, matmul_fn=schemes.numpy_matmul, chunks=3)
    assert out["verdict"].passed


class DropsRankOne(mcomm.SimComm):
    """An all-gather that forgets rank 1's piece (the poisoned output keeps its NaN)."""

    def _all_gather(self, out, inp, async_op=False):
        for r, piece in enumerate(self._exchange(inp)):
            if r != 1:
                out[r] = piece
        return mcomm._Done() if async_op else None


class MaxNotSum(mcomm.SimComm):
    """An all-reduce and a reduce-scatter that take the largest partial instead of the sum."""

    def _all_reduce(self, buf, async_op=False):
        buf[...] = np.maximum.reduce(self._exchange(buf))

    def _reduce_scatter(self, out, inp, async_op=False):
        out[...] = np.maximum.reduce([p[self.rank] for p in self._exchange(inp)])


class WrongOwner(mcomm.SimComm):
    """A broadcast that always sends rank 0's buffer, whoever owns the panel."""

    def _broadcast(self, buf, src, async_op=False):
        buf[...] = self._exchange(buf)[0]
        return mcomm._Done() if async_op else None


@pytest.mark.parametrize("scheme,faulty", [("column_gather", DropsRankOne),
                                           ("column_overlap", DropsRankOne),
                                           ("row_allreduce", MaxNotSum),
                                           ("row_reduce_scatter", MaxNotSum),
                                           ("summa", WrongOwner)])
def test_a_dropped_shard_or_a_wrong_reduction_fails_the_check(scheme, faulty):
    A, B = _inputs(np.float32)
    out = schemes.simulate(scheme, A, B, matmul_fn=schemes.numpy_matmul, comm_class=faulty)
    assert not out["verdict"].passed


def test_a_kernel_that_skips_a_row_fails_the_check():
    def lazy(a, b):
        c = schemes.numpy_matmul(a, b)
        c[-1] = np.nan
        return c
    A, B = _inputs(np.float32)
    for scheme in ("column", "row_reduce_scatter", "summa"):
        assert not schemes.simulate(scheme, A, B, matmul_fn=lazy)["verdict"].passed


def test_outputs_are_poisoned_before_the_scheme_runs():
    A, B = _inputs(np.float32)
    sim = mcomm.SimWorld(1)
    comm = mcomm.SimComm(0, sim, schemes.numpy_matmul)
    for scheme in schemes.SCHEMES:
        mine = schemes.prepare(comm, scheme, A, B)
        written = [mine.c, mine.gathered, mine.out, mine.tmp,
                   *(g for _, _, g in mine.chunks)]
        assert all(np.isnan(x).all() for x in written if x is not None), scheme
        if mine.partial is not None:
            assert np.isnan(mine.partial_rows[:37]).all()
            assert not np.isnan(mine.partial_rows[37:]).any()     # padding stays zero


def test_compute_only_and_comm_only_switches():
    A, B = _inputs(np.float32)
    calls = []

    class Counting(mcomm.SimComm):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.do_comm = False

        def _all_gather(self, out, inp, async_op=False):
            calls.append("gather")
            return super()._all_gather(out, inp, async_op)

    out = schemes.simulate("column_gather", A, B, matmul_fn=schemes.numpy_matmul,
                           comm_class=Counting)
    assert calls == [] and not out["verdict"].passed    # nothing gathered: NaN remains


@pytest.mark.parametrize("call,match", [
    (lambda A, B: schemes.simulate("column", A, B, world=0), "world size"),
    (lambda A, B: schemes.simulate("column", A, B, world=-1), "world size"),
    (lambda A, B: schemes.simulate("column", A, B.T.copy()), "A.shape"),
    (lambda A, B: schemes.simulate("diagonal", A, B), "unknown scheme"),
    (lambda A, B: schemes.simulate("column", A[:1], B, world=2), "smaller than the world"),
    (lambda A, B: schemes.simulate("column", A.astype(np.float16), B.astype(np.float16)),
     "takes float32"),
])
def test_bad_input_is_refused_before_anything_runs(call, match, monkeypatch):
    def never(*a, **kw):
        raise AssertionError("a rank was started")
    monkeypatch.setattr(mcomm, "run_ranks", never)
    A, B = _inputs(np.float32)
    with pytest.raises(ValueError, match=match):
        call(A, B)
    with pytest.raises(TypeError):
        schemes.simulate("column", [[1.0]], B)


def test_a_failing_rank_is_reported_not_hung():
    def boom(a, b):
        raise RuntimeError("kernel exploded")
    A, B = _inputs(np.float32)
    with pytest.raises(RuntimeError, match="simulated rank .* kernel exploded"):
        schemes.simulate("row_allreduce", A, B, matmul_fn=boom)


# ----------------------------------------------------------------------------- the model

def test_collective_factors_and_bytes():
    assert model.collective_factor("all_gather", 2) == 0.5
    assert model.collective_factor("all_reduce", 4) == 1.5
    assert model.collective_factor("broadcast", 8) == 1.0
    assert model.collective_factor("all_reduce", 1) == 0.0
    with pytest.raises(ValueError):
        model.collective_factor("all_to_all", 2)
    with pytest.raises(ValueError):
        model.collective_factor("all_gather", 0)
    n = 1024
    assert model.comm_bytes_per_gpu("column", n, n, n, 2) == 0
    assert model.comm_bytes_per_gpu("column_gather", n, n, n, 2) == 0.5 * n * n * 4
    assert model.comm_bytes_per_gpu("row_allreduce", n, n, n, 2) == n * n * 4
    assert model.comm_bytes_per_gpu("summa", n, n, n, 2, e=2) == 0.5 * n * n * 2
    # a square grid moves less per GPU than a line of the same GPUs
    line = model.comm_bytes_per_gpu("summa", n, n, n, 16, grid=(1, 16))
    square = model.comm_bytes_per_gpu("summa", n, n, n, 16, grid=(4, 4))
    assert square < line
    with pytest.raises(ValueError, match="grid"):
        model.comm_bytes_per_gpu("summa", n, n, n, 8, grid=(3, 3))


def test_scheme_times():
    kw = dict(rate_tflops=400.0, link=400.0)
    n = 16384
    one = 2 * n**3 / 400e12
    col = model.scheme_seconds("column", n, n, n, 2, **kw)
    assert col["total"] == pytest.approx(one / 2)
    gather = model.scheme_seconds("column_gather", n, n, n, 2, **kw)
    assert gather["comm"] == pytest.approx(0.5 * n * n * 4 / 400e9)
    lapped = model.scheme_seconds("column_overlap", n, n, n, 2, chunks=4, **kw)
    assert col["total"] < lapped["total"] < gather["total"]
    ar = model.scheme_seconds("row_allreduce", n, n, n, 2, **kw)
    assert ar["comm"] == pytest.approx(2 * gather["comm"])
    assert model.scheme_seconds("column", n, n, n, 1, **kw)["total"] == pytest.approx(one)


def test_fit_link_recovers_a_line():
    rows = [{"what": "all_gather", "world": 2, "bytes": s,
             "median_ms": (20e-6 + 0.5 * s / 300e9) * 1e3} for s in (2**20, 2**24, 2**28)]
    fit = model.fit_link(rows)["all_gather"]
    assert fit["bus_gbps"] == pytest.approx(300, rel=1e-6)
    assert fit["latency_s"] == pytest.approx(20e-6, rel=1e-6)
    # one mid-sized buffer whose median is far off the line moves neither number
    rows.insert(1, {"what": "all_gather", "world": 2, "bytes": 2**22, "median_ms": 4.0})
    fit = model.fit_link(rows)["all_gather"]
    assert fit["bus_gbps"] == pytest.approx(300, rel=1e-6)
    assert fit["latency_s"] == pytest.approx(20e-6, rel=1e-6)


def test_fit_startup_and_the_work_rate():
    pts = [(n, (3e-4 + 2 * n**3 / 400e12) * 1e3) for n in (4096, 8192, 16384)]
    fit = model.fit_startup(pts)
    assert fit["startup_s"] == pytest.approx(3e-4, rel=1e-6)
    assert fit["rate_tflops"] == pytest.approx(400, rel=1e-6)
    assert model.work_rate(8192, pts[1][1], fit["startup_s"]) == pytest.approx(400, rel=1e-6)
    kw = dict(rate_tflops=400.0, link=400.0)
    plain = model.scheme_seconds("summa", 8192, 8192, 8192, 2, **kw)["total"]
    assert model.scheme_seconds("summa", 8192, 8192, 8192, 2, startup_s=1e-4,
                                **kw)["total"] == pytest.approx(plain + 1e-4)


# ----------------------------------------------------------------------------- plumbing

def test_a_two_gpu_run_is_filed_under_x2():
    assert results.path_for("multi_gpu", "h200").parent.name == "h200-x2"
    assert results.path_for("multi_gpu", "h200-x2").parent.name == "h200-x2"
    assert results.path_for("shapes", "h200").parent.name == "h200"


def test_the_experiment_declares_its_tool_and_chapter():
    from lab import experiments

    exp = experiments.info("multi_gpu")
    assert exp.chapter == "10" and exp.needs == ("torch-nccl-2gpu",)
    assert 0 < exp.h200_seconds <= 600


def test_without_two_gpus_the_tool_says_why(monkeypatch):
    from lab import device

    monkeypatch.setattr(device, "_driver_device_count", lambda: 1)
    assert "needs 2 GPUs" in launch.missing(2) and "has 1" in launch.missing(2)
    with pytest.raises(RuntimeError, match="needs 2 GPUs"):
        launch.launch({}, world=2)
    with pytest.raises(ValueError, match="world size"):
        launch.launch({}, world=0)


def test_workers_keep_nvlink_multicast_off():
    assert launch.NO_MULTICAST == {"NCCL_NVLS_ENABLE": "0",
                                   "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                   "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.mark.skipif(launch.missing(2) is not None, reason="needs two GPUs, PyTorch and NCCL")
def test_two_gpus_check_every_scheme():
    from lab.experiments import multi_gpu

    work = multi_gpu.plan(sizes=())
    work.update(check_shapes=[[133, 67, 45]], bandwidth_bytes=[2**20])
    out = launch.launch(work, world=2, timeout_s=900)
    checks = [r for r in out["rows"] if r["part"] == "check"]
    assert checks and all(r["passed"] for r in checks)


def _fake_run() -> dict:
    """A results dict shaped like the worker's (made-up numbers, only to exercise the chapter's
    code paths; never saved)."""
    rows = []
    for what in model.COLLECTIVES:
        for nbytes in (2**20, 2**24, 2**28):
            ms = (2e-5 + model.collective_factor(what, 2) * nbytes / 300e9) * 1e3
            rows.append({"part": "bandwidth", "what": what, "bytes": nbytes, "world": 2,
                         "median_ms": ms, "min_ms": ms, "max_ms": ms,
                         "algbw_gbps": nbytes / ms / 1e6, "busbw_gbps": 1.0})
    for dtype, rate in (("float16", 400.0), ("float32", 45.0)):
        for n in (4096, 8192):
            one = 2 * n**3 / rate / 1e9
            base = {"dtype": dtype, "kernel": "k", "m": n, "n": n, "k": n, "world": 2}
            rows.append({"part": "one_gpu", "scheme": "one_gpu", **base, "median_ms": one,
                         "min_ms": one, "max_ms": one, "tflops": rate,
                         "tflops_per_gpu": rate})
            if dtype == "float32":          # one timing of the FP32 sum per shape
                rows.append({"part": "add", "dtype": "float32", "m": n, "n": n // 2,
                             "world": 2, "median_ms": 0.1, "min_ms": 0.1, "max_ms": 0.1,
                             "bytes": 12 * n * n // 2})
            for s in schemes.SCHEMES:
                ms = one / 1.8
                rows.append({"part": "scheme", "scheme": s, **base, "median_ms": ms,
                             "min_ms": ms, "max_ms": ms, "tflops": 2 * n**3 / ms / 1e9,
                             "tflops_per_gpu": n**3 / ms / 1e9, "speedup": 1.8,
                             "efficiency": 0.9, "compute_ms": one / 2, "comm_ms": 0.1 * ms,
                             "exposed_comm_ms": ms - one / 2, "comm_share": 0.1,
                             "chunks": 4, "panels_per_rank": 2})
    return {"schema_version": 1, "experiment": "multi_gpu", "parameters": {}, "rows": rows,
            "command": "x", "row_fields": ["part"],
            "provenance": {"gpu": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132,
                           "driver": "1", "cuda_runtime": "13.0", "numba": "1",
                           "numba_cuda": "1", "numpy": "1", "date": "2026-12-01T00:00:00",
                           "host": "h"}}


def test_the_chapter_reads_a_run(monkeypatch, tmp_path):
    from lab import page
    from lab.chapters import ch10

    data = results.validate(_fake_run())
    shutil.copytree(results.RESULTS_DIR / "h200", tmp_path / "h200")
    results.save("multi_gpu", data["rows"], parameters={}, command="x",
                 provenance=data["provenance"], row_fields=["part"], root=tmp_path)
    assert (tmp_path / "h200-x2" / "multi_gpu.json").exists()
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)      # the chapter reads this run
    monkeypatch.delenv("LAB_GPU", raising=False)
    monkeypatch.setattr(results, "source_line", lambda *a, **k: "Source: fake")
    assert "busbw" in repr(ch10.bandwidth_table())
    assert ch10.link()["all_gather"]["bus_gbps"] == pytest.approx(300, rel=1e-6)
    assert "model / measured" in repr(ch10.model_table())
    assert "compute alone (ms)" in repr(ch10.miss_table())
    vals = ch10.measured_values()
    assert vals["col16_speedup"] == "not measured"          # the fake run stops at 8192
    assert vals["ev10_whole_range"] == "not measured"       # (so does the evidence, at 16384)
    assert "not measured" not in [v for k, v in vals.items()
                                  if not k.startswith(("col16", "ev10"))]
    assert vals["model_within"].isdigit()
    for fig in (ch10.rate_figure(), ch10.scaling_figure()):
        assert "figure" in repr(page.figure(fig))


def test_solutions():
    from lab.chapters.ch10 import solutions

    one = solutions.ex10_1()
    assert one["efficiency"] >= 0.9 and one["n"] >= one["n_closed"]
    assert solutions.ex10_2()["best"] == "4x4"
    three = solutions.ex10_3()
    assert three["times_ms"][three["best"]] < three["times_ms"][1]
    assert solutions.ex10_4()["passed"] == len(schemes.SCHEMES)
    assert all(k.startswith("ex10_") for k in solutions.values())


def test_the_committed_run_cut_as_many_chunks_as_the_rule_takes():
    """The committed run chose its chunks by the rule counting one block per SM (chapter 10
    says so, and what the rule with the kernel's resident blocks takes instead)."""
    from lab.kernels import get_spec

    data = results.load("multi_gpu", gpu=results.REFERENCE_GPU)
    sms = data["provenance"]["sm_count"]
    lapped = [r for r in data["rows"] if r.get("part") == "scheme"
              and r["scheme"] == "column_overlap"]
    assert len(lapped) >= 8
    for r in lapped:
        w = schemes.split(r["n"], r["world"])[0][1]
        assert r["chunks"] == schemes.overlap_chunks(r["m"], w, get_spec(r["kernel"]).tile,
                                                     sms), r
