"""Section "Transposed operands": cuBLAS FP16 at 4096³ with each operand plain or transposed,
in steady state and in a short burst after an idle gap (``shapes``)."""
from __future__ import annotations

from lab import page, results, seeds


def layout_rows() -> list[dict]:
    """Per layout: the steady median (µs), TFLOP/s and time against NN; the first call of the
    burst and the burst's median (µs)."""
    lay = {r["layout"]: r for r in results.rows("shapes", part="layout")}
    burst = {r["layout"]: r for r in results.rows("shapes", part="burst")}
    nn = lay["NN"]["median_ms"]
    return [{"layout": name, "us": r["median_ms"] * 1e3, "tflops": r["tflops"],
             "vs_nn": r["median_ms"] / nn, "first_us": burst[name]["first_ms"] * 1e3,
             "burst_us": burst[name]["median_ms"] * 1e3,
             "rest": max(abs(t / r["median_ms"] - 1) for t in burst[name]["burst_samples"][1:]),
             "calls": len(burst[name]["burst_samples"]), "warmup": r["warmup"],
             "repeats": r["repeats"]}
            for name, r in lay.items()]


def layout_table():
    """Transposed operands through cuBLAS FP16."""
    return page.table(layout_rows(), ["layout", "us", "tflops", "vs_nn", "first_us", "burst_us"],
                      {"layout": "layout (A, B)", "us": "median (µs)", "tflops": "TFLOP/s",
                       "vs_nn": "time / NN", "first_us": "burst: 1st call (µs)",
                       "burst_us": "burst: median (µs)"},
                      source=results.source_line("shapes"))


def values() -> dict:
    """The section's numbers: the spread of the layouts, the bursts' first calls and the rest,
    how the steady state and the bursts were timed, and the T4 study's numbers."""
    lay = layout_rows()
    first = [x["first_us"] / x["us"] for x in lay]
    return {"layout_range": f"{min(x['vs_nn'] for x in lay):.3f}–{max(x['vs_nn'] for x in lay):.3f}",
            "burst_first": f"{min(first):.1f}–{max(first):.1f}",
            "burst_rest": f"{max(x['rest'] for x in lay):.1%}",
            "burst_calls": str(lay[0]["calls"]), "layout_warmup": str(lay[0]["warmup"]),
            "layout_repeats": str(lay[0]["repeats"]),
            "burst_idle_s": f"{results.load('shapes')['parameters']['burst_idle_s']:g}",
            "t4_layout_low": f"{seeds.LAYOUT_T4['steady_low']:.2f}",
            "t4_layout_high": f"{seeds.LAYOUT_T4['steady_high']:.2f}",
            "t4_burst": seeds.LAYOUT_T4["burst_spread"]}
