"""Measured, side by side: every provider at 4096³, 4097³ and 8192³ in one run, and the
numbers the prose quotes from it."""
from __future__ import annotations

import numpy as np

from lab import page, plots, results
from lab.chapters.ch9.common import (FP16, FP32, SIZES, pct,
                                    short_kernel_name)

def library_rows(data: dict | None = None) -> list[dict]:
    """The timed rows of the libraries run, in the chapter's provider order, by size."""
    data = data or results.load("libraries")
    timed = {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "time"}
    out = []
    for n in SIZES:
        for name in FP16 + FP32:
            r = timed.get((name, n))
            if r is None:
                continue
            out.append({"n": n, "provider": name, "layer": r["layer"],
                        "types": f"{r['dtype']} → {r['out_dtype']}",
                        "us": r["median_ms"] * 1e3,
                        "spread": f"{r['min_ms'] * 1e3:.0f}–{r['max_ms'] * 1e3:.0f}",
                        "tflops": r["tflops"], "ratio": r.get("ratio_to_cublas"),
                        "path": r.get("path", "")})
    return out


def library_table():
    """Every provider, one row each: TFLOP/s at each size and the ratio to cuBLAS with the same
    inputs (FP32 out) at 4096³ and 4097³; the median times, spreads and types are in the
    results file."""
    data = results.load("libraries")
    by = {(r["provider"], r["n"]): r for r in library_rows(data)}
    rows = []
    for name in FP16 + FP32:
        if not any((name, n) in by for n in SIZES):
            continue
        row = {"provider": name}
        for n in SIZES:
            r = by.get((name, n))
            row[f"t{n}"] = r["tflops"] if r else None
            row[f"x{n}"] = r["ratio"] if r else None
        rows.append(row)
    return page.table(rows, ["provider", "t4096", "x4096", "t4097", "x4097", "t8192"],
                      {"t4096": "4096³ (TFLOP/s)", "x4096": "× cuBLAS",
                       "t4097": "4097³ (TFLOP/s)", "x4097": "× cuBLAS",
                       "t8192": "8192³ (TFLOP/s)"},
                      title="× cuBLAS: against cuBLAS with the same inputs and FP32 out",
                      source=results.source_line("libraries"))


