"""Clocks and power: the SM clock, board power and rate over a sustained run of each provider,
and the roof at the clock sampled."""
from __future__ import annotations

import numpy as np

from lab import clocks, model, page, results
from lab.chapters.ch9.common import pct

def clock_figure():
    """SM clock (top), board power (middle) and each provider's rate per chunk of calls as a
    share of its median (bottom) against time, each provider's run shaded."""
    data = results.load("clocks")
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
                 ha="center", va="bottom", fontsize=9)
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
        ax.legend(fontsize=9, loc=loc)
    fig.tight_layout()
    return fig


def roof_rows(data: dict | None = None) -> list[dict]:
    """Per provider: the sampled clock, power, temperature, rate and the roof at both clocks."""
    data = data or results.load("clocks")
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
    data = results.load("clocks")
    return page.table(roof_rows(data), ["provider", "mhz", "watts", "tflops", "of_boost",
                                        "of_sampled"],
                      {"mhz": "SM clock, median (MHz)", "watts": "power, mean (W)",
                       "tflops": "TFLOP/s", "of_boost": "share of max-clock roof",
                       "of_sampled": "share of sampled roof"},
                      source=results.source_line("clocks"))


def _first_chunk(data: dict, name: str) -> str:
    """How far the first 0.1 s chunk of ``name`` ran above its median chunk."""
    rates = [r["tflops"] for r in data["rows"] if r["part"] == "chunk" and r["kernel"] == name]
    return pct(rates[0] / float(np.median(rates)) - 1) if rates else "—"


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
    return pct(1 - min(rates) / float(np.median(rates))) if rates else "—"


def _clock_values(data: dict) -> dict:
    s = {r["kernel"]: r for r in data["rows"] if r["part"] == "summary"}
    cub, tc, fp32 = s["cublas_fp16"], s["tc_fp16"], s["warptile_tuned"]
    samples = [r for r in data["rows"] if r["part"] == "sample"]
    limit = data["parameters"].get("power_limit_w")
    return {"tc_mhz": f"{tc['sm_mhz_median']:.0f}", "cublas_mhz": f"{cub['sm_mhz_median']:.0f}",
            "fp32_mhz": f"{fp32['sm_mhz_median']:.0f}",
            "power_limit": f"{limit:.0f}" if limit else "—",
            "cublas_of_boost": pct(cub["of_roof_boost"]),
            "cublas_of_sampled": pct(cub["of_roof_sampled"]),
            "clock_loss": pct(1 - cub["clock_ratio"]),
            "roof_boost": f"{cub['roof_boost_tflops']:.0f}",
            "roof_sampled": f"{cub['roof_sampled_tflops']:.0f}",
            "idle_mhz": f"{s['idle']['sm_mhz_median']:.0f}",
            "idle_watts": f"{s['idle']['power_w_mean']:.0f}",
            "temp_max": f"{max(r['temp_c'] for r in samples):.0f}",
            "tc_sustained": f"{tc['tflops']:.0f}", "cublas_sustained": f"{cub['tflops']:.0f}",
            "fp32_sustained": f"{fp32['tflops']:.1f}",
            "tc_dip": _chunk_dip(data, "tc_fp16"), "cublas_dip": _chunk_dip(data, "cublas_fp16"),
            "fp32_dip": _chunk_dip(data, "warptile_tuned"),
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
        return pct(s[name]["tflops"] / short[name]["tflops"]) if name in short else "—"

    cub = s["cublas_fp16"]
    return {"tc_sustained_of_short": share("tc_fp16"),
            "cublas_sustained_of_short": share("cublas_fp16"),
            "fp32_sustained_of_short": share("warptile_tuned"),
            "cublas_short_of_boost": (pct(short["cublas_fp16"]["tflops"]
                                           / cub["roof_boost_tflops"])
                                      if "cublas_fp16" in short else "—")}


def datasheet_mhz() -> float:
    """The clock the datasheet's dense FP16 figure implies at the tensor cores' FLOP per clock
    per SM on the H200's SMs."""
    sheet = model.DATASHEET["H200"]
    per_clock = clocks.FLOP_PER_CLOCK_PER_SM[(9, 0)]["tensor_fp16"]
    return sheet["tensor_tflops"] * 1e12 / (per_clock * sheet["sms"]) / 1e6


def values() -> dict:
    """The numbers the prose quotes from the clocks run (and from it beside the libraries run),
    as strings."""
    lib, clk = results.load("libraries"), results.load("clocks")
    return {**_clock_values(clk), **_both_values(lib, clk),
            "datasheet_mhz": f"{datasheet_mhz():.0f}"}
