"""The exercises' worked solutions beside chapters 0–5 and 8 (``lab.chapters.chN.solutions``;
chapters 6, 7 and 10 test theirs in their own files): every function runs, and the facts each
solution's text states hold — kernels under the simulator at tiny shapes, models, results."""
from __future__ import annotations

import pytest

import lab
from lab import model
from lab.chapters.ch0 import solutions as sol0
from lab.chapters.ch1 import solutions as sol1
from lab.chapters.ch2 import solutions as sol2
from lab.chapters.ch3 import solutions as sol3
from lab.chapters.ch4 import solutions as sol4
from lab.chapters.ch5 import solutions as sol5
from lab.chapters.ch7 import solutions as sol7
from lab.chapters.ch8 import solutions as sol8

BESIDE = {0: sol0, 1: sol1, 2: sol2, 3: sol3, 4: sol4, 5: sol5, 7: sol7, 8: sol8}


def test_every_chapter_glues_its_solutions():
    for chapter, solutions in BESIDE.items():
        vals = solutions.values()
        assert vals and all(k.startswith(f"ex{chapter:02d}_") for k in vals)
        assert all(isinstance(v, str) and v for v in vals.values())


def test_nonsquare_seed003_with_the_real_kernels():
    m, n, k = sol2.NONSQUARE_SIM
    assert all(d % 16 for d in (m, n, k))                     # every guard fires
    out = sol2.ex02_5(kernels=("tiled8", "tiled16"))
    assert out["ok"] and out["rel_frobenius"] == "below 10⁻⁶"
    assert (out["grid_x"], out["grid_y"], out["k_steps"]) == (64, 32, 48)
    assert out["ragged"] is False and out["sim_padded"] == 7


def test_patch2_is_the_factory_kernel_and_correct_on_odd_shapes():
    from lab.kernels import REGISTRY
    assert REGISTRY["patch2"].tile[:2] == (32, 32)
    out = sol3.ex03_5(shapes=((17, 33, 25), (5, 3, 41)))
    assert out["ok"] and out["accumulators"] == 4 and out["reads_per_fma"] == 1.0
    assert 1.0 < out["vs_patch1"] < 2.0                        # "much less than 2x"


def test_tile_sweep_numbers():
    out = sol2.ex02_6()
    assert out["best"] == 32
    assert out["tflops_8"] < out["tflops_16"] < out["tflops_32"]
    assert [out[f"model_{t}"] for t in (8, 16, 32)] == [2.0, 4.0, 8.0]
    assert out["gain_8_32"] < out["model_gain_8_32"]


def test_profiling_answer():
    out = sol2.ex02_7()
    assert 0.95 < out["dram_ratio"] < 1.05 and out["model_ratio"] > 15
    assert out["l2_ratio_32"] > out["l2_ratio_16"] > 1


def test_tile64_limits():
    out = sol2.ex02_2()
    assert out["threads"] > out["max_threads"] and out["blocks_by_smem"] == 6


def test_model_answers():
    assert sol0.ex00_1()["latency_hidden"]
    assert sol0.ex00_2()["share"] < sol0.ex00_2()["share_now"]
    r = sol0.ex00_3()
    assert abs(model.tile_intensity(r["tile"], r["tile"], 2) - r["ridge"]) < 1e-6
    s = sol1.ex01_1()
    assert (s["naive_32"], s["swapped_32"], s["naive_16"], s["swapped_16"]) == (5, 33, 4, 17)
    assert sol1.ex01_4()["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert sol3.ex03_1()["spills"]
    assert sol3.ex03_2()["reads_8x4"] == sol3.ex03_2()["reads_4x8"]
    assert sol3.ex03_3()["share"] < 0.5
    assert sol4.ex04_3()["share"] < sol4.ex04_3()["share_now"]
    a = sol4.ex04_4()
    assert (a["aligned_4096"], a["aligned_4097"], a["aligned_4098"]) == (1.0, 0.25, 0.5)


def test_swizzle_and_ldmatrix_answers():
    w = sol5.ex05_2()
    assert (w["ldmatrix_plain"], w["ldmatrix_swz"], w["cpasync_plain"]) == (8, 1, 1)
    f = sol5.ex05_4()
    assert f["k_major_trans"] and f["n_major_plain"]
    assert not f["k_major_plain"] and not f["n_major_trans"]


def test_precision_answer():
    p = sol5.ex05_3()
    assert p["fp16_inputs_finite"] and p["fp16_out16_inf"] > 0.5 and p["bf16_finite"]


def test_ch3_twin_table_has_every_measured_twin():
    from lab import results, twins
    from lab.chapters import ch3
    measured = {r["kernel"] for exp in ("naive_tiled", "patch_sweep") for r in results.rows(exp)
                if r.get("impl") == "twin" and "median_ms" in r}
    shown = {(r["ours"], r["twin"]) for r in ch3.twin_rows()}
    assert measured and {(twins.TWINS[t].twin_of, t) for t in measured} == shown


def test_shuffles_trade_vector_shared_loads_for_one_instruction_per_value():
    """Exercise 2.8's compiled-loop claims: the A tile's 16-byte broadcast loads become one SHFL
    per value, the B loads stay, and the kernel holds half the shared memory."""
    out = sol2.ex02_8()
    assert out["lds128_plain"] > 0 and out["shfl"] == out["ffma"] == 32
    assert out["lds_shfl"] == out["lds_plain"] - out["lds128_plain"]
    assert out["shfl"] > out["lds128_plain"] and out["loop_shfl"] > out["loop_plain"]
    assert out["smem_kb_shfl"] == out["smem_kb_plain"] / 2
    assert out["shfl_over_plain"] > 0


def test_chapter8_model_exercises():
    one = sol8.ex08_1()
    assert (one["tile"], one["prev_tile"], one["tensor_tile"]) == (512, 256, 1024)
    assert one["prev_intensity"] < one["ridge"] < one["intensity"]
    assert one["bound"] == "shared memory" and one["acc_over_regfile"] == 4.0
    two = sol8.ex08_2()
    assert (two["bound_8"], two["bound_4"]) == ("FP32 ALUs", "shared memory")
    assert two["a100_smem_ms_4"] > two["a100_alu_ms"] > two["a100_smem_ms_8"]
    assert abs(two["h200_model_ratio"] - 0.5) < 1e-9          # reads per FMA double
    assert 0.5 < two["measured_ratio"] < 1.0                    # "not half"
    assert two["patch4_model_share"] > two["patch8_model_share"]


def test_chapter8_counts_chapter3_kernel_as_the_model_does():
    out = sol8.ex08_3()
    assert out["agree"] and out["correct"]
    assert (out["global_counted"], out["loads_counted"]) == (512, 8192)
    with pytest.raises(ValueError, match="no field"):
        model.rung_model("register", model.DATASHEET["A100"], tm4=4)
    with pytest.raises(ValueError, match="does not divide"):
        model.rung_model("tensor", model.DATASHEET["H200"], bm=448, bn=448)

