"""Chapter 8, one model for the whole ladder: the step-by-step model's traffic model of its four
kernels, reproduced from :mod:`lab.model` and set beside the seed's table (:mod:`lab.seeds`), the
same model on the H200 beside our measured times, and the seed's 16 × 16 × 16 animation with its
traffic counters checked against loads counted in real kernels under the CUDA simulator.

The page's sections, in order, one module each: :mod:`.s1_model` (the model's code),
:mod:`.s2_seed_table` (the step-by-step model's table, reproduced), :mod:`.s3_h200` (the same
model on the measured GPU), :mod:`.s4_traffic` (the traffic, step by step: the animation),
:mod:`.s5_counters` (its counters, counted in real kernels by
:func:`lab.counting.count_accesses`); the exercises' solutions in :mod:`.solutions`. The
notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import model, page, results, seeds, tables
from lab.chapters.ch8.s2_seed_table import seed_rows, seed_intensity_table, seed_time_table
from lab.chapters.ch8.s3_h200 import (MEASURED, OUR_KERNEL, gpu_name, measured_machine,
                                      measured_row, h200_rows, h200_table)
from lab.chapters.ch8.s4_traffic import SIZE, BLOCK, SLICE, step_figure, animation, _intensity
from lab.chapters.ch8.s5_counters import (animation_inputs, naive_step_loads, tiled_step_loads,
                                          counted_runs, counter_rows, counter_table,
                                          same_algorithm_rows, same_algorithm_table)

from lab.chapters.ch8.s1_model import source

__all__ = ["figure", "source", "seed_rows", "seed_intensity_table", "seed_time_table", "MEASURED",
           "OUR_KERNEL", "gpu_name", "measured_machine", "measured_row", "h200_rows", "h200_table",
           "SIZE", "BLOCK", "SLICE", "step_figure", "animation", "animation_inputs",
           "naive_step_loads", "tiled_step_loads", "counted_runs", "counter_rows", "counter_table",
           "same_algorithm_rows", "same_algorithm_table", "worst_seed_gap", "dram_evidence",
           "values", "glue"]


def worst_seed_gap() -> float:
    """The largest relative gap between a seed number and ours (intensities and times)."""
    gaps = []
    for r in seed_rows():
        for a, b in (("seed_fpb", "fpb"), ("seed_a100", "a100"), ("seed_h100", "h100")):
            gaps.append(abs(r[b] / r[a] - 1))
    return max(gaps)


def dram_evidence() -> dict:
    """The naive kernel at 1024³ under Nsight Compute: the bytes the model counts against the
    bytes DRAM served and the bytes L2 served (``ncu_dram``)."""
    r = next(r for r in results.rows("ncu_dram") if r["kernel"] == "naive")
    return {"n": r["n"], "model": r["model_bytes"], "dram": r["dram_read_bytes"],
            "l2": r["l2_read_bytes"]}


def _loop(kernel: str) -> dict:
    """The hottest loop's instruction counts of a registered kernel (committed compiler
    facts, sm_90)."""
    from lab import compiler

    return compiler.report(kernel)[0].loop_mix


def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    a100 = model.DATASHEET["A100"]
    tensor_a100 = model.rung_model("tensor", a100)
    rows = {r["ours"]: r for r in h200_rows()}
    roofs = measured_machine()
    v = {"the_gpu": gpu_name(), "worst_gap": f"{100 * worst_seed_gap():.1f}%",
         "ridge_a100": f"{model.ridge(a100['tensor_tflops'] * 1e12, a100['hbm_gbps'] * 1e9):.0f}",
         "seed_ridge_a100": f"{seeds.TENSOR_RIDGE_A100_001}",
         "tensor_a100_tflops": f"{tensor_a100['tflops']:.1f}",
         "seed_tensor_a100_tflops": f"{seeds.TENSOR_TFLOPS_A100_001:g}",
         "hbm_measured": f"{roofs['hbm_gbps'] / 1e3:.2f}",
         "fp32_measured": f"{roofs['fp32_tflops']:.1f}",
         "smem_tbps": f"{model.shared_bandwidth(roofs) / 1e12:.1f}"}
    def printed(kind: str) -> tuple[str, str, str]:
        """The measured/model ratio, the measured time and the model's time of one kind."""
        r = rows[OUR_KERNEL[kind]]
        return f"{r['ratio']:.2f}", tables.fmt(r["measured_ms"]), tables.fmt(r["roofs_ms"])

    v["ratio_naive"], v["measured_naive"], v["model_naive"] = printed("naive")
    v["ratio_shared"], v["measured_shared"], v["model_shared"] = printed("shared")
    v["ratio_register"], v["measured_register"], v["model_register"] = printed("register")
    v["ratio_tensor"], v["measured_tensor"], v["model_tensor"] = printed("tensor")
    h200 = model.rung_model("naive", roofs)
    naive_ms = rows["naive"]["measured_ms"]
    v["naive_served_tbps"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / 1e12:.0f}"
    v["naive_served_x"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / (roofs['hbm_gbps'] * 1e9):.1f}"
    d = dram_evidence()
    v["ncu_n"] = str(d["n"])
    v["ncu_dram_pct"] = f"{100 * d['dram'] / d['model']:.2f}%"
    v["ncu_l2_pct"] = f"{100 * d['l2'] / d['model']:.1f}%"
    loop = _loop("tiled32")
    lds, lds128, sts = loop.get("LDS", 0), loop.get("LDS.128", 0), loop.get("STS", 0)
    k_per_trip = loop.get("FFMA", 0)                    # one output per thread: one FFMA per k
    v.update({"t32_lds": str(lds), "t32_lds128": str(lds128), "t32_sts": str(sts),
              "t32_k": str(k_per_trip), "t32_hw_passes": str(lds + lds128 + sts),
              "t32_model_passes": str(2 * k_per_trip + sts),
              "t32_hw_share": f"{(lds + lds128 + sts) / (2 * k_per_trip + sts):.0%}"})
    loop = _loop("block128")
    share = loop.get("FFMA", 0) / sum(loop.values())
    v["b128_share"] = f"{share:.2f}"
    v["b128_ceiling_ms"] = f"{model.flops(4096, 4096, 4096) / (share * roofs['fp32_tflops'] * 1e12) * 1e3:.2f}"
    cublas = next(r for r in results.rows("patch_sweep", kernel="cublas_fp32")
                  if r["m"] == r["n"] == r["k"] == 4096)
    v["cublas_fp32_ms"] = f"{cublas['median_ms']:.2f}"
    t = model.rung_model("tensor", roofs)
    tc_ms = rows["tc_bf16"]["measured_ms"]
    v["tc_need_tbps"] = f"{t['global_bytes'] / (tc_ms * 1e-3) / 1e12:.1f}"
    v["tc_min_l2"] = f"{1 - roofs['hbm_gbps'] * 1e9 * tc_ms * 1e-3 / t['global_bytes']:.0%}"
    last = model.step_counters(SIZE, BLOCK, SLICE)[-1]
    v.update({"anim_naive": str(last["naive_global"]), "anim_tiled": str(last["tiled_global"]),
              "anim_shared": str(last["tiled_shared_loads"]), "anim_fma": str(last["fma"]),
              "anim_naive_fpb": f"{_intensity(last['fma'], last['naive_global']):.2f}",
              "anim_tiled_fpb": f"{_intensity(last['fma'], last['tiled_global']):.2f}",
              "anim_steps": str(last["step"])})
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
