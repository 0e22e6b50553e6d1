"""Section 3, the whole sweep: ``lab.gemm`` over cuBLAS at every shape, as called and GPU-only."""
from __future__ import annotations

from lab import page, plots, results

GROUPS = (("square", "squares"), ("llm", "LLM shapes"), ("odd", "skinny and odd"))


def _label(r: dict) -> str:
    if r["group"] == "square":
        return f"{r['m']}³"
    if r["group"] == "llm":
        return f"{r['m']}·{r['n'] // 1024}k·{r['k'] // 1024}k"
    return f"{r['m']}×{r['n']}×{r['k']}"


def _key(r: dict) -> tuple:
    """A row's shape within its group: the same M×N×K can be a square and an LLM layer (4096³),
    measured as separate rows."""
    return r["group"], r["m"], r["n"], r["k"]


def sweep_figure():
    """Ratio to cuBLAS (its time / ours; above 1: ours faster) at every shape of the sweep,
    FP16 in and out, as called (events around each call of a loop) and GPU-only (graphs)."""
    import matplotlib.pyplot as plt

    ours = [r for r in results.rows("sweep") if r.get("impl") == "lab.gemm"
            and r.get("out_dtype") == "float16" and "ratio_to_cublas" in r]
    called = [r for r in ours if r["method"] == "as_called"]
    gpu = {_key(r): r["ratio_to_cublas"] for r in ours if r["method"] == "gpu_only"}
    fig = plt.figure(figsize=(8.0, 7.2), dpi=110)
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1], width_ratios=[1, 1.3])
    panels = {"llm": fig.add_subplot(grid[0, :])}
    panels["square"] = fig.add_subplot(grid[1, 0], sharey=panels["llm"])
    panels["odd"] = fig.add_subplot(grid[1, 1], sharey=panels["llm"])
    for group, title in GROUPS:
        ax = panels[group]
        rs = [r for r in called if r["group"] == group]
        xs = range(len(rs))
        ax.plot(xs, [r["ratio_to_cublas"] for r in rs], color="C0", label="as called",
                **plots.OURS)
        ax.plot(xs, [gpu[_key(r)] for r in rs], color="C1",
                label="GPU only (graphs)", **plots.LIBRARY)
        ax.axhline(1.0, color="0.3", linestyle=":", linewidth=1.2)
        ax.set_title(title, fontsize=10)
        step = 1 if len(rs) < 16 else 2
        ax.set_xticks(list(xs)[::step], [_label(r) for r in rs][::step], fontsize=7.5,
                      rotation=60, ha="right")
        ax.grid(True, alpha=0.25)
        if group != "odd":
            ax.set_ylabel("× cuBLAS (torch.mm, FP16 out)", fontsize=9)
    panels["llm"].legend(fontsize=9, loc="upper right", frameon=False)
    fig.tight_layout()
    return fig


def sweep_rows() -> list[dict]:
    """Every shape: the kernel picked, our TFLOP/s and cuBLAS's, both ratios."""
    rs = [r for r in results.rows("sweep") if r.get("out_dtype") == "float16"
          and "median_ms" in r]
    by = {(r["impl"], r["method"], *_key(r)): r for r in rs}
    out = []
    for r in rs:
        if r["impl"] != "lab.gemm" or r["method"] != "as_called":
            continue
        key = _key(r)
        out.append({"shape": _label(r), "kernel": r["kernel"] + (f" /{r['splits']}"
                                                                 if r["splits"] > 1 else ""),
                    "tflops": r["tflops"], "cublas": by[("cublas", "as_called", *key)]["tflops"],
                    "called": r["ratio_to_cublas"],
                    "gpu": by[("lab.gemm", "gpu_only", *key)]["ratio_to_cublas"]})
    return out


def sweep_table():
    return page.table(sweep_rows(), ["shape", "kernel", "tflops", "cublas", "called", "gpu"],
                      {"tflops": "TFLOP/s as called", "cublas": "cuBLAS TFLOP/s",
                       "called": "× cuBLAS as called", "gpu": "× cuBLAS GPU only"},
                      digits=3, source=results.source_line("sweep"),
                      show=lambda r: r["shape"] in ("1024³", "2048³", "4097×4097×4097",
                                                    "1·4k·4k", "128·4k·4k"))


def clock_at(n: int = 16384) -> dict:
    """The SM clock (median, MHz) and board power (mean, W) NVML reported while each side's
    as-called timing of n³ (FP16 out) ran, and the board's maximum clock."""
    rs = {r["impl"]: r for r in results.rows("sweep") if r.get("group") == "square"
          and r["m"] == n and r.get("method") == "as_called" and r.get("out_dtype") == "float16"}
    top = results.load("sweep")["provenance"].get("max_sm_clock_mhz")
    return {"ours_mhz": rs["lab.gemm"].get("sm_mhz"), "cublas_mhz": rs["cublas"].get("sm_mhz"),
            "ours_w": rs["lab.gemm"].get("power_w"), "cublas_w": rs["cublas"].get("power_w"),
            "max_mhz": float(top) if top else None}


def values() -> dict:
    rs = sweep_rows()
    c = clock_at()

    def text(v, unit):
        return "not sampled" if v is None else f"{v:.0f} {unit}"
    return {"sweep_shapes": str(len(rs)),
            "sweep_at_least_090": str(sum(r["called"] >= 0.9 for r in rs)),
            "sweep_below_090": "; ".join(f"{r['shape']} ({r['called']:.3f})"
                                         for r in rs if r["called"] < 0.9) or "none",
            "sweep_best": f"{max(r['called'] for r in rs):.2f}",
            "sweep_best_at": max(rs, key=lambda r: r["called"])["shape"],
            "sweep_clock_ours": text(c["ours_mhz"], "MHz"),
            "sweep_clock_cublas": text(c["cublas_mhz"], "MHz"),
            "sweep_power_ours": text(c["ours_w"], "W"),
            "sweep_power_cublas": text(c["cublas_w"], "W"),
            "sweep_clock_max": text(c["max_mhz"], "MHz")}
