"""Section 'Measured': the ladder against its predictions, a measurement here, the tuning sweep,
the size curve, the price of padding, and Nsight Compute's counts for ``tc_fp16``.
"""
from __future__ import annotations

import numpy as np

from lab import bench, device, page, plots, results
from lab.chapters.ch5.common import LADDER, ladder, machine
from lab.chapters.ch5.s8_fed import prediction_rows
from lab.kernels import runnable


ORDINALS = ("largest", "second largest", "third largest", "fourth largest", "fifth largest",
            "sixth largest")


def ladder_rows() -> list[dict]:
    """The ladder at 4096³ with the prediction beside each measured rung."""
    pred = {r["kernel"]: r["predicted"] for r in prediction_rows()}
    rows = []
    for name, r in ladder().items():
        p = pred.get(name)
        rows.append({"kernel": name, "us": r["median_ms"] * 1e3, "tflops": r["tflops"],
                     "predicted": p, "of_pred": r["tflops"] / p if p else None,
                     "pct": 100 * r["ratio_to_cublas_fp16"]})
    return rows


def ladder_table():
    """The whole ladder and cuBLAS at 4096³, measured against predicted."""
    return page.table(ladder_rows(), ["kernel", "us", "tflops", "predicted", "of_pred", "pct"],
                      {"us": "median (µs)", "tflops": "TFLOP/s",
                       "predicted": "predicted (TFLOP/s)", "of_pred": "measured / predicted",
                       "pct": "% cuBLAS FP16"},
                      source=results.source_line("tensor_cores"))


def ladder_figure():
    """Measured TFLOP/s of each rung beside its prediction, cuBLAS FP16 as a line."""
    rows = [r for r in ladder_rows() if r["kernel"] in LADDER]
    lad = ladder()
    fig, ax = plots.axes("", "rung", "TFLOP/s (4096³)", size=(7.0, 3.8))
    xs = np.arange(len(rows))
    ax.bar(xs - 0.2, [r["predicted"] for r in rows], width=0.4, label="predicted (model)",
           facecolor="none", edgecolor="C0", hatch="//")
    ax.bar(xs + 0.2, [r["tflops"] for r in rows], width=0.4, label="measured", color="C0")
    ax.axhline(lad["cublas_fp16"]["tflops"], color="C3", linestyle=":", linewidth=1.5,
               label="cuBLAS FP16 (measured)")
    ax.set_xticks(xs, [r["kernel"] for r in rows], rotation=25, ha="right", fontsize=8)
    ax.grid(True, axis="x", alpha=0)
    return plots.finish(fig, ax)


def measure_here() -> None:
    """On a GPU: time tc_fp16 at 4096³ (10 repeats) beside the reference's row. In the
    simulator: nothing (the introduction says once what the simulator skips); on a GPU older
    than the kernel, the line naming the capability it needs."""
    ok, why = runnable("tc_fp16")
    if not ok:
        if device.GPU:
            print(f"not timed here: {why}")
        return
    here = bench.time("tc_fp16", 4096, 4096, 4096, repeats=10)
    ref = ladder(results.REFERENCE_GPU)["tc_fp16"]
    name = page.gpu_label(device.provenance()["gpu"] or "this GPU")
    print(f"{name} (now): tc_fp16 at 4096³ {here['tflops']:.0f} TFLOP/s "
          f"({here['median_ms'] * 1e3:.0f} µs, median of 10); "
          f"H200 (reference): {ref['tflops']:.0f} TFLOP/s")


#: The centre of tools/tune_tc.py's sweep; each other row changes one thing from it.
TUNE_CENTRE = {"bm": 128, "bn": 128, "bk": 32, "wm": 64, "wn": 64, "stages": 4, "swizzle": True,
               "group_m": 8}


def tune_change(row: dict) -> str:
    """What a tc_tune row changes from :data:`TUNE_CENTRE`, in a few words."""
    c = TUNE_CENTRE
    parts = []
    if (row["bm"], row["bn"]) != (c["bm"], c["bn"]):
        parts.append(f"block {row['bm']}×{row['bn']}")
    if (row["wm"], row["wn"]) != (c["wm"], c["wn"]):
        parts.append(f"warp {row['wm']}×{row['wn']}")
    if row["bk"] != c["bk"]:
        parts.append(f"k-slice {row['bk']}")
    if row["stages"] != c["stages"]:
        parts.append(f"{row['stages']} stages")
    if row["swizzle"] != c["swizzle"]:
        parts.append("swizzle " + ("on" if row["swizzle"] else "off"))
    if row["group_m"] != c["group_m"]:
        parts.append(f"groups of {row['group_m']}")
    return ", ".join(parts) or "none (the centre)"


