"""Chapter 4, section 7: tuning the configuration (the sweep's rows)."""
from __future__ import annotations

import re

from lab import model, page, results
from lab.chapters.ch4.s1_kernel import config


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
    """The configurations the text discusses, fastest first: the six fastest, the fastest
    8 × 4 patch, the 128 × 128 × 16 block with and without launch bounds, and the slowest (every
    configuration is in the results file). Launch bounds: the minimum blocks per SM asked of
    ptxas."""
    rows = [dict(r, lb=r["lb"] or None) for r in tune_rows()]
    discussed = set(range(min(6, len(rows)))) | {len(rows) - 1}
    discussed |= {next((i for i, r in enumerate(rows) if r["patch"] != "8×8"), 0)}
    for lb in (None, 2):
        discussed |= {next((i for i, r in enumerate(rows) if r["block"] == "128×128×16"
                            and r["patch"] == "8×8" and r["lb"] == lb), 0)}
    return page.table([rows[i] for i in sorted(discussed)],
                      ["block", "warp", "patch", "lb", "regs", "blocks", "pct"],
                      headers={"block": "block tile", "warp": "warp tile", "lb": "launch bounds",
                               "blocks": "blocks/SM", "pct": "% cuBLAS"},
                      source=results.source_line("fp32_tune"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    wcfg = config("warptile")
    tcfg = config("warptile_tuned")
    tune = tune_rows()
    v["tune_n"] = str(len(tune))
    v["tune_best_pct"] = f"{tune[0]['pct']:.1f}%"
    v["tune_worst_pct"] = f"{tune[-1]['pct']:.1f}%"
    narrow = [i for i, r in enumerate(tune) if r["patch"] != "8×8"]
    v["narrow_rank"] = str(narrow[0] + 1) if narrow else "-"
    v["narrow_best_pct"] = f"{tune[narrow[0]]['pct']:.1f}%" if narrow else "-"
    def group(block, bk, lb=0, patch="8×8"):
        return [r for r in tune if r["block"] == block and r["bk"] == bk and r["lb"] == lb
                and r["patch"] == patch]
    v["regs_bk8"] = "/".join(str(x) for x in sorted({r["regs"] for r in tune if r["bk"] == 8}))
    wide16 = [r for r in tune if r["bk"] == 16 and r["patch"] == "8×8" and not r["lb"]]
    v["regs_bk16"] = "/".join(str(x) for x in sorted({r["regs"] for r in wide16}))
    lb16 = group("128×128×16", 16, lb=2)
    v["bk16_lb_regs"] = str(lb16[0]["regs"]) if lb16 else "-"
    v["bk16_lb_pct"] = f"{max(r['pct'] for r in lb16):.1f}%" if lb16 else "-"
    plain16 = group("128×128×16", 16)
    v["bk16_pct"] = f"{max(r['pct'] for r in plain16):.1f}%" if plain16 else "-"
    v["bk16_blocks"] = str(plain16[0]["blocks"]) if plain16 else "-"
    small, large = group("64×128×8", 8), group("128×128×8", 8)
    if small and large:
        v["small_pct"] = f"{max(r['pct'] for r in small):.1f}%"
        v["large_pct"] = f"{max(r['pct'] for r in large):.1f}%"
        regs = (small[0]["regs"], large[0]["regs"])
        v["small_large_regs"] = (f"at the same {regs[0]} registers per thread" if regs[0] == regs[1]
                                 else f"at {regs[0]} and {regs[1]} registers per thread")
        v["small_blocks"], v["large_blocks"] = str(small[0]["blocks"]), str(large[0]["blocks"])
        v["small_threads"], v["large_threads"] = str(small[0]["threads"]), str(large[0]["threads"])
    wt = next((r for r in tune if r["config"] == wcfg.label() and not r["lb"]),
              None)
    v["warp_regs"] = str(wt["regs"]) if wt else "-"
    v["warp_blocks"] = str(wt["blocks"]) if wt else "-"
    v["tuned_is_best"] = ("is" if tcfg.label() == tune[0]["config"] else
                          "is not (re-register it from the table)")
    v["bk8_best_pct"] = f"{max(r['pct'] for r in tune if r['bk'] == 8):.1f}%"
    v["bk16_best_pct"] = f"{max(r['pct'] for r in tune if r['bk'] == 16):.1f}%"
    v["reg_limit_2x256"] = str(model.SM90_LIMITS["registers"] // (2 * 256))
    return v
