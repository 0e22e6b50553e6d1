"""Chapter 10, section 6: the model against the measurement, scheme by scheme."""
from __future__ import annotations

import numpy as np

from lab import compiler, model, page, results
from lab.multi import schemes
from lab.chapters.ch10 import s0_rows
from lab.chapters.ch10.s0_rows import EXPERIMENT
from lab.chapters.ch10.s2_prediction import LABELS, N_REF, WORLD
from lab.chapters.ch10.s5_measured import KERNEL_OF, _fmt_ms


def startup(dtype: str, data=None) -> dict:
    """The per-call start-up and the work rate of ``dtype``'s kernel, from the run's one-GPU
    rows alone (:func:`lab.model.fit_startup`)."""
    data = data or results.load("multi_gpu")
    return model.fit_startup([(r["n"], r["median_ms"]) for r in s0_rows.part_rows("one_gpu", data,
                                                                        dtype=dtype)])


def predict(row: dict, data=None) -> dict:
    """The model's times for a measured scheme row, from that run's one-GPU time at the same
    size and type (less the start-up, which is added back once), its fitted link and its
    measured add bandwidth."""
    data = data or results.load("multi_gpu")
    one = s0_rows.part_rows("one_gpu", data, dtype=row["dtype"], n=row["n"])[0]
    add = s0_rows.part_rows("add", data, m=row["m"], n=-(-row["n"] // WORLD))
    add_gbps = add[0]["bytes"] / (add[0]["median_ms"] * 1e-3) / 1e9 if add else 3000.0
    e = 2 if row["dtype"] == "float16" else 4
    h = startup(row["dtype"], data)["startup_s"]
    out = model.scheme_seconds(row["scheme"], row["m"], row["n"], row["k"], WORLD,
                               rate_tflops=model.work_rate(row["n"], one["median_ms"], h),
                               link=model.fit_link(s0_rows.part_rows("bandwidth", data)), e=e,
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
    data = results.load("multi_gpu")
    out = []
    for r in s0_rows.part_rows("scheme", data):
        p = predict(r, data)
        miss = p["total"] * 1e3 / r["median_ms"] - 1
        out.append({"dtype": r["dtype"], "n": r["n"], "scheme": LABELS[r["scheme"]],
                    "key": r["scheme"], "measured": r["median_ms"], "model": p["total"] * 1e3,
                    "miss": miss, "within": "yes" if abs(miss) <= GOAL else "no",
                    "compute": r["compute_ms"], "compute_model": p["compute_alone"] * 1e3,
                    "comm": r["comm_ms"], "comm_model": p["comm"] * 1e3})
    return out


def model_table():
    """Every measured row against the model (below a fold): the whole call, measured and
    modelled, and the miss."""
    return page.table(model_rows(), ["dtype", "n", "scheme", "measured", "model", "miss"],
                      show=[],
                      headers={"measured": "measured (ms)", "model": "model (ms)",
                       "miss": "model / measured − 1"},
                      title=f"The model against every two-GPU row (goal: within {GOAL:.0%})",
                      source=results.source_line(EXPERIMENT))


def miss_table():
    """The rows the model misses, with the same call's arithmetic alone and communication
    alone, measured and modelled, so a miss can be traced to one side (ms)."""
    rows = [{"case": f"{r['dtype']} {r['n']}, {r['scheme']}", "miss": r["miss"],
             "compute": r["compute"], "compute_model": r["compute_model"], "comm": r["comm"],
             "comm_model": r["comm_model"]} for r in model_rows() if r["within"] != "yes"]
    return page.table(rows, ["case", "miss", "compute", "compute_model", "comm", "comm_model"],
                      {"case": "missed row", "miss": "model / measured − 1",
                       "compute": "compute alone (ms)", "compute_model": "… model",
                       "comm": "comm alone (ms)", "comm_model": "… model"})


def _overlap_pairs(data) -> list[tuple[str, int, dict, dict]]:
    out = []
    for dtype in ("float16", "float32"):
        for n in sorted({r["n"] for r in s0_rows.part_rows("scheme", data, dtype=dtype)}):
            lap = s0_rows.part_rows("scheme", data, scheme="column_overlap", dtype=dtype, n=n)
            gat = s0_rows.part_rows("scheme", data, scheme="column_gather", dtype=dtype, n=n)
            if lap and gat:
                out.append((dtype, n, lap[0], gat[0]))
    return out


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    data = results.load("multi_gpu")
    v = {}
    small = min(r["n"] for r in s0_rows.part_rows("scheme", data))
    f16, f32 = startup("float16", data), startup("float32", data)
    v["h16_ms"], v["h32_ms"] = f"{f16['startup_s'] * 1e3:.2f}", f"{f32['startup_s'] * 1e3:.2f}"
    rows = model_rows()
    misses = [abs(r["miss"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["miss"]))
    v["model_within"], v["model_total"] = str(sum(m <= GOAL for m in misses)), str(len(rows))
    v["model_median"] = f"{float(np.median(misses)):.0%}"
    v["model_worst"] = f"{worst['miss']:+.0%}"
    v["model_worst_where"] = f"{worst['dtype']}, n = {worst['n']}, {worst['scheme']}"
    bad = sorted({r["n"] for r in rows if abs(r["miss"]) > GOAL})
    v["misses_sizes"] = ", ".join(map(str, bad)) or "none"
    ns = sorted({r["n"] for r in rows})
    v["holds_from"] = str(next((n for n in ns if all(b < n for b in bad)), "no size"))
    pairs = _overlap_pairs(data)
    def sizes(dtype, win):
        got = [str(n) for d, n, lap, gat in pairs if d == dtype
               and (lap["median_ms"] < gat["median_ms"]) == win]
        return ", ".join(got) or "none"
    v["lap16_wins"], v["lap16_loses"] = sizes("float16", True), sizes("float16", False)
    v["lap32_loses"] = sizes("float32", False)
    lap = s0_rows.part_rows("scheme", data, scheme="column_overlap", dtype="float16", n=small)[0]
    gat = s0_rows.part_rows("scheme", data, scheme="column_gather", dtype="float16", n=small)[0]
    sm = s0_rows.part_rows("scheme", data, scheme="summa", dtype="float16", n=small)[0]
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
    v["lap16_4096_extra"] = _fmt_ms(lap["compute_ms"] - gat["compute_ms"])
    v["gat16_4096_comm"] = _fmt_ms(gat["comm_ms"])
    ones = sorted(s0_rows.part_rows("one_gpu", data, dtype="float16"), key=lambda r: r["n"])
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
    v["summa16_4096_ratio"] = f"{sm['compute_ms'] / gat['compute_ms']:.2f}"
    p32 = [(n, lap_, gat_) for d, n, lap_, gat_ in pairs if d == "float32"]
    v["lap32_exposed"] = ", ".join(_fmt_ms(lp["exposed_comm_ms"]) for _, lp, _ in p32)
    v["lap32_comm"] = ", ".join(_fmt_ms(lp["comm_ms"]) for _, lp, _ in p32)
    v["gat32_share"] = ", ".join(f"{g['comm_ms'] / g['median_ms']:.1%}" for _, _, g in p32)
    v["lap32_ceiling"] = ", ".join(
        f"{(1 - 1 / lp['chunks']) * g['comm_ms'] / g['median_ms']:.1%}" for _, lp, g in p32)
    return v