def tune_table():
    """tools/tune_tc.py's sweep: one change at a time around :data:`TUNE_CENTRE`."""
    rows = sorted(map(dict, results.rows("tc_tune")), key=lambda r: (r["varies"] != "reference",
                                                          r["varies"], -r["tflops"]))
    for r in rows:
        r["pct"] = 100 * r["vs_cublas"]
        r["change"] = "cuBLAS FP16" if r["varies"] == "reference" else tune_change(r)
    c = TUNE_CENTRE
    return page.table(rows, ["varies", "change", "regs", "blocks_per_sm", "tflops", "pct"],
                      {"varies": "what varies", "change": "change from the centre",
                       "regs": "registers", "blocks_per_sm": "blocks/SM", "tflops": "TFLOP/s",
                       "pct": "% cuBLAS FP16"},
                      title=(f"centre: {c['bm']}×{c['bn']}×{c['bk']} block tiles, "
                             f"{c['wm']}×{c['wn']} warp tiles, {c['stages']} stages, swizzle on, "
                             f"groups of {c['group_m']} block-rows"),
                      source=results.source_line("tc_tune"))


def _sizes() -> dict:
    out: dict = {}
    for r in results.rows("tensor_cores", part="size"):
        out.setdefault(r["m"], {})[r["kernel"]] = r
    return out


def size_table():
    """tc_fp16 against cuBLAS FP16 over square sizes."""
    rows = [{"n": n, "ours": by["tc_fp16"]["tflops"], "cublas": by["cublas_fp16"]["tflops"],
             "pct": 100 * by["tc_fp16"]["tflops"] / by["cublas_fp16"]["tflops"]}
            for n, by in sorted(_sizes().items())]
    return page.table(rows, ["n", "ours", "cublas", "pct"],
                      {"n": "n", "ours": "tc_fp16 (TFLOP/s)",
                       "cublas": "cuBLAS FP16 (TFLOP/s)", "pct": "% cuBLAS FP16"},
                      source=results.source_line("tensor_cores"))


def size_figure():
    """TFLOP/s over n for tc_fp16 and cuBLAS FP16."""
    sizes = _sizes()
    ns = sorted(sizes)
    fig, ax = plots.axes("", "n (M = N = K)", "TFLOP/s", logx=True, logy=True)
    ax.plot(ns, [sizes[n]["tc_fp16"]["tflops"] for n in ns], label="ours (tc_fp16)", **plots.OURS)
    ax.plot(ns, [sizes[n]["cublas_fp16"]["tflops"] for n in ns], label="cuBLAS FP16",
            **plots.LIBRARY)
    return plots.finish(fig, ax)


def padding_table():
    """tc_fp16 at 4097³: the whole call, the padding copy alone, the kernel alone, cuBLAS."""
    rows = [dict(r) for r in results.rows("tensor_cores", part="padding")]
    for r in rows:
        r["padded"] = "×".join(map(str, r["padded_to"])) if r.get("padded_to") else "-"
        r["us"] = r["median_ms"] * 1e3
    return page.table(rows, ["kernel", "what", "padded", "us", "tflops"],
                      {"padded": "padded to", "us": "median (µs)",
                       "tflops": "TFLOP/s (4097³ FLOPs)"},
                      source=results.source_line("tensor_cores"))


def _ordinal(value: float, values) -> str:
    return ORDINALS[sorted(values, reverse=True).index(value)]


def profile_values() -> dict:
    """What Nsight Compute counted for ``tc_fp16`` at 4096³ (``hopper_profile``), and its ratio
    to cuBLAS FP16 as the median of that experiment's separate processes."""
    prof = results.by("hopper_profile", part="profile")["tc_fp16"]
    head = results.by("hopper_profile", part="summary", m=4096)
    tc = head["tc_fp16"]
    n = prof["m"]
    model_bytes = 2.0 * n ** 3 / ladder()["tc_fp16"]["intensity"]   # the tile loads, as counted
    return {"prof_model_gb": f"{model_bytes / 1e9:.2f}",
            "prof_l2_to_sm_gb": f"{prof['l2_to_sm_bytes'] / 1e9:.2f}",
            "prof_dram_gb": f"{prof['dram_read_bytes'] / 1e9:.2f}",
            "prof_dram_share": f"{prof['dram_read_bytes'] / prof['l2_to_sm_bytes']:.0%}",
            "prof_l2_hit": f"{prof['l2_hit_pct']:.0f}%",
            "prof_tensor_active": f"{prof['tensor_active_pct']:.0f}%",
            "prof_top_stall": next(iter(prof["stalls"])),
            "tc_head_ratio": f"{tc['ratio_to_cublas']:.3f}",
            "tc_head_lo": f"{tc['ratio_min']:.3f}", "tc_head_hi": f"{tc['ratio_max']:.3f}",
            "tc_head_processes": str(tc["processes"])}


