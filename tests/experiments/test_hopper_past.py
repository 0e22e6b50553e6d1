"""The rungs past rung 8 (16-bit output, whole-tile staging, the 128-block grid, FP8 clusters,
ping-pong with the TMA-store epilogue), the ``hopper_past`` experiment's bookkeeping and the
fast.cu harness's rules — no GPU needed."""
from dataclasses import replace

import numpy as np
import pytest

from lab.experiments import _hopper_records as R
from lab.experiments import hopper_past as H
from lab.kernels import REGISTRY
from lab.kernels.wgmma import fp8 as F
from lab.kernels import wgmma as K
from lab.twins import fastcu


def test_rung9_is_registered_with_its_output_type():
    for kind, out in (("fp16", "f16"), ("bf16", "bf16")):
        spec = REGISTRY[f"wgmma_out16_{kind}"]
        assert spec.config.out == out and spec.check is not None
        assert not spec.simulator and spec.max_cc == (9, 0)
    cfg = REGISTRY["wgmma_out16_fp16"].config
    assert K.signature(cfg).count("float16[:, ::1]") == 1
    assert "uint16[:, ::1]" in K.signature(REGISTRY["wgmma_out16_bf16"].config)
    assert cfg.epi_cols == 64 and "F16 out" in cfg.label


def test_rungs_10_and_11_are_rung_7_with_a_whole_tile_16bit_store():
    t7 = K.RUNG_CONFIGS["wgmma_tmastore"]
    t10, t11 = K.RUNG_CONFIGS["wgmma_tile16"], K.RUNG_CONFIGS["wgmma_grid128"]
    assert t10 == replace(t7, out="f16", stages=3, store="tile")
    assert t11 == replace(t10, grid=128)
    # a 64×256 16-bit tile per consumer warpgroup: 4 staging boxes of 8 KB each
    assert t10.epi_boxes == 4 and t10.epilogue_bytes == 2 * 4 * 8192
    assert t10.shared_bytes + 1024 <= 227 * 1024
    for kind, out in (("fp16", "f16"), ("bf16", "bf16")):
        for rung in ("wgmma_tile16", "wgmma_grid128"):
            spec = REGISTRY[f"{rung}_{kind}"]
            assert spec.config.out == out and spec.check is not None
            assert "whole-tile staging" in spec.config.label
    assert "grid 128" in t11.label
    fp8 = F.CONFIGS["fp8_e4m3_tile"]
    assert (fp8.store, fp8.grid, fp8.stages, fp8.out) == ("tile", 128, 3, "bf16")


def test_whole_tile_staging_and_grid_rules():
    t7 = K.RUNG_CONFIGS["wgmma_tmastore"]
    with pytest.raises(ValueError, match="shared memory"):      # 4 stages + 64 KB staging
        replace(t7, out="f16", store="tile").validate()
    with pytest.raises(ValueError, match="shared memory"):      # an FP32 tile: 128 KB
        replace(t7, stages=3, store="tile").validate()
    with pytest.raises(ValueError, match="TMA store"):
        replace(K.RUNG_CONFIGS["wgmma_persistent"], store="tile").validate()
    with pytest.raises(ValueError, match="'boxes' or 'tile'"):
        replace(t7, store="later").validate()
    with pytest.raises(ValueError, match="whole clusters"):
        replace(K.RUNG_CONFIGS["wgmma_cluster"], grid=127).validate()
    with pytest.raises(ValueError, match="persistent"):
        replace(K.RUNG_CONFIGS["wgmma_ws"], grid=128).validate()


