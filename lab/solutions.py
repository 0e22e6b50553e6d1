"""Worked solutions to the chapters' exercises: one function per exercise, ``exCC_N``.

Each function returns the numbers and verdicts its solution in the book states, computed from
:mod:`lab.model`, the committed results (:mod:`lab.results`), the committed compiler facts
(:mod:`lab.compiler`) or a run of the registered kernels (simulator-sized where a kernel runs).
A chapter glues them with :func:`glue` (names ``exCC_N_key``); ``tests/test_solutions.py`` checks
the facts each solution relies on.

Exercises that need a GPU to answer (timing, profiling, a sanitizer) are answered from the
committed H200 results, and the solution says so; the method is the ``lab`` command shown with it.
"""
from __future__ import annotations

import math

import numpy as np

from lab import bench, model, results, seeds, tables

#: FFMA dependent-issue latency (cycles) on Volta and later GPUs, as microbenchmark studies report
#: it (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018).
FFMA_LATENCY_CYCLES = 4
#: Warp schedulers per SM (compute capability 7.0 and later).
SCHEDULERS_PER_SM = 4
#: Shared-memory bytes one SM delivers per clock (32 banks × 4 bytes).
SMEM_BYTES_PER_CLOCK = 32 * 4


def _row(data: dict, **match) -> dict:
    for r in data["rows"]:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    raise LookupError(f"{data['experiment']}: no row with {match}")


def _check(kernel: str, m: int, n: int, k: int, seed: int = 3) -> dict:
    """Run ``kernel`` through :func:`lab.matmul` on fresh inputs; errors against float64."""
    import lab

    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    C = lab.matmul(A, B, kernel=kernel)
    verdict = bench.compare(C, A, B, kernel=kernel, seed=seed)
    return {"shape": f"{m}×{k} · {k}×{n}", "rel_frobenius": verdict.rel_frobenius,
            "finite": bool(np.isfinite(C).all()), "ok": bool(verdict.passed)}


def _error_class(rel: float) -> str:
    """A relative error as the printed answer states it: the same on a GPU and in the simulator
    (whose float32 arithmetic rounds differently in the last bits)."""
    return "below 10⁻⁶" if rel < 1e-6 else f"{rel:.1e} (above 10⁻⁶)"


def _fma_loop() -> tuple[int, int]:
    """(FFMA, other instructions) of the FMA roof kernel's hottest loop (committed facts)."""
    from lab import compiler
    from lab.chapters import ch0

    loop = compiler.report(ch0.FMA_KERNEL)[0].loop_mix
    ffma = loop.get("FFMA", 0)
    return ffma, sum(loop.values()) - ffma


def _fma_peak() -> float:
    """FP32 peak from the clock the roofline run recorded: SMs × 128 lanes × 2 × clock."""
    prov = results.load("roofline")["provenance"]
    return prov["sm_count"] * 128 * 2 * float(prov["max_sm_clock_mhz"]) * 1e6


# ----------------------------------------------------------------------------- chapter 0

def ex00_1(chains: int = 4) -> dict:
    """CHAINS cut to ``chains``: occupancy still hides the FFMA latency; the loop's bookkeeping
    is a larger share, which sets the prediction."""
    from lab import roofline

    ffma, other = _fma_loop()
    per_chain = ffma // roofline.CHAINS              # FFMAs per chain per loop trip (UNROLL)
    new_ffma = chains * per_chain
    share = new_ffma / (new_ffma + other)
    data = results.load("roofline")
    params = data["parameters"]
    warps_per_sm = min(params["fma_block"] * params["fma_blocks_per_sm"],
                       model.SM90_LIMITS["threads"]) // 32
    warps_per_scheduler = warps_per_sm // SCHEDULERS_PER_SM
    needed = math.ceil(FFMA_LATENCY_CYCLES / chains)
    return {"loop_ffma": new_ffma, "loop_other": other, "share": share,
            "predicted_tflops": share * _fma_peak() / 1e12,
            "measured_tflops": _row(data, kernel="fma_chains")["tflops"],
            "warps_per_scheduler": warps_per_scheduler, "in_flight": warps_per_scheduler * chains,
            "latency": FFMA_LATENCY_CYCLES, "warps_needed": needed,
            "latency_hidden": warps_per_scheduler * chains >= FFMA_LATENCY_CYCLES}


def ex00_2() -> dict:
    """UNROLL = 1: one trip is CHAINS FFMAs plus the same bookkeeping."""
    from lab import roofline

    ffma, other = _fma_loop()
    share_now = ffma / (ffma + other)
    share = roofline.CHAINS / (roofline.CHAINS + other)
    return {"loop_ffma": roofline.CHAINS, "loop_other": other, "share": share,
            "share_now": share_now, "predicted_tflops": share * _fma_peak() / 1e12}


def ex00_3(tensor_tflops: float = 989.0) -> dict:
    """Ridge of a tensor-core kernel (seed 000's H100 SXM dense BF16 peak over our read roof)."""
    read = _row(results.load("roofline"), kernel="stream_read")["gbps"] * 1e9
    ridge = model.ridge(tensor_tflops * 1e12, read)
    tile = 2 * ridge                 # tile_intensity(T, T, 2) = T / 2
    square_n = 3 * ridge             # ideal_intensity(n, n, n, 2) = n / 3
    return {"tensor_tflops": tensor_tflops, "read_tbps": read / 1e12, "ridge": ridge,
            "tile": tile, "tile_pow2": 2 ** math.ceil(math.log2(tile)), "square_n": square_n,
            "fp32_ridge": model.ridge(_row(results.load("roofline"), kernel="fma_chains")
                                      ["tflops"] * 1e12, read)}


# ----------------------------------------------------------------------------- chapter 1

def warp_sectors(block: int, mapping: str) -> dict:
    """Sectors one warp's A and B loads touch at one k, for a ``block``-wide block of threads."""
    from lab.chapters import ch1

    lane = np.arange(32)
    tx, ty = lane % block, lane // block
    row, col = (ty, tx) if mapping == "naive" else (tx, ty)
    a = len(ch1.sectors((row, np.zeros_like(row))))
    b = len(ch1.sectors((np.zeros_like(col), col)))
    return {"A": a, "B": b, "total": a + b}


