"""The "Two GPUs, one course" page: what the course's models predicted for an H100 before it was
measured (``lab/results/h100-80gb-hbm3/predictions.json``, :mod:`lab.predict`), set beside what
the H100 then measured (its results folder, read as each prediction's ``compare`` says).

A quantity is *compared* when the H100's results file it names exists; it is *within* when the
measurement is inside :data:`WITHIN` of the prediction (or inside the prediction's own range,
where it gives one). Quantities of a model alone (chapter 8's model times, a floor) are
predicted but have no measurement to meet; the page lists them apart."""
from __future__ import annotations

import math
import statistics
from pathlib import Path

from lab import page, predict, results, tables

#: The H100 the predictions are for (its results folder).
TARGET = "h100-80gb-hbm3"
#: Scales of a comparison that only change units (ms to µs, bytes to MiB).
UNIT_SCALES = (1.0, 1000.0, 2.0 ** -20)
#: The GPU the predictions started from (lab.predict's).
REFERENCE = predict.REFERENCE
#: A measurement this close to its prediction (relative) counts as met.
WITHIN = 0.10
#: Why an experiment of ``measure all`` may have no H100 file (the page says it for each missing).
WHY_MISSING = {"hopper_past": "the longest experiment of the book, which did not fit in the time "
                              "the H100 was available",
               "multi_gpu": "which needs a second GPU in the same machine"}
#: Rules in the order the page discusses them.
RULE_ORDER = ("bandwidth", "latency+bandwidth", "compute", "roofline", "count", "datasheet",
              "derived", "model")


def predictions() -> dict:
    """The committed predictions (made before the H100 was measured)."""
    return results.load(predict.EXPERIMENT, gpu=TARGET)


def rows(root: Path | None = None) -> list[dict]:
    """One row per predicted quantity: its id, what, unit, rule, the H200's value, the prediction,
    the H100's measurement (None: a model's quantity, or not measured yet) and
    measured / predicted; the measurements read from the results store ``root`` (default: the
    committed one)."""
    out = []
    for r in predictions()["rows"]:
        row = {"id": r["id"], "what": r["what"], "page": Path(r["page"]).stem, "unit": r["unit"],
               "rule": r["rule"], "h200": r["reference"], "predicted": r["predicted"],
               "h100": None, "ratio": None, "h200_now": None, "vs_h200_now": None,
               "status": "model only"}
        if r["compare"] is not None:
            try:
                value = predict.measured(r, root)
            except results.ResultsMissing:
                row["status"] = "not measured"
            else:
                row["h100"] = value
                row["ratio"] = value / r["predicted"] if r["predicted"] else None
                row["h200_now"] = today(r, root)
                row["vs_h200_now"] = (value / row["h200_now"]) if row["h200_now"] else None
                row["status"] = "within" if met(r, value) else (
                    "above" if value > r["predicted"] else "below")
        out.append(row)
    return out


def today(prediction: dict, root: Path | None = None) -> float | None:
    """The H200's value of a compared quantity as its committed files read now, through the
    same ``compare`` as the H100's: it differs from the prediction's reference where the H200
    was re-measured after the prediction (new code in ``lab``), and the H100 / H200-today
    ratio then isolates the GPU from the change of code. None where the H200 has no such row,
    or where the comparison's scale is the H100's own (a share of its datasheet), not a unit."""
    if prediction["compare"]["scale"] not in UNIT_SCALES:
        return None

    def swap(spec: dict) -> dict:
        out = {**spec, "file": str(Path(spec["file"]).parent.parent / REFERENCE
                                   / Path(spec["file"]).name)}
        if "over" in spec:
            out["over"] = swap(spec["over"])
        return out

    try:
        return predict.measured({"compare": swap(prediction["compare"])}, root)
    except (results.ResultsMissing, ValueError, KeyError):
        return None


#: The library call each of our calls is timed beside in the same file (its row differs only in
#: ``kernel``): the yardstick a miss of ours is read against.
YARDSTICK = {"lab.gemm": "cublas (torch.mm)"}


def yardstick(prediction: dict, root: Path | None = None) -> tuple[float, float] | None:
    """The library's value of the call that ``prediction`` measures for ours (the same row of
    the same file with :data:`YARDSTICK`'s kernel), on the H100 and on today's H200; None where
    the quantity is not one of our calls or a file lacks the row."""
    spec = prediction["compare"]
    if spec is None or spec["row"] is None or spec["row"].get("kernel") not in YARDSTICK:
        return None
    theirs = {**spec, "row": {**spec["row"], "kernel": YARDSTICK[spec["row"]["kernel"]]}}
    try:
        h100 = predict.measured({"compare": theirs}, root)
    except (results.ResultsMissing, ValueError):
        return None
    h200 = today({"compare": theirs}, root)
    return None if h200 is None else (h100, h200)


