"""Chapter 10, two or more GPUs: four ways to split one product, their bytes against their
FLOPs, the schemes checked on simulated ranks, measured on two H200s, and the model beyond.

The page's sections, in order, one module each: :mod:`.s1_splits` (four ways to split one
product), :mod:`.s2_prediction` (bytes against FLOPs), :mod:`.s3_schemes` (the code one GPU
runs), :mod:`.s4_simulated` (two ranks in one process), :mod:`.s5_measured` (two H200s),
:mod:`.s6_model` (the model against the measurement), :mod:`.s7_beyond` (the model alone, past
two GPUs); the exercises' solutions in :mod:`.solutions`; the results file's rows in
:mod:`.s0_rows`. The notebook calls only the names imported here.
"""
from __future__ import annotations

import numpy as np

from lab import compiler, model, page, results
from lab.multi import schemes
from lab.chapters.ch10 import s0_rows
from lab.chapters.ch10.s0_rows import EXPERIMENT
from lab.chapters.ch10.s1_splits import split_figure
from lab.chapters.ch10.s2_prediction import WORLD, N_REF, LABELS, bytes_rows, FORMULAS, bytes_table
from lab.chapters.ch10.s3_schemes import source
from lab.chapters.ch10.s4_simulated import SIM_SHAPE, simulated_rows, simulated_table
from lab.chapters.ch10.s5_measured import (KERNEL_OF, measured_rows, measured_table, share_table,
                                           rate_figure, bandwidth_table)
from lab.chapters.ch10.s6_model import (startup, predict, GOAL, model_rows, model_table, verdicts,
                                        _overlap_pairs)
from lab.chapters.ch10.s7_beyond import MODEL_GPUS, GRIDS, scaling_figure


__all__ = ["source", "figure", "EXPERIMENT", "split_figure", "WORLD", "N_REF", "LABELS",
           "bytes_rows", "FORMULAS", "bytes_table", "SIM_SHAPE", "simulated_rows",
           "simulated_table", "KERNEL_OF", "measured_rows", "measured_table", "share_table",
           "rate_figure", "bandwidth_table", "startup", "predict", "GOAL", "model_rows",
           "model_table", "verdicts", "MODEL_GPUS", "GRIDS", "scaling_figure", "link",
           "measured_values", "values", "glue"]


def link() -> dict:
    """The model's link: latency and bus bandwidth of each collective, fitted to the run."""
    return model.fit_link(s0_rows.part_rows("bandwidth"))


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
    data = s0_rows.load()
    v = {k: "not measured" for k in keys}
    col = s0_rows.part_rows("scheme", data, scheme="column", dtype="float16", n=N_REF)
    if col:
        v["col16_speedup"] = f"{col[0]['speedup']:.2f}"
        v["col16_goal"] = "met" if col[0]["speedup"] >= 1.8 else "not met"
    small = min(r["n"] for r in s0_rows.part_rows("scheme", data))
    c4 = s0_rows.part_rows("scheme", data, scheme="column", dtype="float16", n=small)[0]
    v["col_fp16_4096_whole"] = _fmt_ms(c4["median_ms"])
    v["col_fp16_4096_compute"] = _fmt_ms(c4["compute_ms"])
    v["col_fp16_4096_noise"] = f"{c4['median_ms'] / c4['compute_ms'] - 1:.0%}"
    lk = link()
    v["ag_lat_us"] = f"{lk['all_gather']['latency_s'] * 1e6:.0f}"
    for op, key in (("all_gather", "ag_bus"), ("all_reduce", "ar_bus"),
                    ("reduce_scatter", "rs_bus"), ("broadcast", "bc_bus")):
        v[key] = f"{lk[op]['bus_gbps']:.0f}"
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
    v["gat16_4096_waves"] = str(model.waves(small, w, bm, bn, sms, resident))
    v["lap16_4096_blocks"] = str(resident)
    v["lap16_4096_slots"] = str(sms * resident)
    v["lap16_4096_rule_chunks"] = str(schemes.overlap_chunks(small, w, (bm, bn), sms,
                                                             blocks_per_sm=resident))
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


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
