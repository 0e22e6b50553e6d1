"""What the prose of chapters 6.1 and 6.2 says of the committed results holds in them: tc_fp16's
two blocks an SM, wave steps smaller than the model's, the reduction order changing bits and not
accuracy, two-pass split-K repeatable, the Hopper FP16 kernels only for sides divisible by 8,
layouts costing nothing in steady state."""
from __future__ import annotations

from lab import results


# ----------------------------------------------------------------------------- chapter 6.1

def test_tc_fp16_holds_two_blocks_per_sm_by_registers_and_shared_memory():
    from lab.chapters.ch6_1.s2_waves import occupancy

    tc = occupancy("tc_fp16")
    assert (tc["registers"], tc["smem"]) == (238, 96 * 1024)
    assert tc["by_registers"] == tc["by_shared"] == tc["blocks"] == 2
    # the tuning run recorded the same for the configuration tensor_cores times as tc_fp16
    config = results.load("tensor_cores")["parameters"]["configs"]["tc_fp16"]
    tuned = next(r for r in results.rows("tc_tune") if r["config"] == config)
    assert tuned["blocks_per_sm"] == tc["blocks"] and tuned["regs"] == tc["registers"]


def test_measured_wave_steps_are_smaller_than_the_model_says():
    from lab.chapters.ch6_1.s2_waves import wave_steps_rows

    steps = wave_steps_rows()
    assert {r["kernel"] for r in steps} == {"tc_fp16", "warptile_tuned"}
    assert all(1.0 < r["measured"] < r["model"] for r in steps)


def test_reduction_order_changes_bits_not_accuracy():
    from lab.chapters.ch6_1.s4_splitk import reduction_order_rows

    rows = {r["order"]: r for r in reduction_order_rows()}
    assert rows["forwards"]["differ"] == 0
    assert all(r["differ"] > 0 for name, r in rows.items() if name != "forwards")
    errors = [r["rel_frob"] for r in rows.values()]
    assert max(errors) < 1.05 * min(errors)


def test_two_pass_split_k_is_repeatable_and_atomics_need_three_partials():
    from lab.chapters.ch6_1.s4_splitk import determinism_rows

    rows = determinism_rows()
    assert all(r["two_pass_distinct"] == 1 for r in rows)
    assert all(r["atomic_distinct"] == 1 for r in rows if r["splits"] == 2)
    assert all(r["atomic_distinct"] > 1 for r in rows if r["splits"] >= 3)


# ----------------------------------------------------------------------------- chapter 6.2

def test_only_sides_divisible_by_8_got_the_hopper_fp16_kernels():
    from lab.chapters.ch6_2.s2_alignment import align_kernel_rows

    for row in align_kernel_rows():
        assert row["fp16"].startswith("nvjet_sm90") == (row["n"] % 8 == 0), row


def test_layouts_cost_nothing_in_steady_state():
    from lab.chapters.ch6_2.s3_layouts import layout_rows

    rows = layout_rows()
    assert {r["layout"] for r in rows} == {"NN", "TN", "NT", "TT"}
    assert all(abs(r["vs_nn"] - 1) < 0.02 and r["first_us"] > 1.5 * r["us"] for r in rows)
