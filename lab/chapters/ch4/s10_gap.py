"""Chapter 4, section 10: what moved the bottleneck, and what would close the rest of the gap."""
from __future__ import annotations

from lab import page, results


def gap_rows() -> list[dict]:
    """What Nsight Compute saw of the best rungs and cuBLAS FP32 at 4096³ (fp32_profile)."""
    prof = results.by("fp32_profile", part="profile")
    out = []
    for name in ("warptile", "warptile_tuned", "cublas_fp32"):
        r = prof[name]
        stalls = r["stalls"]
        out.append({"kernel": name, "us": r["duration_us"], "mhz": r["sm_mhz"],
                    "inst": r["inst_executed"] / 1e9, "issue": r["issue_active_pct"],
                    "warps": r["warps_active_pct"], "regs": r["registers"],
                    "sb": stalls.get("short_scoreboard"), "dispatch": stalls.get("dispatch_stall"),
                    "not_selected": stalls.get("not_selected")})
    return out


def gap_values() -> dict:
    """The headline over three processes, and the last gap in issue slots and instructions."""
    summary = results.by("fp32_profile", part="summary")
    tuned = summary["warptile_tuned"]
    g = {r["kernel"]: r for r in gap_rows()}
    ours, cub = g["warptile_tuned"], g["cublas_fp32"]
    issue_ratio = ours["issue"] / cub["issue"]
    inst_ratio = cub["inst"] / ours["inst"]
    return {"fp32_head_ratio": f"{tuned['ratio_to_cublas']:.3f}",
            "fp32_head_lo": f"{tuned['ratio_min']:.3f}", "fp32_head_hi": f"{tuned['ratio_max']:.3f}",
            "fp32_head_processes": str(tuned["processes"]),
            "gap_issue_ours": f"{ours['issue']:.1f}%", "gap_issue_cublas": f"{cub['issue']:.1f}%",
            "gap_inst_more": f"{ours['inst'] / cub['inst'] - 1:.1%}",
            "gap_predicted": f"{issue_ratio * inst_ratio:.3f}",
            "gap_measured": f"{cub['us'] / ours['us']:.3f}",
            "gap_regs_cublas": f"{cub['regs']:.0f}",
            "gap_warps_cublas": f"{cub['warps']:.1f}%", "gap_warps_ours": f"{ours['warps']:.1f}%",
            "gap_sb_ours": f"{ours['sb']:.2f}", "gap_sb_cublas": f"{cub['sb']:.2f}",
            "gap_dispatch_ours": f"{ours['dispatch']:.2f}",
            "gap_dispatch_cublas": f"{cub['dispatch']:.2f}"}


def gap_table():
    return page.table(gap_rows(), ["kernel", "us", "mhz", "inst", "issue", "warps", "regs", "sb",
                                   "dispatch"],
                      {"us": "time (µs)", "mhz": "clock (MHz)", "inst": "instr. (10⁹)",
                       "issue": "issue (%)", "warps": "warps (%)", "regs": "regs",
                       "sb": "scoreboard", "dispatch": "dispatch"},
                      digits=3,
                      source="issue: issue slots used; warps: warps active, of the SM's 64; "
                             "scoreboard and dispatch: warps stalled per issued instruction "
                             "waiting on a shared-memory load (short scoreboard) or on dispatch. "
                             + results.source_line("fp32_profile"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings (:func:`gap_values`)."""
    return gap_values()
