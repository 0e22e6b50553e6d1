"""Chapter 9, the libraries: the layers above our kernels (cuBLAS, cuBLASLt, Triton, CUTLASS)
measured beside them, and the clock they all run at.

Tables and figures come from two results files of the selected GPU — ``libraries`` and
``clocks`` (:mod:`lab.experiments.libraries`, :mod:`lab.experiments.clocks`) — and the provider
registry (:mod:`lab.providers`). Every public function is one call of the notebook.

The exercises' worked solutions are the ``ex09_*`` functions at the end.
"""
from __future__ import annotations

import numpy as np

from lab import bench, clocks, libraries, page, plots, providers, results

LIBRARIES = "libraries"
CLOCKS = "clocks"
#: The providers of the chapter, in the order of the stack (FP16, then FP32).
FP16 = ("tc_fp16", "cublas_fp16", "cublas_fp16_out16", "cublaslt_fp16", "triton_fp16")
FP32 = ("warptile_tuned", "cublas_fp32", "cublaslt_fp32", "triton_fp32")
SIZES = (4096, 4097, 8192)
CHECK_SHAPES = ((1000, 1030, 999), (1024, 1024, 1024))


class _Text:
    """Plain text a checked cell shows."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


# ----------------------------------------------------------------------------- the layers

def layer_rows() -> list[dict]:
    """Every provider of the chapter: its layer, what it is, what it takes and writes."""
    out = []
    for name in FP16 + FP32:
        p = providers.get(name)
        out.append({"provider": name, "layer": p.layer, "what": p.title,
                     "in": p.dtype_name, "out": np.dtype(p.out_dtype).name})
    return out


def layer_table():
    """The chapter's providers, one face: the names ``bench.check`` and ``bench.time`` take."""
    return page.table(layer_rows(), ["provider", "layer", "what", "in", "out"],
                      {"in": "A, B", "out": "C"})


def triton_source():
    """Our Triton kernel, from lab/triton_gemm.py (read, not imported: it needs Triton)."""
    from pathlib import Path

    return page.source(Path(libraries.__file__).with_name("triton_gemm.py"), "kernel")


def check_here() -> None:
    """Check every provider of the chapter that runs here against float64 — on a GPU at an
    odd and a round shape, in the simulator at one small odd shape; those that cannot run here
    are left out (the introduction says once what the simulator skips)."""
    from lab import device

    shapes = CHECK_SHAPES if device.GPU else ((33, 17, 9),)
    for name in FP16 + FP32:
        if providers.get(name).reason() is not None:
            continue
        for shape in shapes:
            print(bench.check(name, *shape).line())


# ----------------------------------------------------------------------------- prediction

def prediction_rows() -> list[dict]:
    """What chapter 6's run predicts for this chapter's rows: our tops and cuBLAS at 4096³ and
    4097³ (``shapes`` experiment, alignment part)."""
    align = {(r["kernel"], r["m"]): r["tflops"] for r in results.rows("shapes", part="alignment")}
    return [{"provider": name, "n4096": align.get((name, 4096)),
             "n4097": align.get((name, 4097))}
            for name in ("tc_fp16", "cublas_fp16", "warptile_tuned", "cublas_fp32")]


def prediction_table():
    return page.table(prediction_rows(), ["provider", "n4096", "n4097"],
                      {"n4096": "4096³ (TFLOP/s)", "n4097": "4097³ (TFLOP/s)"},
                      source=results.source_line("shapes"))


# ----------------------------------------------------------------------------- measured

def library_rows(data: dict | None = None) -> list[dict]:
    """The timed rows of the libraries run, in the chapter's provider order, by size."""
    data = data or results.load(LIBRARIES)
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
    """Every provider at every size, one run: median µs, spread, TFLOP/s, × cuBLAS."""
    data = results.load(LIBRARIES)
    return page.table(library_rows(data),
                      ["n", "provider", "layer", "types", "us", "spread", "tflops", "ratio"],
                      show=lambda r: r["n"] == 4096, headers={"n": "n (n³)", "types": "A, B → C", "us": "median (µs)",
                       "spread": "min–max (µs)", "tflops": "TFLOP/s",
                       "ratio": "× cuBLAS (same inputs, FP32 out)"},
                      source=results.source_line(LIBRARIES))


