"""Speed beside cuBLASLt FP8: the timed pairs, the tile sweep, wave quantization, and clusters."""
from __future__ import annotations

import numpy as np

from lab import model, page, plots, results
from lab.chapters.ch7b.common import (COUNTERS_LABEL, EXPERIMENT, MISSING, PAIRS, SIZES, fmt,
                                     pct, speed)


def speed_rows() -> list[dict]:
    timed = speed(results.load(EXPERIMENT))
    rows = []
    for n in SIZES:
        for ours, theirs in PAIRS:
            mine, base = timed.get((ours, n)), timed.get((theirs, n))
            if mine is None:
                continue
            rows.append({"size": f"{n}³", "ours": ours, "TFLOP/s": mine["tflops"],
                         "SM MHz": mine["sm_mhz"], "W": mine["power_w"], "vs": theirs,
                         "its TFLOP/s": base.get("tflops") if base else None,
                         "its SM MHz": base.get("sm_mhz") if base else None,
                         "ratio": mine.get("ratio_to_cublas"),
                         "note": (base or {}).get("error", "")[:60]})
    return rows


def speed_table():
    """Each kernel beside its cuBLAS(Lt) counterpart, the ratio beside the two rates it divides
    (the clocks and board power of the rows are in :func:`speed_rows`; a counterpart the library
    refused shows no rate)."""
    rows = [{"size": r["size"], "ours": r["ours"], "TFLOP/s": r["TFLOP/s"], "vs": r["vs"],
             "its TFLOP/s": r["its TFLOP/s"],
             "ratio": f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"}
            for r in speed_rows()]
    return page.table(rows, digits=4, source=results.source_line(EXPERIMENT))


def sweep_rows() -> list[dict]:
    rows = []
    for r in results.load(EXPERIMENT)["rows"]:
        if r["part"] == "speed" and r["kernel"].startswith("sweep: ") and "tflops" in r:
            rows.append({"size": f"{r['m']}³", "variant": r["kernel"].removeprefix("sweep: "),
                         "TFLOP/s": r["tflops"], "vs": r.get("versus"),
                         "ratio": (f"{r['ratio_to_cublas']:.3f}"
                                   if r.get("ratio_to_cublas") is not None else "-"),
                         "SM MHz": r["sm_mhz"]})
    return rows


def sweep_table():
    return page.table(sweep_rows(), digits=4, source=results.source_line(EXPERIMENT))


def speed_figure():
    timed = speed(results.load(EXPERIMENT))
    fig, ax = plots.axes("FP8 and BF16 at 8192³: ours beside cuBLAS(Lt)", "", "TFLOP/s",
                         size=(8.0, 3.8))
    labels, ours, theirs = [], [], []
    for mine, base in PAIRS:
        a, b = timed.get((mine, SIZES[-1])), timed.get((base, SIZES[-1]))
        if a is None:
            continue
        labels.append(mine.replace("wgmma_tmastore_", "").replace("fp8_", ""))
        ours.append(a["tflops"])
        theirs.append(b.get("tflops", 0.0) if b else 0.0)
    x = np.arange(len(labels))
    ax.bar(x - 0.2, ours, 0.4, label="ours")
    ax.bar(x + 0.2, theirs, 0.4, label="cuBLAS(Lt), same format, scaling, output")
    ax.set_xticks(x, labels, fontsize=9)
    ax.legend(fontsize=9, loc="lower left")
    return page.figure(fig)


def tile_rows() -> list[dict]:
    """The count behind the tile choice: tiles, rounds of 132 persistent blocks, the share of
    block slots that hold work (:func:`lab.model.wave_efficiency`) and the share of the
    computed tile area inside C, for the tiles the sweep tried."""
    rows = []
    for n in SIZES:
        for bm, bn in ((128, 256), (128, 192), (128, 128)):
            area = n * n / (-(-n // bm) * bm * -(-n // bn) * bn)
            rows.append({"size": f"{n}³", "tile": f"{bm}×{bn}",
                         "tiles": model.tile_grid(n, n, bm, bn),
                         "rounds": model.waves(n, n, bm, bn),
                         "slots used": model.wave_efficiency(n, n, bm, bn),
                         "area inside C": area,
                         "both": model.wave_efficiency(n, n, bm, bn) * area})
    return rows


def tile_table():
    return page.table(tile_rows(), digits=3)


def _size_values(speed: dict, n: int) -> dict:
    """At n³: ours and cuBLASLt for each of the four pairs (FP32 out, BF16 out, promotion,
    block scales), ours against the promoting cuBLASLt, BF16 wgmma, e5m2, and the clock and
    power sampled over the size's rows; keyed by what the prose names, without the size."""
    s = {}
    for mine, base, key in (("fp8_e4m3", "cublaslt_e4m3_f32_fast", "f32"),
                            ("fp8_e4m3_bf16", "cublaslt_e4m3_bf16_fast", "bf16"),
                            ("fp8_e4m3_promote", "cublaslt_e4m3_f32", "promote"),
                            ("fp8_e4m3_block", "cublaslt_e4m3_bf16_block", "block")):
        a, b = speed.get((mine, n), {}), speed.get((base, n), {})
        s["ours", key] = fmt(a["tflops"]) if "tflops" in a else MISSING
        s["cublas", key] = (fmt(b["tflops"]) if "tflops" in b
                            else "not run (" + b.get("error", MISSING)[:50] + ")")
        s["ratio", key] = (f"{a['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in a
                           else MISSING)
    a = speed.get(("fp8_e4m3", n), {})
    d = speed.get(("cublaslt_e4m3_f32", n), {})
    s["ours_vs_promoting"] = (f"{d['median_ms'] / a['median_ms']:.3f}"
                              if "median_ms" in a and "median_ms" in d else MISSING)
    bf = speed.get(("wgmma_tmastore_bf16", n), {})
    s["bf16"] = fmt(bf["tflops"]) if "tflops" in bf else MISSING
    s["fp8_over_bf16"] = (f"{a['tflops'] / bf['tflops']:.2f}"
                          if "tflops" in a and "tflops" in bf else MISSING)
    e5 = speed.get(("fp8_e5m2", n), {})
    s["e5m2"] = fmt(e5["tflops"]) if "tflops" in e5 else MISSING
    mhz = [r["sm_mhz"] for (k, m), r in speed.items() if m == n and "sm_mhz" in r]
    watts = [r["power_w_max"] for (k, m), r in speed.items() if m == n and "power_w_max" in r]
    s["mhz_min"] = f"{min(mhz):.0f}" if mhz else MISSING
    s["mhz_max"] = f"{max(mhz):.0f}" if mhz else MISSING
    s["watts_max"] = f"{max(watts):.0f}" if watts else MISSING
    return s


def _past_rows() -> list[dict]:
    """The FP8 rows of ``hopper_past`` (chapter 7's measurement past Hopper rung 8): medians over
    its processes, GPU-only timing, each against cuBLASLt fast accumulation with its output
    type."""
    return [r for r in results.load("hopper_past")["rows"]
            if r["part"] == "summary" and r["dtype"] == "e4m3"]


def cluster_table():
    """FP8 with and without clusters of two blocks (Bᵀ multicast), and with rungs 10 and 11's
    changes: each row's ratio to cuBLASLt (fast accumulation, same output type) in the same
    process, median and range over the processes (the library's own rows, 1 by definition,
    left out)."""
    rows = [{"kernel": r["kernel"], "size": f"{r['m']}³", "C": r["out"],
             "TFLOP/s": r["tflops"], "ratio": f"{r['ratio']:.3f}",
             "ratio min–max": f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"}
            for r in _past_rows() if not r["kernel"].startswith("cuBLASLt")]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def cluster_values() -> dict:
    """The numbers of the clusters paragraph."""
    by = {(r["kernel"], r["m"]): r for r in _past_rows()}
    big, small = SIZES[-1], SIZES[0]
    return {
        "cl_ratio_big": f"{by[('fp8 cluster bf16 out', big)]['ratio']:.3f}",
        "cl_tflops_big": f"{by[('fp8 cluster bf16 out', big)]['tflops']:,.0f}",
        "cl_ratio_big_f32": f"{by[('fp8 cluster f32 out', big)]['ratio']:.3f}",
        "cl_ratio_small": f"{by[('fp8 cluster bf16 out', small)]['ratio']:.3f}",
        "nocl_ratio_big": f"{by[('fp8 bf16 out', big)]['ratio']:.3f}",
        "nocl_ratio_small": f"{by[('fp8 bf16 out', small)]['ratio']:.3f}",
        "cl_processes": str(min(r["processes"] for r in _past_rows())),
        # Hopper rungs 10 and 11 for FP8: BF16 C staged a whole tile at a time, 3 stages,
        # and a grid of 128 blocks (fp8_e4m3_tile)
        "tile_ratio_big": f"{by[('fp8 bf16 out whole-tile grid 128', big)]['ratio']:.3f}",
        "tile_tflops_big": f"{by[('fp8 bf16 out whole-tile grid 128', big)]['tflops']:,.0f}",
        "tile_range_big": spread(by[('fp8 bf16 out whole-tile grid 128', big)]),
        "tile_ratio_small": f"{by[('fp8 bf16 out whole-tile grid 128', small)]['ratio']:.3f}",
        "tile_range_small": spread(by[('fp8 bf16 out whole-tile grid 128', small)]),
        "tile_nogrid_big": f"{by[('fp8 bf16 out whole-tile', big)]['ratio']:.3f}",
        "tile_nogrid_small": f"{by[('fp8 bf16 out whole-tile', small)]['ratio']:.3f}",
        "past_cublas_tflops_big":
            f"{by[('cuBLASLt e4m3 fast accum (BF16 out)', big)]['tflops']:,.0f}",
    }


def spread(r: dict) -> str:
    """A summary row's ratio range over the processes."""
    return f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"


def values() -> dict:
    """The numbers the speed section quotes: the timed pairs at 8192³ (and two ratios at
    4096³), the sweep's variants, the tile count behind the tile choice, and clusters."""
    data = results.load(EXPERIMENT)
    timed = speed(data)
    small, big = _size_values(timed, 4096), _size_values(timed, 8192)
    v = {"the_gpu": page.gpu_label(data["provenance"]["gpu"]),
         "ratio_f32_4096": small["ratio", "f32"], "ratio_bf16_4096": small["ratio", "bf16"],
         "ours_f32_8192": big["ours", "f32"],
         "ratio_f32_8192": big["ratio", "f32"],
         "ratio_bf16_8192": big["ratio", "bf16"],
         "ours_promote_8192": big["ours", "promote"],
         "cublas_promote_8192": big["cublas", "promote"],
         "ratio_promote_8192": big["ratio", "promote"],
         "ours_block_8192": big["ours", "block"], "cublas_block_8192": big["cublas", "block"],
         "ratio_block_8192": big["ratio", "block"],
         "ours_vs_promoting_8192": big["ours_vs_promoting"],
         "fp8_over_bf16_8192": big["fp8_over_bf16"], "e5m2_8192": big["e5m2"],
         "mhz_min_8192": big["mhz_min"], "mhz_max_8192": big["mhz_max"],
         "watts_max_8192": big["watts_max"]}
    n = SIZES[-1]
    v["rounds"] = f"{data.get('parameters', {}).get('rounds', MISSING)}"
    bf = timed.get(("wgmma_tmastore_bf16", n), {})
    v["bf16_ratio_8192"] = (f"{bf['ratio_to_cublas']:.2f}" if "ratio_to_cublas" in bf
                            else MISSING)
    small = timed.get(("sweep: e4m3 128x128, no promotion", n), {})
    wide = timed.get(("fp8_e4m3", n), {})
    v["tile128_cost"] = (pct(1 - small["tflops"] / wide["tflops"])
                         if "tflops" in small and "tflops" in wide else MISSING)
    v["shortfall_8192"] = (pct(1 - wide["ratio_to_cublas"]) if "ratio_to_cublas" in wide
                           else MISSING)
    v["sms"] = f"{data.get('provenance', {}).get('sm_count', MISSING)}"
    narrow = timed.get(("sweep: e4m3 128x192", n), {})
    v["ours_192"] = fmt(narrow["tflops"]) if "tflops" in narrow else MISSING
    v["ratio_192"] = (f"{narrow['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in narrow
                      else MISSING)
    v["measured_192_gain"] = (pct(narrow["tflops"] / wide["tflops"] - 1)
                              if "tflops" in narrow and "tflops" in wide else MISSING)
    p256 = timed.get(("sweep: e4m3 promote every 256", n), {})
    p512 = timed.get(("sweep: e4m3 promote every 512", n), {})
    v["ours_p256_8192"] = fmt(p256["tflops"]) if "tflops" in p256 else MISSING
    v["ratio_p256_8192"] = (f"{p256['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p256
                            else MISSING)
    v["ours_p512_8192"] = fmt(p512["tflops"]) if "tflops" in p512 else MISSING
    v["ratio_p512_8192"] = (f"{p512['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p512
                            else MISSING)
    p192 = timed.get(("sweep: e4m3 128x192, promote every 128", n), {})
    v["ours_192_promote"] = fmt(p192["tflops"]) if "tflops" in p192 else MISSING
    v["ratio_192_promote"] = (f"{p192['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p192
                              else MISSING)
    e5 = timed.get(("cublaslt_e5m2_f32_fast", SIZES[0]), {})
    v["cublas_e5m2_error"] = e5.get("error", "none")
    tiles = {(r["size"], r["tile"]): r for r in tile_rows()}
    big = f"{SIZES[-1]}³"
    v["slots_256"] = f"{tiles[(big, '128×256')]['slots used']:.3f}"
    v["rounds_256"] = f"{tiles[(big, '128×256')]['rounds']}"
    v["tiles_256"] = f"{tiles[(big, '128×256')]['tiles']}"
    v["both_192"] = f"{tiles[(big, '128×192')]['both']:.3f}"
    v["predicted_192_gain"] = pct(tiles[(big, "128×192")]["both"]
                                  / tiles[(big, "128×256")]["both"] - 1)
    v["rounds_192_4096"] = f"{tiles[(f'{SIZES[0]}³', '128×192')]['rounds']}"
    v.update(cluster_values())
    v.update(loop_values())
    return v


#: The block-scaled kernel's earlier main loop (slots divided between promotions, scales
#: loaded at the promotion that uses them), kept in the sweep to time beside today's loop.
OLD_LOOP = "sweep: e4m3 block scales, divided slots"


def loop_values() -> dict:
    """Today's block-scaled loop against the earlier one at 8192³, in one run: from this GPU's
    file where it times both, else from the first GPU's that does (its name glued with them);
    MISSING where none does."""
    here = results.selected_gpu()
    for gpu in [here] + [g for g in results.measured_on(EXPERIMENT) if g != here]:
        try:
            data = results.load(EXPERIMENT, gpu=gpu)
        except results.ResultsMissing:
            continue
        timed = speed(data)
        new, old = timed.get(("fp8_e4m3_block", SIZES[-1])), timed.get((OLD_LOOP, SIZES[-1]))
        if new and old and "tflops" in new and "tflops" in old:
            mine = results.load(EXPERIMENT)
            block = speed(mine).get(("fp8_e4m3_block", SIZES[-1]), {})
            if COUNTERS_LABEL in block.get("config", ""):    # the row's configuration says
                note = "The rows above are the new loop's."
            else:
                note = (f"The {page.gpu_label(mine['provenance']['gpu'])}'s rows above were "
                        f"measured on {mine['provenance']['date'][:10]}, before the change, "
                        "and are the old loop's.")
            return {"loop_gpu": page.gpu_label(data["provenance"]["gpu"]),
                    "loop_new_8192": fmt(new["tflops"]), "loop_old_8192": fmt(old["tflops"]),
                    "loop_gain_8192": f"{new['tflops'] / old['tflops']:.2f}",
                    "loop_date": data["provenance"]["date"][:10], "loop_rows_note": note}
    return {k: MISSING for k in ("loop_gpu", "loop_new_8192", "loop_old_8192",
                                 "loop_gain_8192", "loop_date", "loop_rows_note")}


#: The headline kernel (Hopper rungs 10 and 11 for FP8) and its yardstick, as labelled in
#: ``hopper_past``'s rows.
HEADLINE, HEADLINE_YARDSTICK = ("fp8 bf16 out whole-tile grid 128",
                                "cuBLASLt e4m3 fast accum (BF16 out)")


def evidence_box():
    """The evidence beside the headline: the FP8 kernel with Hopper rungs 10 and 11 against
    cuBLASLt's fast accumulation (BF16 output) at both sizes, from chapter 7's run (GPU-only,
    medians over processes): both sides' TFLOP/s and SM clock, the ratio, its range and the
    word the range supports."""
    from lab.chapters.common import evidence_box as box

    data = results.load("hopper_past")
    by = {(r["kernel"], r["m"]): r for r in _past_rows()}
    rows = [{"what": f"e4m3, BF16 C, {n}³", "ours": by[HEADLINE, n]["tflops"],
             "theirs": by[HEADLINE_YARDSTICK, n]["tflops"], "ratio": by[HEADLINE, n]["ratio"],
             "lowest": by[HEADLINE, n]["ratio_min"], "highest": by[HEADLINE, n]["ratio_max"],
             "mhz_ours": by[HEADLINE, n]["sm_mhz"], "mhz_theirs": by[HEADLINE_YARDSTICK, n]["sm_mhz"]}
            for n in SIZES]
    processes = min(by[HEADLINE, n]["processes"] for n in SIZES)
    return box(rows, claim="our FP8 kernel with Hopper rungs 10 and 11 against cuBLASLt, "
                           f"medians of {processes} processes on one "
                           f"{page.gpu_label(data['provenance']['gpu'])}",
               method="GPU-only — " + data["parameters"]["timing"],
               yardstick="cuBLASLt e4m3 with fast accumulation (no promotion), per-tensor "
                         "scales, BF16 output, same process; against its promoting path our "
                         "promoting kernels are far behind (the speed section)")