def library_figure():
    """TFLOP/s of every provider at 4096³, 4097³ and 8192³ (bars, log scale), FP16 left of
    FP32, one colour per layer."""
    data = results.load("libraries")
    rows = library_rows(data)
    names = [n for n in FP16 + FP32 if any(r["provider"] == n for r in rows)]
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig, ax = plots.axes("", "provider", "TFLOP/s (log scale)", logy=True, size=(8.0, 4.0))
    xs = np.arange(len(names))
    colours = {"ours": "C0", "cuBLAS": "C3", "cuBLASLt": "C1", "Triton": "C2"}
    markers = ("o", "x", "s")
    for i, n in enumerate(SIZES):
        by = {r["provider"]: r for r in rows if r["n"] == n}
        shown = [j for j, p in enumerate(names) if p in by]
        ax.scatter([xs[j] + (i - 1) * 0.18 for j in shown],
                   [by[names[j]]["tflops"] for j in shown], marker=markers[i], s=36,
                   color=[colours.get(by[names[j]]["layer"], "C7") for j in shown],
                   label=f"{n}³")
    ticks = [t for t in (10, 20, 50, 100, 200, 500, 1000)
             if min(r["tflops"] for r in rows) / 2 <= t <= max(r["tflops"] for r in rows) * 2]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xticks(xs, names, rotation=30, ha="right", fontsize=9)
    ax.grid(True, axis="x", alpha=0)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], linestyle="none", marker=m, color="0.2", label=f"{n}³")
               for m, n in zip(markers, SIZES)]
    handles += [Line2D([], [], linestyle="none", marker="o", color=c, label=layer)
                for layer, c in colours.items()]
    ax.legend(handles=handles, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
    fig.tight_layout()
    return fig


def _same_kernels(k: dict, a: str, b: str) -> str:
    """The sizes at which providers ``a`` and ``b`` launched the same kernel(s), in words."""
    same = [n for n in SIZES if (a, n) in k and (b, n) in k
            and k[(a, n)]["launched"] and k[(a, n)]["launched"] == k[(b, n)]["launched"]]
    if len(same) == len(SIZES):
        return "the same kernel at every size"
    if not same:
        return "different kernels at every size"
    return "the same kernel at " + ", ".join(f"{n}³" for n in same) + " only"


def values(data: dict | None = None) -> dict:
    """The numbers the prose quotes from the libraries run, as strings."""
    data = data or results.load("libraries")
    t = {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "time"}
    k = {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "kernels"}

    def rate(name, n):
        r = t.get((name, n))
        if r is None:
            return "—"
        return f"{r['tflops']:.0f}" if r["tflops"] >= 100 else f"{r['tflops']:.1f}"

    def ratio(a, b, n, fmt=pct):
        if (a, n) in t and (b, n) in t:
            return fmt(t[(a, n)]["tflops"] / t[(b, n)]["tflops"])
        return "—"

    def keeps(name):  # the share of its 4096³ rate a provider keeps at 4097³
        if (name, 4097) in t and (name, 4096) in t:
            return pct(t[(name, 4097)]["tflops"] / t[(name, 4096)]["tflops"])
        return "—"

    def kernel(name, n):
        r = k.get((name, n))
        return short_kernel_name(r["launched"][0]) if r and r["launched"] else "—"

    def times(x):
        return f"{x:.2f}×"

    # the rows chapter 6 measured too (shapes.json), as the largest relative difference
    try:
        align = {(r["kernel"], r["m"]): r["tflops"]
                 for r in results.rows("shapes", part="alignment")}
        diffs = [abs(t[key]["tflops"] / align[key] - 1) for key in align if key in t]
        repeat = pct(max(diffs)) if diffs else "—"
    except results.ResultsMissing:
        repeat = "—"
    out16 = [abs(t[("cublas_fp16_out16", n)]["tflops"] / t[("cublas_fp16", n)]["tflops"] - 1)
             for n in SIZES if ("cublas_fp16_out16", n) in t and ("cublas_fp16", n) in t]
    lt32 = [abs(t[("cublaslt_fp32", n)]["tflops"] / t[("cublas_fp32", n)]["tflops"] - 1)
            for n in SIZES if ("cublaslt_fp32", n) in t and ("cublas_fp32", n) in t]
    skipped = data["parameters"].get("skipped") or {}
    return {"the_gpu": page.gpu_label(data["provenance"]["gpu"]),
            "tc_4096": rate("tc_fp16", 4096), "cublas16_4096": rate("cublas_fp16", 4096),
            "triton_4096": rate("triton_fp16", 4096),
            "triton_4097": rate("triton_fp16", 4097), "cublas_4097": rate("cublas_fp16", 4097),
            "tc_4097": rate("tc_fp16", 4097),
            "triton_of_cublas_4096": ratio("triton_fp16", "cublas_fp16", 4096),
            "triton_of_cublas_4097": ratio("triton_fp16", "cublas_fp16", 4097),
            "lt_vs_cublas_out16": ratio("cublaslt_fp16", "cublas_fp16_out16", 4096),
            "lt_kernel_4096": kernel("cublaslt_fp16", 4096),
            "triton_kept_4096": (t[("triton_fp16", 4096)]["path"]
                                 if ("triton_fp16", 4096) in t else "—"),
            "skipped_providers": ("; ".join(f"{name} ({why})" for name, why in skipped.items())
                        if skipped else "none — every provider passed its checks and ran "
                                        "at every size"),
            "repeat_max_diff": repeat,
            "lt_vs_cublas_out16_4097": ratio("cublaslt_fp16", "cublas_fp16_out16", 4097),
            "lt_vs_cublas_out16_8192": ratio("cublaslt_fp16", "cublas_fp16_out16", 8192),
            "lt_same_kernel": _same_kernels(k, "cublaslt_fp16", "cublas_fp16_out16"),
            "out16_max_change": pct(max(out16)) if out16 else "—",
            "triton_over_tc_4096": ratio("triton_fp16", "tc_fp16", 4096, times),
            "tc_8192": rate("tc_fp16", 8192), "cublas_8192": rate("cublas_fp16", 8192),
            "triton_8192": rate("triton_fp16", 8192),
            "triton_of_cublas_8192": ratio("triton_fp16", "cublas_fp16", 8192),
            "tc_of_cublas_8192": ratio("tc_fp16", "cublas_fp16", 8192),
            "triton_keeps": keeps("triton_fp16"), "cublas_keeps": keeps("cublas_fp16"),
            "tc_keeps": keeps("tc_fp16"),
            "tc_of_cublas_4097": ratio("tc_fp16", "cublas_fp16", 4097),
            "tc_over_triton_4097": ratio("tc_fp16", "triton_fp16", 4097, times),
            "cublas_kernel_4096": kernel("cublas_fp16", 4096),
            "cublas_kernel_8192": kernel("cublas_fp16", 8192),
            "cublas_kernel_4097": kernel("cublas_fp16", 4097),
            "triton_kept_4097": (t[("triton_fp16", 4097)]["path"]
                                 if ("triton_fp16", 4097) in t else "—"),
            "warptile_8192": rate("warptile_tuned", 8192),
            "cublas_fp32_keeps": keeps("cublas_fp32"),
            "cublas_fp32_kernel_4096": kernel("cublas_fp32", 4096),
            "lt_fp32_kernel_4096": kernel("cublaslt_fp32", 4096),
            "lt_fp32_vs_cublas_max": pct(max(lt32)) if lt32 else "—",
            "lt_fp32_same_kernel": _same_kernels(k, "cublaslt_fp32", "cublas_fp32")}