def test_the_two_other_fp32_epilogues_and_their_rules():
    """C from registers and per-warp staging: what they are, where they are allowed."""
    ring = K.RUNG_CONFIGS["wgmma_ring"]
    cfgs = H.explore_configs()
    vec, warp = cfgs[H.VECTOR], cfgs[H.F32_WARP]
    from lab.experiments._hopper_study import Study, study

    assert isinstance(vec, Study) and isinstance(warp, Study)   # studies, not shipped knobs
    assert (vec.epilogue, vec.vector, vec.stages, vec.epilogue_bytes) == ("direct", True, 4, 0)
    assert study(vec, vector=False, epilogue="tma", stages=ring.stages, ring=ring.ring) \
        == study(ring)
    assert study(warp, warp_store=False) == study(ring)         # the same 64 KB, per warp
    assert (warp.epi_rows, ring.epi_rows, warp.epilogue_bytes) == (16, 64, 64 * 1024)
    assert "per-warp staging (4 boxes)" in warp.label and "vector-store" in vec.label
    assert set(vec.overrides()) == {"store"} and set(warp.overrides()) == {"store", "drain"}
    with pytest.raises(ValueError, match="needs the TMA-store epilogue"):
        study(vec, out="f16")
    with pytest.raises(ValueError, match="studies are of"):
        study(K.RUNG_CONFIGS["wgmma_pingpong"], vector=True)
    with pytest.raises(ValueError, match="per-warp staging"):
        study(K.RUNG_CONFIGS["wgmma_streamk"], warp_store=True)
    with pytest.raises(ValueError, match="a divisor"):
        study(warp, ring=3)


def test_the_uniform_index_and_evict_first_and_their_rules():
    """Rungs 15 and 16 are rungs 13 and 14 with the uniform index; the evict-first rows are
    they with ``c_evict``; both flags are refused where they do not apply."""
    cfgs = H.explore_configs()
    lean, ring = K.RUNG_CONFIGS["wgmma_lean"], K.RUNG_CONFIGS["wgmma_ring"]
    assert cfgs[H.UNIFORM] == replace(lean, uniform=True) == K.RUNG_CONFIGS["wgmma_uniform"]
    assert cfgs[H.F32_UNIFORM] == replace(ring, uniform=True)
    from lab.experiments._hopper_study import study

    assert cfgs[H.EVICT] == study(cfgs[H.UNIFORM], c_evict=True)
    assert cfgs[H.F32_EVICT] == study(cfgs[H.F32_UNIFORM], c_evict=True)
    assert "uniform index" in cfgs[H.UNIFORM].label and "C evict-first" in cfgs[H.EVICT].label
    with pytest.raises(ValueError, match="uniform index"):
        replace(K.RUNG_CONFIGS["wgmma_grid128"], uniform=True).validate()
    with pytest.raises(ValueError, match="uniform index"):
        replace(K.RUNG_CONFIGS["wgmma_streamk"], counters=True, steps=True,
                uniform=True).validate()
    with pytest.raises(ValueError, match="evict-first"):
        study(K.RUNG_CONFIGS["wgmma_persistent"], c_evict=True)
    assert {H.UNIFORM, H.F32_UNIFORM, H.EVICT, H.F32_EVICT} <= set(H.FINAL)


def test_rung_17_is_rung_16_with_store_threads():
    """The hand-off row is rung 16 with ``handoff`` (one change), measured and profiled in the
    final run; the hand-off is refused for stream-K."""
    cfgs = H.explore_configs()
    assert cfgs[H.F32_HANDOFF] == replace(cfgs[H.F32_UNIFORM], handoff=True)
    assert "store threads" in cfgs[H.F32_HANDOFF].label
    assert H.F32_HANDOFF in H.FINAL and H.PAST + H.F32_HANDOFF in H.PROFILE_KERNELS
    with pytest.raises(ValueError, match="hand-off"):
        replace(K.RUNG_CONFIGS["wgmma_streamk"], handoff=True).validate()


def test_16bit_output_rules():
    cluster = K.RUNG_CONFIGS["wgmma_cluster"]
    replace(cluster, out="f16").validate()
    replace(cluster, kind="bf16", out="bf16").validate()
    with pytest.raises(ValueError, match="leaves FP32 or f16"):
        replace(cluster, out="bf16").validate()
    with pytest.raises(ValueError, match="TMA-store epilogue"):
        replace(K.RUNG_CONFIGS["wgmma_persistent"], out="f16").validate()
    with pytest.raises(ValueError, match="FP8 kernels leave"):
        replace(F.CONFIGS["fp8_e4m3"], out="f16").validate()


