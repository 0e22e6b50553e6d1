"""Chapter 10, section 5: the schemes measured on two H200s: rates, the evidence box and the
link."""
from __future__ import annotations

import numpy as np

from lab import compiler, model, page, plots, results
from lab.multi import schemes
from lab.chapters.ch10 import s0_rows
from lab.chapters.ch10.s0_rows import EXPERIMENT
from lab.chapters.ch10.s2_prediction import LABELS, N_REF, WORLD


KERNEL_OF = {"float16": "tc_fp16", "float32": "warptile_tuned"}


def rate_figure():
    """TFLOP/s per GPU against n: one line per scheme, the one-GPU line, FP16 and FP32."""
    import matplotlib.pyplot as plt

    data = results.load("multi_gpu")
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.0), dpi=110)
    for ax, dtype in zip(axes, ("float16", "float32")):
        rows = s0_rows.part_rows("one_gpu", data, dtype=dtype) + s0_rows.part_rows("scheme", data, dtype=dtype)
        for s in ("one_gpu", *schemes.SCHEMES):
            pts = sorted((r["n"], r["tflops_per_gpu"]) for r in rows if r["scheme"] == s)
            if pts:
                style = dict(plots.OURS, linestyle="--" if s == "one_gpu" else "-")
                ax.plot(*zip(*pts), label=LABELS[s], **style)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype} ({KERNEL_OF[dtype]})", fontsize=10)
        ax.set_xlabel("n (square product)")
        ax.set_ylabel("TFLOP/s per GPU")
        ax.grid(True, alpha=0.25)
    axes[0].legend(fontsize=9.5, loc="lower right")
    fig.tight_layout()
    return fig


def bandwidth_table():
    """Bus bandwidth of each collective by buffer size: one row per buffer, one column per
    collective (the medians and algorithm bandwidths are in the results file)."""
    rows = s0_rows.part_rows("bandwidth")
    whats = list(dict.fromkeys(r["what"] for r in rows))
    by = {}
    for r in rows:
        by.setdefault(r["bytes"], {"mib": r["bytes"] / 2**20})[r["what"]] = r["busbw_gbps"]
    return page.table([by[b] for b in sorted(by)], ["mib", *whats],
                      {"mib": "buffer (MiB)", **{w: w.replace("_", "-") for w in whats}},
                      title="Bus bandwidth (busbw, GB/s, as nccl-tests defines it) of each "
                            "collective on two GPUs",
                      source=results.source_line(EXPERIMENT))


def link() -> dict:
    """The model's link: latency and bus bandwidth of each collective, fitted to the run."""
    return model.fit_link(s0_rows.part_rows("bandwidth"))


