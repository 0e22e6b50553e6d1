"""Chapter 10, one GEMM on two GPUs: how each scheme splits A, B and C, the bytes it moves, the
schemes run on two simulated ranks (here, on every machine), then the measured 2 × H200 run
(``lab/results/h200-x2/multi_gpu.json``), the model against it, and the model alone for 4, 8
and 64 GPUs.
"""
from __future__ import annotations

import numpy as np

from lab import compiler, model, page, plots, results
from lab.multi import schemes

EXPERIMENT = "multi_gpu"
WORLD = 2
#: The simulated check: N and K odd, so the ranks' shards differ; tails in every tile.
SIM_SHAPE = (37, 45, 29)
#: The size the bytes table and the done criteria speak about.
N_REF = 16384
LABELS = {"one_gpu": "one GPU (whole product)", "column": "column-parallel (C in blocks)",
          "column_gather": "column-parallel + all-gather", "column_overlap":
          "column-parallel, overlapped all-gather", "row_allreduce": "row-parallel + all-reduce",
          "row_reduce_scatter": "row-parallel + reduce-scatter", "summa": "SUMMA 1 × 2"}
KERNEL_OF = {"float16": "tc_fp16", "float32": "warptile_tuned"}
#: Model curves: GPUs, and the schemes drawn for each (SUMMA on a square grid where one exists).
MODEL_GPUS = (4, 8, 64)
GRIDS = {4: (2, 2), 8: (2, 4), 64: (8, 8)}


def _load():
    return results.load(EXPERIMENT)


def _rows(part: str, data=None, **match) -> list[dict]:
    data = data or _load()
    return [r for r in data["rows"] if r.get("part") == part
            and all(r.get(k) == v for k, v in match.items())]