def test_fp8_cluster_splits_bt_rows():
    cfg = F.CONFIGS["fp8_e4m3_cluster"]
    assert cfg.cluster == 2 and cfg.out == "bf16" and cfg.bn // cfg.cluster == 128
    replace(cfg, bn=192).validate()                         # 96 rows each
    with pytest.raises(ValueError, match="FP8 clusters"):
        replace(cfg, bn=128, stages=6, promote=128).validate()


def test_pingpong_takes_the_tma_store_epilogue():
    cfg = replace(K.RUNG_CONFIGS["wgmma_pingpong"], epilogue="tma").validate()
    assert cfg.mt == 2 and cfg.shared_bytes + 1024 <= 227 * 1024
    with pytest.raises(ValueError, match="specialized kernels"):
        replace(K.RUNG_CONFIGS["wgmma_tma"], epilogue="tma").validate()


def test_experiment_configs_are_valid_in_both_types():
    for label, cfg in H.explore_configs().items():
        for kind in H.KINDS:
            c = H.for_kind(cfg, kind).validate()
            assert c.out in ("f32", kind), label
    for cfg in H.fp8_configs().values():
        cfg.validate()
    assert set(H.FINAL) <= set(H.explore_configs())
    assert set(H.FINAL_FP8) <= set(H.fp8_configs())
    assert all(n in REGISTRY or n.startswith("cublas_") or n == H.TORCH_F16
               or n[len(H.PAST):] in H.explore_configs() and n.startswith(H.PAST)
               for n in H.PROFILE_KERNELS)
    assert H.PAST + H.CUBLAS_TILE in H.PROFILE_KERNELS and H.CUBLAS_TILE in H.FINAL


def test_profile_child_runs_this_module_for_its_own_configurations():
    """The ncu child is this module's (its launcher knows ``past:`` names): a configuration no
    rung registers gets a launcher of its own, and an unknown label is an error, not a skip."""
    cmd = H.P.ncu_command("ncu", [], "LOCK", H.PROFILE_KERNELS, "lab.experiments.hopper_past")
    assert cmd[cmd.index("-m") + 1:cmd.index("-m") + 3] == ["lab.experiments.hopper_past",
                                                          "--profile-child"]
    assert cmd[-len(H.PROFILE_KERNELS):] == list(H.PROFILE_KERNELS)
    assert callable(H.profile_launcher(H.PAST + H.CUBLAS_TILE, None, None, None))
    with pytest.raises(KeyError):
        H.profile_launcher(H.PAST + "no such label", None, None, None)


def test_ratios_pair_each_row_with_its_own_output_type():
    group = [{"kernel": "cublas_fp16 (FP32 out)", "out": "f32", "tflops": 700.0,
              "yardstick": True},
             {"kernel": "torch.mm f16 (F16 out)", "out": "f16", "tflops": 800.0,
              "yardstick": True},
             {"kernel": "cluster", "out": "f32", "tflops": 693.0, "yardstick": False},
             {"kernel": "cluster 16-bit out", "out": "f16", "tflops": 792.0,
              "yardstick": False},
             {"kernel": "fast.cu kernel 12 (BF16 out)", "out": "bf16", "tflops": 1.0,
              "yardstick": False}]
    H._ratios(group)
    assert [r["ratio"] for r in group[:4]] == pytest.approx([1.0, 1.0, 0.99, 0.99])
    assert group[4]["ratio"] is None          # no BF16-out yardstick in this group


def test_summary_is_the_median_over_processes():
    rows = [{"part": "time", "kernel": "cluster", "dtype": "float16", "m": 4096, "out": "f32",
             "tflops": t, "ratio": r, "sm_mhz_median": 1980.0}
            for t, r in ((700.0, 0.97), (710.0, 0.98), (690.0, 0.96))]
    (s,) = H.summarize(rows)
    assert s["processes"] == 3 and s["tflops"] == 700.0 and s["ratio"] == 0.97
    assert (s["ratio_min"], s["ratio_max"]) == (0.96, 0.98)