def met(prediction: dict, value: float) -> bool:
    """Whether ``value`` meets ``prediction``: inside its own range where it gives one, else
    within :data:`WITHIN` of the predicted value."""
    if prediction.get("low") is not None:
        return prediction["low"] <= value <= prediction["high"]
    p = prediction["predicted"]
    return abs(value - p) <= WITHIN * abs(p)


def compared(every: list[dict]) -> list[dict]:
    return [r for r in every if r["h100"] is not None]


def by_rule(every: list[dict]) -> list[dict]:
    """Per rule: quantities predicted, compared, within, and the median and range of
    measured / predicted."""
    out = []
    for rule in RULE_ORDER:
        mine = [r for r in every if r["rule"] == rule]
        if not mine:
            continue
        got = [r["ratio"] for r in compared(mine) if r["ratio"] is not None]
        out.append({"rule": rule, "predicted": len(mine), "compared": len(got),
                    "within": sum(r["status"] == "within" for r in mine),
                    "median": statistics.median(got) if got else None,
                    "low": min(got) if got else None, "high": max(got) if got else None})
    return out


def worst(every: list[dict], n: int = 5) -> list[dict]:
    """The ``n`` compared quantities furthest from their predictions (by |log ratio|)."""
    done = [r for r in compared(every) if r["ratio"]]
    return sorted(done, key=lambda r: -abs(math.log(r["ratio"])))[:n]


def table(every: list[dict] | None = None):
    every = rows() if every is None else every
    at = {r["id"]: i for i, r in enumerate(every)}
    far = [at[r["id"]] for r in worst(every)]        # open rows: furthest first
    return page.table(every, ["what", "unit", "h200", "predicted", "h100", "ratio",
                              "vs_h200_now"],
                      {"h200": "H200, when predicted", "predicted": "H100 predicted",
                       "h100": "H100 measured", "ratio": "measured / predicted",
                       "vs_h200_now": "H100 / H200 today"},
                      digits=3, show=far,
                      source=f"lab/results/{TARGET}/predictions.json (made before the H100 was "
                             "measured), each H100 value read from the results file its row "
                             "names; H200: lab/results/h200/")


def rule_table(every: list[dict] | None = None):
    every = rows() if every is None else every
    return page.table(by_rule(every), ["rule", "predicted", "compared", "within", "median",
                                       "low", "high"],
                      {"median": "median measured / predicted", "low": "lowest",
                       "high": "highest"}, digits=3)


def figure(every: list[dict] | None = None):
    """measured / predicted for every compared quantity, one column per rule, the band of
    :data:`WITHIN` shaded."""
    import matplotlib.pyplot as plt

    every = rows() if every is None else every
    rules = [r for r in RULE_ORDER if any(x["rule"] == r for x in compared(every))]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.axhspan(1 - WITHIN, 1 + WITHIN, color="0.9", zorder=0, label=f"±{WITHIN:.0%}")
    ax.axhline(1.0, color="0.5", lw=0.8)
    for i, rule in enumerate(rules):
        got = [x for x in compared(every) if x["rule"] == rule and x["ratio"]]
        xs = [i + 0.3 * ((j % 7) / 6 - 0.5) for j in range(len(got))]
        ax.scatter(xs, [x["ratio"] for x in got], s=18, zorder=3)
    ax.set_xticks(range(len(rules)), [r.replace("+", "+\n") for r in rules])
    ax.set_ylabel("H100 measured / predicted")
    ax.set_title("Each quantity predicted before the H100 was measured")
    ax.legend(loc="upper right", frameon=False)
    fig.tight_layout()
    return page.figure(fig)


def missing(root: Path | None = None) -> list[str]:
    """Experiments of ``measure all`` that have no file in the H100's folder (the H100's book
    shows the H200's there, with a note)."""
    from lab import experiments

    return [name for name in experiments.book_order()
            if not results.path_for(name, TARGET, root).exists()]


def missing_line(gone: list[str]) -> str:
    """The page's sentence on the experiments without an H100 file, each with its reason
    (:data:`WHY_MISSING`)."""
    if not gone:
        return "Every experiment of measure all has an H100 file."
    count = "One experiment has" if len(gone) == 1 else f"{len(gone)} experiments have"
    said = "; ".join(f"{g}, {WHY_MISSING.get(g, 'not yet measured there')}" for g in gone)
    return f"{count} no H100 file yet: {said}."


def _by_id(every: list[dict]) -> dict:
    return {r["id"]: r for r in every}


def _f(x: float, digits: int = 3) -> str:
    return tables.fmt(x, digits)