def library_figure():
    """TFLOP/s of every provider at 4096³, 4097³ and 8192³ (bars, log scale), FP16 left of
    FP32, one colour per layer."""
    data = results.load(LIBRARIES)
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
    ax.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
    ax.grid(True, axis="x", alpha=0)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], linestyle="none", marker=m, color="0.2", label=f"{n}³")
               for m, n in zip(markers, SIZES)]
    handles += [Line2D([], [], linestyle="none", marker="o", color=c, label=layer)
                for layer, c in colours.items()]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
    fig.tight_layout()
    return fig


def heuristic_rows(data: dict | None = None) -> list[dict]:
    """Which kernel each library launched per size (the heuristics' choices)."""
    data = data or results.load(LIBRARIES)
    out = []
    for r in data["rows"]:
        if r["part"] == "kernels":
            out.append({"provider": r["kernel"], "n": r["m"],
                        "kernels": "; ".join(r["launched"]) or (r.get("error") or "?")})
    return out


def heuristic_table():
    data = results.load(LIBRARIES)
    rows = heuristic_rows(data)
    if not rows:
        return _Text("the run recorded no kernel names: " + data["parameters"]["kernel_names"])
    return page.table(rows, ["provider", "n", "kernels"], {"kernels": "kernel(s) launched"},
                      show=lambda r: r["n"] == 4096,
                      source=results.source_line(LIBRARIES))


def triton_choices() -> list[dict]:
    """The configuration Triton's autotuner kept, per precision and size."""
    data = results.load(LIBRARIES)
    return [{"provider": r["kernel"], "n": r["m"], "kept": r["path"]} for r in data["rows"]
            if r["part"] == "time" and r["kernel"].startswith("triton")]


def cutlass_line() -> str:
    """Why there is no CUTLASS DSL row: the measuring machine's answer, else this machine's."""
    why = results.load(LIBRARIES)["parameters"]["cutlass_dsl"]
    return f"CUTLASS Python DSL: not measured — {why}."


def skipped_lines() -> list[str]:
    data = results.load(LIBRARIES)
    return [f"{k}: {v}" for k, v in data["parameters"]["skipped"].items()] or [
        "every provider of the chapter ran"]


# ----------------------------------------------------------------------------- clocks

def clock_figure():
    """SM clock (top), board power (middle) and each provider's rate per chunk of calls as a
    share of its median (bottom) against time, each provider's run shaded."""
    data = results.load(CLOCKS)
    import matplotlib.pyplot as plt

    samples = [r for r in data["rows"] if r["part"] == "sample"]
    t = [r["t_s"] for r in samples]
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(8.0, 6.6), dpi=110, sharex=True)
    top.plot(t, [r["sm_mhz"] for r in samples], color="C0", linewidth=1.0, label="SM clock")
    top.axhline(data["parameters"]["max_sm_mhz"], color="C3", linestyle=":", linewidth=1.2,
                label="maximum SM clock (NVML)")
    middle.plot(t, [r["power_w"] for r in samples], color="C1", linewidth=1.0,
                label="board power")
    limit = data["parameters"].get("power_limit_w")
    if limit:
        middle.axhline(limit, color="C3", linestyle=":", linewidth=1.2, label="power limit")
    for i, ph in enumerate(data["parameters"]["phases"]):
        for ax in (top, middle, bottom):
            ax.axvspan(ph["start_s"], ph["end_s"], color=f"C{i + 2}", alpha=0.12)
        top.text((ph["start_s"] + ph["end_s"]) / 2, top.get_ylim()[0], ph["phase"],
                 ha="center", va="bottom", fontsize=8)
        chunks = [r for r in data["rows"] if r["part"] == "chunk" and r["kernel"] == ph["phase"]]
        if chunks:
            median = float(np.median([r["tflops"] for r in chunks]))
            bottom.plot([r["t_s"] for r in chunks], [r["tflops"] / median for r in chunks],
                        color=f"C{i + 2}", marker=".", linewidth=1.0, label=ph["phase"])
    top.set_ylabel("SM clock (MHz)")
    middle.set_ylabel("power (W)")
    bottom.set_ylabel("TFLOP/s ÷ median")
    bottom.set_xlabel("time (s)")
    for ax, loc in ((top, "upper right"), (middle, "center right"), (bottom, "lower right")):
        ax.grid(True, alpha=0.25)
        ax.legend(fontsize=8, loc=loc)
    fig.tight_layout()
    return fig


