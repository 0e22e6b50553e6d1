"""Section "Waves": how a grid of tiles meets the SMs — the model (waves, slots used, the
blocks an SM holds by the compiler's registers and the kernel's shared memory), then the
measured sweep of N that looks for the model's steps (``waves``)."""
from __future__ import annotations

import numpy as np

from lab import compiler, model, page, plots, results
from lab.chapters.ch6_1.roofs import roofs
from lab.kernels import get_spec

#: Tile counts of the wave table (the tiling primer's 140 among them).
WAVE_TILES = (132, 133, 140, 264, 265, 1024)
#: Sizes of the per-kernel wave table.
WAVE_SIZES = (2048, 2049, 4096, 4097, 4104, 8192)
#: The kernels of the occupancy table: threads per block and shared bytes per block, where the
#: kernel's launch configuration does not hold them (tiled32: one thread per output of its tile).
TILED32 = {"threads": 32 * 32, "shared_bytes": model.tile_shared_bytes(32)}
#: The kernels of the measured sweep, with their cuBLAS counterpart and the figure's panel.
SWEEP = (("tc_fp16", "cublas_fp16", "FP16"), ("warptile_tuned", "cublas_fp32", "FP32"))


def occupancy(kernel: str) -> dict:
    """Tile, threads, registers per thread (the committed compiler facts, first function: the
    unchecked kernel), shared memory per block, and the blocks per SM each limit of sm_90 allows
    (:func:`lab.model.blocks_per_sm`)."""
    spec = get_spec(kernel)
    cfg = spec.config
    threads = cfg.threads if cfg is not None else TILED32["threads"]
    smem = cfg.shared_bytes if cfg is not None else TILED32["shared_bytes"]
    regs = compiler.report(kernel)[0].registers
    return {"kernel": kernel, "tile": spec.tile[:2], "threads": threads, "registers": regs,
            "smem": smem, "by_registers": model.blocks_per_sm(threads, regs, 0),
            "by_shared": model.blocks_per_sm(threads, 0, smem),
            "blocks": model.blocks_per_sm(threads, regs, smem)}


def kernel_table():
    """Occupancy of tiled32, warptile_tuned and tc_fp16."""
    rows = [{**o, "tile": "×".join(map(str, o["tile"])), "smem": o["smem"] / 1024}
            for o in map(occupancy, ("tiled32", "warptile_tuned", "tc_fp16"))]
    return page.table(rows, ["kernel", "tile", "threads", "registers", "smem", "by_registers",
                             "by_shared", "blocks"],
                      {"tile": "block tile", "registers": "registers / thread",
                       "smem": "shared (KB)", "by_registers": "blocks by threads, registers",
                       "by_shared": "blocks by threads, shared", "blocks": "blocks / SM"})


def wave_model_rows() -> list[dict]:
    """Waves and the share of block slots in use for a number of 128×128 tiles."""
    sms = roofs()["sm_count"]
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
    return page.table(wave_model_rows(), ["tiles", "waves1", "eff1", "waves2", "eff2"],
                      {"waves1": "waves, 1 block/SM", "eff1": "slots used",
                       "waves2": "waves, 2 blocks/SM", "eff2": "slots used"},
                      title=f"{roofs()['sm_count']} SMs")


def wave_rows() -> list[dict]:
    """Tiles, waves, slots used and useful share of the computed outputs at each size."""
    sms = roofs()["sm_count"]
    rows = []
    for n in WAVE_SIZES:
        for o in map(occupancy, ("tiled32", "tc_fp16")):
            tm, tn = o["tile"]
            rows.append({"n": n, "kernel": o["kernel"], "tiles": model.tile_grid(n, n, tm, tn),
                         "waves": model.waves(n, n, tm, tn, sms, o["blocks"]),
                         "wave_eff": model.wave_efficiency(n, n, tm, tn, sms, o["blocks"]),
                         "tile_eff": model.tile_efficiency(n, n, tm, tn)})
    return rows


def wave_table():
    """The wave and tile efficiencies of tiled32 and tc_fp16 at a few sizes."""
    return page.table(wave_rows(), ["n", "kernel", "tiles", "waves", "wave_eff", "tile_eff"],
                      {"n": "n", "wave_eff": "slots used", "tile_eff": "useful outputs"})


def last_wave(n: int, kernel: str = "tc_fp16") -> dict:
    """The fill of the last wave of ``kernel`` at n × n: tiles, slots per wave, waves, and the
    tiles in the last one."""
    o = occupancy(kernel)
    sms = roofs()["sm_count"]
    tiles = model.tile_grid(n, n, *o["tile"])
    slots = sms * o["blocks"]
    waves = model.waves(n, n, *o["tile"], sms, o["blocks"])
    return {"tiles": tiles, "per_wave": slots, "waves": waves,
            "last": tiles - (waves - 1) * slots}