def values(every: list[dict] | None = None, root: Path | None = None) -> dict:
    """Every number the page quotes, as text."""
    every = rows(root) if every is None else every
    done = compared(every)
    within = [r for r in done if r["status"] == "within"]
    out = {"n_predicted": len(every), "n_compared": len(done), "n_within": len(within),
           "n_model_only": sum(r["status"] == "model only" for r in every),
           "within_pct": tables.fmt(100 * WITHIN, 2)}
    ratios = [r["ratio"] for r in done if r["ratio"]]
    if ratios:
        out.update({"ratio_median": _f(statistics.median(ratios)), "ratio_low": _f(min(ratios)),
                    "ratio_high": _f(max(ratios))})
    q = _by_id(every)
    bw = q.get("ch0.stream_read_gbps")
    if bw and bw["h100"] is not None:
        copy, ridge, m1 = q["ch0.copy_gbps"], q["ch0.ridge_fp32"], q["ch6_1.decode_m1_cublas_us"]
        m1_gbps = q["ch6_1.decode_m1_weight_gbps"]
        p = {r["id"]: r for r in predictions()["rows"]}["ch6_1.decode_m1_cublas_us"]
        out.update({"read_pred": _f(bw["predicted"], 4), "read_meas": _f(bw["h100"], 4),
                   "read_h200": _f(bw["h200"], 4),
                   "copy_pred": _f(copy["predicted"], 4), "copy_meas": _f(copy["h100"], 4),
                   "ridge_h200": _f(ridge["h200"]), "ridge_h100": _f(ridge["h100"]),
                   "m1_low": _f(p["low"]), "m1_high": _f(p["high"]), "m1_meas": _f(m1["h100"]),
                   "m1_share_h200": f"{100 * m1_gbps['h200'] / bw['h200']:.0f}",
                   "m1_share_h100": f"{100 * m1_gbps['h100'] / bw['h100']:.0f}"})
    roof = [r for r in done if r["rule"] == "roofline"]
    if roof:
        rr = [r["ratio"] for r in roof]
        out.update({"roof_n": str(len(roof)), "roof_median": _f(statistics.median(rr)),
                   "roof_low": _f(min(rr)), "roof_high": _f(max(rr))})
    clock = q.get("ch9.clock_cublas_fp16_mhz")
    if clock and clock["h100"] is not None:
        out.update({"clock_pred": f"{clock['predicted']:,.0f}",
                    "clock_meas": f"{clock['h100']:,.0f}"})
    far = worst(every, 1)
    if far:
        miss = far[0]
        out.update({"miss_what": miss["what"], "miss_pred": _f(miss["predicted"]),
                   "miss_meas": _f(miss["h100"]), "miss_ratio": _f(miss["ratio"]),
                   "miss_now": _f(miss["h200_now"]) if miss["h200_now"] else "none",
                   "miss_vs_now": _f(miss["vs_h200_now"]) if miss["vs_h200_now"] else "none"})
        lib = yardstick(next(r for r in predictions()["rows"] if r["id"] == miss["id"]), root)
        if lib is not None:
            out.update({"miss_lib_h100": _f(lib[0]), "miss_lib_h200": _f(lib[1]),
                        "miss_lib_ratio": _f(lib[0] / lib[1])})
    now = [r["vs_h200_now"] for r in done if r["vs_h200_now"]
           and math.isclose(r["predicted"], r["h200"], rel_tol=1e-9)]   # predicted to stay
    if now:
        out.update({"now_n": str(len(now)), "now_median": _f(statistics.median(now))})
    par = predictions()["parameters"]
    ref, tgt = par["datasheets"][REFERENCE], par["datasheets"][TARGET]
    l2 = {g: results.load("roofline", gpu=g, root=root)["provenance"]["l2_bytes"] / 2 ** 20
          for g in (REFERENCE, TARGET)}
    out.update({"sms": str(tgt["sms"]), "clock_top": f"{tgt['clock_mhz']:,}",
                "power": f"{tgt['power_w']:,}",
                "hbm_h100": f"{tgt['hbm_gbps'] / 1000:g}", "hbm_h200": f"{ref['hbm_gbps'] / 1000:g}",
                "bw_ratio": _f(par["bandwidth_ratio"]), "l2_h100": f"{l2[TARGET]:.0f}",
                "l2_h200": f"{l2[REFERENCE]:.0f}"})
    if far and far[0]["h100"] is not None:
        row = next(r for r in predictions()["rows"] if r["id"] == far[0]["id"])["compare"]["row"]
        if "n" in row and "k" in row:
            out["miss_mib"] = f"{row['n'] * row['k'] * 2 / 2 ** 20:.0f}"
    out["gpu_name"] = results.load("roofline", gpu=TARGET, root=root)["provenance"]["gpu"]
    gone = missing(root)
    out["missing_line"] = missing_line(gone)
    dates = sorted(results.load(e, gpu=TARGET, root=root)["provenance"]["date"][:10]
                   for e in {r["compare"]["experiment"] for r in predictions()["rows"]
                             if r["compare"]}
                   if results.path_for(e, TARGET, root).exists())
    out.update({"predicted_on": predictions()["provenance"]["date"][:10],
                "measured_from": dates[0] if dates else "not yet"})
    return out


def glue():
    """Glue :func:`values` into the prose."""
    return page.glue(values())
