"""Chapter 3, section 5: the prediction, and the patch sweep measured on the GPU (beside the
signed-index build and the FP32 ceiling).
"""
from __future__ import annotations

from lab import page, results, seeds
from lab.chapters.common import loop_counts, report
from lab.chapters.ch3.s3_check import PATCH
from lab.chapters.ch3.s4_bill import KERNELS, compiler_rows
from lab.chapters.ch3.s1_idea import _f


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
                       "share": "FFMA share", "warps": "warps/SM"})


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
                      source=results.source_line("roofline"))


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


#: Shared-memory banks per SM (sm_90).
BANKS = 32


#: Bytes per bank per clock (sm_90).
BANK_BYTES = 4


def same_build() -> bool:
    """Whether the measured rows' ptxas register counts equal today's compile."""
    ours = sweep()["ours"]
    return all(ours.get(n, {}).get("regs_ptxas") == report(n).registers for n in KERNELS)


def shared_peak_tbps() -> float:
    """Shared-memory bandwidth of the measured GPU: SMs × banks × 4 B × the maximum clock."""
    p = results.load("patch_sweep")["provenance"]
    return p["sm_count"] * BANKS * BANK_BYTES * float(p["max_sm_clock_mhz"]) * 1e6 / 1e12


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    rows = {r["kernel"]: r for r in compiler_rows()}
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {}
    v["share_patch1"] = _f(rows["patch1"]["share"], 2)
    v["share_patch2"] = _f(rows["patch2"]["share"], 2)
    v["share_patch4"] = _f(rows["patch4"]["share"], 2)
    v["tflops_block128"] = _f(ours["block128"]["tflops"])
    t4 = {t["patch"]: t["tflops"] for t in seeds.PATCH_SWEEP_T4}
    v["t4_gain_p4_p8"] = f"{100 * (t4[8] / t4[4] - 1):.0f}%"
    step = {(a, b): row for row, (a, b, *_rest) in zip(step_rows(), PREDICTIONS)}
    v["step_patch1_patch2"] = f"{step['patch1', 'patch2']['measured']:.2f}"
    v["verdict_patch1_patch2"] = step["patch1", "patch2"]["verdict"]
    v["step_patch2_patch4"] = f"{step['patch2', 'patch4']['measured']:.2f}"
    v["verdict_patch2_patch4"] = step["patch2", "patch4"]["verdict"]
    v["step_patch4_patch8"] = f"{step['patch4', 'patch8']['measured']:.2f}"
    v["verdict_patch4_patch8"] = step["patch4", "patch8"]["verdict"]
    v["step_patch8_block128"] = f"{step['patch8', 'block128']['measured']:.2f}"
    v["verdict_patch8_block128"] = step["patch8", "block128"]["verdict"]
    p4, p8 = ours["patch4"], ours["patch8"]
    v["patch_best_pct"] = f"{max(ours[n]['pct_cublas'] for n in KERNELS):.0f}%"
    v["same_build"] = ("match ptxas's counts for today's build" if same_build()
                       else "differ from ptxas's counts for today's build: the rows come from "
                            "an earlier build (re-run `python -m lab measure patch_sweep`)")
    v["int32_p4"] = _f(before["patch4"]["tflops"])
    v["int32_p8"] = _f(before["patch8"]["tflops"])
    v["int32_p8_vs_p4"] = f"{before['patch8']['tflops'] / before['patch4']['tflops']:.2f}"
    v["int32_gain_p8"] = f"{ours['patch8']['tflops'] / before['patch8']['tflops']:.1f}"
    ceil = ceiling_rows()
    v["roof"] = _f(fp32_roof())
    v["ceil_lo"] = f"{min(r['fraction'] for r in ceil):.0%}"
    v["ceil_hi"] = f"{max(r['fraction'] for r in ceil):.0%}"
    v["span"] = f"{max(r['ceiling'] for r in ceil) / min(r['ceiling'] for r in ceil):.1f}"
    params = results.load("patch_sweep")["parameters"]
    v["sweep_size"] = str(params["size"])
    v["check_shapes"] = " and ".join(
        f"{m}³" if m == n == k else f"{m} × {n} × {k}" for m, n, k in params["check_shapes"])
    if p8["tflops"] >= p4["tflops"]:
        v["p8_story"] = (f"The 8 × 8 patch wins. It keeps {p8['warps_per_sm']} warps per SM "
                         f"against patch4's {p4['warps_per_sm']}, and that is enough: each "
                         f"warp's loop is {rows['patch8']['share']:.2f} FFMA (patch4: "
                         f"{rows['patch4']['share']:.2f}), and its 64 independent accumulators "
                         "cover the shared-load latency inside the warp")
    else:
        v["p8_story"] = (f"The 8 × 8 patch loses. Its registers leave it {p8['warps_per_sm']} "
                         f"warps per SM against patch4's {p4['warps_per_sm']}, too few to "
                         "cover the latency of its shared loads and barriers, whatever its "
                         "loop's FFMA share")
    return v
