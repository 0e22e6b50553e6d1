"""Chapter 6, shapes: how much reuse a shape allows, how a grid of tiles meets the SMs (waves,
tails, split-K, Stream-K), what the order of a reduction does to the bits, TF32, and the
measurements — size, alignment, the decode-time skinny product, transposed operands — then the
whole ladder of the course in one table, and a shape list for a real layer.

Everything comes from the selected GPU's results files (:func:`lab.results.load` with its
default GPU), the analytic model (:mod:`lab.model`) and the seeds' quoted numbers
(:mod:`lab.seeds`). The notebook calls one function per table, figure or set of glued values.
"""
from __future__ import annotations

import numpy as np

from lab import baselines, device, model, page, plots, results, seeds
from lab.experiments import shapes as shapes_experiment
from lab.kernels import REGISTRY, get_spec
from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS

#: The weight matrix of the decode-time shape: (M × 4096) · (4096 × 4096), FP16.
WEIGHTS = (4096, 4096)
#: Tile counts of the wave table (seed 000's 140 among them).
WAVE_TILES = (132, 133, 140, 264, 265, 1024)
#: Sizes of the per-kernel wave table.
WAVE_SIZES = (2048, 2049, 4096, 4097, 4104, 8192)
#: The split-K example: few output tiles, a long K.
SPLIT_K = {"m": 512, "n": 512, "k": 16384, "tile": 128}
#: Seed 000's Stream-K case: tiles, k-iterations per tile.
STREAM_K = {"tiles": 140, "iterations": 64}
#: Kernels of the alignment tables, and their headers.
ALIGN_KERNELS = {"cublas_fp32": "cuBLAS FP32", "cublas_fp16": "cuBLAS FP16",
                 "tiled32": "tiled32", "warptile_tuned": "warptile_tuned", "tc_fp16": "tc_fp16"}
#: One 4096-wide decoder layer (hidden 4096, MLP 14336, vocabulary 32,001): name, N, K.
LAYER = (("QKV projection", 3 * 4096, 4096), ("output projection", 4096, 4096),
         ("MLP up", 14336, 4096), ("MLP down", 4096, 14336), ("vocabulary", 32001, 4096))


def gpu_label(name: str) -> str:
    """A GPU's short name: ``"NVIDIA H200"`` → ``"H200"``."""
    return name.replace("NVIDIA ", "").strip()


def not_measured(exc: Exception) -> str:
    """The one line a cell shows when a results file is missing."""
    return f"not measured yet ({exc})"


# ----------------------------------------------------------------------------- the formula

def roofs() -> dict:
    """The roofs the regime of a shape is judged against: the FP32 FMA roof and the streaming
    read (``roofline``), and cuBLAS FP16's 4096³ rate (``tensor_cores``) as the FP16 roof."""
    data = results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    fp16 = next(r for r in results.rows("tensor_cores", part="ladder")
                if r["kernel"] == "cublas_fp16")["tflops"]
    fma, read = by["fma_chains"]["tflops"], by["stream_read"]["gbps"]
    prov = data["provenance"]
    return {"peak": {"FP32": fma, "FP16": fp16}, "read_gbps": read, "gpu": prov["gpu"],
            "sms": prov["sm_count"], "l2_bytes": prov.get("l2_bytes"),
            "ridge": {"FP32": model.ridge(fma * 1e12, read * 1e9),
                      "FP16": model.ridge(fp16 * 1e12, read * 1e9)}}


def floor_us(m: int, n: int, k: int, fmt: str = "FP16", r: dict | None = None) -> float:
    """The model's least time: the larger of the FLOPs at the roof and the ideal bytes at the
    streaming-read bandwidth (µs)."""
    r = r or roofs()
    e = 4 if fmt == "FP32" else 2
    return max(model.flops(m, n, k) / (r["peak"][fmt] * 1e12),
               model.ideal_bytes(m, n, k, e) / (r["read_gbps"] * 1e9)) * 1e6


def regime_rows() -> list[dict]:
    """Square products and the decode-time shape: best intensity, the ridge of the units that
    run them, the regime it implies, and the least time."""
    r = roofs()
    n, k = WEIGHTS
    cases = [("square 1024³", 1024, 1024, 1024, "FP32"),
             ("square 4096³", 4096, 4096, 4096, "FP32"),
             ("square 4096³", 4096, 4096, 4096, "FP16")]
    cases += [(f"M = {m} × 4096²", m, n, k, "FP16") for m in (1, 16, 64, 256, 1024)]
    rows = []
    for label, m, nn, kk, fmt in cases:
        e = 4 if fmt == "FP32" else 2
        intensity = model.ideal_intensity(m, nn, kk, e)
        rows.append({"shape": label, "format": fmt, "intensity": intensity,
                     "ridge": r["ridge"][fmt],
                     "bound": "memory" if intensity < r["ridge"][fmt] else "compute",
                     "floor": floor_us(m, nn, kk, fmt, r)})
    return rows


def regime_table():
    """The regime table (the model and the measured roofs)."""
    return page.table(regime_rows(), ["shape", "format", "intensity", "ridge", "bound", "floor"],
                      {"shape": "shape (M × N × K)", "intensity": "best FLOP/B",
                       "ridge": "ridge (FLOP/B)", "bound": "at best",
                       "floor": "least time (µs)"})


def m_cross() -> float:
    """Rows M at which (M × 4096)·(4096 × 4096) in FP16 reaches the FP16 ridge."""
    ridge = roofs()["ridge"]["FP16"]
    n, k = WEIGHTS
    return ridge * k * n / (k * n - ridge * (k + n))


# ----------------------------------------------------------------------------- waves

def wave_model_rows() -> list[dict]:
    """Waves and the share of block slots in use for a number of 128×128 tiles."""
    sms = roofs()["sms"]
    rows = []
    for tiles in WAVE_TILES:
        m = tiles * 128
        rows.append({"tiles": tiles, "waves1": model.waves(m, 128, 128, 128, sms, 1),
                     "eff1": model.wave_efficiency(m, 128, 128, 128, sms, 1),
                     "waves2": model.waves(m, 128, 128, 128, sms, 2),
                     "eff2": model.wave_efficiency(m, 128, 128, 128, sms, 2)})
    return rows


def wave_model_table():
    """The wave table for 1 and 2 resident blocks per SM."""
    sms = roofs()["sms"]
    return page.table(wave_model_rows(), ["tiles", "waves1", "eff1", "waves2", "eff2"],
                      {"waves1": "waves, 1 block/SM", "eff1": "slots used",
                       "waves2": "waves, 2 blocks/SM", "eff2": "slots used"},
                      title=f"{sms} SMs")


def kernel_rows() -> list[dict]:
    """tiled32 and tc_fp16: tile, threads, shared memory, and the blocks per SM that the
    thread and shared-memory limits of sm_90 allow (:func:`lab.model.blocks_per_sm`; registers
    left out — for these two kernels the compiler's counts allow at least as many)."""
    cfg = RUNG_CONFIGS["tc_fp16"]
    tiled_smem = model.tile_shared_bytes(32)
    return [{"kernel": "tiled32", "tile": (32, 32), "threads": 32 * 32, "smem": tiled_smem,
             "blocks": model.blocks_per_sm(32 * 32, 0, tiled_smem)},
            {"kernel": "tc_fp16", "tile": (cfg.bm, cfg.bn), "threads": cfg.threads,
             "smem": cfg.shared_bytes,
             "blocks": model.blocks_per_sm(cfg.threads, 0, cfg.shared_bytes)}]


def kernel_table():
    """Tile, threads, shared memory and resident blocks of the two kernels."""
    rows = [{**r, "tile": "×".join(map(str, r["tile"])), "smem": r["smem"] / 1024}
            for r in kernel_rows()]
    return page.table(rows, ["kernel", "tile", "threads", "smem", "blocks"],
                      {"tile": "block tile", "smem": "shared (KB)", "blocks": "blocks/SM"})


def wave_rows() -> list[dict]:
    """Tiles, waves, slots used and useful share of the computed outputs at each size."""
    sms = roofs()["sms"]
    rows = []
    for n in WAVE_SIZES:
        for k in kernel_rows():
            tm, tn = k["tile"]
            rows.append({"n": n, "kernel": k["kernel"], "tiles": model.tile_grid(n, n, tm, tn),
                         "waves": model.waves(n, n, tm, tn, sms, k["blocks"]),
                         "wave_eff": model.wave_efficiency(n, n, tm, tn, sms, k["blocks"]),
                         "tile_eff": model.tile_efficiency(n, n, tm, tn)})
    return rows


def wave_table():
    """The wave and tile efficiencies of tiled32 and tc_fp16 at the measured sizes."""
    return page.table(wave_rows(), ["n", "kernel", "tiles", "waves", "wave_eff", "tile_eff"],
                      {"n": "n", "wave_eff": "slots used", "tile_eff": "useful outputs"})


def last_wave(n: int, kernel: str = "tc_fp16") -> dict:
    """The fill of the last wave of ``kernel`` at n × n: tiles in it and slots per wave."""
    sms = roofs()["sms"]
    k = next(r for r in kernel_rows() if r["kernel"] == kernel)
    tiles = model.tile_grid(n, n, *k["tile"])
    slots = sms * k["blocks"]
    waves = model.waves(n, n, *k["tile"], sms, k["blocks"])
    return {"tiles": tiles, "slots": slots, "waves": waves,
            "last": tiles - (waves - 1) * slots}


def waves_figure():
    """Concept figure: tc_fp16's 128×128 tiles at 4096² and at 4097², dealt out in waves over
    the SMs' block slots; each bar is one wave, its length the slots that hold a tile."""
    fig, axes = plots.plt.subplots(1, 2, figsize=(7.2, 2.8), dpi=110, sharex=True)
    for ax, n in zip(axes, (4096, 4097)):
        w = last_wave(n)
        busy = [w["slots"]] * (w["waves"] - 1) + [w["last"]]
        ys = np.arange(1, w["waves"] + 1)
        ax.barh(ys, [w["slots"]] * w["waves"], color="0.9", edgecolor="0.6", height=0.7,
                label="empty slot")
        ax.barh(ys, busy, color="C0", height=0.7, label="slot holding a tile")
        ax.set_ylim(w["waves"] + 0.6, 0.4)
        ax.set_yticks(ys)
        ax.set_title(f"n = {n}: {w['tiles']:,} tiles, {w['waves']} waves", fontsize=9)
        ax.set_xlabel(f"block slots ({roofs()['sms']} SMs × "
                      f"{w['slots'] // roofs()['sms']} blocks)", fontsize=8)
        ax.set_ylabel("wave", fontsize=8)
        ax.tick_params(labelsize=7)
    return plots.finish(fig, axes[-1], loc="below")


def wave_sweep_figure():
    """The model's share of useful work for tc_fp16's tiling over n: waves alone, and waves
    times the ragged-edge share."""
    k = next(r for r in kernel_rows() if r["kernel"] == "tc_fp16")
    sms = roofs()["sms"]
    ns = np.arange(1024, 8193, 32)
    wave = [model.wave_efficiency(n, n, *k["tile"], sms, k["blocks"]) for n in ns]
    both = [w * model.tile_efficiency(n, n, *k["tile"]) for w, n in zip(wave, ns)]
    fig, ax = plots.axes("", "n (M = N)", "share of the machine doing useful work")
    ax.plot(ns, wave, label="slots used (waves)", linewidth=1.2)
    ax.plot(ns, both, label="× useful outputs (edge tiles cost a full tile)", linewidth=1.2)
    ax.set_ylim(0, 1.05)
    return plots.finish(fig, ax, loc="below")