def roof_rows(data: dict | None = None) -> list[dict]:
    """Per provider: the sampled clock, power, temperature, rate and the roof at both clocks."""
    data = data or results.load(CLOCKS)
    out = []
    for r in data["rows"]:
        if r["part"] == "summary" and r["kernel"] != "idle":
            out.append({"provider": r["kernel"], "unit": r["unit"],
                        "mhz": r["sm_mhz_median"],
                        "mhz_range": f"{r['sm_mhz_min']:.0f}–{r['sm_mhz_max']:.0f}",
                        "watts": r["power_w_mean"], "temp": r["temp_c_max"],
                        "tflops": r["tflops"], "roof_boost": r["roof_boost_tflops"],
                        "roof_sampled": r["roof_sampled_tflops"],
                        "of_boost": r["of_roof_boost"], "of_sampled": r["of_roof_sampled"]})
    return out


def roof_table():
    data = results.load(CLOCKS)
    return page.table(roof_rows(data), ["provider", "mhz", "mhz_range", "watts", "temp",
                                        "tflops", "roof_boost", "roof_sampled", "of_boost",
                                        "of_sampled"],
                      {"mhz": "SM clock, median (MHz)", "mhz_range": "min–max (MHz)",
                       "watts": "power, mean (W)", "temp": "max °C", "tflops": "TFLOP/s",
                       "roof_boost": "roof at max clock", "roof_sampled": "roof at sampled",
                       "of_boost": "share of max-clock roof",
                       "of_sampled": "share of sampled roof"},
                      source=results.source_line(CLOCKS))


# ----------------------------------------------------------------------------- glued values

def _pct(x: float) -> str:
    return f"{x:.0%}"


def short_kernel_name(name: str) -> str:
    """A launched kernel's name without C++ wrapping: ``void cutlass::Kernel2<X>(X::Params)``
    reads ``X``."""
    if "<" in name and ">" in name:
        return name[name.index("<") + 1:name.rindex(">")]
    return name


def _same_kernels(k: dict, a: str, b: str) -> str:
    """The sizes at which providers ``a`` and ``b`` launched the same kernel(s), in words."""
    same = [n for n in SIZES if (a, n) in k and (b, n) in k
            and k[(a, n)]["launched"] and k[(a, n)]["launched"] == k[(b, n)]["launched"]]
    if len(same) == len(SIZES):
        return "the same kernel at every size"
    if not same:
        return "different kernels at every size"
    return "the same kernel at " + ", ".join(f"{n}³" for n in same) + " only"


