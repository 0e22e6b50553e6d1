"""Chapter 3, section 7: beside the T4 study's T4."""
from __future__ import annotations

from lab import page, results, seeds
from lab.chapters.common import report
from lab.chapters.ch3.s5_measured import sweep


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
                             "the kernel's variables). " + results.source_line("patch_sweep"))