# ----------------------------------------------------------------------------- tails

def edge_rows() -> list[dict]:
    """How each of our kernels meets the edge, and which path it takes at 4096 and 4097."""
    return [{"kernel": name, "edges": get_spec(name).edges,
             "at4096": shapes_experiment.path_of(name, 4096, 4096, 4096),
             "at4097": shapes_experiment.path_of(name, 4097, 4097, 4097)}
            for name in ("tiled32", "warptile_tuned", "tc_fp16")]


def edge_table():
    """Edge handling of tiled32, warptile_tuned and tc_fp16."""
    return page.table(edge_rows(), ["kernel", "edges", "at4096", "at4097"],
                      {"edges": "edge handling", "at4096": "path at 4096",
                       "at4097": "path at 4097"})


def tail_rows() -> list[dict]:
    """Useful share of the outputs along one side for a few sides and tile edges."""
    return [{"m": m, "tile": t, "tiles": -(-m // t), "useful": model.tile_efficiency(m, t, t, t)}
            for m, t in ((128, 64), (130, 64), (4096, 128), (4097, 128), (4097, 32))]


def tail_table():
    """The ragged edge along one side."""
    return page.table(tail_rows(), ["m", "tile", "tiles", "useful"],
                      {"m": "M", "tile": "tile edge", "tiles": "tiles along M",
                       "useful": "useful share"})


# ----------------------------------------------------------------------------- split-K, Stream-K

def split_k_rows() -> list[dict]:
    """Work units, busy SMs, waves and extra traffic of split-K on :data:`SPLIT_K`."""
    s = SPLIT_K
    sms = roofs()["sms"]
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
    """Seed 000's 140 tiles on the SMs: iteration times with one tile per block in waves, and
    with Stream-K's equal shares of all k-iterations (and the tiles two SMs share)."""
    tiles, iters = STREAM_K["tiles"], STREAM_K["iterations"]
    sms = roofs()["sms"]
    total = tiles * iters
    bounds = [s * total // sms for s in range(sms + 1)]
    return {"tiles": tiles, "iterations": iters, "sms": sms,
            "waves_time": -(-tiles // sms) * iters,
            "slots_used": model.wave_efficiency(tiles * 128, 128, 128, 128, sms),
            "stream_time": max(hi - lo for lo, hi in zip(bounds, bounds[1:])),
            "shared_tiles": len({b // iters for b in bounds[1:-1] if b % iters})}


def stream_k_text() -> str:
    """The Stream-K comparison as two lines of text."""
    s = stream_k()
    return (f"{s['tiles']} tiles × {s['iterations']} k-iterations on {s['sms']} SMs\n"
            f"  one tile per block, in waves: {s['waves_time']} iteration times "
            f"({s['slots_used']:.0%} of the slots busy)\n"
            f"  Stream-K, equal shares:       {s['stream_time']} iteration times, plus a fix-up "
            f"for the {s['shared_tiles']} tiles two SMs share")


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
             "rel_frob": float(np.linalg.norm(c - exact) / np.linalg.norm(exact))}
            for name, c in sums.items()]


def reduction_order_table():
    """The reduction-order model as a table."""
    return page.table(reduction_order_rows(), ["order", "differ", "max_diff", "rel_frob"],
                      {"order": "order of the 8 partials",
                       "differ": "outputs differing from forwards",
                       "max_diff": "max |diff| / max |C|", "rel_frob": "rel. Frobenius vs exact"},
                      title="64×64 outputs, K = 4096 in 8 pieces")


# ----------------------------------------------------------------------------- TF32

def tf32_table():
    """cuBLAS on the same float32 arrays: FP32, TF32, and 16-bit inputs (precision file)."""
    prec = {r["kernel"]: r for r in results.rows("precision")}
    rows = [prec[k] for k in ("cublas_fp32", "cublas_tf32", "cublas_fp16", "cublas_bf16")
            if k in prec]
    return page.table(rows, ["title", "tflops", "rel_frobenius"],
                      {"title": "cuBLAS", "tflops": "TFLOP/s",
                       "rel_frobenius": "rel. Frobenius vs float64"},
                      source=results.source_line("precision"))


# ----------------------------------------------------------------------------- size

def _shapes(part: str) -> list[dict]:
    return results.rows("shapes", part=part)


def size_rows() -> list[dict]:
    """TFLOP/s of cuBLAS and our two best kernels over square sizes (per-call timing)."""
    by = {(r["kernel"], r["n"]): r for r in _shapes("size")}
    ns = sorted({n for _, n in by})
    kernels = ("cublas_fp32", "warptile_tuned", "cublas_fp16", "tc_fp16")
    return [{"n": n, **{k: by[(k, n)]["tflops"] for k in kernels}} for n in ns]


def size_table():
    """The size curve as a table."""
    try:
        rows = size_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["n", "cublas_fp32", "warptile_tuned", "cublas_fp16", "tc_fp16"],
                      {"n": "n", "cublas_fp32": "cuBLAS FP32",
                       "warptile_tuned": "warptile_tuned", "cublas_fp16": "cuBLAS FP16",
                       "tc_fp16": "tc_fp16"},
                      title="TFLOP/s, per-call timing, cache-hot",
                      source=results.source_line("shapes"))


def size_figure():
    """The size curve: TFLOP/s over n, log-log, libraries dotted, ours solid."""
    rows = size_rows()
    ns = [r["n"] for r in rows]
    fig, ax = plots.axes("", "n (M = N = K)", "TFLOP/s (per-call timing)", logx=True, logy=True)
    for kernel, label, style, colour in (
            ("cublas_fp16", "cuBLAS FP16", plots.LIBRARY, "C3"),
            ("tc_fp16", "ours, tc_fp16", plots.OURS, "C3"),
            ("cublas_fp32", "cuBLAS FP32", plots.LIBRARY, "C0"),
            ("warptile_tuned", "ours, warptile_tuned", plots.OURS, "C0")):
        ax.plot(ns, [r[kernel] for r in rows], label=label, color=colour, **style)
    return plots.finish(fig, ax)


def seed_size_table():
    """Seed 004's size curve on its Tesla T4, in words and numbers as the seed gives them."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.SIZE_T4]
    return page.table(rows, ["n", "tflops", "gpu_source"],
                      {"n": "n (seed 004)", "tflops": "TFLOP/s (FP16)",
                       "gpu_source": "GPU, source"})


def queued_rows() -> list[dict]:
    """Per-call and queued (GPU-only) times of the small sizes."""
    percall = {(r["kernel"], r["n"]): r for r in _shapes("size")}
    q = {(r["kernel"], r["n"]): r for r in _shapes("size_queued")}
    rows = []
    for n in sorted({n for _, n in q}):
        for kern in ("cublas_fp16", "tc_fp16", "cublas_fp32", "warptile_tuned"):
            rows.append({"n": n, "kernel": kern,
                         "percall": percall[(kern, n)]["median_ms"] * 1e3,
                         "gpu": q[(kern, n)]["median_ms"] * 1e3,
                         "tflops": q[(kern, n)]["tflops"],
                         "covered": q[(kern, n)]["spin_covered"]})
    return rows


def queued_table():
    """Per-call against queued timing of the small sizes."""
    try:
        rows = queued_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["n", "kernel", "percall", "gpu", "tflops", "covered"],
                      {"n": "n", "percall": "per call (µs)",
                       "gpu": "GPU, queued (µs)", "tflops": "TFLOP/s (queued)",
                       "covered": "spin covered"},
                      source=results.source_line("shapes"))


def queued_figure():
    """Per-call against queued GPU time over n for cuBLAS FP16 and tc_fp16."""
    rows = queued_rows()
    ns = sorted({r["n"] for r in rows})
    by = {(r["kernel"], r["n"]): r for r in rows}
    fig, ax = plots.axes("", "n (M = N = K)", "time per call (µs)", logx=True, logy=True)
    for kernel, label, colour in (("cublas_fp16", "cuBLAS FP16", "C3"),
                                  ("tc_fp16", "ours, tc_fp16", "C0")):
        ax.plot(ns, [by[(kernel, n)]["gpu"] for n in ns], label=f"{label}: GPU time (queued)",
                color=colour, **plots.OURS)
        ax.plot(ns, [by[(kernel, n)]["percall"] for n in ns],
                label=f"{label}: per-call timing", color=colour, **plots.LIBRARY)
    return plots.finish(fig, ax)


# ----------------------------------------------------------------------------- alignment

def _align() -> dict:
    return {(r["kernel"], r["n"]): r for r in _shapes("alignment")}


def _round(n: int) -> int:
    return 2048 if n < 3000 else 4096


def align_speed_table():
    """TFLOP/s of each kernel at the sizes around 2048 and 4096."""
    try:
        by = _align()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    ns = sorted({n for _, n in by})
    rows = [{"n": n, **{k: by[(k, n)]["tflops"] for k in ALIGN_KERNELS}} for n in ns]
    return page.table(rows, ["n", *ALIGN_KERNELS], {"n": "n", **ALIGN_KERNELS},
                      title="TFLOP/s", source=results.source_line("shapes"))


def align_extra_rows() -> list[dict]:
    """Extra time per FLOP against the round neighbour (4096, or 2048 for 2049), in %."""
    by = _align()
    ns = sorted({n for _, n in by})
    return [{"n": n, **{k: 100 * (by[(k, _round(n))]["tflops"] / by[(k, n)]["tflops"] - 1)
                        for k in ALIGN_KERNELS}} for n in ns if n != _round(n)]


def align_extra_table():
    """The alignment cliff: extra time per FLOP against the round size."""
    try:
        rows = align_extra_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["n", *ALIGN_KERNELS], {"n": "n", **ALIGN_KERNELS},
                      title="extra time per FLOP against 4096 (2048 for 2049), %",
                      source=results.source_line("shapes"))


def align_path_table():
    """Which path our two tuned kernels took at each alignment size."""
    try:
        by = _align()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    ns = sorted({n for _, n in by})
    rows = [{"n": n, "warptile": by[("warptile_tuned", n)]["path"],
             "tc": by[("tc_fp16", n)]["path"]} for n in ns]
    return page.table(rows, ["n", "warptile", "tc"],
                      {"n": "n", "warptile": "warptile_tuned path",
                       "tc": "tc_fp16 path"})


def seed_align_table():
    """Seed 004's alignment numbers on its Tesla T4 (its FP16 cuBLAS and its tiled control)."""
    rows = [{"n": r["n"], "dtype": r["dtype"], "what": "cuBLAS", "tflops": r["tflops"],
             "vs": r["vs"], "extra": r["extra_time_pct"]} for r in seeds.ALIGNMENT_T4]
    rows += [{"n": r["n"], "dtype": "FP32", "what": r["kernel"], "tflops": None, "vs": r["vs"],
              "extra": r["extra_time_pct"]} for r in seeds.TILED_EDGE_T4]
    return page.table(rows, ["n", "dtype", "what", "tflops", "vs", "extra"],
                      {"n": "n (seed 004)", "what": "kernel", "tflops": "TFLOP/s",
                       "vs": "against n", "extra": "extra time (%)"},
                      title="Tesla T4, seed 004")


def seed_kernel_table():
    """The kernel seed 004's profiler named for each size on its T4."""
    rows = [{"n": r["n"], "dtype": r["dtype"], "kernel": r["cublas_kernel"]}
            for r in seeds.ALIGNMENT_T4]
    return page.table(rows, ["n", "dtype", "kernel"],
                      {"n": "n (seed 004)", "kernel": "kernel named by the T4's profiler"})


def short_kernel_name(name: str, width: int = 60) -> str:
    """A library kernel's name without its C++ wrapper, cut at an underscore to ``width``."""
    for prefix in ("void ", "Kernel2<"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    name = name.removesuffix("(Params)").removesuffix(">")
    if len(name) <= width:
        return name
    return name[:name.rfind("_", 0, width)] + "_…"


def cublas_kernel_rows() -> list[dict]:
    """The kernels cuBLAS launched, as Nsight Compute named them (``cublas_kernels``)."""
    return [{"call": r["kernel"], "n": r["n"],
             "launched": ", ".join(short_kernel_name(x) for x in (r["launched"] or ["?"]))}
            for r in results.rows("cublas_kernels")]


def cublas_kernel_table():
    """cuBLAS's kernel choice on the selected GPU."""
    try:
        rows = cublas_kernel_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["call", "n", "launched"],
                      {"call": "call", "n": "n", "launched": "kernel launched"},
                      source=results.source_line("cublas_kernels"))


def shuffled_rows() -> list[dict]:
    """The alignment sizes timed again in three rounds of random order."""
    sh = _shapes("shuffled")
    rounds = sorted({r["round"] for r in sh})
    rows = []
    for kern in ("cublas_fp16", "cublas_fp32"):
        for n in sorted({r["n"] for r in sh}):
            runs = sorted((r for r in sh if r["kernel"] == kern and r["n"] == n),
                          key=lambda r: r["round"])
            vals = [r["tflops"] for r in runs]
            rows.append({"kernel": kern, "n": n, **{f"r{i}": v for i, v in zip(rounds, vals)},
                         "spread": 100 * (max(vals) / min(vals) - 1),
                         "fastest_us": min(r["median_ms"] for r in runs) * 1e3})
    return rows


def shuffled_table():
    """Drift or alignment: the rounds in random order side by side."""
    try:
        rows = shuffled_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["kernel", "n", "r0", "r1", "r2", "spread", "fastest_us"],
                      {"n": "n", "r0": "round 1", "r1": "round 2", "r2": "round 3",
                       "spread": "spread (%)", "fastest_us": "fastest (µs)"},
                      title="TFLOP/s, three rounds in random order",
                      source=results.source_line("shapes"))


# ----------------------------------------------------------------------------- skinny

def skinny_rows() -> list[dict]:
    """Per-call times of (M × 4096)·(4096 × 4096) FP16, cache-hot and rotated through HBM."""
    sk = {(r["kernel"], r["m"], r["rotated"]): r for r in _shapes("skinny")}
    r0 = roofs()
    return [{"m": m, "floor": floor_us(m, *WEIGHTS, "FP16", r0),
             "cublas_hot": sk[("cublas_fp16", m, False)]["median_ms"] * 1e3,
             "cublas_hbm": sk[("cublas_fp16", m, True)]["median_ms"] * 1e3,
             "tc_hot": sk[("tc_fp16", m, False)]["median_ms"] * 1e3,
             "tc_hbm": sk[("tc_fp16", m, True)]["median_ms"] * 1e3}
            for m in sorted({m for _, m, _ in sk})]


_SKINNY_HEADERS = {"m": "M", "floor": "model floor (µs)", "cublas_hot": "cuBLAS, hot (µs)",
                   "cublas_hbm": "cuBLAS, HBM (µs)", "tc_hot": "tc_fp16, hot (µs)",
                   "tc_hbm": "tc_fp16, HBM (µs)"}


def skinny_table():
    """The skinny product, per-call timing (the host's launch path included)."""
    try:
        rows = skinny_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["m", "floor", "cublas_hot", "cublas_hbm", "tc_hot", "tc_hbm"],
                      _SKINNY_HEADERS, title="per-call timing (includes the launch path)",
                      source=results.source_line("shapes"))


def skinny_queued_rows() -> list[dict]:
    """Queued (GPU-only) times and rates of the skinny product."""
    q = {(r["kernel"], r["m"], r["rotated"]): r for r in _shapes("skinny_queued")}
    r0 = roofs()
    rows = []
    for m in sorted({m for _, m, _ in q}):
        cold = q[("cublas_fp16", m, True)]
        rows.append({"m": m, "floor": floor_us(m, *WEIGHTS, "FP16", r0),
                     "cublas_hot": q[("cublas_fp16", m, False)]["median_ms"] * 1e3,
                     "cublas_hbm": cold["median_ms"] * 1e3,
                     "tc_hbm": q[("tc_fp16", m, True)]["median_ms"] * 1e3,
                     "tflops": cold["tflops"], "weight_gbps": cold["weight_gbps"],
                     "of_read": 100 * cold["weight_gbps"] / r0["read_gbps"],
                     "covered": min(r["spin_covered"] for r in q.values() if r["m"] == m)})
    return rows


def skinny_time_table():
    """GPU time of the skinny product (queued timing), against the model's floor."""
    try:
        rows = skinny_queued_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["m", "floor", "cublas_hot", "cublas_hbm", "tc_hbm"],
                      _SKINNY_HEADERS, title="GPU time per call (queued timing)",
                      source=results.source_line("shapes"))


def skinny_rate_table():
    """What cuBLAS's skinny calls achieve with the weights read from HBM."""
    try:
        rows = skinny_queued_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["m", "tflops", "weight_gbps", "of_read"],
                      {"m": "M", "tflops": "TFLOP/s", "weight_gbps": "weights (GB/s)",
                       "of_read": "% of read roof"},
                      title="cuBLAS FP16, weights from HBM (queued timing)",
                      source=results.source_line("shapes"))