def waves_figure():
    """Concept figure: tc_fp16's 128×128 tiles at 4096² and at 4097², dealt out in waves over
    the SMs' block slots; each bar is one wave, its length the slots that hold a tile."""
    sms = roofs()["sm_count"]
    fig, axes = plots.plt.subplots(1, 2, figsize=(7.2, 2.8), dpi=110, sharex=True)
    for ax, n in zip(axes, (4096, 4097)):
        w = last_wave(n)
        busy = [w["per_wave"]] * (w["waves"] - 1) + [w["last"]]
        ys = np.arange(1, w["waves"] + 1)
        ax.barh(ys, [w["per_wave"]] * w["waves"], color="0.9", edgecolor="0.6", height=0.7,
                label="empty slot")
        ax.barh(ys, busy, color="C0", height=0.7, label="slot holding a tile")
        ax.set_ylim(w["waves"] + 0.6, 0.4)
        ax.set_yticks(ys)
        ax.set_title(f"n = {n}: {w['tiles']:,} tiles, {w['waves']} waves", fontsize=9)
        ax.set_xlabel(f"block slots ({sms} SMs × {w['per_wave'] // sms} blocks)", fontsize=8)
        ax.set_ylabel("wave", fontsize=8)
        ax.tick_params(labelsize=8)
    return page.figure(plots.finish(fig, axes[-1], loc="below"))


def wave_sweep_figure():
    """The model's share of useful work for tc_fp16's tiling over n: waves alone, and waves
    times the ragged-edge share."""
    o = occupancy("tc_fp16")
    sms = roofs()["sm_count"]
    ns = np.arange(1024, 8193, 32)
    wave = [model.wave_efficiency(n, n, *o["tile"], sms, o["blocks"]) for n in ns]
    both = [w * model.tile_efficiency(n, n, *o["tile"]) for w, n in zip(wave, ns)]
    fig, ax = plots.axes("", "n (M = N)", "share of the machine doing useful work")
    ax.plot(ns, wave, label="slots used (waves)", linewidth=1.2)
    ax.plot(ns, both, label="× useful outputs (edge tiles cost a full tile)", linewidth=1.2)
    ax.set_ylim(0, 1.05)
    return page.figure(plots.finish(fig, ax, loc="below"))


# ----------------------------------------------------------------------------- measured

def wave_sweep_rows() -> list[dict]:
    """The measured sweep: per N, each implementation's time, with our kernels' tiles and the
    model's waves at the blocks per SM of :func:`occupancy`."""
    sms = roofs()["sm_count"]
    ours = {k: occupancy(k) for k, _, _ in SWEEP}
    rows = []
    for r in results.rows("waves", part="sweep"):
        row = {"n": r["n"], "kernel": r["kernel"], "us": r["median_ms"] * 1e3, "m": r["m"]}
        if r["kernel"] in ours:
            o = ours[r["kernel"]]
            row["tiles"] = model.tile_grid(r["m"], r["n"], *o["tile"])
            row["waves"] = model.waves(r["m"], r["n"], *o["tile"], sms, o["blocks"])
        rows.append(row)
    return rows


def wave_steps_rows() -> list[dict]:
    """Around each of our kernels' wave boundaries: the last N of a wave count and the first of
    the next, the model's time ratio (waves) and the measured one, beside cuBLAS's."""
    rows = wave_sweep_rows()
    by = {(r["kernel"], r["n"]): r for r in rows}
    out = []
    for kernel, lib, _ in SWEEP:
        ours = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["n"])
        for a, b in zip(ours, ours[1:]):
            if b["waves"] == a["waves"]:
                continue
            out.append({"kernel": kernel, "n_before": a["n"], "n_after": b["n"],
                        "waves": f"{a['waves']} → {b['waves']}",
                        "model": b["waves"] / a["waves"], "measured": b["us"] / a["us"],
                        "cublas": by[(lib, b["n"])]["us"] / by[(lib, a["n"])]["us"]})
    return out


def wave_steps_table():
    """The steps of the measured sweep: time after / before each new wave."""
    return page.table(wave_steps_rows(), ["kernel", "n_before", "n_after", "waves", "model",
                                          "measured", "cublas"],
                      {"n_before": "N before", "n_after": "N after", "waves": "waves",
                       "model": "model: time ×", "measured": "measured: time ×",
                       "cublas": "cuBLAS: time ×"},
                      source=results.source_line("waves"))


