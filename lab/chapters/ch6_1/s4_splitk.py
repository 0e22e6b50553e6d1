"""Section "Too few tiles: split-K and Stream-K": the model of split-K on few tiles and a long
K, Stream-K's equal shares, what the order of the additions does to the bits (a NumPy model),
then split-K measured (``splitk``): the best factor of each version, its model, and the bits
of repeated runs."""
from __future__ import annotations

import numpy as np

from lab import model, page, plots, results
from lab.chapters.ch6_1.roofs import roofs
from lab.kernels import get_spec, splitk
from lab.kernels.splitk import extra_bytes

#: The split-K example: few output tiles, a long K.
SPLIT_K = {"m": 512, "n": 512, "k": 16384, "tile": 128}
#: The tiling primer's Stream-K case: tiles, k-iterations per tile.
STREAM_K = {"tiles": 140, "iterations": 64}
#: Our kernel of each design.
DESIGN_KERNEL = {"fp16": "tc_fp16", "fp32": "warptile_tuned"}


def split_k_rows() -> list[dict]:
    """Work units, busy SMs, waves and extra traffic of split-K on :data:`SPLIT_K`."""
    s = SPLIT_K
    sms = roofs()["sm_count"]
    ideal = model.ideal_bytes(s["m"], s["n"], s["k"], 2, 4)
    rows = []
    for splits in (1, 2, 4, 8, 16, 32):
        units = model.split_k_tiles(s["m"], s["n"], s["tile"], s["tile"], splits)
        rows.append({"splits": splits, "units": units, "busy": min(units, sms),
                     "waves": -(-units // sms), "k": s["k"] // splits,
                     "extra": model.split_k_extra_bytes(s["m"], s["n"], splits) / ideal})
    return rows


def split_k_table():
    """Split-K on a few tiles with a long K (the model)."""
    s = SPLIT_K
    return page.table(split_k_rows(), ["splits", "units", "busy", "waves", "k", "extra"],
                      {"units": "work units", "busy": "SMs busy", "k": "k per unit",
                       "extra": "extra / ideal bytes"},
                      title=f"{s['m']}×{s['n']}×{s['k']:,} FP16, {s['tile']}×{s['tile']} tiles, "
                            "one block per SM")


def stream_k() -> dict:
    """The tiling primer's 140 tiles on the SMs: iteration times with one tile per block in waves, and
    with Stream-K's equal shares of all k-iterations (and the tiles two SMs share)."""
    tiles, iters = STREAM_K["tiles"], STREAM_K["iterations"]
    sms = roofs()["sm_count"]
    total = tiles * iters
    bounds = [s * total // sms for s in range(sms + 1)]
    return {"tiles": tiles, "iterations": iters, "sm_count": sms,
            "waves_time": -(-tiles // sms) * iters,
            "slots_used": model.wave_efficiency(tiles * 128, 128, 128, 128, sms),
            "stream_time": max(hi - lo for lo, hi in zip(bounds, bounds[1:])),
            "shared_tiles": len({b // iters for b in bounds[1:-1] if b % iters})}


def stream_k_text() -> str:
    """The Stream-K comparison as three lines of text."""
    s = stream_k()
    return (f"{s['tiles']} tiles × {s['iterations']} k-iterations on {s['sm_count']} SMs\n"
            f"  one tile per block, in waves: {s['waves_time']} iteration times, "
            f"{s['slots_used']:.0%} of slots busy\n"
            f"  Stream-K, equal shares:       {s['stream_time']} iteration times, plus a fix-up\n"
            f"                                for the {s['shared_tiles']} tiles two SMs share")


def reduction_order_rows(seed: int = 6) -> list[dict]:
    """Split-K partials of a 64×64×4096 product added in float32 in three orders.

    The inputs are multiples of 2⁻¹⁰, so the float64 product and partials are exact; each
    partial is rounded to float32 (as an FP32 accumulator holds it), then the eight are added
    forwards, backwards, and in a random order per element (as atomics would).
    """
    rng = np.random.default_rng(seed)
    m, n, k, splits = 64, 64, 4096, 8
    a = rng.integers(-1024, 1024, size=(m, k)) / 1024.0
    b = rng.integers(-1024, 1024, size=(k, n)) / 1024.0
    exact = a @ b
    step = k // splits
    partials = np.stack([(a[:, s * step:(s + 1) * step] @ b[s * step:(s + 1) * step])
                         .astype(np.float32) for s in range(splits)])

    def add(order):
        total = np.zeros((m, n), dtype=np.float32)
        for s in range(splits):
            total = total + np.take_along_axis(partials, order[s][None], axis=0)[0]
        return total

    ident = np.broadcast_to(np.arange(splits)[:, None, None], (splits, m, n))
    orders = {"forwards": ident, "backwards": ident[::-1],
              "random per element (atomics)": np.argsort(rng.random((splits, m, n)), axis=0)}
    sums = {name: add(o) for name, o in orders.items()}
    base = sums["forwards"]
    return [{"order": name, "differ": int(np.count_nonzero(c != base)),
             "max_diff": float(np.abs(c - base).max() / np.abs(exact).max()),
             "rel_frob": float(np.linalg.norm(c - exact) / np.linalg.norm(exact)),
             "outputs": m * n}
            for name, c in sums.items()]


def reduction_order_table():
    """The reduction-order model as a table."""
    return page.table(reduction_order_rows(), ["order", "differ", "max_diff", "rel_frob"],
                      {"order": "order of the 8 partials",
                       "differ": "outputs differing from forwards",
                       "max_diff": "max |diff| / max |C|", "rel_frob": "rel. Frobenius vs exact"},
                      title="64×64 outputs, K = 4096 in 8 pieces")


# ----------------------------------------------------------------------------- measured

def launch_floor_us() -> float:
    """The shortest per-call time of our Numba kernels at any size of the ``shapes`` run's size
    curve (µs): what one launch costs the host, whatever the work."""
    return min(r["median_ms"] for r in results.rows("shapes", part="size")
               if not r["kernel"].startswith("cublas")) * 1e3


def split_source(region: str):
    """A named region of the split-K kernels' module (``split_tail``: the tile's k-range and
    store; ``reduce``: the second pass of the two-pass version)."""
    return page.source(splitk, region)


def splitk_model_us(design: str, m: int, n: int, k: int, slices: int, mode: str) -> float:
    """The model's time for split-K: the FLOPs at the design's roof scaled by the share of SMs
    the work units keep busy, plus the extra bytes at the streaming-read bandwidth."""
    r = roofs()
    bm, bn, _ = get_spec(DESIGN_KERNEL[design]).tile
    units = model.tile_grid(m, n, bm, bn) * slices
    busy = min(units, r["sm_count"]) / r["sm_count"]
    peak = r["peak"][design.upper()] * 1e12
    extra = extra_bytes(m, n, slices, mode) if slices > 1 else 0
    return (model.flops(m, n, k) / (peak * busy) + extra / (r["read_gbps"] * 1e9)) * 1e6


def splitk_rows() -> list[dict]:
    """Per shape: the unsplit kernel, cuBLAS, and each split-K row with the model's time."""
    out = []
    for r in results.rows("splitk", part="splitk"):
        mode = r["mode"]
        slices = r.get("slices") or 1
        row = {"design": r["design"], "shape": f"{r['m']}×{r['n']}×{r['k']}", "mode": mode,
               "slices": r.get("slices"), "us": r["median_ms"] * 1e3, "timing": r["timing"],
               "m": r["m"], "n": r["n"], "k": r["k"]}
        if mode != "library":
            row["model_us"] = splitk_model_us(r["design"], r["m"], r["n"], r["k"], slices,
                                              "two_pass" if mode == "unsplit" else mode)
        out.append(row)
    return out


def splitk_summary_rows() -> list[dict]:
    """Per shape: unsplit, cuBLAS, and the best of each split-K version (with its factor)."""
    rows = splitk_rows()
    out = []
    for shape in dict.fromkeys((r["design"], r["shape"]) for r in rows):
        here = [r for r in rows if (r["design"], r["shape"]) == shape]
        unsplit = next(r for r in here if r["mode"] == "unsplit")
        lib = next(r for r in here if r["mode"] == "library")
        row = {"design": shape[0], "shape": shape[1], "unsplit": unsplit["us"],
               "cublas": lib["us"]}
        for mode in ("two_pass", "atomic"):
            best = min((r for r in here if r["mode"] == mode), key=lambda r: r["us"])
            row[mode] = best["us"]
            row[f"{mode}_s"] = best["slices"]
            row[f"{mode}_x"] = unsplit["us"] / best["us"]
        out.append(row)
    return out


def splitk_table():
    """Split-K measured: the best factor of each version against unsplit and cuBLAS."""
    return page.table(splitk_summary_rows(), ["design", "shape", "unsplit", "two_pass",
                                              "two_pass_s", "two_pass_x", "atomic", "atomic_s",
                                              "atomic_x", "cublas"],
                      {"shape": "M×N×K", "unsplit": "unsplit (µs)",
                       "two_pass": "two-pass (µs)", "two_pass_s": "slices",
                       "two_pass_x": "speed-up", "atomic": "atomic (µs)", "atomic_s": "slices",
                       "atomic_x": "speed-up", "cublas": "cuBLAS (µs)"},
                      source=results.source_line("splitk"))


def splitk_figure():
    """Time against slices of K for both versions, the model, the unsplit kernel and cuBLAS."""
    rows = splitk_rows()
    shapes = list(dict.fromkeys((r["design"], r["shape"]) for r in rows))
    fig, axes = plots.plt.subplots(1, len(shapes), figsize=(2.7 * len(shapes), 2.9), dpi=110)
    for ax, shape in zip(np.atleast_1d(axes), shapes):
        here = [r for r in rows if (r["design"], r["shape"]) == shape]
        for mode, colour in (("two_pass", "C0"), ("atomic", "C2")):
            pts = sorted((r for r in here if r["mode"] == mode), key=lambda r: r["slices"])
            ax.plot([r["slices"] for r in pts], [r["us"] for r in pts], color=colour,
                    marker="o", markersize=3, linewidth=1.2, label=mode.replace("_", "-"))
            if mode == "two_pass":
                ax.plot([r["slices"] for r in pts], [r["model_us"] for r in pts],
                        color="C3", linewidth=0.9, linestyle="--", label="model (two-pass)")
        for mode, style, label in (("unsplit", "-", "unsplit"), ("library", ":", "cuBLAS")):
            r = next(x for x in here if x["mode"] == mode)
            ax.axhline(r["us"], color="0.4", linestyle=style, linewidth=1.0, label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{shape[0].upper()} {shape[1]}", fontsize=8.5)
        ax.set_xlabel("slices of K", fontsize=8.5)
        ax.set_ylabel("µs per call", fontsize=8.5)
        ax.tick_params(labelsize=8.5)
    np.atleast_1d(axes)[0].legend(fontsize=8.5, loc="upper right")
    fig.tight_layout()
    return page.figure(fig)


def determinism_rows() -> list[dict]:
    """Per design and factor, both versions run repeatedly on the same inputs: distinct results
    of each, and for the atomic one how far its runs lie apart (elements, bits, ulps) and from
    the two-pass result."""
    by: dict = {}
    for r in results.rows("splitk", part="determinism"):
        row = by.setdefault((r["design"], r["splits"]), {"design": r["design"],
                                                          "splits": r["splits"],
                                                          "runs": r["runs"]})
        row[f"{r['mode']}_distinct"] = r["distinct_results"]
        if r["mode"] == "atomic":
            row.update(elements=r["max_elements_vs_first"],
                       share=r["max_elements_vs_first"] / r["elements"],
                       bits=r["max_bits_vs_first"], ulps=r["max_ulps_vs_first"],
                       vs_two_pass=r["max_elements_vs_two_pass"])
    return list(by.values())


def determinism_table():
    """Bitwise (non-)determinism of split-K, measured."""
    return page.table(determinism_rows(), ["design", "splits", "runs", "two_pass_distinct",
                                           "atomic_distinct", "elements", "share", "bits",
                                           "ulps", "vs_two_pass"],
                      {"two_pass_distinct": "two-pass: results",
                       "atomic_distinct": "atomic: results",
                       "elements": "elements differing", "share": "share",
                       "bits": "bits differing", "ulps": "largest gap (ulp)",
                       "vs_two_pass": "≠ two-pass"},
                      title="distinct results per version; the atomic version's runs against its "
                            "first (most in any run) and against the two-pass result",
                      source=results.source_line("splitk"))


def values() -> dict:
    """The section's numbers: the model (tiles, best factor, traffic), the reduction-order
    model, and the measurement — best speed-up and factor per design against cuBLAS and the
    model, the launch floor the FP16 rows sit on, and the bits of repeated runs."""
    s = SPLIT_K
    sk = {x["splits"]: x for x in split_k_rows()}
    best = max((x for x in sk.values() if x["waves"] == 1), key=lambda x: x["splits"])
    red = reduction_order_rows()
    v = {"splitk_tiles": str(sk[1]["units"]), "splitk_best": str(best["splits"]),
         "splitk_best_units": str(best["units"]),
         "splitk_extra_mib":
             f"{model.split_k_extra_bytes(s['m'], s['n'], best['splits']) / 2**20:.0f}",
         "splitk_ideal_mib": f"{model.ideal_bytes(s['m'], s['n'], s['k'], 2, 4) / 2**20:.0f}",
         "red_low": f"{min(x['rel_frob'] for x in red):.1e}",
         "red_high": f"{max(x['rel_frob'] for x in red):.1e}",
         "red_differ_max": f"{max(x['differ'] for x in red):,}",
         "red_outputs": f"{red[0]['outputs']:,}"}
    summary = splitk_summary_rows()
    rows = splitk_rows()
    fp32 = next(r for r in summary if r["design"] == "fp32")
    fp16 = [r for r in summary if r["design"] == "fp16"]
    best32 = min((r for r in rows if r["design"] == "fp32" and r["mode"] in ("two_pass", "atomic")),
                 key=lambda r: r["us"])
    split16 = [r for r in rows if r["design"] == "fp16" and r["mode"] in ("two_pass", "atomic")
               and r["slices"] >= 2]
    floor = launch_floor_us()
    atom32 = {r["slices"]: r["us"] for r in rows if r["design"] == "fp32" and r["mode"] == "atomic"}
    two32 = {r["slices"]: r["us"] for r in rows if r["design"] == "fp32" and r["mode"] == "two_pass"}
    best16 = [min(r["two_pass"], r["atomic"]) for r in fp16]
    v.update({
        "sk_fp32_shape": fp32["shape"],
        "sk_fp32_x": f"{max(fp32['two_pass_x'], fp32['atomic_x']):.1f}",
        "sk_fp32_best_us": f"{best32['us']:.0f}",
        "sk_fp32_unsplit_us": f"{fp32['unsplit']:.0f}",
        "sk_fp32_vs_cublas": f"{best32['us'] / fp32['cublas']:.2f}",
        "sk_fp32_vs_model": f"{best32['us'] / best32['model_us']:.1f}",
        "sk_fp16_x_hi": f"{max(max(r['two_pass_x'], r['atomic_x']) for r in fp16):.1f}",
        "sk_fp16_vs_cublas_lo": f"{min(b / r['cublas'] for b, r in zip(best16, fp16)):.0f}",
        "sk_fp16_vs_cublas_hi": f"{max(b / r['cublas'] for b, r in zip(best16, fp16)):.0f}",
        "sk_fp16_all_lo": f"{min(r['us'] for r in split16):.0f}",
        "sk_fp16_all_hi": f"{max(r['us'] for r in split16):.0f}",
        "sk_fp16_timing": ", ".join(sorted({r["timing"] for r in split16})),
        "sk_fp16_model_lo": f"{min(r['model_us'] for r in split16):.0f}",
        "sk_fp16_model_hi": f"{max(r['model_us'] for r in split16):.0f}",
        "sk_launch_floor": f"{floor:.0f}", "sk_two_floors": f"{2 * floor:.0f}",
        "sk_fp16_over_floors": f"{min(r['us'] for r in split16) / (2 * floor):.2f}",
        "sk_fp32_atomic_worse": ", ".join(str(s) for s in sorted(atom32)
                                          if s >= 2 and atom32[s] > 1.1 * two32[s]) or "none"})
    det = determinism_rows()
    v.update({"det_two_pass_distinct": str(max(r["two_pass_distinct"] for r in det)),
              "det_atomic_max_elements": f"{max(r['elements'] for r in det):,}",
              "det_atomic_max_share": f"{max(r['share'] for r in det):.1%}",
              "det_atomic_max_ulps": f"{max(r['ulps'] for r in det):,}",
              "det_atomic_two_slices": str(max(r["atomic_distinct"] for r in det
                                               if r["splits"] == 2))})
    return v
