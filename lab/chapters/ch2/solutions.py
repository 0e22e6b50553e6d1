"""Chapter 2's exercises, worked: one function per exercise, ``ex02_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex02_N_key``.
"""
from __future__ import annotations

import math

from lab import model, page, results, seeds
from lab.chapters import common


def ex02_1() -> dict:
    """Racecheck on the real tiled kernels (committed H200 run): the kernels as shipped."""
    data = results.load("sanitizer")
    race = [r for r in data["rows"] if r["tool"] == "racecheck" and r["kernel"].startswith("tiled")]
    return {"ex02_1_kernels": ", ".join(r["kernel"] for r in race),
            "ex02_1_errors": sum(r["errors"] for r in race), "ex02_1_shape": "×".join(
                map(str, data["parameters"]["shape"]))}


def ex02_2(tile: int = 64) -> dict:
    """What stops T = 64: threads per block, then shared memory per SM."""
    lim = model.SM90_LIMITS
    smem = model.tile_shared_bytes(tile)
    by_smem = lim["shared_bytes"] // (smem + lim["shared_reserved_per_block"])
    return {"ex02_2_threads": tile * tile, "ex02_2_max_threads": 1024, "ex02_2_smem_kb": smem / 1024,
            "ex02_2_blocks_by_smem": by_smem,
            "ex02_2_smem_sm_kb": lim["shared_bytes"] / 1024}


def ex02_3() -> dict:
    """16 × 16 threads, 32 × 32 tile, four elements loaded and four outputs per thread."""
    from lab import compiler

    loop = compiler.report("patch2")[0].loop_mix
    lds = sum(n for op, n in loop.items() if op.startswith("LDS"))
    t32 = compiler.report("tiled32")[0].loop_mix
    lds32 = sum(n for op, n in t32.items() if op.startswith("LDS"))
    return {"ex02_3_intensity": model.tile_intensity(32), "ex02_3_reads_per_fma": model.smem_reads_per_fma(2),
            "ex02_3_lds": lds, "ex02_3_ffma": loop.get("FFMA", 0), "ex02_3_lds_per_ffma": lds / loop.get("FFMA", 1),
            "ex02_3_tiled32_lds_per_ffma": lds32 / t32.get("FFMA", 1)}


def ex02_4() -> dict:
    """tiled32 at 4096³ and 4097³ on the H200 (the shapes experiment), against the model."""
    rows = [r for r in results.load("shapes")["rows"]
            if r.get("part") == "alignment" and r["kernel"] == "tiled32"]
    by = {r["m"]: r for r in rows}
    per_flop = ((by[4097]["median_ms"] / model.flops(4097, 4097, 4097))
                / (by[4096]["median_ms"] / model.flops(4096, 4096, 4096)) - 1)
    padded = (math.ceil(4097 / 32) * 32) ** 3 / 4097 ** 3 - 1
    return {"ex02_4_ms_4096": by[4096]["median_ms"], "ex02_4_ms_4097": by[4097]["median_ms"],
            "ex02_4_extra_time": by[4097]["median_ms"] / by[4096]["median_ms"] - 1,
            "ex02_4_extra_per_flop": per_flop, "ex02_4_model_extra": padded,
            "ex02_4_seed004_edge": seeds.TILED_EDGE_T4[0]["extra_time_pct"] / 100}


#: Seed 003's non-square exercise, (512 × 768) · (768 × 1024), and its shape scaled by 1/32
#: with one added to every side so that every tile edge is ragged in the simulator.
NONSQUARE = (512, 1024, 768)
NONSQUARE_SIM = (17, 33, 25)


