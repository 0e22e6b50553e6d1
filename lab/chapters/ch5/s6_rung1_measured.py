"""Section 'Rung 1 measured: the tensor cores mostly wait': rung 1 beside cuBLAS FP16, the lines
its loads touch and the two ceilings they set.
"""
from __future__ import annotations

import numpy as np

from lab import page, results
from lab.chapters.ch5.common import ladder, machine


def rung1_table():
    """Rung 1 and cuBLAS FP16 at 4096³, measured in the same run."""
    lad = ladder()
    rows = [dict(lad["tc_naive_fp16"]), dict(lad["cublas_fp16"])]     # (copies: results are shared)
    for r in rows:
        r["us"] = r["median_ms"] * 1e3
        r["pct"] = 100 * r["ratio_to_cublas_fp16"]
    return page.table(rows, ["kernel", "intensity", "us", "tflops", "pct"],
                      {"intensity": "FLOP/B", "us": "median (µs)", "tflops": "TFLOP/s",
                       "pct": "% cuBLAS FP16"}, source=results.source_line("tensor_cores"))


def l1_lines(k: int = 4096, n: int = 4096) -> dict:
    """Rung 1's loads per warp and 16-deep k-step, and the 128-byte lines they touch.

    A lane loads its own 2-byte elements: A rows ``group`` and ``group + 8``, columns
    ``2·pair`` (+1, +8, +9); B rows ``2·pair`` (+1, +8, +9), columns ``group`` (+8). Each
    16-bit load instruction of the warp touches one line per distinct row.
    """
    lanes = np.arange(32)
    group, pair = lanes // 4, lanes % 4
    lines = 0
    for dr in (0, 8):
        for dk in (0, 1, 8, 9):
            lines += len(set((((group + dr) * k + 2 * pair + dk) * 2) // 128))
    for dc in (0, 8):
        for dk in (0, 1, 8, 9):
            lines += len(set((((2 * pair + dk) * n + group + dc) * 2) // 128))
    return {"loads": 16, "lines": lines, "flop": 2 * 2 * 16 * 8 * 16}


def rung1_ceilings() -> dict:
    """Rung 1's two ceilings: HBM at its 8 FLOP/byte, and the L1 at one line per clock per SM."""
    m = machine()
    naive = ladder()["tc_naive_fp16"]
    lines = l1_lines()
    l1 = lines["flop"] / lines["lines"] * m["sms"] * m["clock_hz"]
    hbm = naive["intensity"] * m["read_bps"]
    return {**lines, "l1": l1, "hbm": hbm, "measured": naive["tflops"] * 1e12}


def rung1_ceiling_text() -> str:
    """The line count and the two ceilings of rung 1, as text."""
    c = rung1_ceilings()
    text = (f"per warp and 16-deep k-step: {c['loads']} loads touching {c['lines']} lines of "
            f"128 bytes for {c['flop']:,} FLOP\n"
            f"HBM ceiling at 8 FLOP/B: {c['hbm'] / 1e12:.1f} TFLOP/s "
            f"(measured: {c['measured'] / c['hbm']:.0%} of it)\n"
            f"L1 ceiling at one line per clock per SM: {c['l1'] / 1e12:.1f} TFLOP/s "
            f"(measured: {c['measured'] / c['l1']:.0%} of it)")
    return text


def values() -> dict:
    """The numbers the section's prose quotes: rung 1 against cuBLAS FP16 and its ceilings."""
    lad = ladder()
    c1 = rung1_ceilings()
    return {"naive_tflops": f"{lad['tc_naive_fp16']['tflops']:.1f}",
            "naive_pct": f"{100 * lad['tc_naive_fp16']['ratio_to_cublas_fp16']:.1f}%",
            "cublas_fp16_tflops": f"{lad['cublas_fp16']['tflops']:.0f}",
            "naive_hbm": f"{c1['hbm'] / 1e12:.1f}",
            "naive_of_hbm": f"{c1['measured'] / c1['hbm']:.0%}",
            "naive_l1": f"{c1['l1'] / 1e12:.1f}",
            "naive_of_l1": f"{c1['measured'] / c1['l1']:.0%}"}