def ex01_1() -> dict:
    """BLOCK = 32: a warp is one row of threads."""
    nt = results.load("naive_tiled")
    ratio = {n: _row(nt, kernel="naive_swapped", m=n, part="size")["median_ms"]
             / _row(nt, kernel="naive", m=n, part="size")["median_ms"] for n in (1024, 4096)}
    b32 = {m: warp_sectors(32, m) for m in ("naive", "naive_swapped")}
    b16 = {m: warp_sectors(16, m) for m in ("naive", "naive_swapped")}
    return {"naive_32": b32["naive"]["total"], "swapped_32": b32["naive_swapped"]["total"],
            "swapped_32_A": b32["naive_swapped"]["A"], "naive_16": b16["naive"]["total"],
            "swapped_16": b16["naive_swapped"]["total"],
            "ratio_32": b32["naive_swapped"]["total"] / b32["naive"]["total"],
            "ratio_16": b16["naive_swapped"]["total"] / b16["naive"]["total"],
            "measured_1024": ratio[1024], "measured_4096": ratio[4096]}


def ex01_2() -> dict:
    """What the literal kernel's hottest loop carries beyond the typed one (committed facts)."""
    from lab import compiler

    lit = compiler.report("naive_literal")[0].loop_mix
    typed = compiler.report("naive")[0].loop_mix
    uniform = sum(n for op, n in lit.items() if op.startswith("U"))

    def per_ffma(loop):
        return (sum(loop.values()) - loop.get("FFMA", 0)) / loop.get("FFMA", 1)

    return {"literal_ffma": lit.get("FFMA", 0), "literal_total": sum(lit.values()),
            "literal_uniform": uniform, "literal_sel": lit.get("USEL", 0),
            "typed_ffma": typed.get("FFMA", 0), "typed_total": sum(typed.values()),
            "typed_uniform": sum(n for op, n in typed.items() if op.startswith("U")),
            "literal_other_per_ffma": per_ffma(lit), "typed_other_per_ffma": per_ffma(typed)}