def values() -> dict:
    """The numbers the section's prose quotes: each step's gain, how close each rung came to
    its prediction, the sweep, the size curve, padding, and the profile (:func:`profile_values`)."""
    lad = ladder()
    pred = {r["kernel"]: r for r in prediction_rows()}
    steps = {b: lad[b]["tflops"] / lad[a]["tflops"] for a, b in zip(LADDER, LADDER[1:])}
    of_pred = {k: lad[k]["tflops"] / pred[k]["predicted"] for k in LADDER}
    under = {k: v for k, v in of_pred.items() if v <= 1}
    closest = max(under, key=under.get)
    largest = max(steps, key=steps.get)
    tune = results.rows("tc_tune")
    two = [r["tflops"] for r in tune if r["varies"] == "depth, stages" and r["blocks_per_sm"] == 2]
    one = [r for r in tune if r["varies"] == "depth, stages" and r["blocks_per_sm"] == 1]
    order = [r["tflops"] for r in tune if r["varies"] == "block order"]
    no_swz = next(r for r in tune if r["varies"] == "swizzle")
    sizes = _sizes()
    ratios = [by["tc_fp16"]["tflops"] / by["cublas_fp16"]["tflops"] for by in sizes.values()]
    pad = {r["what"]: r for r in results.rows("tensor_cores", part="padding")}
    whole = next(r for w, r in pad.items() if w.startswith("whole"))
    copy = next(r for w, r in pad.items() if w.startswith("padding"))
    theirs = next(r for r in pad.values() if r["kernel"] == "cublas_fp16")
    l2 = machine()["l2_bytes"]
    return {
        "smem_gain": f"{steps['tc_smem']:.1f}",
        "pipeline_gain": f"{steps['tc_pipeline'] - 1:.0%}",
        "swizzle_gain": f"{steps['tc_swizzle']:.1f}",
        "swizzle_rank": _ordinal(steps["tc_swizzle"], steps.values()),
        "largest_step": largest, "largest_gain": f"{steps[largest]:.1f}",
        "fp16_gain": f"{steps['tc_fp16'] - 1:.0%}",
        "closest_rung": closest, "closest_of_pred": f"{of_pred[closest]:.0%}",
        "fp16_hbm_over": f"{lad['tc_fp16']['tflops'] / pred['tc_fp16']['hbm']:.2f}",
        "swizzle_hbm_over": f"{lad['tc_swizzle']['tflops'] / pred['tc_swizzle']['hbm']:.2f}",
        "operands_mib": f"{2 * 4096 * 4096 * 2 / 2**20:.0f}",
        "l2_mib": f"{l2 / 2**20:.0f}" if l2 else "-",
        "tc_smem_tflops": f"{lad['tc_smem']['tflops']:.0f}",
        "tc_smem_of_pred": f"{of_pred['tc_smem']:.0%}",
        "tc_warp64_tflops": f"{lad['tc_warp64']['tflops']:.0f}",
        "tc_warp64_of_pred": f"{of_pred['tc_warp64']:.0%}",
        "tc_pipeline_tflops": f"{lad['tc_pipeline']['tflops']:.0f}",
        "tc_pipeline_of_pred": f"{of_pred['tc_pipeline']:.0%}",
        "tc_swizzle_tflops": f"{lad['tc_swizzle']['tflops']:.0f}",
        "tc_swizzle_of_pred": f"{of_pred['tc_swizzle']:.0%}",
        "tc_fp16_tflops": f"{lad['tc_fp16']['tflops']:.0f}",
        "tune_two_low": f"{min(two):.0f}", "tune_two_high": f"{max(two):.0f}",
        "tune_one": ", ".join(f"{r['tflops']:.0f}" for r in one),
        "tune_order_low": f"{min(order):.0f}", "tune_order_high": f"{max(order):.0f}",
        "tune_noswz": f"{no_swz['tflops']:.0f}",
        "size_pct_low": f"{min(ratios):.0%}", "size_pct_high": f"{max(ratios):.0%}",
        "size_checked_max": str(max(n for n, by in sizes.items()
                                    if by["tc_fp16"].get("rel_frobenius") is not None)),
        "pad_ms": f"{copy['median_ms'] * 1e3:.0f}",
        "pad_share": f"{copy['median_ms'] / whole['median_ms']:.0%}",
        "pad_vs_cublas": f"{theirs['median_ms'] / whole['median_ms']:.1f}",
        **profile_values(),
    }
