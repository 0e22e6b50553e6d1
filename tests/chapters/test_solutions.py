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
    assert out["ex02_5_ok"] and out["ex02_5_rel_frobenius"] == "below 10⁻⁶"
    assert (out["ex02_5_grid_x"], out["ex02_5_grid_y"], out["ex02_5_k_steps"]) == (64, 32, 48)
    assert out["ex02_5_ragged"] is False and out["ex02_5_sim_padded"] == 7


def test_patch2_is_the_factory_kernel_and_correct_on_odd_shapes():
    from lab.kernels import REGISTRY
    assert REGISTRY["patch2"].tile[:2] == (32, 32)
    out = sol3.ex03_5(shapes=((17, 33, 25), (5, 3, 41)))
    assert out["ex03_5_ok"] and out["ex03_5_accumulators"] == 4 and out["ex03_5_reads_per_fma"] == 1.0
    assert 1.0 < out["ex03_5_vs_patch1"] < 2.0                        # "much less than 2x"


def test_tile_sweep_numbers():
    out = sol2.ex02_6()
    assert out["ex02_6_best"] == 32
    assert out["ex02_6_tflops_8"] < out["ex02_6_tflops_16"] < out["ex02_6_tflops_32"]
    assert [out[f"ex02_6_model_{t}"] for t in (8, 16, 32)] == [2.0, 4.0, 8.0]
    assert out["ex02_6_gain_8_32"] < out["ex02_6_model_gain_8_32"]


def test_profiling_answer():
    out = sol2.ex02_7()
    assert 0.95 < out["ex02_7_dram_ratio"] < 1.05 and out["ex02_7_model_ratio"] > 15
    assert out["ex02_7_l2_ratio_32"] > out["ex02_7_l2_ratio_16"] > 1


def test_tile64_limits():
    out = sol2.ex02_2()
    assert out["ex02_2_threads"] > out["ex02_2_max_threads"] and out["ex02_2_blocks_by_smem"] == 6


def test_model_answers():
    assert sol0.ex00_1()["ex00_1_latency_hidden"]
    assert sol0.ex00_2()["ex00_2_share"] < sol0.ex00_2()["ex00_2_share_now"]
    r = sol0.ex00_3()
    assert abs(model.tile_intensity(r["ex00_3_tile"], r["ex00_3_tile"], 2) - r["ex00_3_ridge"]) < 1e-6
    s = sol1.ex01_1()
    assert (s["ex01_1_naive_32"], s["ex01_1_swapped_32"], s["ex01_1_naive_16"], s["ex01_1_swapped_16"]) == (5, 33, 4, 17)
    assert sol1.ex01_4()["ex01_4_ratio"] == pytest.approx(2.0, rel=1e-3)
    assert sol3.ex03_1()["ex03_1_spills"]
    assert sol3.ex03_2()["ex03_2_reads_8x4"] == sol3.ex03_2()["ex03_2_reads_4x8"]
    assert sol3.ex03_3()["ex03_3_share"] < 0.5
    assert sol4.ex04_3()["ex04_3_share"] < sol4.ex04_3()["ex04_3_share_now"]
    a = sol4.ex04_4()
    assert (a["ex04_4_aligned_4096"], a["ex04_4_aligned_4097"], a["ex04_4_aligned_4098"]) == (1.0, 0.25, 0.5)


def test_swizzle_and_ldmatrix_answers():
    w = sol5.ex05_2()
    assert (w["ex05_2_ldmatrix_plain"], w["ex05_2_ldmatrix_swz"],
            w["ex05_2_cpasync_plain"]) == (8, 1, 1)
    f = sol5.ex05_4()
    assert f["ex05_4_k_major_trans"] and f["ex05_4_n_major_plain"]
    assert not f["ex05_4_k_major_plain"] and not f["ex05_4_n_major_trans"]


def test_precision_answer():
    p = sol5.ex05_3()
    assert (p["ex05_3_fp16_inputs_finite"] and p["ex05_3_fp16_out16_inf"] > 0.5
            and p["ex05_3_bf16_finite"])


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
    assert out["ex02_8_lds128_plain"] > 0 and out["ex02_8_shfl"] == out["ex02_8_ffma"] == 32
    assert out["ex02_8_lds_shfl"] == out["ex02_8_lds_plain"] - out["ex02_8_lds128_plain"]
    assert out["ex02_8_shfl"] > out["ex02_8_lds128_plain"] and out["ex02_8_loop_shfl"] > out["ex02_8_loop_plain"]
    assert out["ex02_8_smem_kb_shfl"] == out["ex02_8_smem_kb_plain"] / 2
    assert out["ex02_8_shfl_over_plain"] > 0


def test_chapter8_model_exercises():
    one = sol8.ex08_1()
    assert (one["ex08_1_tile"], one["ex08_1_prev_tile"], one["ex08_1_tensor_tile"]) == (512, 256, 1024)
    assert one["ex08_1_prev_intensity"] < one["ex08_1_ridge"] < one["ex08_1_intensity"]
    assert one["ex08_1_bound"] == "shared memory" and one["ex08_1_acc_over_regfile"] == 4.0
    two = sol8.ex08_2()
    assert (two["ex08_2_bound_8"], two["ex08_2_bound_4"]) == ("FP32 ALUs", "shared memory")
    assert two["ex08_2_a100_smem_ms_4"] > two["ex08_2_a100_alu_ms"] > two["ex08_2_a100_smem_ms_8"]
    assert abs(two["ex08_2_h200_model_ratio"] - 0.5) < 1e-9          # reads per FMA double
    assert 0.5 < two["ex08_2_measured_ratio"] < 1.0                    # "not half"
    assert two["ex08_2_patch4_model_share"] > two["ex08_2_patch8_model_share"]


def test_chapter8_counts_chapter3_kernel_as_the_model_does():
    out = sol8.ex08_3()
    assert out["ex08_3_agree"] and out["ex08_3_correct"]
    assert (out["ex08_3_global_counted"], out["ex08_3_loads_counted"]) == (512, 8192)
    with pytest.raises(ValueError, match="no field"):
        model.rung_model("register", model.DATASHEET["A100"], tm4=4)
    with pytest.raises(ValueError, match="does not divide"):
        model.rung_model("tensor", model.DATASHEET["H200"], bm=448, bn=448)