def skinny_figure():
    """Time per call over M: the model floor, the GPU time of cuBLAS and tc_fp16 (queued,
    weights from HBM), and cuBLAS per call with the host's launch path."""
    q = skinny_queued_rows()
    per = skinny_rows()
    fig, ax = plots.axes("", "M (rows of activations)", "time per call (µs)", logx=True,
                         logy=True)
    ms = [r["m"] for r in q]
    ax.plot(ms, [r["floor"] for r in q], label="model floor (read roof, FP16 roof)",
            color="0.5", linewidth=1)
    ax.plot(ms, [r["cublas_hbm"] for r in q], label="cuBLAS FP16, GPU time", color="C3",
            **plots.OURS)
    ax.plot(ms, [r["tc_hbm"] for r in q], label="ours (tc_fp16), GPU time", color="C0",
            **plots.OURS)
    ax.plot([r["m"] for r in per], [r["cublas_hbm"] for r in per],
            label="cuBLAS FP16, per call (launch path included)", color="C3", **plots.LIBRARY)
    return plots.finish(fig, ax)


def seed_skinny_table():
    """Seed 004's decode-shape numbers on its Tesla T4."""
    rows = [{**r, "us": r["ms"] * 1e3, "gpu_source": f"{r['gpu']}, {r['source']}"}
            for r in seeds.SKINNY_T4]
    return page.table(rows, ["m", "us", "tflops", "weight_gbps", "gpu_source"],
                      {"m": "M (seed 004)", "us": "time (µs)", "tflops": "TFLOP/s",
                       "weight_gbps": "weights (GB/s)", "gpu_source": "GPU, source"})


# ----------------------------------------------------------------------------- layout

def layout_rows() -> list[dict]:
    """cuBLAS FP16 at 4096³ with each operand plain or transposed: steady state and a burst."""
    lay = {r["layout"]: r for r in _shapes("layout")}
    burst = {r["layout"]: r for r in _shapes("burst")}
    nn = lay["NN"]["median_ms"]
    return [{"layout": name, "us": r["median_ms"] * 1e3, "tflops": r["tflops"],
             "vs_nn": r["median_ms"] / nn, "first_us": burst[name]["first_ms"] * 1e3,
             "burst_us": burst[name]["median_ms"] * 1e3} for name, r in lay.items()]


def layout_table():
    """Transposed operands through cuBLAS FP16."""
    try:
        rows = layout_rows()
    except results.ResultsMissing as exc:
        return not_measured(exc)
    return page.table(rows, ["layout", "us", "tflops", "vs_nn", "first_us", "burst_us"],
                      {"layout": "layout (A, B)", "us": "median (µs)", "tflops": "TFLOP/s",
                       "vs_nn": "time / NN", "first_us": "burst: 1st call (µs)",
                       "burst_us": "burst: median (µs)"},
                      source=results.source_line("shapes"))


# ----------------------------------------------------------------------------- the ladder

def _model_intensity(name: str):
    if name.startswith("naive"):
        return model.naive_intensity(4)
    if name.startswith("tiled"):
        return model.tile_intensity(int(name[5:]))
    if name.startswith("patch"):
        return model.tile_intensity(16 * int(name[5:]))   # 16×16 threads, P×P patches
    cfg = getattr(get_spec(name).launch, "config", None) if name in REGISTRY else None
    return model.tile_intensity(cfg.BM, cfg.BN) if cfg is not None else None


def ladder_rows() -> list[dict]:
    """Every rung of the course at 4096³ with its model intensity and its speed over the naive
    kernel's, from three results files."""
    ft = {r["kernel"]: r for r in results.rows("fp32_ladder", part="ladder", n=4096)}
    nt = {r["kernel"]: r for r in results.rows("naive_tiled", part="size", n=4096)}
    tc = {r["kernel"]: r for r in results.rows("tensor_cores", part="ladder")}
    naive = ft["naive"]["tflops"]
    rows = []

    def rung(label, row, source, intensity, group):
        rows.append({"rung": label, "intensity": intensity, "tflops": row["tflops"],
                     "x_naive": row["tflops"] / naive, "from": source, "group": group})

    rung("naive, swapped mapping", nt["naive_swapped"], "naive_tiled", model.naive_intensity(4),
         "fp32")
    rung("naive", ft["naive"], "fp32_ladder", _model_intensity("naive"), "fp32")
    for name in ("tiled8", "tiled16"):
        rung(name, nt[name], "naive_tiled", _model_intensity(name), "fp32")
    for name in ("tiled32", "patch4", "patch8", "vectorized", "pipelined", "warptile",
                 "warptile_tuned"):
        rung(name, ft[name], "fp32_ladder", _model_intensity(name), "fp32")
    rung("cuBLAS FP32", ft["cublas_fp32"], "fp32_ladder", None, "fp32 library")
    for name in ("tc_naive_fp16", "tc_smem", "tc_warp64", "tc_pipeline", "tc_swizzle",
                 "tc_fp16"):
        rung(name, tc[name], "tensor_cores", tc[name]["intensity"], "fp16")
    rung("cuBLAS FP16", tc["cublas_fp16"], "tensor_cores", None, "fp16 library")
    rung("cuBLAS FP16, FP16 out", tc["cublas_fp16_out16"], "tensor_cores", None,
         "fp16 library")
    return rows


