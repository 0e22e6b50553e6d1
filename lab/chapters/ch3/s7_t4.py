"""Chapter 3, section 7: beside the T4 study's T4."""
from __future__ import annotations

from lab import page, results, seeds
from lab.chapters.common import report
from lab.chapters.ch3.s5_measured import sweep, fp32_roof, signed_sweep
from lab.chapters.ch3.s1_idea import _f


def gpu_name() -> str:
    """The measured GPU's short name (``"H200"``), from the results file's provenance."""
    return page.gpu_label(results.load("patch_sweep")["provenance"]["gpu"])


def t4_rows() -> list[dict]:
    """The T4 study's T4 sweep beside the selected GPU's, with the gain of each step."""
    ours = sweep()["ours"]
    name = gpu_name()
    rows, prev_t4, prev_ours = [], None, None
    for s in seeds.PATCH_SWEEP_T4:
        r = ours.get(f"patch{s['patch']}", {})
        t = r.get("tflops")
        rows.append({"patch": f"{s['patch']}×{s['patch']}", "t4_regs": s["regs_estimate"],
                     "t4": s["tflops"], "t4_gain": s["tflops"] / prev_t4 if prev_t4 else None,
                     "regs": report(f"patch{s['patch']}").registers, "ours": t,
                     "gain": t / prev_ours if (t and prev_ours) else None, "gpu": name})
        prev_t4, prev_ours = s["tflops"], t
    return rows


def t4_table():
    """:func:`t4_rows` as a table; the T4 columns are the T4 study's, its registers estimates."""
    name = gpu_name()
    return page.table(t4_rows(), ["patch", "t4_regs", "t4", "t4_gain", "regs", "ours", "gain"],
                      {"t4_regs": "T4 regs (est.)", "t4": "T4 TFLOP/s", "t4_gain": "T4 gain",
                       "regs": "regs (ptxas)", "ours": f"{name} TFLOP/s",
                       "gain": f"{name} gain"},
                      source="T4 columns: the T4 study (Tesla T4, 1024³; registers estimated from "
                             "the kernel's variables)")


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {}
    v["the_gpu"] = gpu_name()
    t4 = {t["patch"]: t["tflops"] for t in seeds.PATCH_SWEEP_T4}
    v["t4_gain_p2_p4"] = f"{100 * (t4[4] / t4[2] - 1):.0f}%"
    v["t4_roof"] = f"{next(m['tflops'] for m in seeds.MACHINES if m['machine'].startswith('Tesla T4')):g}"
    p4, p8 = ours["patch4"], ours["patch8"]
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
    return v