def _library_values(data: dict) -> dict:
    t = {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "time"}
    k = {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "kernels"}

    def rate(name, n):
        r = t.get((name, n))
        if r is None:
            return "—"
        return f"{r['tflops']:.0f}" if r["tflops"] >= 100 else f"{r['tflops']:.1f}"

    def ratio(a, b, n, fmt=_pct):
        if (a, n) in t and (b, n) in t:
            return fmt(t[(a, n)]["tflops"] / t[(b, n)]["tflops"])
        return "—"

    def keeps(name):  # the share of its 4096³ rate a provider keeps at 4097³
        if (name, 4097) in t and (name, 4096) in t:
            return _pct(t[(name, 4097)]["tflops"] / t[(name, 4096)]["tflops"])
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
        repeat = _pct(max(diffs)) if diffs else "—"
    except results.ResultsMissing:
        repeat = "—"
    out16 = [abs(t[("cublas_fp16_out16", n)]["tflops"] / t[("cublas_fp16", n)]["tflops"] - 1)
             for n in SIZES if ("cublas_fp16_out16", n) in t and ("cublas_fp16", n) in t]
    lt32 = [abs(t[("cublaslt_fp32", n)]["tflops"] / t[("cublas_fp32", n)]["tflops"] - 1)
            for n in SIZES if ("cublaslt_fp32", n) in t and ("cublas_fp32", n) in t]
    skipped = data["parameters"].get("skipped") or {}
    return {"tc_4096": rate("tc_fp16", 4096), "cublas16_4096": rate("cublas_fp16", 4096),
            "lt_4096": rate("cublaslt_fp16", 4096), "triton_4096": rate("triton_fp16", 4096),
            "triton_4097": rate("triton_fp16", 4097), "cublas_4097": rate("cublas_fp16", 4097),
            "tc_4097": rate("tc_fp16", 4097),
            "triton_of_cublas_4096": ratio("triton_fp16", "cublas_fp16", 4096),
            "triton_of_cublas_4097": ratio("triton_fp16", "cublas_fp16", 4097),
            "tc_of_cublas_4096": ratio("tc_fp16", "cublas_fp16", 4096),
            "lt_vs_cublas_out16": ratio("cublaslt_fp16", "cublas_fp16_out16", 4096),
            "triton_fp32_4096": rate("triton_fp32", 4096),
            "warptile_4096": rate("warptile_tuned", 4096),
            "cublas_fp32_4096": rate("cublas_fp32", 4096),
            "lt_kernel_4096": kernel("cublaslt_fp16", 4096),
            "triton_kept_4096": (t[("triton_fp16", 4096)]["path"]
                                 if ("triton_fp16", 4096) in t else "—"),
            "skipped": ("; ".join(f"{name} ({why})" for name, why in skipped.items())
                        if skipped else "none — every provider passed its checks and ran "
                                        "at every size"),
            "repeat_max_diff": repeat,
            "lt_vs_cublas_out16_4097": ratio("cublaslt_fp16", "cublas_fp16_out16", 4097),
            "lt_vs_cublas_out16_8192": ratio("cublaslt_fp16", "cublas_fp16_out16", 8192),
            "lt_same_kernel": _same_kernels(k, "cublaslt_fp16", "cublas_fp16_out16"),
            "out16_max_change": _pct(max(out16)) if out16 else "—",
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
            "triton_fp32_4097": rate("triton_fp32", 4097),
            "warptile_4097": rate("warptile_tuned", 4097),
            "cublas_fp32_4097": rate("cublas_fp32", 4097),
            "triton_fp32_8192": rate("triton_fp32", 8192),
            "warptile_8192": rate("warptile_tuned", 8192),
            "cublas_fp32_8192": rate("cublas_fp32", 8192),
            "cublas_fp32_keeps": keeps("cublas_fp32"),
            "cublas_fp32_kernel_4096": kernel("cublas_fp32", 4096),
            "lt_fp32_kernel_4096": kernel("cublaslt_fp32", 4096),
            "lt_fp32_vs_cublas_max": _pct(max(lt32)) if lt32 else "—",
            "lt_fp32_same_kernel": _same_kernels(k, "cublaslt_fp32", "cublas_fp32")}


def _first_chunk(data: dict, name: str) -> str:
    """How far the first 0.1 s chunk of ``name`` ran above its median chunk."""
    rates = [r["tflops"] for r in data["rows"] if r["part"] == "chunk" and r["kernel"] == name]
    return _pct(rates[0] / float(np.median(rates)) - 1) if rates else "—"


def dip_period(data: dict, below: float = 0.95) -> float | None:
    """The median time between the starts of the dips of every provider's chunk rates: runs of
    chunks slower than ``below`` × that provider's median chunk (None: fewer than two dips)."""
    gaps = []
    for name in data["parameters"]["providers"]:
        chunks = [r for r in data["rows"] if r["part"] == "chunk" and r["kernel"] == name]
        if not chunks:
            continue
        median = float(np.median([r["tflops"] for r in chunks]))
        slow = [r["tflops"] < below * median for r in chunks]
        starts = [r["t_s"] for i, r in enumerate(chunks) if slow[i] and (i == 0 or not slow[i - 1])]
        gaps += list(np.diff(starts))
    return float(np.median(gaps)) if gaps else None


