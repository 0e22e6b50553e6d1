"""The exercises' worked solutions (lab.solutions): every function runs, and the facts each
solution's text states hold — kernels under the simulator at tiny shapes, models, results."""
from __future__ import annotations

import numpy as np
import pytest

import lab
from lab import model, solutions


def test_every_chapter_glues_its_solutions():
    for chapter in range(9):
        vals = solutions.values(chapter)
        assert vals and all(k.startswith(f"ex{chapter:02d}_") for k in vals)
        assert all(isinstance(v, str) and v for v in vals.values())


def test_nonsquare_seed003_with_the_real_kernels():
    m, n, k = solutions.NONSQUARE_SIM
    assert all(d % 16 for d in (m, n, k))                     # every guard fires
    out = solutions.ex02_5(kernels=("tiled8", "tiled16"))
    assert out["ok"] and out["rel_frobenius"] == "below 10⁻⁶"
    assert (out["grid_x"], out["grid_y"], out["k_steps"]) == (64, 32, 48)
    assert out["ragged"] is False and out["sim_padded"] == 7


def test_patch2_is_the_factory_kernel_and_correct_on_odd_shapes():
    from lab.kernels import REGISTRY
    assert REGISTRY["patch2"].tile[:2] == (32, 32)
    out = solutions.ex03_5(shapes=((17, 33, 25), (5, 3, 41)))
    assert out["ok"] and out["accumulators"] == 4 and out["reads_per_fma"] == 1.0
    assert 1.0 < out["vs_patch1"] < 2.0                        # "much less than 2x"


def test_tile_sweep_numbers():
    out = solutions.ex02_6()
    assert out["best"] == 32
    assert out["tflops_8"] < out["tflops_16"] < out["tflops_32"]
    assert [out[f"model_{t}"] for t in (8, 16, 32)] == [2.0, 4.0, 8.0]
    assert out["gain_8_32"] < out["model_gain_8_32"]


def test_profiling_answer():
    out = solutions.ex02_7()
    assert 0.95 < out["dram_ratio"] < 1.05 and out["model_ratio"] > 15
    assert out["l2_ratio_32"] > out["l2_ratio_16"] > 1


def test_tile64_limits():
    out = solutions.ex02_2()
    assert out["threads"] > out["max_threads"] and out["blocks_by_smem"] == 6


def test_split_k_matches_the_product():
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (9, 37)).astype(np.float32)
    B = rng.uniform(-1, 1, (37, 7)).astype(np.float32)
    C = solutions.split_k_matmul(A, B, 3, kernel="tiled8")
    ref = A.astype(np.float64) @ B
    assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5
    out = solutions.ex06_3()
    assert out["tiles"] == 16 and out["fills"] == 16 and out["extra_mb_1"] == 0
    # the measured FP16 split-K rows sit near two launch floors, far above the model and cuBLAS
    assert out["floors_us"] == out["launches"] * out["launch_floor_us"]
    assert out["atomic_model_us"] < out["atomic_us"] and out["cublas_us"] < out["atomic_us"]
    assert out["atomic_us"] < out["unsplit_us"]
    assert 1 <= out["atomic_over_floors"] < 1.5


