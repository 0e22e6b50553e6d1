"""Chapter 3, section 5: the prediction, and the patch sweep measured on the GPU (beside the
signed-index build and the FP32 ceiling).
"""
from __future__ import annotations

from lab import page, results
from lab.chapters.common import loop_counts, report
from lab.chapters.ch3.s3_check import PATCH
from lab.chapters.ch3.s4_bill import KERNELS


#: The CUDA C twin of seed 004's register kernel, and the Numba kernel it twins.
TWIN, TWIN_OF = "s004_regs4", "patch4"


#: Predictions written before the unsigned build was measured: (from, to, low, high) for the
#: speed-up of each step of the sweep.
PREDICTIONS = (("patch1", "patch2", 1.3, 2.0), ("patch2", "patch4", 1.3, 2.0),
               ("patch4", "patch8", 1.0, 1.4), ("patch8", "block128", 0.9, 1.1))


def _impl(r: dict) -> str:
    """Who computed a results row: "numba", "twin" or "cublas" (older rows carry no ``impl``)."""
    return r.get("impl") or ("cublas" if r["kernel"].startswith("cublas") else "numba")


def sweep() -> dict:
    """The selected GPU's ``patch_sweep`` rows: ``ours`` by kernel, ``cublas``, ``twin``."""
    rows = results.rows("patch_sweep")
    return {"ours": {r["kernel"]: r for r in rows if _impl(r) == "numba"},
            "cublas": next((r for r in rows if _impl(r) == "cublas"), None),
            "twin": next((r for r in rows if _impl(r) == "twin" and r["kernel"] == TWIN
                          and "median_ms" in r), None)}


def signed_sweep() -> dict:
    """The signed-index build's rows (``patch_sweep_int32``) by kernel."""
    return {r["kernel"]: r for r in results.rows("patch_sweep_int32") if _impl(r) == "numba"}


def measured_table():
    """The sweep as measured: median/min/max, TFLOP/s, % of cuBLAS, warps per SM."""
    s = sweep()
    rows = [s["ours"][n] for n in KERNELS if n in s["ours"]] + [s["cublas"]]
    rows = [dict(r, kernel="cuBLAS FP32" if _impl(r) == "cublas" else r["kernel"],
                 warps_per_sm=r.get("warps_per_sm")) for r in rows if r]
    return page.table(rows, ["kernel", "median_ms", "min_ms", "max_ms", "tflops", "pct_cublas",
                             "warps_per_sm"],
                      {"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)",
                       "tflops": "TFLOP/s", "pct_cublas": "% cuBLAS",
                       "warps_per_sm": "warps/SM"},
                      source=results.source_line("patch_sweep"))


def signed_measured_table():
    """The signed and the unsigned build side by side, TFLOP/s."""
    before = signed_sweep()
    ours = sweep()["ours"]
    rows = [{"kernel": n, "signed": before[n]["tflops"], "unsigned": ours[n]["tflops"],
             "gain": ours[n]["tflops"] / before[n]["tflops"]}
            for n in KERNELS if n in before and n in ours]
    return page.table(rows, ["kernel", "signed", "unsigned", "gain"],
                      {"signed": "int32 TFLOP/s", "unsigned": "uint32 TFLOP/s",
                       "gain": "speed-up"},
                      source=results.source_line("patch_sweep_int32") + " "
                      + results.source_line("patch_sweep"))


def fp32_roof() -> float:
    """The measured FP32 roof of the selected GPU (``roofline``, FMA chains), TFLOP/s."""
    return next(r["tflops"] for r in results.rows("roofline") if r["kernel"] == "fma_chains")


def step_rows() -> list[dict]:
    """Each step of the sweep: predicted and measured speed-up, FFMA share and warps."""
    ours, rows = sweep()["ours"], []
    for a, b, lo, hi in PREDICTIONS:
        g = ours[b]["tflops"] / ours[a]["tflops"]
        rows.append({"step": f"{a} → {b}", "predicted": f"{lo}–{hi}", "measured": g,
                     "verdict": "within" if lo <= g <= hi else ("above" if g > hi else "below"),
                     "share": f"{loop_counts(report(a))['share']:.2f} → "
                              f"{loop_counts(report(b))['share']:.2f}",
                     "warps": f"{ours[a]['warps_per_sm']} → {ours[b]['warps_per_sm']}"})
    return rows


def step_table():
    """:func:`step_rows` as a table."""
    return page.table(step_rows(), ["step", "predicted", "measured", "verdict", "share", "warps"],
                      {"predicted": "predicted ×", "measured": "measured ×",
                       "share": "FFMA share", "warps": "warps/SM"},
                      source=results.source_line("patch_sweep"))


def ceiling_rows() -> list[dict]:
    """Issue ceiling (loop FFMA share × FP32 roof) against the measured speed."""
    ours, roof = sweep()["ours"], fp32_roof()
    rows = []
    for n in KERNELS:
        share = loop_counts(report(n))["share"]
        rows.append({"kernel": n, "share": share, "ceiling": share * roof,
                     "tflops": ours[n]["tflops"], "fraction": ours[n]["tflops"] / (share * roof)})
    return rows


def ceiling_table():
    """:func:`ceiling_rows` as a table."""
    return page.table(ceiling_rows(), ["kernel", "share", "ceiling", "tflops", "fraction"],
                      {"share": "loop FFMA share", "ceiling": "ceiling TFLOP/s",
                       "tflops": "measured TFLOP/s", "fraction": "measured / ceiling"},
                      source=results.source_line("roofline") + " "
                      + results.source_line("patch_sweep"))


def sweep_figure():
    """TFLOP/s against patch size on the measured GPU: the unsigned build, the signed build,
    the issue ceiling (loop FFMA share × FP32 roof), block128 and cuBLAS FP32."""
    from lab import plots

    s, before, roof = sweep(), signed_sweep(), fp32_roof()
    sweep_names = [n for n in KERNELS if n != "block128"]
    xs = [PATCH[n] for n in sweep_names]
    fig, ax = plots.axes("", "patch per thread (P × P)", "TFLOP/s", logx=True)
    ax.plot(xs, [s["ours"][n]["tflops"] for n in sweep_names],
            label="uint32 indices (measured)", **plots.OURS)
    ax.plot(xs, [before[n]["tflops"] for n in sweep_names],
            label="int32 indices, first build (measured)",
            **{**plots.OURS, "linestyle": "--", "marker": "v", "alpha": 0.7})
    ax.plot(xs, [loop_counts(report(n))["share"] * roof for n in sweep_names],
            label="issue ceiling: loop FFMA share × FP32 roof", color="0.45", linestyle=":",
            marker="x")
    ax.plot([8], [s["ours"]["block128"]["tflops"]], linestyle="none", marker="D",
            color="C3", label="block128 (8×8, BK 8, measured)")
    if s["cublas"]:
        ax.axhline(s["cublas"]["tflops"], color="0.2", linewidth=1.2, linestyle="-.",
                   label="cuBLAS FP32 (measured)")
    ax.set_xticks(xs, [f"{p}×{p}" for p in xs])
    ax.set_ylim(bottom=0)
    return plots.finish(fig, ax)
