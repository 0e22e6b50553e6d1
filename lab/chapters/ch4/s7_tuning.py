"""Chapter 4, section 7: tuning the configuration (the sweep's rows)."""
from __future__ import annotations

import re

from lab import page, results


_LABEL = re.compile(r"(\d+)x(\d+)x(\d+), warp (\d+)x(\d+) lanes \d+x\d+, patch (\d+)x(\d+), "
                    r"(\d+) threads")


def tune_rows() -> list[dict]:
    """The timed configurations of ``fp32_tune``, fastest first, their labels split."""
    rows = []
    for r in results.rows("fp32_tune"):
        if r["kernel"] == "cublas_fp32":
            continue
        m = _LABEL.match(r["config"])
        bm, bn, bk, wm, wn, tm, tn, threads = (int(x) for x in m.groups())
        rows.append({"block": f"{bm}×{bn}×{bk}",
                     "warp": f"{wm}×{wn}", "patch": f"{tm}×{tn}", "threads": threads,
                     "bk": bk, "regs": r["regs"], "blocks": r["blocks/SM"],
                     "tflops": r["tflops"], "pct": r["pct_cublas"], "config": r["config"],
                     "lb": r.get("lb") or 0})
    return sorted(rows, key=lambda r: -r["tflops"])


def tune_table():
    """:func:`tune_rows` as a table (launch bounds: the minimum blocks per SM asked of ptxas)."""
    rows = [dict(r, lb=r["lb"] or None) for r in tune_rows()]
    best = sorted(range(len(rows)), key=lambda i: -rows[i]["pct"])[:8]
    return page.table(rows, ["block", "warp", "patch", "lb", "regs", "blocks", "pct"],
                      show=sorted(best), headers={"block": "block tile", "warp": "warp tile", "lb": "launch bounds",
                       "blocks": "blocks/SM", "pct": "% cuBLAS"},
                      source=results.source_line("fp32_tune"))
