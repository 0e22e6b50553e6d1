"""Chapter 3, section 8: the step-by-step model's intensity formula, beside the measurement."""
from __future__ import annotations

from lab import model, page, results, seeds
from lab.kernels import k03_registers
from lab.chapters.ch3.s3_check import PATCH
from lab.chapters.ch3.s4_bill import KERNELS
from lab.chapters.ch3.s5_measured import sweep, BANKS, BANK_BYTES, shared_peak_tbps, signed_sweep
from lab.chapters.ch3.s1_idea import _f


def intensity_rows() -> list[dict]:
    """The step-by-step model's two intensities for each kernel, and the shared bandwidth the measured
    speed would need if every operand came from shared memory at that intensity."""
    ours, rows = sweep()["ours"], []
    for name in KERNELS:
        p, t = PATCH[name], ours[name]["tflops"]
        tile = 128 if name == "block128" else k03_registers.THREADS * p
        rows.append({"kernel": name, "l2": model.tile_intensity(tile),
                     "smem": model.smem_intensity(p), "tflops": t,
                     "need": t / model.smem_intensity(p)})
    return rows


def intensity_table():
    """:func:`intensity_rows` as a table."""
    return page.table(intensity_rows(), ["kernel", "l2", "smem", "tflops", "need"],
                      {"l2": "L2 FLOP/B (model)", "smem": "shared FLOP/B (model)",
                       "tflops": "TFLOP/s", "need": "shared TB/s needed"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {}
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
    v["banks"], v["bank_bytes"] = str(BANKS), str(BANK_BYTES)
    return v