class _Text:
    """Plain text an nbval-checked cell shows."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


# ----------------------------------------------------------------------------- the idea

def split_figure():
    """How A, B and C are split (colour = the GPU that holds the block; grey = on every GPU)."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    colours = {0: "#4c72b0", 1: "#dd8452", "all": "#bbbbbb"}
    cases = [
        ("column-parallel", {"A": [("all", 0, 0, 1, 1)], "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                             "C": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)]}),
        ("row-parallel", {"A": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                          "B": [(0, 0, .5, 1, .5), (1, 0, 0, 1, .5)],
                          "C": [(0, 0, .5, 1, .5), (1, 0, 0, 1, .5)]}),
        ("SUMMA 1 × 2", {"A": [(0, 0, 0, .25, 1), (0, .25, 0, .25, 1), (1, .5, 0, .25, 1),
                               (1, .75, 0, .25, 1)],
                         "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                         "C": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)]}),
        ("overlapped gather", {"A": [("all", 0, 0, 1, 1)],
                               "B": [(0, 0, 0, .5, 1), (1, .5, 0, .5, 1)],
                               "C": [(r, .5 * r, 1 - .25 * (j + 1), .5, .25)
                                     for j in range(4) for r in (0, 1)]}),
    ]
    fig, axes = plt.subplots(len(cases), 3, figsize=(6.2, 7.4), dpi=110)
    for row, (name, mats) in enumerate(cases):
        for col, mat in enumerate("ABC"):
            ax = axes[row][col]
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xticks([])
            ax.set_yticks([])
            for owner, x, y, w, h in mats[mat]:
                ax.add_patch(mpatches.Rectangle((x, y), w, h, facecolor=colours[owner],
                                                edgecolor="white", linewidth=2))
            if row == 0:
                ax.set_title(mat, fontsize=11)
            if col == 0:
                ax.set_ylabel(name, fontsize=9)
    handles = [mpatches.Patch(color=colours[0], label="GPU 0"),
               mpatches.Patch(color=colours[1], label="GPU 1"),
               mpatches.Patch(color=colours["all"], label="on both GPUs")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def bytes_rows(n: int = N_REF, e: int = 2) -> list[dict]:
    """Per scheme at n³ on two GPUs (FP16 inputs, FP32 C): FLOPs per GPU, bytes each GPU
    receives, and FLOPs per byte moved (the model's formulas)."""
    rows = []
    for s in schemes.SCHEMES:
        moved = model.comm_bytes_per_gpu(s, n, n, n, WORLD, e=e)
        flops = model.flops(n, n, n) / WORLD
        rows.append({"scheme": LABELS[s], "gflop": flops / 1e9, "mib": moved / 2**20,
                     "per_byte": flops / moved if moved else None,
                     "formula": FORMULAS[s]})
    return rows


FORMULAS = {"column": "0", "column_gather": "½·M·N·4", "column_overlap": "½·M·N·4",
            "row_allreduce": "2·½·M·N·4", "row_reduce_scatter": "½·M·N·4",
            "summa": "½·M·K·e"}


def bytes_table(n: int = N_REF):
    return page.table(bytes_rows(n), ["scheme", "formula", "gflop", "mib", "per_byte"],
                      {"formula": "bytes in per GPU", "gflop": "GFLOP per GPU",
                       "mib": f"MiB in per GPU at n={n}", "per_byte": "FLOP per byte moved"},
                      title=f"Two GPUs, n = {n}, FP16 inputs (e = 2), FP32 C")


# ----------------------------------------------------------------------------- simulation

def simulated_rows(shape=SIM_SHAPE) -> list[dict]:
    """Every scheme on two simulated ranks: FP32 through ``warptile_tuned`` (in the simulator
    where there is no GPU), FP16 through the float64 stand-in (the tensor-core kernel needs a
    GPU). Each row: the verdict against float64."""
    m, n, k = shape
    rng = np.random.default_rng(10)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    rows = []
    for dtype, label in (("float32", "warptile_tuned"), ("float16", "float64 stand-in")):
        a, b = A.astype(dtype), B.astype(dtype)
        for s in schemes.SCHEMES:
            if dtype == "float32":
                out = schemes.simulate(s, a, b, kernel="warptile_tuned")
            else:
                out = schemes.simulate(s, a, b, matmul_fn=schemes.numpy_matmul)
            v = out["verdict"]
            rows.append({"scheme": s, "inputs": dtype, "kernel": label,
                         "copies": len(out["C"]), "bound": "≤ 1" if v.err_over_bound <= 1
                         else f"{v.err_over_bound:.1f}", "verdict": "PASS" if v.passed
                         else "FAIL"})
    return rows


def simulated_table(shape=SIM_SHAPE):
    m, n, k = shape
    return page.table(simulated_rows(shape), ["scheme", "inputs", "kernel", "copies", "bound",
                                              "verdict"],
                      {"copies": "assembled C checked", "bound": "error / bound"},
                      title=f"Two simulated ranks, M × N × K = {m} × {n} × {k}")


# ----------------------------------------------------------------------------- measured

def measured_rows(dtype: str = "float16") -> list[dict]:
    data = _load()
    out = []
    for r in _rows("one_gpu", data, dtype=dtype) + _rows("scheme", data, dtype=dtype):
        out.append({"n": r["n"], "scheme": LABELS[r["scheme"]], "ms": r["median_ms"],
                    "spread": f"{r['min_ms']:.3g}–{r['max_ms']:.3g}",
                    "per_gpu": r["tflops_per_gpu"], "speedup": r.get("speedup", 1.0),
                    "eff": r.get("efficiency", 1.0)})
    return sorted(out, key=lambda r: r["n"])


def measured_table(dtype: str = "float16"):
    rows = measured_rows(dtype)
    return page.table(rows, ["n", "scheme", "ms", "spread", "per_gpu", "speedup", "eff"],
                      show=lambda r: r["n"] in (4096, 16384), headers={"ms": "median (ms)", "spread": "min–max (ms)",
                       "per_gpu": "TFLOP/s per GPU", "speedup": "× one GPU",
                       "eff": "efficiency"},
                      title=f"{dtype} inputs, {KERNEL_OF[dtype]} on each GPU",
                      source=results.source_line(EXPERIMENT))


def share_table(dtype: str = "float16"):
    """Per scheme and size: arithmetic alone, communication alone, the whole, and the share."""
    rows = _rows("scheme", dtype=dtype)
    out = [{"n": r["n"], "scheme": LABELS[r["scheme"]], "compute": r["compute_ms"],
            "comm": r["comm_ms"], "whole": r["median_ms"], "exposed": r["exposed_comm_ms"],
            "share": r["comm_share"]} for r in rows if r["scheme"] != "column"]
    return page.table(sorted(out, key=lambda r: r["n"]),
                      ["n", "scheme", "compute", "comm", "whole", "exposed", "share"],
                      show=lambda r: r["n"] in (4096, 16384),
                      headers={"compute": "compute alone (ms)", "comm": "comm alone (ms)",
                       "whole": "whole (ms)", "exposed": "not hidden (ms)",
                       "share": "comm / whole"}, source=results.source_line(EXPERIMENT))


def rate_figure():
    """TFLOP/s per GPU against n: one line per scheme, the one-GPU line, FP16 and FP32."""
    import matplotlib.pyplot as plt

    data = _load()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.0), dpi=110)
    for ax, dtype in zip(axes, ("float16", "float32")):
        rows = _rows("one_gpu", data, dtype=dtype) + _rows("scheme", data, dtype=dtype)
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
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def bandwidth_table():
    rows = _rows("bandwidth")
    out = [{"what": r["what"], "mib": r["bytes"] / 2**20, "ms": r["median_ms"],
            "alg": r["algbw_gbps"], "bus": r["busbw_gbps"]} for r in rows]
    largest = {}
    for i, r in enumerate(out):
        if r["mib"] >= out[largest.get(r["what"], i)]["mib"]:
            largest[r["what"]] = i
    return page.table(out, ["what", "mib", "ms", "alg", "bus"], show=sorted(largest.values()),
                      headers={"what": "collective", "mib": "buffer (MiB)", "ms": "median (ms)",
                       "alg": "algbw (GB/s)", "bus": "busbw (GB/s)"},
                      source=results.source_line(EXPERIMENT))


def link() -> dict:
    """The model's link: latency and bus bandwidth of each collective, fitted to the run."""
    return model.fit_link(_rows("bandwidth"))


def startup(dtype: str, data=None) -> dict:
    """The per-call start-up and the work rate of ``dtype``'s kernel, from the run's one-GPU
    rows alone (:func:`lab.model.fit_startup`)."""
    data = data or _load()
    return model.fit_startup([(r["n"], r["median_ms"]) for r in _rows("one_gpu", data,
                                                                        dtype=dtype)])


def predict(row: dict, data=None) -> dict:
    """The model's times for a measured scheme row, from that run's one-GPU time at the same
    size and type (less the start-up, which is added back once), its fitted link and its
    measured add bandwidth."""
    data = data or _load()
    one = _rows("one_gpu", data, dtype=row["dtype"], n=row["n"])[0]
    add = _rows("add", data, m=row["m"], n=-(-row["n"] // WORLD))
    add_gbps = add[0]["bytes"] / (add[0]["median_ms"] * 1e-3) / 1e9 if add else 3000.0
    e = 2 if row["dtype"] == "float16" else 4
    h = startup(row["dtype"], data)["startup_s"]
    out = model.scheme_seconds(row["scheme"], row["m"], row["n"], row["k"], WORLD,
                               rate_tflops=model.work_rate(row["n"], one["median_ms"], h),
                               link=model.fit_link(_rows("bandwidth", data)), e=e,
                               chunks=row.get("chunks", schemes.CHUNKS),
                               panels_per_rank=row.get("panels_per_rank",
                                                       schemes.PANELS_PER_RANK),
                               add_gbps=add_gbps, startup_s=h)
    out["compute_alone"] = out["compute"] + h
    return out


#: The model's goal against the two-GPU measurement.
GOAL = 0.15


def model_rows() -> list[dict]:
    """Per measured scheme row: whole, arithmetic alone and communication alone, measured and
    modelled, and the miss of the whole."""
    data = _load()
    out = []
    for r in _rows("scheme", data):
        p = predict(r, data)
        miss = p["total"] * 1e3 / r["median_ms"] - 1
        out.append({"dtype": r["dtype"], "n": r["n"], "scheme": LABELS[r["scheme"]],
                    "key": r["scheme"], "measured": r["median_ms"], "model": p["total"] * 1e3,
                    "miss": miss, "within": "yes" if abs(miss) <= GOAL else "no",
                    "compute": r["compute_ms"], "compute_model": p["compute_alone"] * 1e3,
                    "comm": r["comm_ms"], "comm_model": p["comm"] * 1e3})
    return out


def model_table():
    rows = model_rows()
    return page.table(rows, ["dtype", "n", "scheme", "measured", "model", "miss", "within",
                             "compute", "compute_model", "comm", "comm_model"],
                      show=lambda r: r["within"] != "yes",
                      headers={"measured": "measured (ms)", "model": "model (ms)",
                       "miss": "model / measured − 1", "within": f"within {GOAL:.0%}",
                       "compute": "compute alone, measured", "compute_model": "… model",
                       "comm": "comm alone, measured", "comm_model": "… model"},
                      source=results.source_line(EXPERIMENT))


def scaling_figure(dtype: str = "float16"):
    """The model alone: efficiency against n for 4, 8 and 64 GPUs (measured one-GPU rate and
    two-GPU link inside a host; :data:`lab.model.INTER_HOST_GBPS` between hosts)."""
    import matplotlib.pyplot as plt

    data = _load()
    fitted = model.fit_link(_rows("bandwidth", data))
    h = startup(dtype, data)["startup_s"]
    ones = {r["n"]: model.work_rate(r["n"], r["median_ms"], h)
            for r in _rows("one_gpu", data, dtype=dtype)}
    sizes = [2**i for i in range(12, 18)]
    e = 2 if dtype == "float16" else 4
    fig, axes = plt.subplots(1, len(MODEL_GPUS), figsize=(10.0, 3.8), dpi=110, sharey=True)
    for ax, p in zip(axes, MODEL_GPUS):
        lk = model.link_for(p, fitted)
        for s, grid, label in (("column_gather", None, "column + all-gather"),
                               ("column_overlap", None, "column, overlapped"),
                               ("row_allreduce", None, "row + all-reduce"),
                               ("summa", GRIDS[p], "SUMMA (grid in the title)")):
            eff = []
            for n in sizes:
                rate = ones.get(n, ones[max(ones)])
                t = model.scheme_seconds(s, n, n, n, p, rate_tflops=rate, link=lk, e=e,
                                         grid=grid, startup_s=h)["total"]
                eff.append((2.0 * n ** 3 / (rate * 1e12) + h) / t / p)
            ax.plot(sizes, eff, label=label, linestyle="-.", marker=".")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"model, {p} GPUs (SUMMA {GRIDS[p][0]} × {GRIDS[p][1]})", fontsize=10)
        ax.set_xlabel("n")
        ax.grid(True, alpha=0.25)
    axes[0].set_ylabel("efficiency (model)")
    handles, labels = axes[-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))      # the legend below the panels, over no data
    return fig


def _overlap_pairs(data) -> list[tuple[str, int, dict, dict]]:
    out = []
    for dtype in ("float16", "float32"):
        for n in sorted({r["n"] for r in _rows("scheme", data, dtype=dtype)}):
            lap = _rows("scheme", data, scheme="column_overlap", dtype=dtype, n=n)
            gat = _rows("scheme", data, scheme="column_gather", dtype=dtype, n=n)
            if lap and gat:
                out.append((dtype, n, lap[0], gat[0]))
    return out


def verdicts() -> _Text:
    """The chapter's three tests, from the run: column-parallel FP16 at 16384 against one GPU
    (goal ≥ 1.8×), overlapped against unoverlapped gather, the model against every two-GPU row
    (goal: within 15%)."""
    data = _load()
    lines = []
    col = _rows("scheme", data, scheme="column", dtype="float16", n=N_REF)
    if col:
        x = col[0]["speedup"]
        lines.append(f"column-parallel FP16 at n={N_REF}: {x:.2f}× one GPU (goal ≥ 1.8×: "
                     f"{'met' if x >= 1.8 else 'not met'})")
    for dtype, n, lap, gat in _overlap_pairs(data):
        gain = gat["median_ms"] / lap["median_ms"] - 1
        lines.append(f"{dtype} n={n}: overlapped ({lap['chunks']} chunks) "
                     f"{lap['median_ms']:.3f} ms vs unoverlapped {gat['median_ms']:.3f} ms: "
                     f"{'wins' if gain > 0 else 'loses'} ({gain:+.0%})")
    rows = model_rows()
    misses = [abs(r["miss"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["miss"]))
    lines.append(f"model vs measured, two GPUs: {sum(m <= GOAL for m in misses)} of "
                 f"{len(rows)} rows within {GOAL:.0%}; median miss "
                 f"{float(np.median(misses)):.0%}, largest {abs(worst['miss']):.0%} "
                 f"({worst['dtype']} n={worst['n']}, {worst['key']})")
    return _Text("\n".join(lines))


def _fmt_ms(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def measured_values() -> dict:
    """Every number the measurement prose quotes, computed from the run ("not measured" where
    the run has no row for it)."""
    keys = ("col16_speedup", "col16_goal", "col_fp16_4096_whole", "col_fp16_4096_compute",
            "col_fp16_4096_noise", "ag_lat_us", "ag_bus", "ar_bus", "rs_bus", "bc_bus",
            "ls_ag_lat_us", "odd_what", "odd_mib", "odd_median", "odd_min", "h16_ms", "h32_ms",
            "rate16", "model_within", "model_total", "model_median", "model_worst",
            "model_worst_where", "misses_list", "lap16_wins", "lap16_loses", "lap32_loses",
            "lap16_4096_compute", "gat16_4096_compute", "lap16_4096_ratio", "lap16_4096_chunks",
            "lap16_4096_tiles", "summa16_4096_compute", "summa16_4096_ratio",
            "lap32_exposed", "lap32_comm", "gat32_share", "lap32_ceiling", "misses_sizes",
            "holds_from", "sms", "lap16_4096_extra", "gat16_4096_comm", "one16_small_tflops",
            "one16_next_tflops", "gat16_4096_compute_model", "lap16_4096_waves",
            "gat16_4096_waves", "lap16_4096_blocks", "lap16_4096_slots",
            "lap16_4096_rule_chunks", "one16_small_ms", "ch5_tc_fp16_small_tflops",
            "ch5_tc_fp16_small_ms")
    data = _load()
    v = {k: "not measured" for k in keys}
    col = _rows("scheme", data, scheme="column", dtype="float16", n=N_REF)
    if col:
        v["col16_speedup"] = f"{col[0]['speedup']:.2f}"
        v["col16_goal"] = "met" if col[0]["speedup"] >= 1.8 else "not met"
    small = min(r["n"] for r in _rows("scheme", data))
    c4 = _rows("scheme", data, scheme="column", dtype="float16", n=small)[0]
    v["col_fp16_4096_whole"] = _fmt_ms(c4["median_ms"])
    v["col_fp16_4096_compute"] = _fmt_ms(c4["compute_ms"])
    v["col_fp16_4096_noise"] = f"{c4['median_ms'] / c4['compute_ms'] - 1:.0%}"
    lk = link()
    v["ag_lat_us"] = f"{lk['all_gather']['latency_s'] * 1e6:.0f}"
    for op, key in (("all_gather", "ag_bus"), ("all_reduce", "ar_bus"),
                    ("reduce_scatter", "rs_bus"), ("broadcast", "bc_bus")):
        v[key] = f"{lk[op]['bus_gbps']:.0f}"
    bw = _rows("bandwidth", data)
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
    v.update(odd_what=odd["what"].replace("_", "-"), odd_mib=f"{odd['bytes'] / 2**20:.0f}",
             odd_median=f"{odd['median_ms']:.2f}", odd_min=f"{odd['min_ms']:.2f}")
    f16, f32 = startup("float16", data), startup("float32", data)
    v["h16_ms"], v["h32_ms"] = f"{f16['startup_s'] * 1e3:.2f}", f"{f32['startup_s'] * 1e3:.2f}"
    v["rate16"] = f"{f16['rate_tflops']:.0f}"
    rows = model_rows()
    misses = [abs(r["miss"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["miss"]))
    v["model_within"], v["model_total"] = str(sum(m <= GOAL for m in misses)), str(len(rows))
    v["model_median"] = f"{float(np.median(misses)):.0%}"
    v["model_worst"] = f"{worst['miss']:+.0%}"
    v["model_worst_where"] = f"{worst['dtype']}, n = {worst['n']}, {worst['scheme']}"
    v["misses_list"] = "; ".join(f"{r['key'].replace('_', ' ')} {r['dtype']} n = {r['n']} "
                                 f"({r['miss']:+.0%})" for r in rows if abs(r["miss"]) > GOAL)
    bad = sorted({r["n"] for r in rows if abs(r["miss"]) > GOAL})
    v["misses_sizes"] = ", ".join(map(str, bad)) or "none"
    ns = sorted({r["n"] for r in rows})
    v["holds_from"] = str(next((n for n in ns if all(b < n for b in bad)), "no size"))
    v["sms"] = str(data["provenance"].get("sm_count", "?"))
    pairs = _overlap_pairs(data)

    def sizes(dtype, win):
        got = [str(n) for d, n, lap, gat in pairs if d == dtype
               and (lap["median_ms"] < gat["median_ms"]) == win]
        return ", ".join(got) or "none"
    v["lap16_wins"], v["lap16_loses"] = sizes("float16", True), sizes("float16", False)
    v["lap32_loses"] = sizes("float32", False)
    lap = _rows("scheme", data, scheme="column_overlap", dtype="float16", n=small)[0]
    gat = _rows("scheme", data, scheme="column_gather", dtype="float16", n=small)[0]
    sm = _rows("scheme", data, scheme="summa", dtype="float16", n=small)[0]
    v["lap16_4096_compute"] = _fmt_ms(lap["compute_ms"])
    v["gat16_4096_compute"] = _fmt_ms(gat["compute_ms"])
    v["lap16_4096_ratio"] = f"{lap['compute_ms'] / gat['compute_ms']:.2f}"
    v["lap16_4096_chunks"] = str(lap["chunks"])
    from lab.kernels import get_spec
    bm, bn, _ = get_spec(KERNEL_OF["float16"]).tile
    rows_per_chunk = small // lap["chunks"]
    w = schemes.split(small, WORLD)[0][1]
    v["lap16_4096_tiles"] = str(-(-rows_per_chunk // bm) * -(-w // bn))
    sms = data["provenance"]["sm_count"]
    resident = compiler.resident_blocks(KERNEL_OF["float16"])
    v["lap16_4096_waves"] = str(sum(model.waves(r1 - r0, w, bm, bn, sms, resident)
                                    for r0, r1 in schemes.chunk_ranges(small, lap["chunks"], bm)))
    v["gat16_4096_waves"] = str(model.waves(small, w, bm, bn, sms, resident))
    v["lap16_4096_blocks"] = str(resident)
    v["lap16_4096_slots"] = str(sms * resident)
    v["lap16_4096_rule_chunks"] = str(schemes.overlap_chunks(small, w, (bm, bn), sms,
                                                             blocks_per_sm=resident))
    v["lap16_4096_extra"] = _fmt_ms(lap["compute_ms"] - gat["compute_ms"])
    v["gat16_4096_comm"] = _fmt_ms(gat["comm_ms"])
    ones = sorted(_rows("one_gpu", data, dtype="float16"), key=lambda r: r["n"])
    v["one16_small_tflops"] = f"{ones[0]['tflops']:.0f}"
    v["one16_small_ms"] = _fmt_ms(ones[0]["median_ms"])
    short = next(r for r in results.rows("tensor_cores", part="ladder", kernel="tc_fp16")
                 if r["m"] == ones[0]["n"])
    v["ch5_tc_fp16_small_tflops"] = f"{short['tflops']:.0f}"
    v["ch5_tc_fp16_small_ms"] = _fmt_ms(short["median_ms"])
    v["one16_next_tflops"] = f"{ones[1]['tflops']:.0f}"
    v["gat16_4096_compute_model"] = _fmt_ms(next(
        r["compute_model"] for r in rows if r["key"] == "column_gather"
        and r["dtype"] == "float16" and r["n"] == small))
    v["summa16_4096_compute"] = _fmt_ms(sm["compute_ms"])
    v["summa16_4096_ratio"] = f"{sm['compute_ms'] / gat['compute_ms']:.2f}"
    p32 = [(n, lap_, gat_) for d, n, lap_, gat_ in pairs if d == "float32"]
    v["lap32_exposed"] = ", ".join(_fmt_ms(lp["exposed_comm_ms"]) for _, lp, _ in p32)
    v["lap32_comm"] = ", ".join(_fmt_ms(lp["comm_ms"]) for _, lp, _ in p32)
    v["gat32_share"] = ", ".join(f"{g['comm_ms'] / g['median_ms']:.1%}" for _, _, g in p32)
    v["lap32_ceiling"] = ", ".join(
        f"{(1 - 1 / lp['chunks']) * g['comm_ms'] / g['median_ms']:.1%}" for _, lp, g in p32)
    return v


def values() -> dict:
    """Model-only numbers the prose quotes (no measurement needed)."""
    n = N_REF
    return {"n_ref": str(n),
            "gather_mib": f"{model.comm_bytes_per_gpu('column_gather', n, n, n, 2) / 2**20:.0f}",
            "allreduce_mib": f"{model.comm_bytes_per_gpu('row_allreduce', n, n, n, 2) / 2**20:.0f}",
            "summa_mib": f"{model.comm_bytes_per_gpu('summa', n, n, n, 2, e=2) / 2**20:.0f}",
            "gflop_per_gpu": f"{model.flops(n, n, n) / 2 / 1e9:.0f}",
            "inter_host_gbps": f"{model.INTER_HOST_GBPS:.0f}",
            "sim_shape": " × ".join(map(str, SIM_SHAPE))}


def glue():
    """Glue :func:`values` and :func:`measured_values` for the prose and return them as one
    checked text block."""
    return page.glue({**values(), **measured_values()})