def test_model_answers():
    assert solutions.ex00_1()["latency_hidden"]
    assert solutions.ex00_2()["share"] < solutions.ex00_2()["share_now"]
    r = solutions.ex00_3()
    assert abs(model.tile_intensity(r["tile"], r["tile"], 2) - r["ridge"]) < 1e-6
    s = solutions.ex01_1()
    assert (s["naive_32"], s["swapped_32"], s["naive_16"], s["swapped_16"]) == (5, 33, 4, 17)
    assert solutions.ex01_4()["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert solutions.ex03_1()["spills"]
    assert solutions.ex03_2()["reads_8x4"] == solutions.ex03_2()["reads_4x8"]
    assert solutions.ex03_3()["share"] < 0.5
    assert solutions.ex04_3()["share"] < solutions.ex04_3()["share_now"]
    a = solutions.ex04_4()
    assert (a["aligned_4096"], a["aligned_4097"], a["aligned_4098"]) == (1.0, 0.25, 0.5)


def test_swizzle_and_ldmatrix_answers():
    w = solutions.ex05_2()
    assert (w["ldmatrix_plain"], w["ldmatrix_swz"], w["cpasync_plain"]) == (8, 1, 1)
    f = solutions.ex05_4()
    assert f["k_major_trans"] and f["n_major_plain"]
    assert not f["k_major_plain"] and not f["n_major_trans"]


def test_precision_answer():
    p = solutions.ex05_3()
    assert p["fp16_inputs_finite"] and p["fp16_out16_inf"] > 0.5 and p["bf16_finite"]


def test_alignment_cliff():
    out = solutions.ex06_2()
    assert out["cliff"] == 8 and out["slow_max"] < out["fast_min"]


def test_hopper_descriptor_answer():
    from lab import hopper
    out = solutions.ex07_1()
    assert out["reads_what_tma_wrote"]
    assert (out["a_sbo"], out["b_lbo"], out["b_sbo"], out["swizzle"]) == (1024, 8192, 1024, 1)
    assert hopper.desc_fields(int(out["a_desc"], 16))["address"] == out["a_address"]
    assert out["b_address"] - out["a_address"] > out["ks"] * out["a_step"]
    # The twins' comparison can fail: an A start 16 bytes (not 32) per k-step reads other data.
    r, kk = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    assert not np.array_equal(hopper.swizzle_128b(16 * 3 + hopper.k_major_offset(r, kk)),
                              hopper.swizzle_128b(hopper.tma_box_offset(r, 16 * 3 + kk)))
    assert np.array_equal(hopper.swizzle_128b(32 * 3 + hopper.k_major_offset(r, kk)),
                          hopper.swizzle_128b(hopper.tma_box_offset(r, 16 * 3 + kk)))


def test_hopper_stage_and_register_budgets():
    from lab.kernels import k09_hopper as k9
    s = solutions.ex07_2()
    assert s["refused_128x128"] and s["refused_128x256"]
    assert s["max_stages_128x256"] == k9.RUNG_CONFIGS["wgmma_ws"].stages
    assert k9.RUNG_CONFIGS["wgmma_pingpong"].stages <= s["max_stages_128x128"]
    r = solutions.ex07_4()
    assert r["entry"] == r["ptxas"] and r["max_consumer"] == r["chosen"]
    assert r["used"] <= r["file"] < r["used"] + 128 * 2 * 8     # 8 more each would not fit
    assert r["alt_left"] < r["left"]


def test_hopper_ladder_answer():
    out = solutions.ex07_3()
    assert out["same_best"] and out["best_4096"] == "wgmma_2wg"
    assert out["gain_wgmma_persistent_4096"] > 1 > out["gain_wgmma_persistent_8192"]
    assert out["slices_8192"] == 2 * out["slices_4096"]
    # rung 7 builds on rung 5 (not on the ping-pong side branch), rung 8 on rung 7
    assert out["parents"]["wgmma_tmastore"] == "wgmma_persistent"
    assert out["parents"]["wgmma_cluster"] == "wgmma_tmastore"
    assert out["gain_wgmma_tmastore_4096"] > out["gain_wgmma_tmastore_8192"] > 1


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
    out = solutions.ex02_8()
    assert out["lds128_plain"] > 0 and out["shfl"] == out["ffma"] == 32
    assert out["lds_shfl"] == out["lds_plain"] - out["lds128_plain"]
    assert out["shfl"] > out["lds128_plain"] and out["loop_shfl"] > out["loop_plain"]
    assert out["smem_kb_shfl"] == out["smem_kb_plain"] / 2
    assert out["shfl_over_plain"] > 0


def test_chapter8_model_exercises():
    one = solutions.ex08_1()
    assert (one["tile"], one["prev_tile"], one["tensor_tile"]) == (512, 256, 1024)
    assert one["prev_intensity"] < one["ridge"] < one["intensity"]
    assert one["bound"] == "shared memory" and one["acc_over_regfile"] == 4.0
    two = solutions.ex08_2()
    assert (two["bound_8"], two["bound_4"]) == ("FP32 ALUs", "shared memory")
    assert two["a100_smem_ms_4"] > two["a100_alu_ms"] > two["a100_smem_ms_8"]
    assert abs(two["h200_model_ratio"] - 0.5) < 1e-9          # reads per FMA double
    assert 0.5 < two["measured_ratio"] < 1.0                    # "not half"
    assert two["patch4_model_share"] > two["patch8_model_share"]


def test_chapter8_counts_chapter3_kernel_as_the_model_does():
    out = solutions.ex08_3()
    assert out["agree"] and out["correct"]
    assert (out["global_counted"], out["loads_counted"]) == (512, 8192)
    with pytest.raises(ValueError, match="no field"):
        model.rung_model("register", model.DATASHEET["A100"], tm4=4)
    with pytest.raises(ValueError, match="does not divide"):
        model.rung_model("tensor", model.DATASHEET["H200"], bm=448, bn=448)

