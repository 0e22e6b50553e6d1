"""Section 7, the tile table (rungs 18 and 19): rungs 15 and 17 with each tile's row and
column read from a table instead of found with 64-bit divisions between tiles, beside rungs 15
and 17, fast.cu's kernel 12 and both yardsticks in one run (``hopper_table``)."""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch7.s5_past import F32_HANDOFF, UNIFORM, profile, ratio_cells, summary

#: Rungs 18 and 19: rungs 15 and 17 with the tile table (their labels in the rows).
TABLE, F32_TABLE = UNIFORM + " tile table", F32_HANDOFF + " tile table"
FASTCU = "fast.cu kernel 12 (BF16 out)"
#: Rows of :func:`table_table`: title, label, yardstick.
ROWS = (("rung 15 (16-bit C)", UNIFORM, "torch.mm"),
        ("rung 18 = rung 15 + tile table", TABLE, "torch.mm"),
        ("rung 17 (FP32 C)", F32_HANDOFF, "cuBLAS FP32 out"),
        ("rung 19 = rung 17 + tile table", F32_TABLE, "cuBLAS FP32 out"),
        ("fast.cu kernel 12 (BF16 C)", FASTCU, "torch.mm"))


def _summary(kernel: str, dtype: str, size: int) -> dict:
    return summary(kernel, dtype, size, results.load("hopper_table"))


def table_table():
    """The four rungs and kernel 12 against the yardstick with their output type: median ratio
    over the processes and its range, both input types, both sizes."""
    rows = [{"kernel": title, "against": yardstick, **ratio_cells(kernel, results.load("hopper_table"))}
            for title, kernel, yardstick in ROWS]
    return page.table(rows, source=results.source_line("hopper_table"))


def values() -> dict:
    """The run's size and checks; the four rungs' ratios at 4096³; what one profiled launch of
    each executes and how many cycles it takes at the profiler's fixed clock."""
    data = results.load("hopper_table")

    def ratio(kernel, dtype):
        return f"{_summary(kernel, dtype, 4096)['ratio']:.3f}"

    def inst(name):
        return f"{profile(name, data)['inst_executed'] / 1e6:.1f}"

    def kcycles(name):
        return f"{profile(name, data)['sm_active_cycles_avg'] / 1e3:.1f}"

    checks = [r for r in data["rows"] if r["part"] == "check"]
    if not all(r["passed"] for r in checks):
        raise ValueError("hopper_table.json holds a failed check")
    return {
        "tab_processes": str(data["parameters"]["processes"]),
        "tab_checks": f"{len(checks):,}",
        "tab18_4096_fp16": ratio(TABLE, "float16"),
        "tab19_4096_fp16": ratio(F32_TABLE, "float16"),
        "tab_p15_inst_m": inst("past:" + UNIFORM),
        "tab_p18_inst_m": inst("past:" + TABLE),
        "tab_p15_kcycles": kcycles("past:" + UNIFORM),
        "tab_p18_kcycles": kcycles("past:" + TABLE),
        "tab_p17_kcycles": kcycles("past:" + F32_HANDOFF),
        "tab_p19_kcycles": kcycles("past:" + F32_TABLE),
        "tab_pcublas_kcycles": kcycles("cublas_fp16"),
        "tab15_4096_fp16": ratio(UNIFORM, "float16"),
        "tab_fastcu_4096": ratio(FASTCU, "bfloat16"),
        "tab_fastcu_8192": f"{_summary(FASTCU, 'bfloat16', 8192)['ratio']:.3f}",
        "tab_fastcu_8192_tflops": f"{_summary(FASTCU, 'bfloat16', 8192)['tflops']:.0f}",
        **evidence_values(),
    }


#: The yardstick of each headline rung: its summary row's label, by input type.
YARDSTICK = {TABLE: {"float16": "torch.mm f16 (F16 out)", "bfloat16": "torch.mm bf16 (BF16 out)"},
             F32_TABLE: {"float16": "cublas_fp16 (FP32 out)",
                         "bfloat16": "cublas_bf16 (FP32 out)"}}


def evidence_rows() -> list[dict]:
    """Rungs 18 and 19 against their yardsticks, both sizes and input types, from the run that
    timed them (``hopper_table``): both sides' TFLOP/s and SM clock, the median ratio and the
    lowest and highest process."""
    rows = []
    for kernel, rung in ((TABLE, 18), (F32_TABLE, 19)):
        for size in (4096, 8192):
            for dtype, short in (("float16", "FP16"), ("bfloat16", "BF16")):
                ours = _summary(kernel, dtype, size)
                theirs = _summary(YARDSTICK[kernel][dtype], dtype, size)
                rows.append({"what": f"rung {rung}, {short} {size}³", "ours": ours["tflops"],
                             "theirs": theirs["tflops"], "ratio": ours["ratio"],
                             "lowest": ours["ratio_min"], "highest": ours["ratio_max"],
                             "mhz_ours": ours["sm_mhz"], "mhz_theirs": theirs["sm_mhz"]})
    return rows


def evidence_box():
    """The evidence beside the page's headline: :func:`evidence_rows` with the timing method
    the run recorded and the word each row's range supports."""
    from lab.chapters.common import evidence_box as box

    data = results.load("hopper_table")
    return box(evidence_rows(),
               claim="rung 18 (16-bit C) against torch.mm, rung 19 (FP32 C) against cuBLAS "
                     "with FP32 output, medians of "
                     f"{data['parameters']['processes']} processes on one "
                     f"{page.gpu_label(data['provenance']['gpu'])}",
               method="GPU-only — " + data["parameters"]["timing"],
               yardstick="torch.mm with the same 16-bit output for rung 18; cuBLAS with FP32 "
                         "output for rung 19; same input type, same process")


def evidence_values() -> dict:
    """The words the evidence supports, for the prose: rung 18's and rung 19's at 4096³ FP16,
    and how many of the eight rows are past."""
    from lab.chapters.common import verdict_word

    rows = evidence_rows()
    words = [verdict_word(r["lowest"], r["highest"]) for r in rows]
    return {"ev_past_rows": f"{words.count('past')} of {len(rows)}"}