def ex02_5(kernels=("tiled16",), shape=NONSQUARE_SIM) -> dict:
    """Non-square: the tile count along every side, and a check of the real kernel."""
    m, n, k = NONSQUARE
    tile = 16
    checks = [common.check_summary(name, shape[0], shape[1], shape[2]) for name in kernels]
    sim_steps = -(-shape[2] // tile)
    return {"ex02_5_m": m, "ex02_5_n": n, "ex02_5_k": k, "ex02_5_grid_x": -(-n // tile),
            "ex02_5_grid_y": -(-m // tile), "ex02_5_k_steps": -(-k // tile),
            "ex02_5_ragged": any(d % tile for d in NONSQUARE),
            "ex02_5_sim_shape": "×".join(map(str, (shape[0], shape[2], shape[1]))),
            "ex02_5_ok": all(c["ok"] for c in checks),
            "ex02_5_rel_frobenius": common.error_class(max(c["rel_frobenius"] for c in checks)),
            "ex02_5_sim_steps": sim_steps, "ex02_5_sim_padded": sim_steps * tile - shape[2]}


def ex02_6(n: int = 2048) -> dict:
    """The RTX 3090 tutorial's tile sweep at 2048³, from the committed H200 run."""
    nt = results.load("naive_tiled")
    rows = {t: common.row_where(nt, kernel=f"tiled{t}", m=n, part="size") for t in (8, 16, 32)}
    best = max(rows, key=lambda t: rows[t]["tflops"])
    return {"ex02_6_n": n, "ex02_6_best": best,
            "ex02_6_ms_8": rows[8]["median_ms"], "ex02_6_tflops_8": rows[8]["tflops"],
            "ex02_6_model_8": model.tile_intensity(8),
            "ex02_6_ms_16": rows[16]["median_ms"], "ex02_6_tflops_16": rows[16]["tflops"],
            "ex02_6_model_16": model.tile_intensity(16),
            "ex02_6_ms_32": rows[32]["median_ms"], "ex02_6_tflops_32": rows[32]["tflops"],
            "ex02_6_model_32": model.tile_intensity(32),
            "ex02_6_gain_8_32": rows[32]["tflops"] / rows[8]["tflops"],
            "ex02_6_model_gain_8_32": model.tile_intensity(32) / model.tile_intensity(8)}


def ex02_7() -> dict:
    """The RTX 3090 tutorial's profiling exercise: naive against tiled, Nsight Compute on the H200 at 1024³."""
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
    return {"ex02_7_n": data["parameters"]["n"],
            "ex02_7_dram_naive_mb": by["naive"]["dram_read_bytes"] / 1e6,
            "ex02_7_dram_tiled16_mb": by["tiled16"]["dram_read_bytes"] / 1e6,
            "ex02_7_dram_ratio": by["naive"]["dram_read_bytes"] / by["tiled16"]["dram_read_bytes"],
            "ex02_7_dram_passes": by["tiled16"]["dram_read_bytes"] / a_b,
            "ex02_7_model_ratio": by["naive"]["model_bytes"] / by["tiled16"]["model_bytes"],
            "ex02_7_l2_naive_mb": by["naive"]["l2_read_bytes"] / 1e6,
            "ex02_7_l2_tiled16_mb": by["tiled16"]["l2_read_bytes"] / 1e6,
            "ex02_7_l2_tiled32_mb": by["tiled32"]["l2_read_bytes"] / 1e6,
            "ex02_7_l2_ratio_16": by["naive"]["l2_read_bytes"] / by["tiled16"]["l2_read_bytes"],
            "ex02_7_l2_ratio_32": by["naive"]["l2_read_bytes"] / by["tiled32"]["l2_read_bytes"],
            "ex02_7_occ_naive": occ["naive"], "ex02_7_occ_tiled16": occ["tiled16"],
            "ex02_7_occ_tiled32": occ["tiled32"]}


def ex02_8(size: int = 4096) -> dict:
    """Warp shuffles instead of the A tile: the compiled loops (committed facts) and the two
    kernels timed side by side on the H200 (the ``shuffle`` experiment)."""
    from lab import compiler

    loops = {n: compiler.report(n)[0].loop_mix for n in ("tiled32", "tiled32_shuffle")}
    lds = {n: {op: c for op, c in loop.items() if op.startswith("LDS")}
           for n, loop in loops.items()}
    data = results.load("shuffle")
    plain = common.row_where(data, kernel="tiled32", m=size)
    shfl = common.row_where(data, kernel="tiled32_shuffle", m=size)
    return {"ex02_8_size": size,
            "ex02_8_lds_plain": sum(lds["tiled32"].values()),
            "ex02_8_lds128_plain": lds["tiled32"].get("LDS.128", 0),
            "ex02_8_lds_shfl": sum(lds["tiled32_shuffle"].values()),
            "ex02_8_shfl": loops["tiled32_shuffle"].get("SHFL", 0),
            "ex02_8_ffma": loops["tiled32"].get("FFMA", 0),
            "ex02_8_loop_plain": sum(loops["tiled32"].values()),
            "ex02_8_loop_shfl": sum(loops["tiled32_shuffle"].values()),
            "ex02_8_smem_kb_plain": compiler.report("tiled32")[0].shared_bytes / 1024,
            "ex02_8_smem_kb_shfl": compiler.report("tiled32_shuffle")[0].shared_bytes / 1024,
            "ex02_8_tflops_plain": plain["tflops"], "ex02_8_tflops_shfl": shfl["tflops"],
            "ex02_8_shfl_over_plain": shfl["median_ms"] / plain["median_ms"]}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex02_N_key``, as text."""
    return common.solution_values(globals(), "ex02_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
