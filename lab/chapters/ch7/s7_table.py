"""Section 7, the tile table (rungs 18 and 19): rungs 15 and 17 with each tile's row and
column read from a table instead of found with 64-bit divisions between tiles, beside rungs 15
and 17, fast.cu's kernel 12 and both yardsticks in one run (``hopper_table``)."""
from __future__ import annotations

from functools import lru_cache

from lab import page, results
from lab.chapters.ch7.s5_past import F32_HANDOFF, UNIFORM, profile, summary

#: Rungs 18 and 19: rungs 15 and 17 with the tile table (their labels in the rows).
TABLE, F32_TABLE = UNIFORM + " tile table", F32_HANDOFF + " tile table"
FASTCU = "fast.cu kernel 12 (BF16 out)"
#: Rows of :func:`table_table`: title, label, yardstick.
ROWS = (("rung 15 (16-bit C)", UNIFORM, "torch.mm"),
        ("rung 18 = rung 15 + tile table", TABLE, "torch.mm"),
        ("rung 17 (FP32 C)", F32_HANDOFF, "cuBLAS FP32 out"),
        ("rung 19 = rung 17 + tile table", F32_TABLE, "cuBLAS FP32 out"),
        ("fast.cu kernel 12 (BF16 C)", FASTCU, "torch.mm"))


@lru_cache(maxsize=None)
def table_data() -> dict:
    """``hopper_table``: rungs 15, 17, 18, 19 and fast.cu's kernel 12 in one run (children,
    GPU-only timing, medians over the processes) and Nsight Compute on the four rungs."""
    return results.load("hopper_table")


def _summary(kernel: str, dtype: str, size: int) -> dict:
    return summary(kernel, dtype, size, table_data())


def table_table():
    """The four rungs and kernel 12 against the yardstick with their output type: median ratio
    over the processes and its range, both input types, both sizes."""
    rows = []
    for title, kernel, yardstick in ROWS:
        row = {"kernel": title, "against": yardstick}
        for dtype, short in (("float16", "FP16"), ("bfloat16", "BF16")):
            for size in (4096, 8192):
                try:
                    r = _summary(kernel, dtype, size)
                except KeyError:                 # (kernel 12: BF16 only)
                    row[f"{short} {size}³"] = ""
                    continue
                row[f"{short} {size}³"] = (f"{r['ratio']:.3f} ({r['ratio_min']:.3f}–"
                                           f"{r['ratio_max']:.3f})")
        rows.append(row)
    return page.table(rows, source=results.source_line("hopper_table"))


def values() -> dict:
    data = table_data()

    def ratio(kernel, dtype, size):
        return f"{_summary(kernel, dtype, size)['ratio']:.3f}"

    def spread(kernel, dtype, size):
        r = _summary(kernel, dtype, size)
        return f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"

    p15, p18 = profile("past:" + UNIFORM, data), profile("past:" + TABLE, data)
    p17, p19 = profile("past:" + F32_HANDOFF, data), profile("past:" + F32_TABLE, data)
    pt, pc = profile("torch.mm f16", data), profile("cublas_fp16", data)
    checks = [r for r in data["rows"] if r["part"] == "check"]
    if not all(r["passed"] for r in checks):
        raise ValueError("hopper_table.json holds a failed check")
    out = {"tab_processes": str(data["parameters"]["processes"]),
           "tab_checks": f"{len(checks):,}"}
    for key, kernel in (("tab15", UNIFORM), ("tab18", TABLE), ("tab17", F32_HANDOFF),
                        ("tab19", F32_TABLE)):
        for dtype, short in (("float16", "fp16"), ("bfloat16", "bf16")):
            for size in (4096, 8192):
                out[f"{key}_{size}_{short}"] = ratio(kernel, dtype, size)
            out[f"{key}_4096_{short}_range"] = spread(kernel, "bfloat16" if short == "bf16"
                                                      else "float16", 4096)
    for size in (4096, 8192):
        out[f"tab_fastcu_{size}"] = ratio(FASTCU, "bfloat16", size)
    for key, p in (("p15", p15), ("p18", p18), ("p17", p17), ("p19", p19), ("ptorch", pt),
                   ("pcublas", pc)):
        out[f"tab_{key}_us"] = f"{p['duration_us']:.1f}"
        out[f"tab_{key}_kcycles"] = f"{p['sm_active_cycles_avg'] / 1e3:.1f}"
        out[f"tab_{key}_inst_m"] = f"{p['inst_executed'] / 1e6:.1f}"
    return out