def test_summary_leaves_out_a_configuration_whose_check_failed():
    """Each configuration is checked in one child only (they take turns); a failure there
    keeps its rows from every process's summary, in that input type."""
    cfg = H.for_kind(H.explore_configs()[H.F32_HANDOFF], "bf16")
    rows = [{"part": "time", "kernel": H.F32_HANDOFF, "dtype": dtype, "m": 4096, "out": "f32",
             "tflops": 700.0, "ratio": 0.99, "sm_mhz_median": 1980.0}
            for dtype in ("float16", "bfloat16") for _ in range(3)]
    rows.append({"part": "check", "kernel": cfg.label, "dtype": "bfloat16", "passed": False,
                 "process": 1})
    assert H.failed_checks(rows) == {(H.F32_HANDOFF, "bfloat16")}
    assert [(s["dtype"], s["processes"]) for s in H.summarize(rows)] == [("float16", 3)]


def test_tile_steps_and_a_trace_row_that_the_results_store_accepts():
    """Main loop: from the start (or the tile before stored) to the tile multiplied; epilogue:
    multiplied to stored. The row ``traces`` writes passes the results schema."""
    from lab import results

    ev = [[(1, 0), (2, 45_000), (3, 47_000), (2, 90_000), (3, 91_000), (10, 91_100)],
          [(1, 500), (2, 44_500), (3, 46_500), (10, 46_600)]]
    steps = R.tile_steps(ev)
    assert steps["tiles"] == 3
    assert steps["mainloop_p50_us"] == pytest.approx(44.0)
    assert steps["epilogue_p50_us"] == pytest.approx(2.0)
    assert steps["epilogue_p10_us"] <= steps["epilogue_p50_us"] <= steps["epilogue_p90_us"]
    before = [[(1, -60_000), (2, -15_000), (3, -13_000), (10, -2_500)],
              [(1, -60_000), (2, -16_000), (3, -14_000), (10, -1_000)]]
    row = H.trace_row(H.F32_HANDOFF, "f16", 4096, True, ev, before)
    assert row["dtype"] == "float16" and row["tiles"] == 3
    # outside the tiles: starts 0.5 µs apart, ends 44.5 apart, 91.1 µs from the first start to
    # the last end, first tiles' main loops 45 and 44 µs, 1 µs after the call before ended
    assert row["start_spread_us"] == pytest.approx(0.5)
    assert row["end_spread_us"] == pytest.approx(44.5)
    assert row["span_us"] == pytest.approx(91.1)
    assert row["first_mainloop_p50_us"] == pytest.approx(44.5)
    assert row["gap_us"] == pytest.approx(1.0)
    assert row["overlap_us"] is None
    assert R.call_steps([], None) == dict.fromkeys(
        ("start_spread_us", "end_spread_us", "span_us", "first_mainloop_p50_us", "gap_us",
         "overlap_us"))
    assert R.call_steps(ev)["gap_us"] is None            # no call before it
    late = [[(1, -60_000), (10, 2_000)]]                 # it ended 2 µs after this one began
    assert R.call_steps(ev, late)["overlap_us"] == pytest.approx(2.0)
    assert R.call_steps(ev, late)["gap_us"] is None
    data = {"experiment": "hopper_past", "parameters": {},
            "rows": [row, H.trace_row(H.UNIFORM, "bf16", 4096, False, [])],
            "row_fields": list(H.ROW_FIELDS),
            "command": "python -m lab measure hopper_past",
            "provenance": dict(results.load("hopper_past")["provenance"]),
            "schema_version": results.SCHEMA_VERSION}
    results.validate(data, "a trace row")
    assert set(H.TRACED) <= set(H.explore_configs())