def _chunk_dip(data: dict, name: str) -> str:
    """How far the slowest 0.1 s chunk of ``name`` fell below its median chunk."""
    rates = [r["tflops"] for r in data["rows"] if r["part"] == "chunk" and r["kernel"] == name]
    return _pct(1 - min(rates) / float(np.median(rates))) if rates else "—"


def _clock_values(data: dict) -> dict:
    s = {r["kernel"]: r for r in data["rows"] if r["part"] == "summary"}
    cub, tc, fp32 = s["cublas_fp16"], s["tc_fp16"], s["warptile_tuned"]
    samples = [r for r in data["rows"] if r["part"] == "sample"]
    limit = data["parameters"].get("power_limit_w")
    mhz = sorted({r["sm_mhz"] for r in samples})
    watts_max = max(r["power_w"] for r in samples)
    return {"max_mhz": f"{data['parameters']['max_sm_mhz']:.0f}",
            "tc_mhz": f"{tc['sm_mhz_median']:.0f}", "cublas_mhz": f"{cub['sm_mhz_median']:.0f}",
            "fp32_mhz": f"{fp32['sm_mhz_median']:.0f}",
            "tc_watts": f"{tc['power_w_mean']:.0f}", "cublas_watts": f"{cub['power_w_mean']:.0f}",
            "power_limit": f"{limit:.0f}" if limit else "—",
            "cublas_of_boost": _pct(cub["of_roof_boost"]),
            "cublas_of_sampled": _pct(cub["of_roof_sampled"]),
            "tc_of_boost": _pct(tc["of_roof_boost"]),
            "tc_of_sampled": _pct(tc["of_roof_sampled"]),
            "clock_loss": _pct(1 - cub["clock_ratio"]),
            "roof_boost": f"{cub['roof_boost_tflops']:.0f}",
            "roof_sampled": f"{cub['roof_sampled_tflops']:.0f}",
            "idle_mhz": f"{s['idle']['sm_mhz_median']:.0f}",
            "all_mhz": (f"{mhz[0]:.0f} MHz in every sample" if len(mhz) == 1
                        else f"between {mhz[0]:.0f} and {mhz[-1]:.0f} MHz"),
            "fp32_watts": f"{fp32['power_w_mean']:.0f}",
            "idle_watts": f"{s['idle']['power_w_mean']:.0f}",
            "watts_max": f"{watts_max:.0f}",
            "watts_max_share": _pct(watts_max / limit) if limit else "—",
            "temp_max": f"{max(r['temp_c'] for r in samples):.0f}",
            "tc_sustained": f"{tc['tflops']:.0f}", "cublas_sustained": f"{cub['tflops']:.0f}",
            "fp32_sustained": f"{fp32['tflops']:.1f}",
            "tc_dip": _chunk_dip(data, "tc_fp16"), "cublas_dip": _chunk_dip(data, "cublas_fp16"),
            "fp32_dip": _chunk_dip(data, "warptile_tuned"),
            "fp32_of_boost": _pct(fp32["of_roof_boost"]),
            "tc_first": _first_chunk(data, "tc_fp16"),
            "cublas_first": _first_chunk(data, "cublas_fp16"),
            "fp32_first": _first_chunk(data, "warptile_tuned"),
            "dip_period": (f"{dip_period(data):.1f} s" if dip_period(data) is not None
                           else "—")}


def _both_values(lib: dict, clk: dict) -> dict:
    """The clocks run's sustained rates against the libraries run's at the same size."""
    n = clk["parameters"]["size"]
    short = {r["kernel"]: r for r in lib["rows"] if r["part"] == "time" and r["m"] == n}
    s = {r["kernel"]: r for r in clk["rows"] if r["part"] == "summary"}

    def share(name):
        return _pct(s[name]["tflops"] / short[name]["tflops"]) if name in short else "—"

    cub = s["cublas_fp16"]
    return {"tc_sustained_of_short": share("tc_fp16"),
            "cublas_sustained_of_short": share("cublas_fp16"),
            "fp32_sustained_of_short": share("warptile_tuned"),
            "cublas_short_of_boost": (_pct(short["cublas_fp16"]["tflops"]
                                           / cub["roof_boost_tflops"])
                                      if "cublas_fp16" in short else "—")}