def ladder_table():
    """The ladder of the whole course in one table."""
    return page.table(ladder_rows(), ["rung", "intensity", "tflops", "x_naive", "from"],
                      {"intensity": "model FLOP/B", "tflops": "TFLOP/s", "x_naive": "× naive",
                       "from": "results file"},
                      title="4096³ on the selected GPU; × naive against fp32_ladder's naive")


def ladder_figure():
    """The ladder as horizontal bars on a log scale: ours and the libraries, FP32 and FP16."""
    rows = ladder_rows()
    styles = {"fp32": ("C0", "ours, FP32"), "fp32 library": ("C0", "cuBLAS FP32"),
              "fp16": ("C3", "ours, FP16 in (tensor cores)"),
              "fp16 library": ("C3", "cuBLAS FP16 (tensor cores)")}
    fig, ax = plots.axes("", "TFLOP/s at 4096³ (log scale)", "", size=(7.0, 5.4))
    ax.set_xscale("log")
    ys = np.arange(len(rows))
    seen = set()
    for y, r in zip(ys, rows):
        colour, label = styles[r["group"]]
        library = r["group"].endswith("library")
        ax.barh(y, r["tflops"], color="none" if library else colour, edgecolor=colour,
                hatch="//" if library else None, height=0.7,
                label=None if r["group"] in seen else label)
        seen.add(r["group"])
    ax.set_yticks(ys, [r["rung"] for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(True, axis="y", alpha=0)
    return plots.finish(fig, ax)


def seed_ladder_table():
    """Seed 004's ladder on its Tesla T4 at 1024³."""
    return page.table(seeds.LADDER_T4, ["rung", "flop_per_byte", "tflops", "x_naive"],
                      {"rung": "rung (seed 004)", "flop_per_byte": "model FLOP/B",
                       "tflops": "TFLOP/s", "x_naive": "× naive"},
                      title="Tesla T4, 1024³, seed 004")


# ----------------------------------------------------------------------------- shape list

def manifest_rows() -> list[dict]:
    """One decoder layer's GEMMs at prefill (4096 tokens) and decode (1 token), FP16 inputs:
    best intensity, regime, and whether N and K are multiples of 8."""
    ridge = roofs()["ridge"]["FP16"]
    rows = []
    for phase, tokens in (("prefill", 4096), ("decode", 1)):
        for name, n, k in LAYER:
            intensity = model.ideal_intensity(tokens, n, k, 2)
            rows.append({"gemm": f"{phase}: {name}", "m": tokens, "n": n, "k": k,
                         "intensity": intensity,
                         "bound": "memory" if intensity < ridge else "compute",
                         "aligned": n % 8 == 0 and k % 8 == 0})
    return rows


def manifest_table():
    """The shape list of one layer."""
    return page.table(manifest_rows(), ["gemm", "m", "n", "k", "intensity", "bound", "aligned"],
                      {"gemm": "GEMM", "m": "M", "n": "N", "k": "K",
                       "intensity": "best FLOP/B", "bound": "at best",
                       "aligned": "N, K ÷ 8"},
                      title="FP16 inputs, FP32 accumulation")


# ----------------------------------------------------------------------------- measured: waves

def missing(exc: Exception) -> str:
    """:func:`not_measured` without the file's absolute path (the same text on every machine)."""
    return f"not measured yet ({str(exc).split(': ', 1)[-1]})"

#: The kernels of the measured wave sweep (``waves``): name -> (label, colour, style).
WAVE_KERNELS = {"tc_fp16": ("tc_fp16", "C0", "ours"), "cublas_fp16": ("cuBLAS FP16", "C0", "lib"),
                "warptile_tuned": ("warptile_tuned", "C1", "ours"),
                "cublas_fp32": ("cuBLAS FP32", "C1", "lib")}


def placeholder_figure(what: str, exc: Exception):
    """A figure that says a results file is missing (so a figure cell always holds a figure)."""
    fig, ax = plots.plt.subplots(figsize=(6, 1.2), dpi=110)
    ax.axis("off")
    ax.text(0.5, 0.5, f"{what}: {missing(exc)}", ha="center", va="center", fontsize=7,
            wrap=True)
    return page.figure(fig)


def blocks_per_sm(kernel: str) -> int:
    """Resident blocks per SM of ``warptile_tuned`` or ``tc_fp16``: threads, shared memory and
    the registers the committed compiler facts report (:func:`lab.model.blocks_per_sm`)."""
    from lab import compiler

    spec = get_spec(kernel)
    cfg = spec.launch.config
    threads = cfg.threads
    smem = cfg.shared_bytes
    regs = compiler.report(kernel)[0].registers     # the unchecked kernel (tile multiples)
    return model.blocks_per_sm(threads, regs, smem)


def wave_sweep_rows() -> list[dict]:
    """The measured sweep: per N, each implementation's time, with our kernels' tiles and the
    model's waves (:func:`lab.model.waves` with :func:`blocks_per_sm`)."""
    sms = roofs()["sms"]
    tiles = {k: get_spec(k).tile for k in ("tc_fp16", "warptile_tuned")}
    blocks = {k: blocks_per_sm(k) for k in tiles}
    rows = []
    for r in results.rows("waves", part="sweep"):
        row = {"n": r["n"], "kernel": r["kernel"], "us": r["median_ms"] * 1e3,
               "tflops": r["tflops"], "m": r["m"], "k": r["k"]}
        if r["kernel"] in tiles:
            bm, bn, _ = tiles[r["kernel"]]
            row["tiles"] = model.tile_grid(r["m"], r["n"], bm, bn)
            row["waves"] = model.waves(r["m"], r["n"], bm, bn, sms, blocks[r["kernel"]])
        rows.append(row)
    return rows


def wave_steps_rows() -> list[dict]:
    """Around each of our kernels' wave boundaries: the last N of a wave count and the first of
    the next, the model's time ratio (waves) and the measured one, beside cuBLAS's."""
    rows = wave_sweep_rows()
    by = {(r["kernel"], r["n"]): r for r in rows}
    out = []
    for kernel, lib in (("tc_fp16", "cublas_fp16"), ("warptile_tuned", "cublas_fp32")):
        ours = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["n"])
        for a, b in zip(ours, ours[1:]):
            if b["waves"] == a["waves"] or (lib, a["n"]) not in by or (lib, b["n"]) not in by:
                continue
            out.append({"kernel": kernel, "n_before": a["n"], "n_after": b["n"],
                        "waves": f"{a['waves']} → {b['waves']}",
                        "model": b["waves"] / a["waves"], "measured": b["us"] / a["us"],
                        "cublas": by[(lib, b["n"])]["us"] / by[(lib, a["n"])]["us"]})
    return out


def wave_steps_table():
    """The steps of the measured sweep: time after / before each new wave."""
    try:
        rows = wave_steps_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    return page.table(rows, ["kernel", "n_before", "n_after", "waves", "model", "measured",
                             "cublas"],
                      {"n_before": "N before", "n_after": "N after", "waves": "waves",
                       "model": "model: time ×", "measured": "measured: time ×",
                       "cublas": "cuBLAS: time ×"},
                      source=results.source_line("waves"))


def wave_measured_figure():
    """Time against N for our kernels and cuBLAS (FP16 and FP32 panels), with the model's steps
    for our kernel scaled to its measured time of one full wave."""
    try:
        rows = wave_sweep_rows()
        params = results.load("waves")["parameters"]
    except results.ResultsMissing as exc:
        return placeholder_figure("wave sweep", exc)
    fig, axes = plots.plt.subplots(1, 2, figsize=(7.6, 3.0), dpi=110, sharex=True)
    for ax, (ours, lib, title) in zip(axes, (("tc_fp16", "cublas_fp16", "FP16"),
                                             ("warptile_tuned", "cublas_fp32", "FP32"))):
        for kernel in (ours, lib):
            pts = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["n"])
            label, colour, style = WAVE_KERNELS[kernel]
            ax.plot([r["n"] for r in pts], [r["us"] for r in pts], label=label,
                    color="C0" if kernel == ours else "0.35",
                    linestyle="-" if style == "ours" else ":", linewidth=1.2,
                    marker="." if style == "ours" else None, markersize=3)
        pts = sorted((r for r in rows if r["kernel"] == ours), key=lambda r: r["n"])
        one = [r for r in pts if r["waves"] == 1]
        if one:
            per_wave = one[-1]["us"]
            ax.step([r["n"] for r in pts], [r["waves"] * per_wave for r in pts], where="mid",
                    color="C3", linewidth=0.9, label="model: waves × one full wave")
        ax.set_title(f"{title}, M = {params['m']}, K = {params['k']}", fontsize=9)
        ax.set_xlabel("N", fontsize=8)
        ax.set_ylabel("time per call (µs)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    return page.figure(fig)


# ----------------------------------------------------------------------------- measured: split-K

def _splitk(part: str) -> list[dict]:
    return results.rows("splitk", part=part)


def splitk_model_us(design: str, m: int, n: int, k: int, slices: int, mode: str) -> float:
    """The model's time for split-K: the FLOPs at the design's roof scaled by the share of SMs
    the work units keep busy, plus the extra bytes at the streaming-read bandwidth."""
    from lab.kernels.k11_splitk import extra_bytes

    r = roofs()
    kernel = "tc_fp16" if design == "fp16" else "warptile_tuned"
    bm, bn, _ = get_spec(kernel).tile
    units = model.tile_grid(m, n, bm, bn) * slices
    busy = min(units, r["sms"]) / r["sms"]
    peak = r["peak"]["FP16" if design == "fp16" else "FP32"] * 1e12
    extra = extra_bytes(m, n, slices, mode) if slices > 1 else 0
    return (model.flops(m, n, k) / (peak * busy) + extra / (r["read_gbps"] * 1e9)) * 1e6


def splitk_rows() -> list[dict]:
    """Per shape: the unsplit kernel, cuBLAS, and each split-K row with the model's time."""
    out = []
    for r in _splitk("splitk"):
        mode = r.get("mode")
        slices = r.get("slices") or 1
        row = {"design": r["design"], "shape": f"{r['m']}×{r['n']}×{r['k']}",
               "kernel": r["kernel"], "mode": mode, "splits": r.get("splits"),
               "slices": r.get("slices"), "us": r["median_ms"] * 1e3,
               "min_us": r["min_ms"] * 1e3, "max_us": r["max_ms"] * 1e3,
               "tflops": r["tflops"], "timing": r.get("timing"), "m": r["m"], "n": r["n"],
               "k": r["k"]}
        if mode in ("unsplit", "two_pass", "atomic"):
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
    try:
        rows = splitk_summary_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    return page.table(rows, ["design", "shape", "unsplit", "two_pass", "two_pass_s",
                             "two_pass_x", "atomic", "atomic_s", "atomic_x", "cublas"],
                      {"shape": "M×N×K", "unsplit": "unsplit (µs)",
                       "two_pass": "two-pass (µs)", "two_pass_s": "slices",
                       "two_pass_x": "speed-up", "atomic": "atomic (µs)", "atomic_s": "slices",
                       "atomic_x": "speed-up", "cublas": "cuBLAS (µs)"},
                      source=results.source_line("splitk"))


def splitk_figure():
    """Time against slices of K for both versions, the model, the unsplit kernel and cuBLAS."""
    try:
        rows = splitk_rows()
    except results.ResultsMissing as exc:
        return placeholder_figure("split-K", exc)
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
        ax.set_title(f"{'FP16' if shape[0] == 'fp16' else 'FP32'} {shape[1]}", fontsize=8)
        ax.set_xlabel("slices of K", fontsize=8)
        ax.set_ylabel("µs per call", fontsize=8)
        ax.tick_params(labelsize=7)
    np.atleast_1d(axes)[0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    return page.figure(fig)


def determinism_rows() -> list[dict]:
    """The atomic and two-pass versions run repeatedly on the same inputs: how many distinct
    results, and how far apart (elements, bits, ulps)."""
    return [{"design": r["design"], "mode": r["mode"].replace("_", "-"),
             "splits": r["splits"], "runs": r["runs"], "distinct": r["distinct_results"],
             "elements": r["max_elements_vs_first"],
             "share": r["max_elements_vs_first"] / r["elements"],
             "bits": r["max_bits_vs_first"], "ulps": r["max_ulps_vs_first"],
             "vs_two_pass": r["max_elements_vs_two_pass"]}
            for r in _splitk("determinism")]


def determinism_table():
    """Bitwise (non-)determinism of split-K, measured."""
    try:
        rows = determinism_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    return page.table(rows, ["design", "mode", "splits", "runs", "distinct", "elements",
                             "share", "bits", "ulps", "vs_two_pass"],
                      {"distinct": "distinct results", "elements": "elements differing (max)",
                       "share": "share", "bits": "bits differing (max)",
                       "ulps": "largest gap (ulp)", "vs_two_pass": "elements ≠ two-pass"},
                      source=results.source_line("splitk"))


# ----------------------------------------------------------------------------- measured: small K

def small_k_model_rows() -> list[dict]:
    """The prediction: at M = N = 4096 and small K, the least bytes of the product (inputs read,
    FP32 output written), its FLOPs' time at the roof, and the epilogue's bytes fused and
    unfused, as times at the streaming-read bandwidth."""
    from lab.kernels.k10_epilogue import saved_bytes
    from lab.experiments.splitk import SMALL_K, SMALL_MN

    r = roofs()
    bw = r["read_gbps"] * 1e9
    m = n = SMALL_MN
    rows = []
    for k in SMALL_K:
        for fmt, e in (("FP16", 2), ("FP32", 4)):
            ideal = model.ideal_bytes(m, n, k, e, 4)
            s = saved_bytes(m, n, c=False)
            rows.append({"k": k, "format": fmt,
                         "flop_us": model.flops(m, n, k) / (r["peak"][fmt] * 1e12) * 1e6,
                         "bytes_us": ideal / bw * 1e6,
                         "out_share": 4 * m * n / ideal,
                         "unfused_extra_us": (s["unfused"] - s["fused"] + 4 * n) / bw * 1e6})
    return rows


def small_k_model_table():
    """Small K, predicted."""
    from lab.experiments.splitk import SMALL_MN

    return page.table(small_k_model_rows(), ["k", "format", "flop_us", "bytes_us", "out_share",
                                             "unfused_extra_us"],
                      {"k": "K", "flop_us": "FLOPs at the roof (µs)",
                       "bytes_us": "least bytes at read bandwidth (µs)",
                       "out_share": "output's share of the bytes",
                       "unfused_extra_us": "unfused epilogue adds (µs)"},
                      title=f"M = N = {SMALL_MN}, FP32 output")


def small_k_rows() -> list[dict]:
    """Measured small K: per design and K, the product, the epilogue alone, unfused, fused,
    and cuBLAS (µs)."""
    by = {}
    for r in _splitk("small_k"):
        key = (r["design"], r["k"])
        name = "cublas" if r["impl"] == "cublas" else r["variant"]
        row = by.setdefault(key, {"design": r["design"], "k": r["k"]})
        row[name] = r["median_ms"] * 1e3
        row[f"{name}_timing"] = r.get("timing")
    rows = list(by.values())
    for row in rows:
        row["saved"] = row["unfused"] - row["fused"]
        row["epi_share"] = row["epilogue_only"] / row["unfused"]
    return rows


def small_k_table():
    """Small K, measured."""
    try:
        rows = small_k_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    return page.table(rows, ["design", "k", "gemm", "cublas", "epilogue_only", "unfused",
                             "fused", "saved", "epi_share"],
                      {"k": "K", "gemm": "our GEMM (µs)", "cublas": "cuBLAS GEMM (µs)",
                       "epilogue_only": "epilogue kernel (µs)", "unfused": "unfused (µs)",
                       "fused": "fused (µs)", "saved": "saved (µs)",
                       "epi_share": "epilogue's share, unfused"},
                      source=results.source_line("splitk"))


def small_k_figure():
    """Unfused against fused time over K for both designs, with cuBLAS's bare product."""
    try:
        rows = small_k_rows()
    except results.ResultsMissing as exc:
        return placeholder_figure("small K", exc)
    fig, ax = plots.axes("", "K", "µs per call (M = N = 4096)", logx=True)
    for design, colour in (("fp16", "C0"), ("fp32", "C1")):
        pts = sorted((r for r in rows if r["design"] == design), key=lambda r: r["k"])
        ks = [r["k"] for r in pts]
        name = "tc_fp16" if design == "fp16" else "warptile_tuned"
        ax.plot(ks, [r["unfused"] for r in pts], color=colour, linestyle="--", marker="s",
                markersize=3, linewidth=1.1, label=f"{name} + epilogue kernel")
        ax.plot(ks, [r["fused"] for r in pts], color=colour, marker="o", markersize=3,
                linewidth=1.4, label=f"{name}, epilogue fused")
        ax.plot(ks, [r["cublas"] for r in pts], color=colour, linestyle=":", linewidth=1.0,
                label=f"cuBLAS {design.upper()}, product only")
    ax.set_xscale("log", base=2)
    return plots.finish(fig, ax, loc="below")


# ----------------------------------------------------------------------------- measured: epilogue

def epilogue_model_rows() -> list[dict]:
    """The prediction: bytes the fused epilogue saves (the product written and read back) and
    that time at the streaming-read bandwidth, for the timed shapes."""
    from lab.experiments.epilogue import SHAPES
    from lab.kernels.k10_epilogue import saved_bytes

    bw = roofs()["read_gbps"] * 1e9
    rows = []
    for m, n, k in SHAPES[:1]:
        for label, c in (("bias + act", False), ("α·AB + β·C + bias, act", True)):
            s = saved_bytes(m, n, c=c)
            rows.append({"epilogue": label, "mn": f"{m}×{n}", "fused": s["fused"] / 2**20,
                         "unfused": s["unfused"] / 2**20, "saved": s["saved"] / 2**20,
                         "saved_us": s["saved"] / bw * 1e6})
    return rows


def epilogue_model_table():
    """Epilogue fusion, predicted."""
    return page.table(epilogue_model_rows(), ["epilogue", "mn", "fused", "unfused", "saved",
                                              "saved_us"],
                      {"mn": "M×N", "fused": "fused (MiB)", "unfused": "unfused (MiB)",
                       "saved": "saved (MiB)", "saved_us": "saved at read bandwidth (µs)"},
                      title="FP32 C, bias and D")


EPILOGUE_NAMES = {"bias_relu": "ReLU(AB + bias)", "bias_gelu": "GELU(AB + bias)",
                  "full_gelu": "GELU(αAB + βC + bias)"}


def epilogue_rows() -> list[dict]:
    """Measured: per design, shape and epilogue, the times of each variant (µs), the time the
    fusion saved and what the model predicted it would."""
    bw = roofs()["read_gbps"] * 1e9
    from lab.kernels.k10_epilogue import saved_bytes

    timed = results.rows("epilogue", part="time")
    gemm = {(r["design"], r["m"], r["n"], r["k"], r["impl"]): r["median_ms"] * 1e3
            for r in timed if r["variant"] == "gemm"}
    by: dict = {}
    for r in timed:
        if r["variant"] == "gemm":
            continue
        key = (r["design"], r["m"], r["n"], r["k"], r["epilogue"])
        row = by.setdefault(key, {"design": r["design"], "shape": f"{r['m']}×{r['n']}×{r['k']}",
                                  "epilogue": EPILOGUE_NAMES.get(r["epilogue"], r["epilogue"]),
                                  "gemm": gemm[(r["design"], r["m"], r["n"], r["k"], "numba")],
                                  "cublas_gemm": gemm[(r["design"], r["m"], r["n"], r["k"],
                                                       "cublas")]})
        row[r["variant"]] = r["median_ms"] * 1e3
        if r["variant"] == "fused":
            s = saved_bytes(r["m"], r["n"], c=r["epilogue"] == "full_gelu")
            row["model_saved"] = s["saved"] / bw * 1e6
    rows = list(by.values())
    for row in rows:
        row["saved"] = row["unfused"] - row["fused"]
    return rows


def epilogue_table():
    """Epilogue fusion, measured."""
    try:
        rows = epilogue_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    cols = ["design", "shape", "epilogue", "gemm", "elementwise", "unfused", "fused", "saved",
            "model_saved", "cublas_unfused", "torch_fused", "torch_unfused"]
    return page.table(rows, [c for c in cols if any(c in r for r in rows)],
                      {"gemm": "GEMM alone", "elementwise": "epilogue kernel",
                       "unfused": "unfused", "fused": "fused", "saved": "saved",
                       "model_saved": "model: saved", "cublas_unfused": "cuBLAS + kernel",
                       "torch_fused": "torch, one call", "torch_unfused": "torch, two calls"},
                      title="µs per call", source=results.source_line("epilogue"))


def epilogue_figure():
    """Time per call of each way to get the epilogue, at the shorter K."""
    try:
        rows = epilogue_rows()
    except results.ResultsMissing as exc:
        return placeholder_figure("epilogue", exc)
    k_min = min(int(r["shape"].split("×")[2]) for r in rows)
    pick = [r for r in rows if int(r["shape"].split("×")[2]) == k_min]
    variants = [v for v in ("unfused", "fused", "cublas_unfused", "torch_unfused",
                            "torch_fused") if any(v in r for r in pick)]
    labels = {"unfused": "ours + kernel", "fused": "ours, fused",
              "cublas_unfused": "cuBLAS + kernel", "torch_unfused": "torch, two calls",
              "torch_fused": "torch, one call"}
    fig, ax = plots.axes("", "", f"µs per call, K = {k_min}")
    width = 0.8 / len(variants)
    xs = np.arange(len(pick))
    for i, v in enumerate(variants):
        ax.bar(xs + i * width, [r.get(v, 0.0) for r in pick], width, label=labels[v],
               color=f"C{i}")
    ax.set_xticks(xs + width * (len(variants) - 1) / 2)
    ax.set_xticklabels([f"{r['design'].upper()}\n{r['epilogue']}" for r in pick], fontsize=6)
    return plots.finish(fig, ax, loc="below")


def torch_launched_table():
    """The kernels torch's profiler saw for each torch call (one call: one kernel = fused)."""
    try:
        rows = results.rows("epilogue", part="launched")
    except results.ResultsMissing as exc:
        return missing(exc)
    if not rows:
        return "torch was not available when the epilogue experiment ran: no torch rows."
    seen = {}
    for r in rows:
        key = (r["design"], r["epilogue"], r["kernel"])
        seen.setdefault(key, ", ".join(short_kernel_name(x, 48) for x in (r["launched"] or
                                                                         [r["error"] or "?"])))
    out = [{"design": d, "epilogue": EPILOGUE_NAMES.get(e, e), "call": c.removeprefix("torch:"),
            "kernels": v} for (d, e, c), v in seen.items()]
    return page.table(out, ["design", "epilogue", "call", "kernels"],
                      {"kernels": "kernels launched (torch profiler)"},
                      source=results.source_line("epilogue"))


# ----------------------------------------------------------------------------- named kernels

def align_kernel_rows() -> list[dict]:
    """For every size of the alignment table, the kernel cuBLAS FP16 and FP32 launched (as
    Nsight Compute named it) beside its measured TFLOP/s; "not profiled" where the
    ``cublas_kernels`` file has no row for that size."""
    named = {(r["kernel"], r["n"]): r for r in results.rows("cublas_kernels")}
    by = _align()
    rows = []
    for n in sorted({n for _, n in by}):
        row = {"n": n}
        for kind in ("fp16", "fp32"):
            r = named.get((f"cublas_{kind}", n))
            if r is None:
                row[kind] = "not profiled"
            elif not r.get("launched"):
                row[kind] = f"profiler failed: {(r.get('error') or '?')[:40]}"
            else:
                row[kind] = ", ".join(short_kernel_name(x, 44) for x in r["launched"])
            row[f"{kind}_tflops"] = by[(f"cublas_{kind}", n)]["tflops"]
        rows.append(row)
    return rows


def align_kernel_table():
    """The alignment sizes: which kernel cuBLAS ran, and how fast."""
    try:
        rows = align_kernel_rows()
    except results.ResultsMissing as exc:
        return missing(exc)
    return page.table(rows, ["n", "fp16", "fp16_tflops", "fp32", "fp32_tflops"],
                      {"fp16": "cuBLAS FP16 kernel", "fp16_tflops": "TFLOP/s",
                       "fp32": "cuBLAS FP32 kernel", "fp32_tflops": "TFLOP/s"},
                      source=results.source_line("cublas_kernels"))


def kernel_family(name: str) -> str:
    """A library kernel's family, from its name: ``nvjet_sm90…`` (Hopper), ``cutlass_75…``
    (Turing's tensor-core instruction), ``cutlass_80…``, ``sm90_xmma``/``sm80_xmma``,
    ``sm80``/``ampere``, else the first part of the name."""
    short = short_kernel_name(name, 200)
    for key, label in (("nvjet", "nvjet (sm90)"), ("cutlass_75", "CUTLASS sm75"),
                       ("cutlass_80", "CUTLASS sm80"), ("sm90_xmma", "xmma (sm90)"),
                       ("sm80_xmma", "xmma (sm80)"), ("sm80", "sm80"), ("ampere", "ampere")):
        if key in short:
            return label
    return short.split("_")[0]


def align_kernel_summary(kind: str = "fp16") -> str:
    """One line: which family ran at which alignment size, and the sizes not profiled."""
    try:
        rows = align_kernel_rows()
        named = {(r["kernel"], r["n"]): r for r in results.rows("cublas_kernels")}
    except results.ResultsMissing as exc:
        return missing(exc)
    groups: dict = {}
    missing = []
    for row in rows:
        r = named.get((f"cublas_{kind}", row["n"]))
        if r is None or not r.get("launched"):
            missing.append(str(row["n"]))
            continue
        fam = ", ".join(sorted({kernel_family(x) for x in r["launched"]}))
        groups.setdefault(fam, []).append(str(row["n"]))
    text = "; ".join(f"{fam} at {', '.join(ns)}" for fam, ns in groups.items())
    if missing:
        text += f" (not profiled: {', '.join(missing)})"
    return text


def _divides(n: int) -> int:
    """The class of ``n`` by the largest power of two dividing it, capped at 8 (16 FP16 bytes)."""
    return min(n & -n, 8)


def align_kernel_rule(kind: str = "fp16") -> str:
    """The profiled kernel families of cuBLAS ``kind`` grouped by what divides the side: sides
    divisible by 8, by 4 but not 8, by 2 but not 4, and odd ones."""
    named = {r["n"]: r for r in results.rows("cublas_kernels") if r["kernel"] == f"cublas_{kind}"}
    sizes = sorted({n for _, n in _align() if n in named and named[n].get("launched")})
    words = {8: "divisible by 8", 4: "by 4 but not 8", 2: "by 2 but not 4", 1: "odd"}
    parts = []
    for cls in (8, 4, 2, 1):
        ns = [n for n in sizes if _divides(n) == cls]
        if not ns:
            continue
        fams = sorted({kernel_family(x) for n in ns for x in named[n]["launched"]})
        parts.append(f"{words[cls]} ({', '.join(map(str, ns))}): {' and '.join(fams)}")
    return "; ".join(parts)


def wave_values() -> dict:
    """The measured wave sweep in numbers: the model's and the measured step at the first and
    last new wave of tc_fp16, the largest step between two sizes of the same wave count, one
    block per SM against a full wave, and cuBLAS FP16's ratios over the same boundaries."""
    steps = wave_steps_rows()
    tc = [r for r in steps if r["kernel"] == "tc_fp16"]
    fp32 = [r for r in steps if r["kernel"] == "warptile_tuned"]
    rows = sorted((r for r in wave_sweep_rows() if r["kernel"] == "tc_fp16"),
                  key=lambda r: r["n"])
    inside = [(b["us"] / a["us"], a, b) for a, b in zip(rows, rows[1:])
              if a["waves"] == b["waves"]]
    big, a, b = max(inside, key=lambda x: x[0])
    sms = roofs()["sms"]
    one = max((r for r in rows if r["tiles"] <= sms), key=lambda r: r["n"])
    full = max((r for r in rows if r["waves"] == 1), key=lambda r: r["n"])
    cub = [r["cublas"] for r in tc]
    return {"wave_first_model": f"{tc[0]['model']:.2f}", "wave_first_tc": f"{tc[0]['measured']:.2f}",
            "wave_first_fp32": f"{fp32[0]['measured']:.2f}",
            "wave_first_n": f"{tc[0]['n_before']} → {tc[0]['n_after']}",
            "wave_last_model": f"{tc[-1]['model']:.2f}", "wave_last_tc": f"{tc[-1]['measured']:.2f}",
            "wave_last_fp32": f"{fp32[-1]['measured']:.2f}",
            "wave_last_n": f"{tc[-1]['n_before']} → {tc[-1]['n_after']}",
            "wave_inside_x": f"{big:.2f}", "wave_inside_n": f"{a['n']} → {b['n']}",
            "wave_inside_tiles": f"{a['tiles']} → {b['tiles']}",
            "wave_one_n": str(one["n"]), "wave_one_tiles": str(one["tiles"]),
            "wave_one_us": f"{one['us']:.0f}", "wave_full_n": str(full["n"]),
            "wave_full_tiles": str(full["tiles"]), "wave_full_us": f"{full['us']:.0f}",
            "wave_one_full_x": f"{full['us'] / one['us']:.2f}",
            "wave_cublas_lo": f"{min(cub):.2f}", "wave_cublas_hi": f"{max(cub):.2f}"}


def epilogue_values() -> dict:
    """The epilogue measurement in numbers: for our fused kernels, in how many cases fusion was
    faster and by how much it won or lost; for the library, cuBLAS + the element-wise kernel
    against torch's one call and cuBLAS's bare product; the element-wise kernel's bandwidth."""
    rows = epilogue_rows()
    v = {}
    for design in ("fp16", "fp32"):
        here = [r for r in rows if r["design"] == design]
        won = [r for r in here if r["saved"] > 0]
        v[f"epi_{design}_won"] = f"{len(won)} of {len(here)}"
        v[f"epi_{design}_best"] = f"{max(r['saved'] for r in here):.0f}"
        v[f"epi_{design}_worst"] = f"{-min(r['saved'] for r in here):.0f}"
        lost = [r for r in here if r["saved"] <= 0]
        v[f"epi_{design}_lost_pct"] = (f"{min(-r['saved'] / r['unfused'] for r in lost):.0%}–"
                                       f"{max(-r['saved'] / r['unfused'] for r in lost):.0%}"
                                       if lost else "0%")
        worst = min(here, key=lambda r: r["saved"])
        v[f"epi_{design}_worst_case"] = f"{worst['epilogue']} at {worst['shape']}"
        text = f"faster in {len(won)} of {len(here)} cases"
        if won:
            text += f" (by up to {max(r['saved'] for r in won):.0f} µs)"
        if lost:
            text += (f" and slower in {len(lost)}, by {-max(r['saved'] for r in lost):.0f} to "
                     f"{-min(r['saved'] for r in lost):.0f} µs")
        v[f"epi_{design}_verdict"] = text
    fused16 = [r for r in rows if r["design"] == "fp16" and "torch_fused" in r]
    v["epi_lib_saved"] = (f"{min(r['cublas_unfused'] - r['torch_fused'] for r in fused16):.0f}–"
                          f"{max(r['cublas_unfused'] - r['torch_fused'] for r in fused16):.0f}")
    v["epi_lib_vs_gemm"] = (f"{min(r['torch_fused'] / r['cublas_gemm'] for r in fused16):.2f}–"
                            f"{max(r['torch_fused'] / r['cublas_gemm'] for r in fused16):.2f}")
    elem = [r for r in results.rows("splitk", part="small_k")
            if r["variant"] == "epilogue_only" and r.get("timing") == "queued"]
    read = roofs()["read_gbps"]
    v["epi_elem_us"] = f"{min(r['median_ms'] for r in elem) * 1e3:.0f}"
    v["epi_elem_share"] = f"{max(r['gbps'] for r in elem) / read:.0%}"
    return v


def torch_fused_summary() -> str:
    """Which of torch's one-call epilogues ran as one kernel and which as a GEMM followed by a
    separate epilogue kernel (copies and memsets left out)."""
    one, two = [], []
    seen = set()
    for r in results.rows("epilogue", part="launched"):
        if r["kernel"] != "torch:torch_fused" or (r["design"], r["epilogue"]) in seen:
            continue
        seen.add((r["design"], r["epilogue"]))
        kernels = [x for x in r["launched"] or [] if not x.startswith(("Memset", "Memcpy"))]
        label = f"{r['design'].upper()} {EPILOGUE_NAMES.get(r['epilogue'], r['epilogue'])}"
        (one if len(kernels) == 1 else two).append(label)
    return (f"one kernel for {', '.join(one) or 'none'}; a GEMM and a separate epilogue kernel "
            f"for {', '.join(two) or 'none'}")


def splitk_values() -> dict:
    """The split-K measurement in numbers: best speed-up and factor per design, against cuBLAS
    and the model, the launches per call and our kernels' per-call launch floor."""
    sk = splitk_summary_rows()
    rows = splitk_rows()
    v = {}
    fp32 = next(r for r in sk if r["design"] == "fp32")
    fp16 = [r for r in sk if r["design"] == "fp16"]
    v["sk_fp32_shape"] = fp32["shape"]
    v["sk_fp32_x"] = f"{max(fp32['two_pass_x'], fp32['atomic_x']):.1f}"
    v["sk_fp32_best_us"] = f"{min(fp32['two_pass'], fp32['atomic']):.0f}"
    v["sk_fp32_unsplit_us"] = f"{fp32['unsplit']:.0f}"
    v["sk_fp32_vs_cublas"] = f"{min(fp32['two_pass'], fp32['atomic']) / fp32['cublas']:.2f}"
    best32 = min((r for r in rows if r["design"] == "fp32" and r["mode"] in ("two_pass", "atomic")),
                 key=lambda r: r["us"])
    v["sk_fp32_vs_model"] = f"{best32['us'] / best32['model_us']:.1f}"
    v["sk_fp16_x_lo"] = f"{min(max(r['two_pass_x'], r['atomic_x']) for r in fp16):.1f}"
    v["sk_fp16_x_hi"] = f"{max(max(r['two_pass_x'], r['atomic_x']) for r in fp16):.1f}"
    best16 = [min(r["two_pass"], r["atomic"]) for r in fp16]
    v["sk_fp16_best_lo"], v["sk_fp16_best_hi"] = f"{min(best16):.0f}", f"{max(best16):.0f}"
    v["sk_fp16_vs_cublas_lo"] = f"{min(b / r['cublas'] for b, r in zip(best16, fp16)):.0f}"
    v["sk_fp16_vs_cublas_hi"] = f"{max(b / r['cublas'] for b, r in zip(best16, fp16)):.0f}"
    split16 = [r for r in rows if r["design"] == "fp16" and r["mode"] in ("two_pass", "atomic")
               and r["slices"] >= 2]
    v["sk_fp16_all_lo"] = f"{min(r['us'] for r in split16):.0f}"
    v["sk_fp16_all_hi"] = f"{max(r['us'] for r in split16):.0f}"
    v["sk_fp16_timing"] = ", ".join(sorted({r["timing"] for r in split16}))
    v["sk_fp16_model_lo"] = f"{min(r['model_us'] for r in split16):.0f}"
    v["sk_fp16_model_hi"] = f"{max(r['model_us'] for r in split16):.0f}"
    per = [r for r in _shapes("size") if not r["kernel"].startswith("cublas")]
    floor = min(r["median_ms"] for r in per) * 1e3
    v["sk_launch_floor"] = f"{floor:.0f}"
    v["sk_two_floors"] = f"{2 * floor:.0f}"
    v["sk_fp16_over_floors"] = f"{min(r['us'] for r in split16) / (2 * floor):.2f}"
    atom32 = {r["slices"]: r["us"] for r in rows if r["design"] == "fp32" and r["mode"] == "atomic"}
    two32 = {r["slices"]: r["us"] for r in rows if r["design"] == "fp32" and r["mode"] == "two_pass"}
    worse = [s for s in atom32 if s >= 2 and atom32[s] > 1.1 * two32[s]]
    v["sk_fp32_atomic_worse"] = ", ".join(map(str, sorted(worse))) or "none"
    return v


def small_k_values() -> dict:
    """The small-K prediction's ranges, and what the measurement's timing modes were."""
    pred = small_k_model_rows()
    fp16 = [r for r in pred if r["format"] == "FP16"]
    v = {"smallk_flop_lo": f"{min(r['flop_us'] for r in fp16):.1f}",
         "smallk_flop_hi": f"{max(r['flop_us'] for r in fp16):.0f}",
         "smallk_out_lo": f"{min(r['out_share'] for r in fp16):.0%}",
         "smallk_out_hi": f"{max(r['out_share'] for r in fp16):.0%}",
         "smallk_unfused_extra": f"{pred[0]['unfused_extra_us']:.0f}"}
    try:
        meas = small_k_rows()
    except results.ResultsMissing as exc:
        return {**v, **{k: missing(exc) for k in (
            "smallk_fp16_lost_ks", "smallk_fp32_won", "smallk_kmin", "smallk_fp32_gpu_unfused",
            "smallk_unfused_timing", "sk_queue_below_ms",
            "smallk_fp32_fused", "smallk_fp32_unfused")}}
    by = {(r["design"], r["k"]): r for r in meas}
    lost = sorted(k for (d, k), r in by.items() if d == "fp16" and r["saved"] < 0)
    v["smallk_fp16_lost_ks"] = ", ".join(map(str, lost)) or "none"
    won32 = [k for (d, k), r in by.items() if d == "fp32" and r["saved"] > 0]
    v["smallk_fp32_won"] = f"{len(won32)} of {sum(1 for d, _ in by if d == 'fp32')}"
    queued = [r for (d, _), r in sorted(by.items()) if d == "fp32" and all(
        r.get(f"{x}_timing") == "queued" for x in ("gemm", "epilogue_only", "fused"))]
    r32 = queued[0] if queued else by[("fp32", min(k for _, k in by))]
    v["smallk_kmin"] = str(r32["k"])
    v["smallk_unfused_timing"] = ", ".join(sorted({r["unfused_timing"] for r in meas}))
    v["sk_queue_below_ms"] = f"{results.load('splitk')['parameters']['queue_below_ms']:g}"
    v["smallk_fp32_gpu_unfused"] = f"{r32['gemm'] + r32['epilogue_only']:.0f}"
    v["smallk_fp32_fused"] = f"{r32['fused']:.0f}"
    v["smallk_fp32_unfused"] = f"{r32['unfused']:.0f}"
    return v


def new_values() -> dict:
    """The glued values of the measured sections (epilogue, split-K, small K, waves, named
    kernels); a not-measured line for each where its file is missing."""
    v = {"align_fp16_families": align_kernel_summary("fp16"),
         "align_fp32_families": align_kernel_summary("fp32")}
    later = "(not measured yet)"
    try:
        v["align_fp16_rule"] = align_kernel_rule("fp16")
        v["align_fp32_rule"] = align_kernel_rule("fp32")
        v["fp32_align_extra_max"] = f"{max(r['cublas_fp32'] for r in align_extra_rows()):.0f}%"
    except results.ResultsMissing:
        v.update({k: later for k in ("align_fp16_rule", "align_fp32_rule",
                                      "fp32_align_extra_max")})
    em = {r["epilogue"]: r for r in epilogue_model_rows()}
    v["epi_saved_mib"] = f"{em['bias + act']['saved']:.0f}"
    v["epi_saved_model_us"] = f"{em['bias + act']['saved_us']:.0f}"
    v.update(small_k_values())
    epi_keys = [f"epi_{d}_{x}" for d in ("fp16", "fp32")
                for x in ("won", "best", "worst", "lost_pct", "worst_case", "verdict")]
    try:
        v.update(epilogue_values())
        v["torch_fused_kernels"] = torch_fused_summary()
    except results.ResultsMissing:
        v.update({k: later for k in (*epi_keys, "epi_lib_saved", "epi_lib_vs_gemm",
                                      "epi_elem_us", "epi_elem_share", "torch_fused_kernels")})
    try:
        v.update(wave_values())
    except results.ResultsMissing:
        v.update({k: later for k in (
            "wave_first_model", "wave_first_tc", "wave_first_fp32", "wave_first_n",
            "wave_last_model", "wave_last_tc", "wave_last_fp32", "wave_last_n",
            "wave_inside_x", "wave_inside_n", "wave_inside_tiles", "wave_one_n", "wave_one_tiles", "wave_one_us",
            "wave_full_n", "wave_full_tiles", "wave_full_us", "wave_one_full_x",
            "wave_cublas_lo", "wave_cublas_hi")})
    sk_keys = ("sk_fp32_shape", "sk_fp32_x", "sk_fp32_best_us", "sk_fp32_unsplit_us",
               "sk_fp32_vs_cublas", "sk_fp32_vs_model", "sk_fp16_x_lo", "sk_fp16_x_hi",
               "sk_fp16_best_lo", "sk_fp16_best_hi", "sk_fp16_vs_cublas_lo",
               "sk_fp16_vs_cublas_hi", "sk_fp16_all_lo", "sk_fp16_all_hi", "sk_fp16_timing",
               "sk_fp16_model_lo", "sk_fp16_model_hi", "sk_launch_floor", "sk_two_floors",
               "sk_fp16_over_floors", "sk_fp32_atomic_worse")
    try:
        v.update(splitk_values())
    except results.ResultsMissing:
        v.update({k: later for k in sk_keys})
    try:
        det = determinism_rows()
        atom = [r for r in det if r["mode"] == "atomic"]
        v["det_atomic_max_elements"] = f"{max(r['elements'] for r in atom):,}"
        v["det_atomic_max_share"] = f"{max(r['share'] for r in atom):.1%}"
        v["det_atomic_two_slices"] = str(max(r["distinct"] for r in atom if r["splits"] == 2))
        v["det_two_pass_distinct"] = str(max(r["distinct"] for r in det
                                             if r["mode"] == "two-pass"))
        sm = small_k_rows()
        k16 = {r["design"]: r for r in sm if r["k"] == min(x["k"] for x in sm)}
        v["smallk_fp16_share"] = f"{k16['fp16']['epi_share']:.0%}"
        v["smallk_fp16_saved"] = f"{k16['fp16']['saved']:.0f}"
    except results.ResultsMissing:
        v.update({k: later for k in (
            "det_atomic_max_elements", "det_atomic_max_share", "det_atomic_two_slices",
            "det_two_pass_distinct", "smallk_fp16_share", "smallk_fp16_saved")})
    return v


# ----------------------------------------------------------------------------- this GPU

def measure_here():
    """On a GPU with CuPy: time cuBLAS FP16 at 4096³ and 4097³ (10 repeats each) and return a
    table beside the reference. Otherwise print one line and return None."""
    if not (device.GPU and "fp16" in baselines.available()):
        print("No GPU (or no CuPy) in this run: nothing timed here.")
        return None
    ref = {r["n"]: r for r in results.rows("shapes", results.REFERENCE_GPU, part="alignment")
           if r["kernel"] == "cublas_fp16"}
    name = gpu_label(device.provenance()["gpu"] or "this GPU")
    rows = []
    for n in (4096, 4097):
        here = baselines.time("fp16", n, n, n, repeats=10)
        rows.append({"n": n, "here": here["tflops"], "ref": ref[n]["tflops"]})
    return page.table(rows, ["n", "here", "ref"],
                      {"n": "n", "here": f"{name} (now), TFLOP/s",
                       "ref": "H200 (reference), TFLOP/s"})


# ----------------------------------------------------------------------------- glued values

def values() -> dict:
    """Every number the chapter's prose quotes, as strings, from the selected GPU's results,
    the model and the seeds."""
    r = roofs()
    v = {
        "gpu": gpu_label(r["gpu"]), "sms": str(r["sms"]),
        "m1_intensity": f"{model.ideal_intensity(1, *WEIGHTS, 2):.2f}",
        "fp16_ridge": f"{r['ridge']['FP16']:.0f}", "fp32_ridge": f"{r['ridge']['FP32']:.1f}",
        "m_cross": f"{m_cross():.0f}",
        "weights_mib": f"{2 * WEIGHTS[0] * WEIGHTS[1] / 2**20:.0f}",
        "l2_mib": f"{r['l2_bytes'] / 2**20:.0f}" if r["l2_bytes"] else "-",
        "sk_floor_m1": f"{floor_us(1, *WEIGHTS, 'FP16', r):.1f}",
    }
    w4096, w4097 = last_wave(4096), last_wave(4097)
    eff = {(x["kernel"], x["n"]): x for x in wave_rows()}
    v.update({
        "w4096_tiles": f"{w4096['tiles']:,}", "w4096_waves": str(w4096["waves"]),
        "w4096_per_wave": f"{w4096['tiles'] / w4096['slots']:.1f}",
        "slots": str(w4096["slots"]),
        "w4097_tiles": f"{w4097['tiles']:,}", "w4097_waves": str(w4097["waves"]),
        "w4097_last": str(w4097["last"]),
        "w4097_last_share": f"{w4097['last'] / w4097['slots']:.0%}",
        "w4097_loss": f"{1 - eff[('tc_fp16', 4097)]['wave_eff']:.0%}",
        "tiled32_tiles_4097": f"{eff[('tiled32', 4097)]['tiles']:,}",
        "tiled32_slots_4097": f"{eff[('tiled32', 4097)]['wave_eff']:.1%}",
    })
    tails = {(x["m"], x["tile"]): x["useful"] for x in tail_rows()}
    v.update({"tail_130": f"{tails[(130, 64)]:.0%}",
              "tail_4097_32": f"{1 - tails[(4097, 32)]:.1%}",
              "tail_4097_128": f"{1 - tails[(4097, 128)]:.1%}"})
    s = SPLIT_K
    sk = {x["splits"]: x for x in split_k_rows()}
    best = max((x for x in sk.values() if x["waves"] == 1), key=lambda x: x["splits"])
    v.update({"splitk_tiles": str(sk[1]["units"]), "splitk_best": str(best["splits"]),
              "splitk_best_units": str(best["units"]),
              "splitk_extra_mib":
                  f"{model.split_k_extra_bytes(s['m'], s['n'], best['splits']) / 2**20:.0f}",
              "splitk_ideal_mib": f"{model.ideal_bytes(s['m'], s['n'], s['k'], 2, 4) / 2**20:.0f}"})
    red = reduction_order_rows()
    v.update({"red_low": f"{min(x['rel_frob'] for x in red):.1e}",
              "red_high": f"{max(x['rel_frob'] for x in red):.1e}",
              "red_differ_max": f"{max(x['differ'] for x in red):,}",
              "red_outputs": f"{64 * 64:,}"})
    vocab = next(n for name, n, _ in LAYER if name == "vocabulary")
    padded = -(-vocab // 64) * 64
    t4_skinny = {x["m"]: x for x in seeds.SKINNY_T4}
    t4_align = next(x for x in seeds.ALIGNMENT_T4 if x["n"] == 4097 and x["dtype"] == "FP16")
    tc = {x["kernel"]: x for x in results.rows("tensor_cores", part="ladder")}
    v.update({"vocab": f"{vocab:,}", "vocab_padded": f"{padded:,}",
              "vocab_pad_extra": f"{padded / vocab - 1:.1%}",
              "t4_m1_us": f"{t4_skinny[1]['ms'] * 1e3:.0f}",
              "t4_m64_us": f"{t4_skinny[64]['ms'] * 1e3:.0f}",
              "t4_skinny_share": f"{t4_skinny[1]['weight_gbps'] / seeds.READ_ROOF_T4_GBPS:.0%}",
              "t4_layout_low": f"{seeds.LAYOUT_T4['steady_low']:.2f}",
              "t4_layout_high": f"{seeds.LAYOUT_T4['steady_high']:.2f}",
              "t4_burst": seeds.LAYOUT_T4["burst_spread"],
              "t4_4097_extra": f"{t4_align['extra_time_pct']}%",
              "tc_of_cublas": f"{tc['tc_fp16']['ratio_to_cublas_fp16']:.0%}"})
    prec = {x["kernel"]: x for x in results.rows("precision")}
    v["tf32_speedup"] = f"{prec['cublas_tf32']['tflops'] / prec['cublas_fp32']['tflops']:.1f}"
    v.update(_measured_values(r))
    v.update(new_values())
    return v


def _measured_values(r: dict) -> dict:
    """The glued values that come from ``shapes`` and ``cublas_kernels`` (a line each where a
    file is missing)."""
    names = ("fp16_n90", "fp16_best", "floor_cublas", "floor_numba", "fp16_4097_extra",
             "fp16_4096_kernel", "fp16_4097_kernel", "tiled32_4097_extra", "tc_4088_extra",
             "tc_4097_extra", "fp16_mult8_extra_max", "fp16_other_extra_min", "shuffle_spread",
             "shuffle_short", "sk_call_min", "sk_call_max", "m1_us", "m1_gbps", "m1_share",
             "m1_of_top", "m1_of_1024", "t4_m1_of_1024", "m1_vs_floor", "m_flat", "tc_m1_us",
             "tc_m1_blocks", "layout_range", "burst_first", "burst_rest", "burst_calls",
             "layout_warmup", "layout_repeats", "ladder_fp32_x", "ladder_ours_fp32_x",
             "ladder_fp16_x", "ladder_tc_x", "t4_ladder_fp32_x", "t4_ladder_fp16_x",
             "spin_covered_min", "queue_batch", "spin_min_ms", "burst_idle_s")
    try:
        return _measured(r)
    except results.ResultsMissing as exc:
        return {k: not_measured(exc) for k in names}


def _measured(r: dict) -> dict:
    params = results.load("shapes")["parameters"]
    v: dict = {"queue_batch": str(params["queue_batch"]),
               "spin_min_ms": f"{params['spin_min_ms']:g}",
               "burst_idle_s": f"{params['burst_idle_s']:g}"}
    size = size_rows()
    best16 = max(x["cublas_fp16"] for x in size)
    v["fp16_best"] = f"{best16:.0f}"
    v["fp16_n90"] = str(min(x["n"] for x in size if x["cublas_fp16"] >= 0.9 * best16))
    per = {(x["kernel"], x["n"]): x for x in _shapes("size")}
    lib = [x["median_ms"] for (k, _), x in per.items() if k.startswith("cublas")]
    ours = [x["median_ms"] for (k, _), x in per.items() if not k.startswith("cublas")]
    v["floor_cublas"], v["floor_numba"] = f"{min(lib) * 1e3:.0f}", f"{min(ours) * 1e3:.0f}"
    v["spin_covered_min"] = f"{min(x['covered'] for x in queued_rows()):.2f}"
    by = _align()
    extra = {x["n"]: x for x in align_extra_rows()}
    v["fp16_4097_extra"] = f"{extra[4097]['cublas_fp16']:.0f}%"
    v["tiled32_4097_extra"] = f"{extra[4097]['tiled32']:.1f}%"
    v["tc_4088_extra"] = f"{extra[4088]['tc_fp16']:.0f}%"
    v["tc_4097_extra"] = f"{extra[4097]['tc_fp16']:.0f}%"
    mult8 = [extra[n]["cublas_fp16"] for n in extra if n % 8 == 0]
    other = [extra[n]["cublas_fp16"] for n in extra if n % 8]
    v["fp16_mult8_extra_max"] = f"{max(mult8):.0f}%"
    v["fp16_other_extra_min"] = f"{min(other):.0f}%"
    named = {(x["kernel"], x["n"]): x["launched"] for x in results.rows("cublas_kernels")}
    v["fp16_4096_kernel"] = ", ".join(named.get(("cublas_fp16", 4096)) or ["?"])
    v["fp16_4097_kernel"] = ", ".join(short_kernel_name(x) for x in
                                      named.get(("cublas_fp16", 4097)) or ["?"])
    sh = shuffled_rows()
    long_ = [x["spread"] for x in sh if x["fastest_us"] >= 100]
    short = [f"{x['kernel']} at {x['n']} ({x['fastest_us']:.0f} µs a call: {x['spread']:.0f}%)"
             for x in sh if x["fastest_us"] < 100]
    v["shuffle_spread"] = f"{max(long_):.1f}%"
    v["shuffle_short"] = "; ".join(short) or "none"
    sk = skinny_rows()
    small = [x[c] for x in sk if x["m"] <= 256 for c in ("cublas_hot", "cublas_hbm")]
    v["sk_call_min"], v["sk_call_max"] = f"{min(small):.0f}", f"{max(small):.0f}"
    q = skinny_queued_rows()
    one, top = q[0], q[-1]
    v["m1_us"] = f"{one['cublas_hbm']:.1f}"
    v["m1_gbps"] = f"{one['weight_gbps']:,.0f}"
    v["m1_share"] = f"{one['of_read']:.0f}%"
    v["m1_of_top"] = f"{one['tflops'] / top['tflops']:.1%}"
    at1024 = next(x for x in q if x["m"] == 1024)
    v["m1_of_1024"] = f"{one['tflops'] / at1024['tflops']:.1%}"
    v["t4_m1_of_1024"] = f"{seeds.SKINNY_T4_M1_SHARE_OF_M1024:.0%}"
    v["m1_vs_floor"] = f"{one['cublas_hbm'] / one['floor']:.1f}"
    v["m_flat"] = str(max(x["m"] for x in q if x["cublas_hbm"] <= 1.1 * one["cublas_hbm"]))
    v["tc_m1_us"] = f"{one['tc_hbm']:.0f}"
    cfg = RUNG_CONFIGS["tc_fp16"]
    v["tc_m1_blocks"] = str(model.tile_grid(1, WEIGHTS[1], cfg.bm, cfg.bn))
    lay = layout_rows()
    v["layout_range"] = f"{min(x['vs_nn'] for x in lay):.3f}–{max(x['vs_nn'] for x in lay):.3f}"
    first = [x["first_us"] / x["us"] for x in lay]
    steady = {r["layout"]: r["median_ms"] for r in _shapes("layout")}
    rest = [abs(t / steady[r["layout"]] - 1) for r in _shapes("burst")
            for t in r["burst_samples"][1:]]
    v["burst_rest"] = f"{max(rest):.1%}"
    v["burst_calls"] = str(len(_shapes("burst")[0]["burst_samples"]))
    v["layout_warmup"] = str(_shapes("layout")[0]["warmup"])
    v["layout_repeats"] = str(_shapes("layout")[0]["repeats"])
    v["burst_first"] = f"{min(first):.1f}–{max(first):.1f}"
    lad = {x["rung"]: x for x in ladder_rows()}
    v["ladder_fp32_x"] = f"{lad['cuBLAS FP32']['x_naive']:.1f}"
    v["ladder_ours_fp32_x"] = f"{lad['warptile_tuned']['x_naive']:.1f}"
    v["ladder_fp16_x"] = f"{lad['cuBLAS FP16']['x_naive']:.0f}"
    v["ladder_tc_x"] = f"{lad['tc_fp16']['x_naive']:.0f}"
    t4 = {x["rung"]: x for x in seeds.LADDER_T4}
    v["t4_ladder_fp32_x"] = f"{t4['cuBLAS FP32']['x_naive']:.1f}"
    v["t4_ladder_fp16_x"] = f"{t4['cuBLAS FP16 in -> FP32 out']['x_naive']:.0f}"
    return v
