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
        "tab18_4096_bf16": ratio(TABLE, "bfloat16"),
        "tab19_4096_fp16": ratio(F32_TABLE, "float16"),
        "tab19_4096_bf16": ratio(F32_TABLE, "bfloat16"),
        "tab_p15_inst_m": inst("past:" + UNIFORM),
        "tab_p18_inst_m": inst("past:" + TABLE),
        "tab_p15_kcycles": kcycles("past:" + UNIFORM),
        "tab_p18_kcycles": kcycles("past:" + TABLE),
        "tab_p17_kcycles": kcycles("past:" + F32_HANDOFF),
        "tab_p19_kcycles": kcycles("past:" + F32_TABLE),
        "tab_pcublas_kcycles": kcycles("cublas_fp16"),
    }
