"""Chapter 4, section 4: the predictions written before each rung, and the ladder measured against
them, 1024³ to 8192³.
"""
from __future__ import annotations

from lab import page, results


#: Predictions written before the first GPU run: (rung, previous rung or None, low, high,
#: unit). For the first rung the range is its share of cuBLAS; after that, the gain in time.
PREDICTIONS = (("block128", None, 30, 40, "% of cuBLAS"),
               ("vectorized", "block128", 55, 65, "% of cuBLAS"),
               ("vectorized_spread", "vectorized", 0, 5, "% gain"),
               ("pipelined", "vectorized_spread", 5, 15, "% gain"),
               ("warptile", "pipelined", 0, 10, "% gain"),
               ("warptile_tuned", "warptile", 0, 10, "% gain"))


#: The kernels of the size figure and table.
CURVES = ("warptile_tuned", "warptile", "pipelined", "vectorized", "block128", "patch4")


def ladder(gpu: str | None = None) -> list[dict]:
    """The ``ladder`` rows of ``fp32_ladder`` (selected GPU unless ``gpu`` names one)."""
    kw = {"gpu": gpu} if gpu else {}
    return results.rows("fp32_ladder", part="ladder", **kw)


def at_size(n: int = 4096, gpu: str | None = None) -> dict:
    """Our kernels' ladder rows at n³, by kernel."""
    return results.Keyed([r for r in ladder(gpu) if r["n"] == n and r["kernel"] != "cublas_fp32"],
                         "kernel", f"fp32_ladder.json (part='ladder', n={n})")


def cublas_mean(n: int = 4096) -> float:
    """cuBLAS FP32 at n³: the mean of its runs before and after the rungs."""
    runs = [r["tflops"] for r in ladder() if r["kernel"] == "cublas_fp32" and r["n"] == n]
    return sum(runs) / len(runs)


def ladder_table():
    """Every rung at 4096³: median, min, max, TFLOP/s and share of cuBLAS."""
    rows = list(at_size().values())
    return page.table(rows, ["kernel", "chapter", "median_ms", "min_ms", "max_ms", "tflops",
                             "pct_cublas"],
                      {"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)",
                       "tflops": "TFLOP/s", "pct_cublas": "% cuBLAS"},
                      source=results.source_line("fp32_ladder"))


def prediction_rows() -> list[dict]:
    """Each rung against the prediction written before it was measured."""
    at, rows = at_size(), []
    for name, prev, lo, hi, unit in PREDICTIONS:
        r = at[name]
        gain = 100 * (r["tflops"] / at[prev]["tflops"] - 1) if prev else None
        value = r["pct_cublas"] if prev is None or unit == "% of cuBLAS" else gain
        rows.append({"rung": name, "pct": r["pct_cublas"], "gain": gain,
                     "predicted": f"{lo}–{hi} {unit}",
                     "verdict": "within" if lo <= value <= hi else
                     ("above" if value > hi else "below")})
    return rows


def prediction_table():
    """:func:`prediction_rows` as a table."""
    return page.table(prediction_rows(), ["rung", "pct", "gain", "predicted", "verdict"],
                      {"pct": "% cuBLAS", "gain": "gain (%)"},
                      source=results.source_line("fp32_ladder"))


def size_figure():
    """TFLOP/s against n for the rungs and cuBLAS FP32 (mean of its runs at each size)."""
    from lab import plots

    rows = ladder()
    fig, ax = plots.axes("", "n (square n³ product)", "TFLOP/s", logx=True)
    for name in ("cublas_fp32",) + CURVES:
        pts: dict[int, list[float]] = {}
        for r in rows:
            if r["kernel"] == name:
                pts.setdefault(r["n"], []).append(r["tflops"])
        xy = sorted((n, sum(v) / len(v)) for n, v in pts.items())
        if xy:
            style = plots.LIBRARY if name.startswith("cublas") else plots.OURS
            ax.plot([p[0] for p in xy], [p[1] for p in xy],
                    label="cuBLAS FP32" if name == "cublas_fp32" else name, **style)
    sizes = sorted({r["n"] for r in rows})
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_ylim(bottom=0)
    return plots.finish(fig, ax)


def size_table():
    """Share of cuBLAS FP32 by size for the chapter's rungs."""
    rows = []
    for n in sorted({r["n"] for r in ladder()}):
        at = at_size(n)
        row = {"n": n, "cublas": cublas_mean(n)}
        for name in ("block128", "vectorized", "pipelined", "warptile", "warptile_tuned"):
            row[name] = at[name]["pct_cublas"] if name in at else None
        rows.append(row)
    return page.table(rows, ["n", "cublas", "block128", "vectorized", "pipelined", "warptile",
                             "warptile_tuned"],
                      {"cublas": "cuBLAS TFLOP/s"},
                      title="% of cuBLAS FP32 at n³",
                      source=results.source_line("fp32_ladder"))