def test_timeline_rows_from_cupti_records():
    """Groups between busy kernels, in order; a call's small kernels left out; durations, gaps
    (or overlap) and time per call; rows the results store accepts."""
    from lab import results

    def k(name, ts, dur):
        return {"name": name, "ts": ts, "dur": dur}
    kernels = [k("spin_kernel", 0, 50_000),
               k("nvjet_gemm", 50_010, 176), k("nvjet_gemm", 50_190, 175),
               k("nvjet_gemm", 50_369, 177),
               k("spin_kernel", 60_000, 50_000), k("cast", 110_000, 3),
               k("wgmma_ws", 110_005, 177), k("wgmma_ws", 110_183, 178),
               k("spin_kernel", 120_000, 50_000),
               k("wgmma_ws", 170_000, 180), k("wgmma_ws", 170_170, 180)]
    rows = R.timeline_rows(["torch.mm f16 (F16 out)", H.UNIFORM, H.F32_HANDOFF],
                           list(reversed(kernels)), H.TRACE_SIZE)   # (any order: by start)
    assert [r["kernel"] for r in rows] == ["torch.mm f16 (F16 out)", H.UNIFORM, H.F32_HANDOFF]
    mm, r15, r17 = rows
    assert mm["calls"] == 3 and mm["kernel_p50_us"] == 176 and mm["gap_p50_us"] == 4
    assert mm["per_call_us"] == pytest.approx((50_546 - 50_010) / 3)
    assert r15["calls"] == 2 and r15["gap_p50_us"] == 1 and r15["cuda_kernel"] == "wgmma_ws"
    assert r17["gap_p50_us"] is None and r17["overlap_p50_us"] == 10
    data = {"experiment": "hopper_past", "parameters": {}, "rows": rows,
            "row_fields": list(H.ROW_FIELDS), "command": "python -m lab measure hopper_past",
            "provenance": dict(results.load("hopper_past")["provenance"]),
            "schema_version": results.SCHEMA_VERSION}
    results.validate(data, "timeline rows")
    assert R.timeline_rows(["x"], [], H.TRACE_SIZE) == []
    # a name whose calls recorded no kernel keeps its place: the next name gets its own group
    empty = [k("spin_kernel", 0, 10), k("spin_kernel", 100, 10), k("g", 200, 176)]
    assert [r["kernel"] for r in R.timeline_rows(["none", "some"], empty, H.TRACE_SIZE)] == ["some"]
    assert set(H.TIMELINE) <= set(H.explore_configs())


def test_fastcu_refuses_shapes_before_any_launch():
    assert fastcu.shape_problem(4096, 4096, 4096) is None
    for shape in ((4000, 4096, 4096), (4096, 4100, 4096), (4096, 4096, 100), (1, 1, 1)):
        assert "multiples" in fastcu.shape_problem(*shape)

    class Arr:
        def __init__(self, shape, itemsize=2):
            self.shape, self.dtype = shape, np.dtype(f"u{itemsize}")
            self.__cuda_array_interface__ = {"data": (0, False)}

    def never(*args):
        raise AssertionError("launched")
    with pytest.raises(ValueError, match="multiples"):
        fastcu.launcher(never, Arr((100, 64)), Arr((256, 64)), Arr((256, 100)))
    with pytest.raises(ValueError, match="must be"):
        fastcu.launcher(never, Arr((256, 64)), Arr((256, 64)), Arr((256, 512)))
    with pytest.raises(ValueError, match="BF16 bits"):
        fastcu.launcher(never, Arr((256, 64), 4), Arr((256, 64)), Arr((256, 256)))
    calls = []
    a, bt, c = Arr((256, 64)), Arr((256, 64)), Arr((256, 256))
    call = fastcu.launcher(lambda *args: calls.append(args) or 0, a, bt, c)
    assert call.keep == (a, bt, c)          # the buffers live as long as the call
    call()
    assert calls == [(256, 256, 64, 0, 0, 0)]
    text = fastcu.HARNESS.read_text()       # the harness re-encodes on any change of call
    assert "M12::_prev_m = 0" in text and "bt != last_bt" in text
    cmd = fastcu.build_command(fastcu.HARNESS.parent, fastcu.HARNESS.parent / "x.so")
    assert "arch=compute_90a,code=sm_90a" in cmd and "-DNDEBUG" in cmd


def test_committed_run_meets_its_own_checks():
    from lab import results

    data = results.load("hopper_past")
    checks = [r for r in data["rows"] if r["part"] == "check"]
    assert checks and all(r["passed"] for r in checks)
    shapes = {tuple(r["shape"]) for r in checks}
    assert {(1, 1, 1), (257, 129, 67), (1000, 1030, 999)} <= shapes
    summary = [r for r in data["rows"] if r["part"] == "summary"]
    assert {r["m"] for r in summary} == set(H.SIZES)
    assert any(r["kernel"].startswith("fast.cu") for r in summary)
