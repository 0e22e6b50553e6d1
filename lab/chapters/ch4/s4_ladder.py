"""Chapter 4, section 4: the predictions written before each rung, and the ladder measured against
them, 1024³ to 8192³.
"""
from __future__ import annotations

from lab import model, page, results
from lab.chapters.ch4.s3_compiler import compiler_rows
from lab.chapters.ch4.s1_kernel import config


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
                      {"pct": "% cuBLAS", "gain": "gain (%)"})


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


#: The goal: this share of cuBLAS FP32 at 4096³.
GOAL = 0.80


#: The whole ladder's predicted share of cuBLAS at ``warptile``.
PREDICTED_TOTAL = (75, 90)


def gpu_name() -> str:
    """The measured GPU's short name, from the ladder file's provenance."""
    return page.gpu_label(results.load("fp32_ladder")["provenance"]["gpu"])


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    at = at_size()
    comp = {r["kernel"]: r for r in compiler_rows()}
    b128, vec = comp["block128"], comp["vectorized"]
    tuned, edges = comp["warptile_tuned"], comp["warptile_tuned (edges)"]
    v = {}
    v["the_gpu"] = gpu_name()
    v["goal"] = f"{GOAL:.0%}"
    v["lds_per_k_b128"] = f"{b128['lds_count'] / (b128['ffma'] / 64):g}"
    v["lds_per_k_vec"] = f"{vec['lds_count'] / (vec['ffma'] / 64):g}"
    v["tuned_warps"], v["tuned_blocks"] = str(tuned["warps"]), str(tuned["blocks"])
    v["tuned_threads"] = str(config("warptile_tuned").threads)
    v["pred_total"] = f"{PREDICTED_TOTAL[0]}–{PREDICTED_TOTAL[1]}%"
    got = {row["rung"]: row for row in prediction_rows()}
    v["pct_block128"] = f"{got['block128']['pct']:.1f}%"
    v["verdict_block128"] = got["block128"]["verdict"]
    v["verdict_vectorized"] = got["vectorized"]["verdict"]
    v["gain_vectorized_spread"] = f"{got['vectorized_spread']['gain']:+.1f}%"
    v["verdict_vectorized_spread"] = got["vectorized_spread"]["verdict"]
    v["gain_pipelined"] = f"{got['pipelined']['gain']:+.1f}%"
    v["verdict_pipelined"] = got["pipelined"]["verdict"]
    v["gain_warptile"] = f"{got['warptile']['gain']:+.1f}%"
    v["verdict_warptile"] = got["warptile"]["verdict"]
    v["gain_warptile_tuned"] = f"{got['warptile_tuned']['gain']:+.1f}%"
    v["x_vectorized"] = f"{at['vectorized']['tflops'] / at['block128']['tflops']:.1f}"
    best = max(at.values(), key=lambda r: r["tflops"])
    v["best_kernel"], v["best_tflops"] = best["kernel"], f"{best['tflops']:.1f}"
    v["best_pct"] = f"{best['pct_cublas']:.1f}%"
    v["best_verdict"] = "reaches" if best["pct_cublas"] >= 100 * GOAL else "falls short of"
    v["ref_ours_best_pct"] = v["best_pct"]
    tuned = {n: at_size(n).get("warptile_tuned") for n in (1024, 2048, 4096, 8192)}
    v["tuned_pct_1024"] = f"{tuned[1024]['pct_cublas']:.0f}%" if tuned[1024] else "-"
    v["tuned_pct_2048"] = f"{tuned[2048]['pct_cublas']:.0f}%" if tuned[2048] else "-"
    v["tuned_pct_4096"] = f"{tuned[4096]['pct_cublas']:.0f}%" if tuned[4096] else "-"
    v["tuned_pct_8192"] = f"{tuned[8192]['pct_cublas']:.0f}%" if tuned[8192] else "-"
    tcfg = config("warptile_tuned")
    v["tuned_tile"] = f"{tcfg.BM} × {tcfg.BN}"
    v["tiles_1024"] = str(model.tile_grid(1024, 1024, tcfg.BM, tcfg.BN))
    v["the_sm_count"] = str(results.load("fp32_ladder")["provenance"]["sm_count"])
    return v
