"""Chapter 3, registers: each thread keeps a P × P patch of C in registers.

The page's sections, in order, one module each: :mod:`.s1_idea` (reuse inside the thread, the
per-thread model), :mod:`.s2_kernel` (the kernel's source), :mod:`.s3_check` (run and check),
:mod:`.s4_bill` (the register bill from the compiler, and the signed-index detour),
:mod:`.s5_measured` (prediction and measurement on the GPU), :mod:`.s6_twin` (Numba against the
T4 study's CUDA C), :mod:`.s7_t4` (beside the T4 study's T4), :mod:`.s8_intensity` (the
step-by-step model's intensity formula beside the measurement); the exercises' solutions in
:mod:`.solutions`. Compiler facts come from :mod:`lab.compiler`'s committed store, so they are
the same on every machine. The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import model, page, results, seeds
from lab.chapters import common
from lab.chapters.common import loop_counts, report
from lab.chapters.ch3.s1_idea import model_rows, model_table, patch_figure
from lab.chapters.ch3.s2_kernel import FOLDED, source
from lab.chapters.ch3.s3_check import PATCH, CHECKS, check_rows, check_table
from lab.chapters.ch3.s4_bill import (KERNELS, SIGNED, BLOCK_THREADS, compiler_rows, bill_table,
                                      loop_table, signed_table, loop_mix_table)
from lab.chapters.ch3.s5_measured import (TWIN, TWIN_OF, PREDICTIONS, sweep, signed_sweep,
                                          measured_table, signed_measured_table, fp32_roof,
                                          step_rows, step_table, ceiling_rows, ceiling_table,
                                          sweep_figure)
from lab.chapters.ch3.s6_twin import EARLIER_TWINS, twin_compile_table, twin_rows, twin_table
from lab.chapters.ch3.s7_t4 import gpu_name, t4_rows, t4_table
from lab.chapters.ch3.s8_intensity import intensity_rows, intensity_table
from lab.chapters.common import example_inputs, verdict

__all__ = ["figure", "example_inputs", "verdict", "model_rows", "model_table", "patch_figure",
           "FOLDED", "source", "PATCH", "CHECKS", "check_rows", "check_table", "KERNELS", "SIGNED",
           "BLOCK_THREADS", "compiler_rows", "bill_table", "loop_table", "signed_table",
           "loop_mix_table", "TWIN", "TWIN_OF", "PREDICTIONS", "sweep", "signed_sweep",
           "measured_table", "signed_measured_table", "fp32_roof", "step_rows", "step_table",
           "ceiling_rows", "ceiling_table", "sweep_figure", "EARLIER_TWINS", "twin_compile_table",
           "twin_rows", "twin_table", "gpu_name", "t4_rows", "t4_table", "intensity_rows",
           "intensity_table", "BANKS", "BANK_BYTES", "compile_targets", "prefetch", "same_build",
           "shared_peak_tbps", "values", "glue"]


#: Shared-memory banks per SM and bytes per bank per clock (sm_90).
BANKS, BANK_BYTES = 32, 4


def compile_targets() -> list[str]:
    """Everything the chapter compiles: the five kernels, their signed builds, and the twin."""
    return list(KERNELS) + list(SIGNED.values()) + [f"twin:{TWIN}"]


def prefetch(targets=None) -> None:
    """Make sure the compiler facts of ``targets`` (default :func:`compile_targets`) are at hand
    (:func:`lab.chapters.common.prefetch`)."""
    common.prefetch(targets or compile_targets())


def same_build() -> bool:
    """Whether the measured rows' ptxas register counts equal today's compile."""
    ours = sweep()["ours"]
    return all(ours.get(n, {}).get("regs_ptxas") == report(n).registers for n in KERNELS)


def shared_peak_tbps() -> float:
    """Shared-memory bandwidth of the measured GPU: SMs × banks × 4 B × the maximum clock."""
    p = results.load("patch_sweep")["provenance"]
    return p["sm_count"] * BANKS * BANK_BYTES * float(p["max_sm_clock_mhz"]) * 1e6 / 1e12


def _f(x: float, digits: int = 1) -> str:
    """A float with ``digits`` decimals, for glued values."""
    return f"{x:.{digits}f}"


def values() -> dict:
    """Every number the chapter's prose quotes, as strings: model, compiler, the selected
    GPU's results and the T4 study's T4 numbers."""
    rows = {r["kernel"]: r for r in compiler_rows()}
    srows = {r["kernel"]: r for r in compiler_rows(signed=True)}
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {"the_gpu": gpu_name(), "smem_p1": f"{model.smem_intensity(1):g}",
         "smem_p8": f"{model.smem_intensity(8):g}"}
    v["regs_patch4"] = str(rows["patch4"]["registers"])
    v["regs_patch8"] = str(rows["patch8"]["registers"])
    v["warps_patch4"] = str(rows["patch4"]["warps"])
    v["warps_patch8"] = str(rows["patch8"]["warps"])
    v["blocks_patch8"] = str(rows["patch8"]["blocks"])
    v["loop_patch1"] = str(rows["patch1"]["loop"])
    v["loop_patch8"] = str(rows["patch8"]["loop"])
    v["ffma_patch1"] = str(rows["patch1"]["ffma"])
    v["ffma_patch8"] = str(rows["patch8"]["ffma"])
    v["share_patch1"] = _f(rows["patch1"]["share"], 2)
    v["share_patch2"] = _f(rows["patch2"]["share"], 2)
    v["share_patch4"] = _f(rows["patch4"]["share"], 2)
    v["share_patch8"] = _f(rows["patch8"]["share"], 2)
    v["regs_int32_patch8"] = str(srows["patch8"]["registers"])
    v["warps_int32_patch8"] = str(srows["patch8"]["warps"])
    v["loop_int32_patch1"] = str(srows["patch1"]["loop"])
    v["ffma_int32_patch1"] = str(srows["patch1"]["ffma"])
    v["share_int32_patch8"] = _f(srows["patch8"]["share"], 2)
    v["tflops_block128"] = _f(ours["block128"]["tflops"])
    v["max_spills"] = str(max(r["spills"] + r["stack"] for r in rows.values()))
    v["t4_regs_p8"] = next(t["regs_estimate"] for t in seeds.PATCH_SWEEP_T4 if t["patch"] == 8)
    t4 = {t["patch"]: t["tflops"] for t in seeds.PATCH_SWEEP_T4}
    v["t4_gain_p4_p8"] = f"{100 * (t4[8] / t4[4] - 1):.0f}%"
    v["t4_gain_p2_p4"] = f"{100 * (t4[4] / t4[2] - 1):.0f}%"
    v["t4_roof"] = f"{next(m['tflops'] for m in seeds.MACHINES if m['machine'].startswith('Tesla T4')):g}"
    pred = {(a, b): f"{lo}–{hi}" for a, b, lo, hi in PREDICTIONS}
    v["pred_patch1_patch2"] = pred["patch1", "patch2"]
    v["pred_patch2_patch4"] = pred["patch2", "patch4"]
    v["pred_patch4_patch8"] = pred["patch4", "patch8"]
    v["pred_patch8_block128"] = pred["patch8", "block128"]
    step = {(a, b): row for row, (a, b, *_rest) in zip(step_rows(), PREDICTIONS)}
    v["step_patch1_patch2"] = f"{step['patch1', 'patch2']['measured']:.2f}"
    v["verdict_patch1_patch2"] = step["patch1", "patch2"]["verdict"]
    v["step_patch2_patch4"] = f"{step['patch2', 'patch4']['measured']:.2f}"
    v["verdict_patch2_patch4"] = step["patch2", "patch4"]["verdict"]
    v["step_patch4_patch8"] = f"{step['patch4', 'patch8']['measured']:.2f}"
    v["verdict_patch4_patch8"] = step["patch4", "patch8"]["verdict"]
    v["step_patch8_block128"] = f"{step['patch8', 'block128']['measured']:.2f}"
    v["verdict_patch8_block128"] = step["patch8", "block128"]["verdict"]
    p4, p8 = ours["patch4"], ours["patch8"]
    v["patch_best_pct"] = f"{max(ours[n]['pct_cublas'] for n in KERNELS):.0f}%"
    v["same_build"] = ("match ptxas's counts for today's build" if same_build()
                       else "differ from ptxas's counts for today's build: the rows come from "
                            "an earlier build (re-run `python -m lab measure patch_sweep`)")
    v["int32_p4"] = _f(before["patch4"]["tflops"])
    v["int32_p8"] = _f(before["patch8"]["tflops"])
    v["int32_p8_vs_p4"] = f"{before['patch8']['tflops'] / before['patch4']['tflops']:.2f}"
    v["int32_gain_p8"] = f"{ours['patch8']['tflops'] / before['patch8']['tflops']:.1f}"
    ceil = ceiling_rows()
    v["roof"] = _f(fp32_roof())
    v["ceil_lo"] = f"{min(r['fraction'] for r in ceil):.0%}"
    v["ceil_hi"] = f"{max(r['fraction'] for r in ceil):.0%}"
    twin = report(f"twin:{TWIN}")
    v["regs_twin"] = str(twin.registers)
    v["share_twin"] = _f(loop_counts(twin)["share"], 2)
    v["lds_twin"] = loop_counts(twin)["lds"]
    v["lds_patch4"] = loop_counts(report(TWIN_OF))["lds"]
    if s["twin"]:
        ratio = s["twin"]["median_ms"] / p4["median_ms"]
        v["twin_ratio"] = f"{ratio:.2f}"
        v["twin_tflops"] = _f(s["twin"]["tflops"])
        v["twin_verdict"] = ("at least as fast as" if ratio >= 1
                             else f"at {ratio:.0%} of the speed of")
    else:
        v["twin_ratio"] = v["twin_tflops"] = "(not measured)"
        v["twin_verdict"] = "not yet measured against"
    earlier = [r["ratio"] for r in twin_rows() if r["ours"] != TWIN_OF]
    v["earlier_lo"] = f"{min(earlier):.2f}" if earlier else "-"
    v["earlier_hi"] = f"{max(earlier):.2f}" if earlier else "-"
    peak = shared_peak_tbps()
    need = ours["patch1"]["tflops"] / model.smem_intensity(1)
    prov = results.load("patch_sweep")["provenance"]
    v["smem_need_p1"] = _f(need)
    v["smem_peak"] = _f(peak)
    v["smem_frac_p1"] = f"{need / peak:.0%}"
    v["the_sm_count"] = str(prov["sm_count"])
    v["max_clock"] = str(prov["max_sm_clock_mhz"])
    v["l2_model_001"] = f"{seeds.REGISTER_MODEL_001['flop_per_byte_l2']:g}"
    v["l2_ours_128"] = f"{model.tile_intensity(128):g}"
    rk = seeds.REGISTER_KERNEL_T4
    v["t4_rk_tflops"] = f"{rk['tflops']:g}"
    v["t4_rk_roof"] = f"{rk['pct_of_roof']:g}%"
    v["t4_rk_naive"] = f"{rk['x_naive']:.1f}"
    v["t4_rk_cublas_x"] = f"{rk['cublas_fp32_tflops'] / rk['tflops']:.2f}"
    v["tflops_patch4"] = _f(p4["tflops"])
    v["p4_roof"] = f"{p4['tflops'] / fp32_roof():.0%}"
    naive = next((r for r in results.rows("naive_tiled", part="size")
                  if r["kernel"] == "naive" and r["n"] == p4["n"]), None)
    v["p4_naive"] = f"{naive['median_ms'] / p4['median_ms']:.1f}" if naive else "-"
    v["p4_cublas_x"] = f"{s['cublas']['tflops'] / p4['tflops']:.2f}" if s["cublas"] else "-"
    v["other_patch1_pct"] = f"{1 - rows['patch1']['share']:.0%}"
    v["span"] = f"{max(r['ceiling'] for r in ceil) / min(r['ceiling'] for r in ceil):.1f}"
    v["twin_k_per_trip"] = str(loop_counts(twin)["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["patch4_k_per_trip"] = str(rows[TWIN_OF]["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["twin_warps"] = str(s["twin"]["warps_per_sm"]) if s["twin"] else "-"
    params = results.load("patch_sweep")["parameters"]
    v["sweep_size"] = str(params["size"])
    v["check_shapes"] = " and ".join(
        f"{m}³" if m == n == k else f"{m} × {n} × {k}" for m, n, k in params["check_shapes"])
    v["sm90_regs"] = f"{model.SM90_LIMITS['registers']:,}"
    v["sm90_warps"] = str(model.SM90_LIMITS["threads"] // 32)
    v["banks"], v["bank_bytes"] = str(BANKS), str(BANK_BYTES)
    if p8["tflops"] >= p4["tflops"]:
        v["p8_story"] = (f"The 8 × 8 patch wins. It keeps {p8['warps_per_sm']} warps per SM "
                         f"against patch4's {p4['warps_per_sm']}, and that is enough: each "
                         f"warp's loop is {rows['patch8']['share']:.2f} FFMA (patch4: "
                         f"{rows['patch4']['share']:.2f}), and its 64 independent accumulators "
                         "cover the shared-load latency inside the warp")
    else:
        v["p8_story"] = (f"The 8 × 8 patch loses. Its registers leave it {p8['warps_per_sm']} "
                         f"warps per SM against patch4's {p4['warps_per_sm']}, too few to "
                         "cover the latency of its shared loads and barriers, whatever its "
                         "loop's FFMA share")
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