def ex01_3() -> dict:
    """Largest n whose A, B and C (FP32) fit in the T4's L2, and what that says at n = 512."""
    from lab.chapters import ch1

    n_t4 = int(math.isqrt(seeds.L2_T4_BYTES // 12))
    l2_h200 = results.load("naive_tiled")["provenance"]["l2_bytes"]
    rows = ch1.sweep_rows()
    inside = [r["ratio"] for r in rows if r["fits"]]
    outside = [r["ratio"] for r in rows if not r["fits"]]
    ours_512 = next(r["ratio"] for r in rows if r["n"] == 512)
    return {"n_t4": n_t4, "mb_512": 3 * 4 * 512 ** 2 / 2 ** 20,
            "t4_l2_mb": seeds.L2_T4_BYTES / 2 ** 20, "n_h200": int(math.isqrt(l2_h200 // 12)),
            "ours_512": ours_512, "t4_1024": seeds.SWAPPED_SLOWDOWN_T4,
            "ours_in_lo": min(inside), "ours_in_hi": max(inside),
            "ours_out_lo": min(outside), "ours_out_hi": max(outside)}


def ex01_4(k: int = 4096, n: int = 4096) -> dict:
    """Matrix–vector product (M = 1): the naive model's bytes against each input read once."""
    naive = model.naive_bytes(1, n, k)
    ideal = model.ideal_bytes(1, n, k)
    return {"naive_mb": naive / 1e6, "ideal_mb": ideal / 1e6, "ratio": naive / ideal,
            "b_mb": 4 * k * n / 1e6, "intensity": model.ideal_intensity(1, n, k)}


# ----------------------------------------------------------------------------- chapter 2

def ex02_1() -> dict:
    """Racecheck on the real tiled kernels (committed H200 run): the kernels as shipped."""
    data = results.load("sanitizer")
    race = [r for r in data["rows"] if r["tool"] == "racecheck" and r["kernel"].startswith("tiled")]
    return {"kernels": ", ".join(r["kernel"] for r in race),
            "errors": sum(r["errors"] for r in race), "shape": "×".join(
                map(str, data["parameters"]["shape"]))}


def ex02_2(tile: int = 64) -> dict:
    """What stops T = 64: threads per block, then shared memory per SM."""
    lim = model.SM90_LIMITS
    smem = model.tile_shared_bytes(tile)
    by_smem = lim["shared_bytes"] // (smem + lim["shared_reserved_per_block"])
    return {"threads": tile * tile, "max_threads": 1024, "smem_kb": smem / 1024,
            "blocks_by_smem": by_smem, "blocks_by_threads": lim["threads"] // (tile * tile),
            "smem_sm_kb": lim["shared_bytes"] / 1024}


def ex02_3() -> dict:
    """16 × 16 threads, 32 × 32 tile, four elements loaded and four outputs per thread."""
    from lab import compiler

    loop = compiler.report("patch2")[0].loop_mix
    lds = sum(n for op, n in loop.items() if op.startswith("LDS"))
    t32 = compiler.report("tiled32")[0].loop_mix
    lds32 = sum(n for op, n in t32.items() if op.startswith("LDS"))
    return {"intensity": model.tile_intensity(32), "reads_per_fma": model.smem_reads_per_fma(2),
            "lds": lds, "ffma": loop.get("FFMA", 0), "lds_per_ffma": lds / loop.get("FFMA", 1),
            "tiled32_lds_per_ffma": lds32 / t32.get("FFMA", 1)}


def ex02_4() -> dict:
    """tiled32 at 4096³ and 4097³ on the H200 (the shapes experiment), against the model."""
    rows = [r for r in results.load("shapes")["rows"]
            if r.get("part") == "alignment" and r["kernel"] == "tiled32"]
    by = {r["m"]: r for r in rows}
    per_flop = ((by[4097]["median_ms"] / model.flops(4097, 4097, 4097))
                / (by[4096]["median_ms"] / model.flops(4096, 4096, 4096)) - 1)
    padded = (math.ceil(4097 / 32) * 32) ** 3 / 4097 ** 3 - 1
    return {"ms_4096": by[4096]["median_ms"], "ms_4097": by[4097]["median_ms"],
            "extra_time": by[4097]["median_ms"] / by[4096]["median_ms"] - 1,
            "extra_per_flop": per_flop, "model_extra": padded,
            "seed004_edge": seeds.TILED_EDGE_T4[0]["extra_time_pct"] / 100}


#: Seed 003's non-square exercise, (512 × 768) · (768 × 1024), and its shape scaled by 1/32
#: with one added to every side so that every tile edge is ragged in the simulator.
NONSQUARE = (512, 1024, 768)
NONSQUARE_SIM = (17, 33, 25)


def ex02_5(kernels=("tiled16",), shape=NONSQUARE_SIM) -> dict:
    """Non-square: the tile count along every side, and a check of the real kernel."""
    m, n, k = NONSQUARE
    tile = 16
    out = {"m": m, "n": n, "k": k, "grid_x": -(-n // tile), "grid_y": -(-m // tile),
           "k_steps": -(-k // tile), "ragged": any(d % tile for d in NONSQUARE),
           "sim_shape": "×".join(map(str, (shape[0], shape[2], shape[1]))),
           "gflop": model.flops(m, n, k) / 1e9}
    checks = [_check(name, shape[0], shape[1], shape[2]) for name in kernels]
    out["ok"] = all(c["ok"] for c in checks)
    out["rel_frobenius"] = _error_class(max(c["rel_frobenius"] for c in checks))
    out["sim_steps"] = -(-shape[2] // tile)
    out["sim_padded"] = out["sim_steps"] * tile - shape[2]
    return out


def ex02_6(n: int = 2048) -> dict:
    """Seed 003's tile sweep at 2048³, from the committed H200 run."""
    nt = results.load("naive_tiled")
    rows = {t: _row(nt, kernel=f"tiled{t}", m=n, part="size") for t in (8, 16, 32)}
    best = max(rows, key=lambda t: rows[t]["tflops"])
    out = {"n": n, "best": best}
    for t, r in rows.items():
        out[f"ms_{t}"] = r["median_ms"]
        out[f"tflops_{t}"] = r["tflops"]
        out[f"model_{t}"] = model.tile_intensity(t)
    out["gain_8_32"] = rows[32]["tflops"] / rows[8]["tflops"]
    out["model_gain_8_32"] = model.tile_intensity(32) / model.tile_intensity(8)
    return out


def ex02_7() -> dict:
    """Seed 003's profiling exercise: naive against tiled, Nsight Compute on the H200 at 1024³."""
    data = results.load("ncu_dram")
    by = {r["kernel"]: r for r in data["rows"]}
    lim = model.SM90_LIMITS
    from lab import compiler

    occ = {}
    for name, threads in (("naive", 256), ("tiled16", 256), ("tiled32", 1024)):
        rep = compiler.report(name)[0]
        blocks = model.blocks_per_sm(threads, rep.registers, rep.shared_bytes)
        occ[name] = blocks * threads / lim["threads"]
    a_b = 2 * 4 * data["parameters"]["n"] ** 2
    return {"n": data["parameters"]["n"],
            "dram_naive_mb": by["naive"]["dram_read_bytes"] / 1e6,
            "dram_tiled16_mb": by["tiled16"]["dram_read_bytes"] / 1e6,
            "dram_ratio": by["naive"]["dram_read_bytes"] / by["tiled16"]["dram_read_bytes"],
            "dram_passes": by["tiled16"]["dram_read_bytes"] / a_b,
            "model_ratio": by["naive"]["model_bytes"] / by["tiled16"]["model_bytes"],
            "l2_naive_mb": by["naive"]["l2_read_bytes"] / 1e6,
            "l2_tiled16_mb": by["tiled16"]["l2_read_bytes"] / 1e6,
            "l2_tiled32_mb": by["tiled32"]["l2_read_bytes"] / 1e6,
            "l2_ratio_16": by["naive"]["l2_read_bytes"] / by["tiled16"]["l2_read_bytes"],
            "l2_ratio_32": by["naive"]["l2_read_bytes"] / by["tiled32"]["l2_read_bytes"],
            "occ_naive": occ["naive"], "occ_tiled16": occ["tiled16"],
            "occ_tiled32": occ["tiled32"]}


def ex02_8(size: int = 4096) -> dict:
    """Warp shuffles instead of the A tile: the compiled loops (committed facts) and the two
    kernels timed side by side on the H200 (the ``shuffle`` experiment)."""
    from lab import compiler

    loops = {n: compiler.report(n)[0].loop_mix for n in ("tiled32", "tiled32_shuffle")}
    lds = {n: {op: c for op, c in loop.items() if op.startswith("LDS")}
           for n, loop in loops.items()}
    data = results.load("shuffle")
    plain = _row(data, kernel="tiled32", m=size)
    shfl = _row(data, kernel="tiled32_shuffle", m=size)
    return {"size": size,
            "lds_plain": sum(lds["tiled32"].values()),
            "lds128_plain": lds["tiled32"].get("LDS.128", 0),
            "lds_shfl": sum(lds["tiled32_shuffle"].values()),
            "shfl": loops["tiled32_shuffle"].get("SHFL", 0),
            "ffma": loops["tiled32"].get("FFMA", 0),
            "loop_plain": sum(loops["tiled32"].values()),
            "loop_shfl": sum(loops["tiled32_shuffle"].values()),
            "smem_kb_plain": compiler.report("tiled32")[0].shared_bytes / 1024,
            "smem_kb_shfl": compiler.report("tiled32_shuffle")[0].shared_bytes / 1024,
            "tflops_plain": plain["tflops"], "tflops_shfl": shfl["tflops"],
            "shfl_over_plain": shfl["median_ms"] / plain["median_ms"]}


# ----------------------------------------------------------------------------- chapter 3

def ex03_1(patch: int = 16, n: int = 4096) -> dict:
    """patch16: the accumulators alone exceed the per-thread register limit; the tile grid."""
    limits = results.load("patch_sweep")["parameters"]["occupancy_limits"]
    tile = 16 * patch
    return {"accumulators": patch * patch, "max_regs": limits["max_regs_thread"],
            "spills": patch * patch > limits["max_regs_thread"], "tile": tile,
            "blocks_4096": model.tile_grid(n, n, tile, tile),
            "blocks_2048": model.tile_grid(2048, 2048, tile, tile),
            "sms": results.load("patch_sweep")["provenance"]["sm_count"],
            "smem_kb": 2 * tile * 16 * 4 / 1024}


def ex03_2() -> dict:
    """Rectangular patches: shared reads per FMA for 8 × 4 and 4 × 8."""
    return {"reads_8x4": model.smem_reads_per_fma(8, 4), "reads_4x8": model.smem_reads_per_fma(4, 8),
            "reads_4x4": model.smem_reads_per_fma(4), "reads_8x8": model.smem_reads_per_fma(8)}


def ex03_3() -> dict:
    """patch1's shared-memory traffic counted once per distinct word a warp reads."""
    r = _row(results.load("patch_sweep"), kernel="patch1")
    prov = results.load("patch_sweep")["provenance"]
    fma_per_s = r["tflops"] * 1e12 / 2
    # A warp of 16×16 threads is two rows of 16: at one k it reads 2 distinct words of A
    # (one per row, broadcast to 16 lanes) and 16 distinct words of B (shared by both rows).
    words_per_warp = 2 + 16
    per_thread_bytes = fma_per_s * 2 * 4
    warp_bytes = fma_per_s / 32 * words_per_warp * 4
    peak = prov["sm_count"] * SMEM_BYTES_PER_CLOCK * float(prov["max_sm_clock_mhz"]) * 1e6
    return {"tflops": r["tflops"], "per_thread_tbps": per_thread_bytes / 1e12,
            "words_per_warp": words_per_warp, "warp_tbps": warp_bytes / 1e12,
            "peak_tbps": peak / 1e12, "share": warp_bytes / peak}


def ex03_4() -> dict:
    """The signed-index detour's bill in the committed facts: the upper bound of the answer."""
    from lab import compiler

    out = {}
    for name, key in (("patch8", "u"), ("lab.kernels.k03_registers:int32_patch8", "s")):
        rep = compiler.report(name)[0]
        loop = rep.loop_mix
        out[f"regs_{key}"] = rep.registers
        out[f"loop_{key}"] = sum(loop.values())
        out[f"share_{key}"] = loop.get("FFMA", 0) / sum(loop.values())
    return out


def ex03_5(shapes=((17, 33, 25), (33, 17, 9))) -> dict:
    """Seed 003's 2 × 2 register patch: our ``patch2`` (``make_patch(2)``), checked and timed."""
    checks = [_check("patch2", *s) for s in shapes]
    sweep = results.load("patch_sweep")
    p1 = _row(sweep, kernel="patch1")
    p2 = _row(sweep, kernel="patch2")
    t32 = _row(results.load("naive_tiled"), kernel="tiled32", m=4096, part="size")
    t16 = _row(results.load("naive_tiled"), kernel="tiled16", m=4096, part="size")
    return {"ok": all(c["ok"] for c in checks),
            "rel_frobenius": _error_class(max(c["rel_frobenius"] for c in checks)),
            "shapes": " and ".join(f"{m}×{k}·{k}×{n}" for m, n, k in shapes),
            "tile": 16 * 2, "accumulators": 4, "reads_per_fma": model.smem_reads_per_fma(2),
            "tflops": p2["tflops"], "vs_patch1": p2["tflops"] / p1["tflops"],
            "vs_tiled16": p2["tflops"] / t16["tflops"], "vs_tiled32": p2["tflops"] / t32["tflops"],
            "regs": p2["regs_ptxas"], "size": p2["m"]}


# ----------------------------------------------------------------------------- chapter 4

def ex04_1() -> dict:
    """The warptile kernel's hottest loop: what is neither FFMA nor LDS.128."""
    from lab import compiler

    loop = compiler.report("warptile")[0].loop_mix
    rest = {op: n for op, n in loop.items() if op not in ("FFMA", "LDS.128")}
    return {"ffma": loop.get("FFMA", 0), "lds128": loop.get("LDS.128", 0),
            "rest": sum(rest.values()), "rest_mix": ", ".join(f"{op} ×{n}" for op, n in rest.items())}


def ex04_2() -> dict:
    """PAD = 0 against the default, measured on the H200 (the ladder's variants)."""
    rows = results.load("fp32_ladder")["rows"]
    pad = next(r for r in rows if r["kernel"] == "warptile" and r.get("m") == 4096)
    nopad = next(r for r in rows if r["kernel"] == "warptile_nopad" and r.get("m") == 4096)
    return {"tflops_pad": pad["tflops"], "tflops_nopad": nopad["tflops"],
            "ratio": nopad["tflops"] / pad["tflops"]}


def ex04_3(k_steps: int = 2) -> dict:
    """multiply_tile with ``k_steps`` k-steps per trip: the FFMA share of the loop."""
    from lab import compiler

    loop = compiler.report("warptile")[0].loop_mix
    ffma, lds = loop.get("FFMA", 0), loop.get("LDS.128", 0)
    other = sum(loop.values()) - ffma - lds
    now = ffma // 64                                  # 8 × 8 patch: 64 FFMA per k-step
    new_ffma, new_lds = ffma * k_steps // now, lds * k_steps // now
    return {"steps_now": now, "share_now": ffma / sum(loop.values()),
            "share": new_ffma / (new_ffma + new_lds + other), "ffma": new_ffma, "lds": new_lds,
            "other": other}


def ex04_4(ks=(4096, 4097, 4098, 4099, 4100)) -> dict:
    """16-byte loads of A's rows: the share of rows whose start is 16-byte aligned, by K."""
    out = {}
    for k in ks:
        aligned = sum(1 for r in range(4) if (r * k * 4) % 16 == 0) / 4
        out[f"aligned_{k}"] = aligned
        out[f"full_words_{k}"] = k // 4
        out[f"tail_{k}"] = k % 4
    return out


# ----------------------------------------------------------------------------- chapter 5

def ex05_1() -> dict:
    """256 × 128 block tiles with 64 × 64 warp tiles: registers, blocks per SM, shared memory."""
    tune = results.load("tc_tune")["rows"]
    base = next(r for r in tune if r["config"].startswith("128x128x32 warp 64x64 s3"))
    wide = next(r for r in tune if r["config"].startswith("128x256x32 warp 64x64 s3"))
    bm, bn, bk, stages = 256, 128, 32, 3
    smem = (bm + bn) * bk * 2 * stages
    threads = (bm // 64) * (bn // 64) * 32
    regs = base["regs"]
    return {"threads": threads, "regs": regs, "smem_kb": smem / 1024,
            "blocks": model.blocks_per_sm(threads, regs, smem),
            "blocks_base": base["blocks_per_sm"], "intensity": model.tile_intensity(bm, bn, 2),
            "intensity_base": model.tile_intensity(128, 128, 2),
            "tflops_base": base["tflops"], "tflops_128x256": wide["tflops"],
            "blocks_128x256": wide["blocks_per_sm"]}


def ex05_2(row_bytes: int = 128) -> dict:
    """Wavefronts of the ldmatrix reads and the cp.async writes of one tile, swizzle on and off.

    A tile row is ``row_bytes`` (64 FP16 values of k); 16-byte chunk ``c`` of row ``r`` sits at
    chunk ``c ^ (r % 8)`` when swizzled.
    """
    from lab import fragments

    def addr(r, c, swizzle):
        return r * row_bytes + 16 * ((c ^ (r % 8)) if swizzle else c)

    chunks = row_bytes // 16
    out = {}
    for swizzle in (False, True):
        key = "swz" if swizzle else "plain"
        # ldmatrix: 8 lanes give 8 consecutive rows at the same chunk of k
        out[f"ldmatrix_{key}"] = max(
            fragments.wavefronts([addr(r, c, swizzle) for r in range(8)]) for c in range(chunks))
        # cp.async: 8 consecutive threads write the 8 chunks of one row (16 bytes each)
        out[f"cpasync_{key}"] = max(
            fragments.wavefronts([addr(r, c, swizzle) for c in range(chunks)]) for r in range(8))
    return out


def ex05_3(scale: float = 1e4, n: int = 256, seed: int = 5) -> dict:
    """Inputs around ``scale``: which format overflows first (NumPy emulation, FP32 sums)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (n, n)) * scale
    B = rng.uniform(-1, 1, (n, n)) * scale
    ref = A @ B
    out = {"scale": scale, "fp16_max": float(np.finfo(np.float16).max),
           "max_entry": float(np.abs(ref).max())}
    a16, b16 = A.astype(np.float16), B.astype(np.float16)
    out["fp16_inputs_finite"] = bool(np.isfinite(a16).all() and np.isfinite(b16).all())
    c32 = a16.astype(np.float32) @ b16.astype(np.float32)
    out["fp16_out32_err"] = float(np.linalg.norm(c32 - ref) / np.linalg.norm(ref))
    with np.errstate(over="ignore"):
        c16 = c32.astype(np.float16)
    out["fp16_out16_inf"] = float(np.isinf(c16).mean())
    # bfloat16: float32 with the low 16 bits of the mantissa rounded away
    def bf16(x):
        bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.astype(np.uint32).view(np.float32)
    cb = bf16(A) @ bf16(B)
    out["bf16_err"] = float(np.linalg.norm(cb - ref) / np.linalg.norm(ref))
    out["bf16_finite"] = bool(np.isfinite(cb).all())
    with np.errstate(over="ignore"):
        out["fp16_big_inputs_inf"] = bool(np.isinf(np.float16(10 * np.finfo(np.float16).max)))
    return out


def ex05_4(seed: int = 7) -> dict:
    """B (16 × 8, [k, n]) stored k-major needs ldmatrix.trans; stored n-major, plain ldmatrix."""
    from lab import fragments

    rng = np.random.default_rng(seed)
    B = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    want = fragments.b_fragment(B)
    k_major = B.ravel()                                   # row k holds 8 values of n
    starts_k = [8 * (8 * (l // 8) + l % 8) for l in range(16)]
    n_major = np.ascontiguousarray(B.T).ravel()           # row n holds 16 values of k
    starts_n = [16 * (l % 8) + 8 * (l // 8) for l in range(16)]
    return {"k_major_trans": bool((fragments.ldmatrix(k_major, starts_k, 2, True) == want).all()),
            "k_major_plain": bool((fragments.ldmatrix(k_major, starts_k, 2, False) == want).all()),
            "n_major_plain": bool((fragments.ldmatrix(n_major, starts_n, 2, False) == want).all()),
            "n_major_trans": bool((fragments.ldmatrix(n_major, starts_n, 2, True) == want).all())}


# ----------------------------------------------------------------------------- chapter 6

def _tc_tile() -> tuple[int, int, int]:
    cfg = results.load("tensor_cores")["parameters"]["configs"]["tc_fp16"]
    bm, bn, _ = (int(x) for x in cfg.split()[0].split("x"))
    blocks = next(r for r in results.load("tc_tune")["rows"]
                  if r["config"] == cfg)["blocks_per_sm"]
    return bm, bn, blocks


def ex06_1(lo: int = 4096, hi: int = 8192, step: int = 128, below: float = 0.85) -> dict:
    """tc_fp16's model efficiency (waves × useful outputs) from 4096 to 8192."""
    bm, bn, blocks = _tc_tile()
    sms = results.load("shapes")["provenance"]["sm_count"]

    def eff(n):
        return (model.wave_efficiency(n, n, bm, bn, sms, blocks)
                * model.tile_efficiency(n, n, bm, bn))

    low = [n for n in range(lo, hi + 1, step) if eff(n) < below]
    worst = min(range(lo, hi + 1, step), key=eff)
    rate = next(r for r in results.load("shapes")["rows"] if r.get("part") == "size"
                and r["kernel"] == "tc_fp16" and r["m"] == 4096)["tflops"]
    return {"tile": f"{bm}×{bn}", "blocks_per_sm": blocks, "eff_4096": eff(4096),
            "count": len(low), "sizes": ", ".join(map(str, low)), "worst": worst,
            "eff_worst": eff(worst), "rate_4096": rate,
            "predicted_worst": rate * eff(worst) / eff(4096)}


def _two_adic(n: int) -> int:
    return (n & -n).bit_length() - 1


def ex06_2() -> dict:
    """cuBLAS FP16 at the aligned and unaligned sizes, sorted by the power of two dividing n."""
    rows = [r for r in results.load("shapes")["rows"]
            if r.get("part") == "alignment" and r["kernel"] == "cublas_fp16"]
    rows.sort(key=lambda r: (_two_adic(r["m"]), r["m"]))
    table = [{"n": r["m"], "power of two": 2 ** _two_adic(r["m"]), "tflops": r["tflops"]}
             for r in rows]
    slow = [t for t in table if t["power of two"] < 8]
    fast = [t for t in table if t["power of two"] >= 8]
    return {"rows": table, "slow_max": max(t["tflops"] for t in slow),
            "fast_min": min(t["tflops"] for t in fast),
            "slow_sizes": ", ".join(str(t["n"]) for t in slow),
            "cliff": min(t["power of two"] for t in fast)}


#: Kernel launches per split-K call (lab/kernels/k11_splitk.py, ``_finish``): two-pass runs the
#: split kernel, then ``reduce_kernel``; atomic runs ``zero_kernel``, then the split kernel.
#: Shapes that are multiples of the tile need no padding copy in front.
SPLITK_LAUNCHES = {"two_pass": 2, "atomic": 2}


def ex06_3(m: int = 512, n: int = 512, k: int = 16384, splits=(1, 2, 4, 8, 16)) -> dict:
    """Split-K for (512 × 16384) · (16384 × 512) in FP16: the tiles and the traffic the split
    adds (the model), then what the measured FP16 rows hit: the launches per call times our
    Numba kernels' per-call launch floor of the size curve, against the best measured times,
    the model's time for the same factor, and cuBLAS (queued)."""
    from lab.chapters import ch6

    bm, bn, blocks = _tc_tile()
    sms = results.load("shapes")["provenance"]["sm_count"]
    out = {"tiles": model.tile_grid(m, n, bm, bn), "slots": sms * blocks,
           "ideal_mb": model.ideal_bytes(m, n, k, 2, 4) / 1e6}
    for s in splits:
        out[f"units_{s}"] = model.split_k_tiles(m, n, bm, bn, s)
        out[f"extra_mb_{s}"] = model.split_k_extra_bytes(m, n, s) / 1e6
    for s in splits:
        out[f"fill_{s}"] = min(1.0, out[f"units_{s}"] / out["slots"])
    out["fills"] = min(s for s in splits if out[f"units_{s}"] >= 0.9 * out["slots"])
    floor = min(r["median_ms"] for r in results.rows("shapes", part="size")
                if not r["kernel"].startswith("cublas")) * 1e3
    out["launch_floor_us"] = floor
    out["launches"] = SPLITK_LAUNCHES["two_pass"]
    out["floors_us"] = SPLITK_LAUNCHES["two_pass"] * floor
    here = [r for r in ch6.splitk_rows()
            if r["design"] == "fp16" and (r["m"], r["n"], r["k"]) == (m, n, k)]
    for mode in ("two_pass", "atomic"):
        best = min((r for r in here if r["mode"] == mode and r["slices"] > 1),
                   key=lambda r: r["us"])
        out[f"{mode}_us"] = best["us"]
        out[f"{mode}_slices"] = best["slices"]
        out[f"{mode}_model_us"] = best["model_us"]
        out[f"{mode}_timing"] = best["timing"]
        out[f"{mode}_over_floors"] = best["us"] / (SPLITK_LAUNCHES[mode] * floor)
    out["unsplit_us"] = next(r["us"] for r in here if r["mode"] == "unsplit")
    lib = next(r for r in here if r["mode"] == "library")
    out["cublas_us"] = lib["us"]
    out["cublas_timing"] = lib["timing"]
    return out


def split_k_matmul(A: np.ndarray, B: np.ndarray, splits: int, kernel: str = "tiled16") -> np.ndarray:
    """C = A·B as ``splits`` registered-kernel products over slices of K, then summed.

    The method of exercise 6.3 with any registered kernel (the simulator runs ``tiled16``): each
    slice is one launch writing its own partial output; the sum is the reduction.
    """
    import lab

    k = A.shape[1]
    edges = np.linspace(0, k, splits + 1).astype(int)
    partial = [lab.matmul(np.ascontiguousarray(A[:, a:b]), np.ascontiguousarray(B[a:b]),
                          kernel=kernel) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    return np.sum(partial, axis=0, dtype=np.float32)


def ex06_4(k: int = 4096, n: int = 4096) -> dict:
    """Decode (M = 1): time predicted from the bytes per weight and cuBLAS FP16's bandwidth."""
    row = next(r for r in results.load("shapes")["rows"] if r.get("part") == "skinny"
               and r["kernel"] == "cublas_fp16" and r["m"] == 1 and r["rotated"])
    bw = row["weight_gbps"] * 1e9
    out = {"fp16_us": row["median_ms"] * 1e3, "weight_gbps": row["weight_gbps"]}
    for name, e in (("fp16", 2), ("bf16", 2), ("fp32", 4)):
        out[f"{name}_mb"] = k * n * e / 1e6
        out[f"{name}_pred_us"] = k * n * e / bw * 1e6
    out["fp32_over_fp16"] = out["fp32_pred_us"] / out["fp16_pred_us"]
    return out


# ----------------------------------------------------------------------------- chapter 7

def ex07_1(rung: str = "wgmma_2wg", stage: int = 2, wg: int = 1, ks: int = 3) -> dict:
    """The A and B descriptors one consumer warpgroup of ``rung`` builds for k-step ``ks`` of
    ``stage`` (dynamic shared memory taken to start at address 0), the fields they decode to,
    and a check with the NumPy twins that they read what TMA wrote there."""
    from lab import hopper
    from lab.kernels import k09_hopper as k9

    cfg = k9.RUNG_CONFIGS[rung]
    base = stage * cfg.stage_bytes
    b_box = k9.BK * k9.ROW
    a_addr = base + wg * cfg.wg_rows * k9.ROW + 32 * ks        # mi = 0: the first 64 rows
    b_addr = base + cfg.a_bytes + ks * 16 * k9.ROW
    da, db = hopper.desc_value(a_addr, 16, 1024), hopper.desc_value(b_addr, b_box, 1024)
    fa, fb = hopper.desc_fields(da), hopper.desc_fields(db)
    # What the descriptors address, against where TMA put each element (offsets in the stage).
    a_off, b_off = a_addr - base, b_addr - base                  # offsets inside the stage
    r, kk = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    a_ok = np.array_equal(hopper.swizzle_128b(a_off + hopper.k_major_offset(r, kk)),
                          hopper.swizzle_128b(hopper.tma_box_offset(wg * cfg.wg_rows + r,
                                                                    16 * ks + kk)))
    kk, nn = np.meshgrid(np.arange(16), np.arange(cfg.bn), indexing="ij")
    b_ok = np.array_equal(
        hopper.swizzle_128b(b_off + hopper.mn_major_offset(nn, kk, b_box)),
        hopper.swizzle_128b(cfg.a_bytes + hopper.tma_box_offset(16 * ks + kk, nn % 64)
                            + (nn // 64) * b_box))
    return {"rung": rung, "stage": stage, "wg": wg, "ks": ks, "stage_bytes": cfg.stage_bytes,
            "a_address": a_addr, "b_address": b_addr, "a_desc": hex(da), "b_desc": hex(db),
            "a_field": (da & 0x3FFF), "b_field": (db & 0x3FFF), "a_lbo": fa["lbo"],
            "a_sbo": fa["sbo"], "b_lbo": fb["lbo"], "b_sbo": fb["sbo"], "swizzle": fb["swizzle"],
            "a_step": 32, "b_step": 16 * k9.ROW, "reads_what_tma_wrote": bool(a_ok and b_ok)}


def ex07_2() -> dict:
    """Shared memory per stage and the deepest ring that fits in 227 KB, per tile shape of the
    rungs (the kernel's own check: stages × stage bytes + 1 KB for barriers and alignment)."""
    from dataclasses import replace

    from lab.kernels import k09_hopper as k9

    out = {"max_kb": k9.MAX_SHARED // 1024, "reserve": 1024}
    for name, cfg in (("128x128", k9.RUNG_CONFIGS["wgmma_tma"]),
                      ("128x256", k9.RUNG_CONFIGS["wgmma_ws"])):
        deepest = (k9.MAX_SHARED - out["reserve"]) // cfg.stage_bytes
        try:                                   # one stage more than fits: the check refuses it
            replace(cfg, stages=deepest + 1).validate()
            refused = False
        except ValueError:
            refused = True
        replace(cfg, stages=min(deepest, 8)).validate()
        out.update({f"stage_kb_{name}": cfg.stage_bytes // 1024, f"max_stages_{name}": deepest,
                    f"used_kb_{name}": cfg.shared_bytes // 1024, f"stages_{name}": cfg.stages,
                    f"refused_{name}": refused})
    out["pingpong_stages"] = k9.RUNG_CONFIGS["wgmma_pingpong"].stages
    out["pingpong_kb"] = k9.RUNG_CONFIGS["wgmma_pingpong"].shared_bytes // 1024
    return out


def ex07_3(kind: str = "fp16") -> dict:
    """Each rung's gain over the rung it builds on at 4096³ and 8192³ (committed H200 run),
    and the slices per tile that set how much work done once per tile (persistence, the
    epilogue) weighs. Rungs 1-5 each build on the one before; ping-pong (6) and the TMA-store
    epilogue (7) on rung 5, the cluster (8) on rung 7."""
    from lab.kernels import k09_hopper as k9

    data = results.load("hopper")
    rungs = list(k9.RUNG_CONFIGS)
    parents = dict(zip(rungs, ["tc", *rungs]))
    parents.update(wgmma_pingpong="wgmma_persistent", wgmma_tmastore="wgmma_persistent",
                   wgmma_cluster="wgmma_tmastore")
    out = {"parents": parents}
    for size in data["parameters"]["sizes"]:
        t = {k: _row(data, kernel=f"{k}_{kind}", m=size)["tflops"] for k in ["tc", *rungs]}
        gains = {k: t[k] / t[parents[k]] for k in rungs}
        best = max(gains, key=gains.get)
        out[f"best_{size}"] = best
        out[f"best_gain_{size}"] = gains[best]
        for name, g in gains.items():
            out[f"gain_{name}_{size}"] = g
        cfg = k9.RUNG_CONFIGS["wgmma_persistent"]
        out[f"slices_{size}"] = size // k9.BK
        out[f"tiles_{size}"] = model.tile_grid(size, size, cfg.bm, cfg.bn)
        out[f"tiles_per_sm_{size}"] = out[f"tiles_{size}"] / data["provenance"]["sm_count"]
    sizes = data["parameters"]["sizes"]
    out["same_best"] = len({out[f"best_{s}"] for s in sizes}) == 1
    # the epilogue comes once per tile: its share of a tile halves when the k-slices double
    out["tmastore_gain_large_over_small"] = ((out[f"gain_wgmma_tmastore_{sizes[-1]}"] - 1)
                                             / (out[f"gain_wgmma_tmastore_{sizes[0]}"] - 1))
    return out


def ex07_4(rung: str = "wgmma_ws", consumers_alt: int = 3) -> dict:
    """setmaxnreg's budget: registers per thread at entry with one block of ``threads`` per SM,
    the most a consumer can take once the producer drops to 40 (multiples of 8), and what
    remains beside its accumulators; the same for ``consumers_alt`` consumer warpgroups."""
    from lab import compiler
    from lab.kernels import k09_hopper as k9

    regs_sm = model.SM90_LIMITS["registers"]
    cfg = k9.RUNG_CONFIGS[rung]
    producer = 40

    def budget(consumers: int) -> dict:
        threads = 128 * (consumers + 1)
        entry = regs_sm // threads // 8 * 8
        top = (regs_sm - 128 * producer) // (128 * consumers) // 8 * 8
        return {"threads": threads, "entry": entry, "max_consumer": min(top, 256)}

    b, alt = budget(cfg.consumers), budget(consumers_alt)
    acc = cfg.mt * cfg.bn // 2
    return {"threads": b["threads"], "entry": b["entry"],
            "ptxas": compiler.report(f"{rung}_fp16")[0].registers, "producer": producer,
            "max_consumer": b["max_consumer"], "chosen": cfg.regs,
            "used": 128 * producer + 128 * cfg.consumers * cfg.regs, "file": regs_sm,
            "accumulators": acc, "left": cfg.regs - acc,
            "alt_consumers": consumers_alt, "alt_threads": alt["threads"],
            "alt_entry": alt["entry"], "alt_max": alt["max_consumer"],
            "alt_left": alt["max_consumer"] - acc}


# ----------------------------------------------------------------------------- chapter 8

def ex08_1(n: int = 4096, tiles=(64, 128, 256, 512, 1024)) -> dict:
    """The smallest square block tile (dividing n) that takes seed 001's BF16 tensor-core kernel
    off the HBM roof on the H200's datasheet, the roof it lands on, and what its accumulators
    would need."""
    h200 = model.DATASHEET["H200"]
    runs = {b: model.rung_model("tensor", h200, n, bm=b, bn=b) for b in tiles}
    first = next(b for b in tiles if runs[b]["bound"] != "HBM")
    tensor = next(b for b in tiles if runs[b]["bound"] == "tensor cores")
    r = runs[first]
    register_file = 64 * 1024 * 4                       # bytes of registers per SM (sm_80/90)
    return {"tile": first, "bound": r["bound"],
            "hbm_us": r["times_s"]["HBM"] * 1e6,
            "smem_us": r["times_s"]["shared memory"] * 1e6,
            "tensor_us": r["times_s"]["tensor cores"] * 1e6,
            "intensity": r["flop_per_byte"], "ridge": h200["tensor_tflops"] / h200["hbm_gbps"]
            * 1e3, "prev_tile": tiles[tiles.index(first) - 1],
            "prev_intensity": runs[tiles[tiles.index(first) - 1]]["flop_per_byte"],
            "tensor_tile": tensor,
            "acc_kb": 4 * first * first / 1024, "regfile_kb": register_file / 1024,
            "acc_over_regfile": 4 * first * first / register_file}


def ex08_2(n: int = 4096) -> dict:
    """Seed 001's register kernel with 4 × 4 instead of 8 × 8 patches: the A100's bound moves
    from the ALUs to shared memory; beside it, chapter 3's measured patch4 and patch8."""
    a100, h200 = model.DATASHEET["A100"], model.DATASHEET["H200"]
    r8 = model.rung_model("register", a100, n)
    r4 = model.rung_model("register", a100, n, tm=4, tn=4)
    h8 = model.rung_model("register", h200, n)
    # chapter 3's patch4 is 16 × 16 threads of 4 × 4: a 64 × 64 block tile
    h4 = model.rung_model("register", h200, n, bm=64, bn=64, tm=4, tn=4)
    data = results.load("patch_sweep")
    p4, p8 = _row(data, kernel="patch4"), _row(data, kernel="patch8")
    return {"bound_8": r8["bound"], "bound_4": r4["bound"],
            "a100_smem_ms_8": r8["times_s"]["shared memory"] * 1e3,
            "a100_smem_ms_4": r4["times_s"]["shared memory"] * 1e3,
            "a100_alu_ms": r4["times_s"]["FP32 ALUs"] * 1e3,
            "a100_tflops_8": r8["tflops"], "a100_tflops_4": r4["tflops"],
            "h200_model_tflops_8": h8["tflops"], "h200_model_tflops_4": h4["tflops"],
            "h200_bound_4": h4["bound"], "h200_bound_8": h8["bound"],
            "h200_model_ratio": h4["tflops"] / h8["tflops"],
            "gpu": data["provenance"]["gpu"].removeprefix("NVIDIA "),
            "patch4_tflops": p4["tflops"], "patch8_tflops": p8["tflops"],
            "patch4_model_share": p4["tflops"] / h4["tflops"],
            "patch8_model_share": p8["tflops"] / h8["tflops"],
            "measured_ratio": p4["tflops"] / p8["tflops"]}


def ex08_3(size: int = 16) -> dict:
    """Chapter 3's ``patch1`` kernel (``make_patch(1, 16)``: a 16 × 16 block tile, k-slices of
    16) on a ``size``³ product, its accesses counted under the simulator, beside
    ``model.slice_traffic`` (bytes, 4 per element). On a GPU the count runs in a child process
    on the simulator."""
    from lab import device
    from lab.chapters import ch8

    if not device.SIMULATOR:
        return ch8.in_simulator("ex08_3", module="lab.solutions")
    from lab.kernels.k03_registers import make_patch

    rng = np.random.default_rng(8)
    A = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    B = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    C, events = ch8.count_accesses(make_patch(1, 16)[1], A, B)
    count = {kind: sum(steps.values()) for kind, steps in ch8.tiled_step_loads(events).items()}
    blocks = (size // 16) ** 2
    model_bytes = model.slice_traffic(16, 16, size)
    model_global = blocks * model_bytes["global"] / 4
    model_loads = blocks * (model_bytes["shared"] - model_bytes["global"]) / 4
    ref = A.astype(np.float64) @ B.astype(np.float64)
    return {"global_counted": count["global"], "global_model": int(model_global),
            "stores_counted": count["shared_store"], "stores_model": int(model_global),
            "loads_counted": count["shared_load"], "loads_model": int(model_loads),
            "fma": size ** 3, "loads_per_fma": count["shared_load"] / size ** 3,
            "agree": (count["global"] == model_global and count["shared_store"] == model_global
                      and count["shared_load"] == model_loads),
            "correct": bool(np.abs(C - ref).max() <= 1e-5 * np.abs(ref).max())}


# ----------------------------------------------------------------------------- the page

#: Keys whose values are shares, printed as percentages.
_PERCENT = ("share", "extra_time", "extra_per_flop", "model_extra", "seed004_edge", "fill_",
            "eff_", "occ_", "aligned_")


def _fmt(key: str, v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and any(p in key for p in _PERCENT):
        return f"{v:.1%}" if abs(v) < 0.1 else f"{v:.0%}"
    if isinstance(v, float):
        return tables.fmt(v, 3)
    return str(v)


def values(chapter: int) -> dict:
    """Every scalar every solution of ``chapter`` returns, named ``exCC_N_key``, as text."""
    out = {}
    prefix = f"ex{chapter:02d}_"
    for name in sorted(n for n in globals() if n.startswith(prefix)):
        for key, v in globals()[name]().items():
            if isinstance(v, (list, dict)):
                continue
            out[f"{name}_{key}"] = _fmt(key, v)
    return out


def glue(chapter: int):
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    from lab import page

    vals = values(chapter)
    page.glue_values(vals)
    return page.values_text(vals)
