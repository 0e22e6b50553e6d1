"""Accuracy: the tensor cores' FP8 accumulation, with and without promotion, predicted by the
NumPy model and measured."""
from __future__ import annotations

import numpy as np

from lab import fp8, page, results
from lab.chapters.ch7b.common import (EXPERIMENT, MISSING, MODES, OUTLIER_SCALE,
                                     PREDICT_KS, PREDICT_MN, accuracy)


def predicted_rows(seed: int = 3) -> list[dict]:
    """The model's prediction (:func:`lab.fp8.emulate`, 13 bits kept) of the error against
    the dequantised inputs, before any measurement: tensor cores only against promotion every
    128 k, at a few depths, on normal data."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in PREDICT_KS:
        a = rng.standard_normal((PREDICT_MN, k))
        bt = rng.standard_normal((PREDICT_MN, k))
        qa, sa = fp8.quantize(a)
        qb, sb = fp8.quantize(bt)
        ref = fp8.reference(qa, qb, sa, sb)
        row = {"k": k}
        for label, promote in (("tensor cores only", 0), ("promote every 128", 128)):
            out = fp8.emulate(qa, qb, sa, sb, promote=promote)
            row[label] = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        row["ratio"] = row["tensor cores only"] / row["promote every 128"]
        rows.append(row)
    return rows


def predicted_table():
    return page.table(predicted_rows(), digits=3)


def accuracy_rows(dataset: str = "normal") -> list[dict]:
    table = accuracy(results.load(EXPERIMENT), dataset)
    ks = sorted({k for _, k in table})
    return [{"accumulation": mode, **{f"K={k}": table.get((mode, k)) for k in ks}}
            for mode in MODES if any((mode, k) in table for k in ks)]


def accuracy_table(dataset: str = "normal"):
    return page.table(accuracy_rows(dataset), digits=2, source=results.source_line(EXPERIMENT),
                      title=f"relative error (Frobenius) against float64 of the dequantised "
                            f"inputs, {dataset} data")


def accuracy_figure():
    import matplotlib.pyplot as plt

    data = results.load(EXPERIMENT)
    fig, axs = plt.subplots(1, 2, figsize=(6.25, 4.2), dpi=110, sharey=True)
    for ax, dataset in zip(axs, ("normal", "outliers")):
        table = accuracy(data, dataset)
        for mode in MODES:
            ks = sorted(k for m, k in table if m == mode)
            if ks:
                ax.loglog(ks, [table[(mode, k)] for k in ks], "o-" if "cuBLAS" not in mode
                          else "x--", label=mode, base=2, markersize=4)
        ax.set_title(f"{dataset} data", fontsize=9)
        ax.set_xlabel("K", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(True, which="both", alpha=0.25)
    axs[0].set_ylabel("relative error (Frobenius)", fontsize=8)
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.22, 1, 1))      # the legend below both panels
    return page.figure(fig)


def values() -> dict:
    """The numbers the accuracy section quotes: the model's prediction, the measured error at
    the smallest and largest K for each mode, on normal and outlier-heavy data."""
    data = results.load(EXPERIMENT)
    v = {"accuracy_mn": f"{data.get('parameters', {}).get('accuracy_mn', MISSING)}",
         "outlier_binades": f"{np.log2(OUTLIER_SCALE):.1f}"}
    pred = predicted_rows()
    v["pred_ratio_kmax"] = f"{pred[-1]['ratio']:.0f}"
    v["pred_k_max"] = f"{pred[-1]['k']}"
    acc = accuracy(data, "normal")
    out = accuracy(data, "outliers")
    ks = sorted({k for _, k in acc})
    if not ks:
        return v
    first, last = ks[0], ks[-1]
    v["k_max"], v["k_min"] = f"{last}", f"{first}"
    picks = {"err_tc_kmin": (acc, "tensor cores only", first),
             "err_tc_kmax": (acc, "tensor cores only", last),
             "err_p128_kmax": (acc, "promote every 128", last),
             "err_p512_kmax": (acc, "promote every 512", last),
             "err_bf16_kmax": (acc, "BF16", last),
             "err_tc_kmax_outliers": (out, "tensor cores only", last),
             "err_p128_kmax_outliers": (out, "promote every 128", last),
             "err_block_kmax_outliers": (out, "block scales, promote every 128", last)}
    v.update({name: f"{table[(mode, k)]:.1e}" for name, (table, mode, k) in picks.items()})
    v["tc_over_p128_kmax"] = (
        f"{acc[('tensor cores only', last)] / acc[('promote every 128', last)]:.0f}")
    same = max(abs(acc[("cuBLASLt", k)] - acc[("promote every 128", k)]) for k in ks)
    v["cublas_vs_p128_max_diff"] = f"{same:.1e}"
    fast = {k: acc[("cuBLASLt fast accumulation", k)] / acc[("tensor cores only", k)]
            for k in ks}
    v["fast_over_tc_kmax"] = f"{fast[last]:.2f}"
    v["fast_equal_below"] = f"{max([k for k in ks if fast[k] == 1.0] or [0])}"
    return v