def _fmt_ms(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    data = results.load("multi_gpu")
    v = {"the_gpu": page.gpu_label(data["provenance"]["gpu"])}
    col = s0_rows.part_rows("scheme", data, scheme="column", dtype="float16", n=N_REF)
    v["col16_speedup"] = f"{col[0]['speedup']:.2f}" if col else "not measured"
    v["col16_goal"] = ("met" if col[0]["speedup"] >= 1.8 else "not met") if col else "not measured"
    small = min(r["n"] for r in s0_rows.part_rows("scheme", data))
    c4 = s0_rows.part_rows("scheme", data, scheme="column", dtype="float16", n=small)[0]
    v["col_fp16_4096_whole"] = _fmt_ms(c4["median_ms"])
    v["col_fp16_4096_compute"] = _fmt_ms(c4["compute_ms"])
    v["col_fp16_4096_noise"] = f"{c4['median_ms'] / c4['compute_ms'] - 1:.0%}"
    lk = link()
    v["ag_lat_us"] = f"{lk['all_gather']['latency_s'] * 1e6:.0f}"
    v["ag_bus"] = f"{lk['all_gather']['bus_gbps']:.0f}"
    v["ar_bus"] = f"{lk['all_reduce']['bus_gbps']:.0f}"
    v["rs_bus"] = f"{lk['reduce_scatter']['bus_gbps']:.0f}"
    v["bc_bus"] = f"{lk['broadcast']['bus_gbps']:.0f}"
    bw = s0_rows.part_rows("bandwidth", data)
    ag = [r for r in bw if r["what"] == "all_gather"]
    x = np.array([model.collective_factor("all_gather", r["world"]) * r["bytes"] for r in ag])
    y = np.array([r["median_ms"] * 1e-3 for r in ag])
    v["ls_ag_lat_us"] = f"{np.polyfit(x, y, 1)[1] * 1e6:.0f}"
    def off(r):
        f = lk[r["what"]]
        line = f["latency_s"] + model.collective_factor(r["what"], r["world"]) * r["bytes"] / (
            f["bus_gbps"] * 1e9)
        return r["median_ms"] * 1e-3 / line
    odd = max(bw, key=off)
    v["odd_what"] = odd["what"].replace("_", "-")
    v["odd_mib"] = f"{odd['bytes'] / 2**20:.0f}"
    v["odd_median"] = f"{odd['median_ms']:.2f}"
    v["odd_min"] = f"{odd['min_ms']:.2f}"
    v["sms"] = str(data["provenance"].get("sm_count", "?"))
    sm = s0_rows.part_rows("scheme", data, scheme="summa", dtype="float16", n=small)[0]
    from lab.kernels import get_spec
    bm, bn, _ = get_spec(KERNEL_OF["float16"]).tile
    w = schemes.split(small, WORLD)[0][1]
    sms = data["provenance"]["sm_count"]
    resident = compiler.resident_blocks(KERNEL_OF["float16"])
    v["gat16_4096_waves"] = str(model.waves(small, w, bm, bn, sms, resident))
    v["lap16_4096_blocks"] = str(resident)
    v["lap16_4096_slots"] = str(sms * resident)
    v["lap16_4096_rule_chunks"] = str(schemes.overlap_chunks(small, w, (bm, bn), sms,
                                                             blocks_per_sm=resident))
    v["summa16_4096_compute"] = _fmt_ms(sm["compute_ms"])
    return v


#: The schemes after which every GPU holds the whole C.
WHOLE_C = ("column_gather", "column_overlap", "row_allreduce")


def evidence_rows(n: int = N_REF, dtype: str = "float16") -> list[dict]:
    """Each two-GPU scheme at ``n`` against perfect scaling (twice the one-GPU rate): both
    rates, the ratio (the efficiency) and its range over the repetitions (the scheme's fastest
    and slowest repetition against the one-GPU median). The run recorded no SM clock."""
    data = results.load("multi_gpu")
    ones = s0_rows.part_rows("one_gpu", data, dtype=dtype, n=n)
    if not ones:                                  # a run that stops below n
        return []
    one = ones[0]
    ideal = WORLD * one["tflops"]
    rows = []
    for r in s0_rows.part_rows("scheme", data, dtype=dtype, n=n):
        rows.append({"what": LABELS[r["scheme"]], "ours": r["tflops"], "theirs": ideal,
                     "ratio": r["efficiency"],
                     "lowest": one["median_ms"] / (WORLD * r["max_ms"]),
                     "highest": one["median_ms"] / (WORLD * r["min_ms"]),
                     "mhz_ours": None, "mhz_theirs": None, "scheme": r["scheme"],
                     "speedup": r["speedup"]})
    return rows


def evidence_box():
    """The evidence beside the headline: every scheme on two H200s at the reference size against
    twice one GPU's rate, with the word each range supports."""
    from lab.chapters.common import evidence_box as box

    data = results.load("multi_gpu")
    return box(evidence_rows(), spread="repetitions",
               claim=f"two H200s, FP16 inputs, n = {N_REF}, each scheme against perfect scaling",
               method=data["parameters"]["timing"],
               yardstick=f"twice the rate of one GPU running the whole product ({KERNEL_OF['float16']}), "
                         "timed in the same run")


def evidence_values() -> dict:
    """The speedups of the schemes that leave every GPU the whole C (gathered or all-reduced;
    the others leave it in blocks), lowest to highest."""
    whole = [r["speedup"] for r in evidence_rows() if r["scheme"] in WHOLE_C]
    if not whole:
        return {"ev10_whole_range": "not measured"}
    return {"ev10_whole_range": f"{min(whole):.2f}–{max(whole):.2f}"}