def wave_measured_figure():
    """Time against N for our kernels and cuBLAS (FP16 and FP32 panels), with the model's steps
    for our kernel scaled to its measured time of one full wave."""
    rows = wave_sweep_rows()
    params = results.load("waves")["parameters"]
    fig, axes = plots.plt.subplots(1, 2, figsize=(7.6, 3.0), dpi=110, sharex=True)
    for ax, (ours, lib, title) in zip(axes, SWEEP):
        for kernel, label in ((ours, ours), (lib, f"cuBLAS {title}")):
            pts = sorted((r for r in rows if r["kernel"] == kernel), key=lambda r: r["n"])
            mine = kernel == ours
            ax.plot([r["n"] for r in pts], [r["us"] for r in pts], label=label,
                    color="C0" if mine else "0.35", linestyle="-" if mine else ":",
                    linewidth=1.2, marker="." if mine else None, markersize=3)
        pts = sorted((r for r in rows if r["kernel"] == ours), key=lambda r: r["n"])
        per_wave = [r for r in pts if r["waves"] == 1][-1]["us"]
        ax.step([r["n"] for r in pts], [r["waves"] * per_wave for r in pts], where="mid",
                color="C3", linewidth=0.9, label="model: waves × one full wave")
        ax.set_title(f"{title}, M = {params['m']}, K = {params['k']}", fontsize=9)
        ax.set_xlabel("N", fontsize=8)
        ax.set_ylabel("time per call (µs)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return page.figure(fig)


def values() -> dict:
    """The section's numbers: the model's waves at 4096 and 4097, the occupancy of tc_fp16, and
    the measured sweep — the model's and the measured step at the first and last new wave, the
    largest step inside one wave count, one block per SM against a full wave, cuBLAS's ratios
    over the same boundaries."""
    w4096, w4097 = last_wave(4096), last_wave(4097)
    eff = {(x["kernel"], x["n"]): x for x in wave_rows()}
    tc = occupancy("tc_fp16")
    v = {"w4096_tiles": f"{w4096['tiles']:,}",
         "w4096_per_wave": f"{w4096['tiles'] / w4096['per_wave']:.1f}",
         "slots": str(w4096["per_wave"]),
         "w4097_tiles": f"{w4097['tiles']:,}", "w4097_waves": str(w4097["waves"]),
         "w4097_last": str(w4097["last"]),
         "w4097_last_share": f"{w4097['last'] / w4097['per_wave']:.0%}",
         "w4097_loss": f"{1 - eff[('tc_fp16', 4097)]['wave_eff']:.0%}",
         "tiled32_tiles_4097": f"{eff[('tiled32', 4097)]['tiles']:,}",
         "tiled32_slots_4097": f"{eff[('tiled32', 4097)]['wave_eff']:.1%}",
         "tc_registers": str(tc["registers"]), "tc_smem_kib": f"{tc['smem'] / 1024:.0f}",
         "tc_by_registers": str(tc["by_registers"]), "tc_by_shared": str(tc["by_shared"]),
         "tc_blocks": str(tc["blocks"])}
    steps = wave_steps_rows()
    tcs = [r for r in steps if r["kernel"] == "tc_fp16"]
    fp32 = [r for r in steps if r["kernel"] == "warptile_tuned"]
    rows = sorted((r for r in wave_sweep_rows() if r["kernel"] == "tc_fp16"),
                  key=lambda r: r["n"])
    big, a, b = max(((b["us"] / a["us"], a, b) for a, b in zip(rows, rows[1:])
                     if a["waves"] == b["waves"]), key=lambda x: x[0])
    sms = roofs()["sm_count"]
    one = max((r for r in rows if r["tiles"] <= sms), key=lambda r: r["n"])
    full = max((r for r in rows if r["waves"] == 1), key=lambda r: r["n"])
    cub = [r["cublas"] for r in tcs]
    params = results.load("waves")["parameters"]
    warp = occupancy("warptile_tuned")
    column = {k: -(-params["m"] // o["tile"][0]) for k, o in (("tc", tc), ("fp32", warp))}
    v.update({"sweep_m": str(params["m"]), "sweep_k": str(params["k"]),
              "sweep_n_lo": str(min(params["n_values"])),
              "sweep_n_hi": str(max(params["n_values"])),
              "sweep_tc_column": str(column["tc"]), "sweep_fp32_column": str(column["fp32"]),
              "sweep_fp32_slots": str(sms * warp["blocks"]),
              "sweep_columns_per_wave": str(sms * tc["blocks"] // column["tc"]),
              "sweep_fp32_columns_per_wave": str(sms * warp["blocks"] // column["fp32"])})
    v.update({"wave_first_n": f"{tcs[0]['n_before']} → {tcs[0]['n_after']}",
              "wave_first_tc": f"{tcs[0]['measured']:.2f}",
              "wave_first_fp32": f"{fp32[0]['measured']:.2f}",
              "wave_last_n": f"{tcs[-1]['n_before']} → {tcs[-1]['n_after']}",
              "wave_last_model": f"{tcs[-1]['model']:.2f}",
              "wave_last_tc": f"{tcs[-1]['measured']:.2f}",
              "wave_last_fp32": f"{fp32[-1]['measured']:.2f}",
              "wave_inside_x": f"{big:.2f}", "wave_inside_n": f"{a['n']} → {b['n']}",
              "wave_inside_tiles": f"{a['tiles']} → {b['tiles']}",
              "wave_one_n": str(one["n"]), "wave_one_tiles": str(one["tiles"]),
              "wave_one_us": f"{one['us']:.0f}", "wave_full_n": str(full["n"]),
              "wave_full_tiles": str(full["tiles"]), "wave_full_us": f"{full['us']:.0f}",
              "wave_one_full_x": f"{full['us'] / one['us']:.2f}",
              "wave_cublas_lo": f"{min(cub):.2f}", "wave_cublas_hi": f"{max(cub):.2f}"})
    return v