def values() -> dict:
    """Every number the prose quotes, as strings."""
    lib, clk = results.load(LIBRARIES), results.load(CLOCKS)
    v = _library_values(lib)
    v.update(_clock_values(clk))
    v.update(_both_values(lib, clk))
    v["datasheet_mhz"] = f"{ex09_2()['datasheet_mhz']:.0f}"
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


# ----------------------------------------------------------------------------- exercises

# region: host_provider
def host_provider() -> providers.Provider:
    """Exercise 1's provider: NumPy on the host behind the same face (FP32 in and out)."""
    def prepare(A, B, C):
        def call():
            product = A.copy_to_host().astype(np.float64) @ B.copy_to_host()
            C.copy_to_device(product.astype(np.float32))
        return call

    return providers.Provider("numpy_host", "NumPy on the host", "library", "ours",
                              np.float32, np.float32, prepare, available=lambda: None,
                              needs_gpu=False, tensor_cores=False)
# endregion: host_provider


def ex09_1(shape=(33, 17, 9), seed: int = 9) -> dict:
    """Register :func:`host_provider` for the duration of one check and check it by name
    through ``bench.check``, on an odd shape (fixed seed: the printed ratio is reproducible)."""
    with providers.registered(host_provider()):
        verdict = bench.check("numpy_host", *shape, seed=seed)
    return {"verdict": "PASS" if verdict.passed else "FAIL",
            "err_over_bound": f"{verdict.err_over_bound:.2f}",
            "shape": "×".join(map(str, shape))}


def ex09_2() -> dict:
    """The clock the datasheet's dense FP16 figure implies at 4096 FLOP per clock per SM on
    132 SMs, and the roof at the measured median clock of cuBLAS FP16 (when measured)."""
    from lab import model

    sheet = model.DATASHEET["H200"]
    per_clock = clocks.FLOP_PER_CLOCK_PER_SM[(9, 0)]["tensor_fp16"]
    mhz = sheet["tensor_tflops"] * 1e12 / (per_clock * sheet["sms"]) / 1e6
    out = {"datasheet_mhz": mhz, "datasheet_tflops": sheet["tensor_tflops"],
           "roof_at_max": clocks.roof_tflops("tensor_fp16", sheet["sms"], sheet["clock_mhz"])}
    s = next(r for r in results.load(CLOCKS)["rows"] if r["part"] == "summary"
             and r["kernel"] == "cublas_fp16")
    out["roof_at_sampled"] = s["roof_sampled_tflops"]
    return out


def ex09_3(sizes=(4096, 4097, 4100, 4104), element_bytes: int = 2) -> list[dict]:
    """Row pitch of an n×n FP16 matrix in bytes and whether it is a multiple of 16 — what
    16-byte vector loads and TMA descriptors need of every row's start."""
    return [{"n": n, "row_bytes": n * element_bytes,
             "aligned_16": (n * element_bytes) % 16 == 0,
             "pad_to": -(-n // (16 // element_bytes)) * (16 // element_bytes)} for n in sizes]


def solution_values() -> dict:
    """The solutions' numbers for the prose, as strings."""
    one = ex09_1()
    two = ex09_2()
    three = {r["n"]: r for r in ex09_3()}
    return {"ex09_1_verdict": one["verdict"], "ex09_1_ratio": one["err_over_bound"],
            "ex09_1_shape": one["shape"],
            "ex09_2_mhz": f"{two['datasheet_mhz']:.0f}",
            "ex09_2_roof_max": f"{two['roof_at_max']:.0f}",
            "ex09_2_roof_sampled": f"{two['roof_at_sampled']:.0f}",
            "ex09_3_bytes_4097": str(three[4097]["row_bytes"]),
            "ex09_3_pad_4097": str(three[4097]["pad_to"]),
            "ex09_3_aligned": ", ".join(str(n) for n, r in three.items() if r["aligned_16"])}


def solution_table():
    return page.table(ex09_3(), ["n", "row_bytes", "aligned_16", "pad_to"],
                      {"row_bytes": "row (bytes)", "aligned_16": "multiple of 16 B",
                       "pad_to": "pad n to"})
