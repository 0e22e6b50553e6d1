"""Section 'Rung 2 onward: feeding them': the fed rungs' configurations, their listings, the
swizzle's bank-conflict count and the predictions written before the measurements.
"""
from __future__ import annotations

from lab import fragments, model, page
from lab.chapters.ch5.common import FED, machine
from lab.chapters.ch5.s6_rung1_measured import rung1_ceilings
from lab.kernels import k08_tc_pipeline


def main_loop_listing():
    """The fed rungs' main loop, the per-stage fragments and mma.sync folded to one line."""
    return page.source(k08_tc_pipeline, "main_loop",
                       fold={"stage_mma": "fragments and mma.sync for this stage "
                                                  "(below)"})


def fragments_listing():
    """Per 16-deep step: ldmatrix fragments and one mma.sync per 16×8 tile."""
    return page.source(k08_tc_pipeline, "fragments_and_mma")


def swizzle_listing():
    """The swizzle function of the shared-memory layout."""
    return page.source(k08_tc_pipeline, "swizzle")


def rung_rows() -> list[dict]:
    """One row per registered tensor-core rung: its tiles, stages, swizzle and block order."""
    rows = []
    for name, cfg in k08_tc_pipeline.RUNG_CONFIGS.items():
        if cfg.kind != "f16":
            continue
        rows.append({"kernel": name, "block": f"{cfg.bm}×{cfg.bn}×{cfg.bk}",
                     "warp": f"{cfg.wm}×{cfg.wn}", "stages": cfg.stages,
                     "swizzle": cfg.swizzle, "group": cfg.group_m,
                     "smem_kb": cfg.shared_bytes / 1024})
    return rows


def rung_table():
    """The fed rungs' configurations, from :data:`lab.kernels.k08_tc_pipeline.RUNG_CONFIGS`."""
    return page.table(rung_rows(), ["kernel", "block", "warp", "stages", "swizzle", "group",
                                    "smem_kb"],
                      {"block": "block tile", "warp": "warp tile", "group": "block-rows/group",
                       "smem_kb": "smem (KB)"})


def conflict_rows() -> list[dict]:
    """Shared-memory wavefronts of one 8-row ldmatrix phase, plain and swizzled."""
    rows = []
    for tile, cpr in (("A 128×32 (64-byte rows)", 4), ("A 128×64 (128-byte rows)", 8),
                      ("B 32×128 (256-byte rows)", 16)):
        plain = [r * 16 * cpr for r in range(8)]
        swz = [r * 16 * cpr + 16 * k08_tc_pipeline.swizzle(r, 0, cpr) for r in range(8)]
        rows.append({"tile": tile, "plain": fragments.wavefronts(plain),
                     "swizzled": fragments.wavefronts(swz)})
    return rows


def conflict_table():
    """Bank conflicts of ldmatrix with and without the swizzle (the model, no GPU)."""
    return page.table(conflict_rows(), ["tile", "plain", "swizzled"],
                      {"tile": "tile in shared memory", "plain": "wavefronts, plain",
                       "swizzled": "wavefronts, swizzled"})


def _phase_wavefronts(row_bytes: int, chunk: int, swizzled: bool, first_row: int) -> int:
    cpr = row_bytes // 16
    return fragments.wavefronts(
        [r * row_bytes + 16 * (k08_tc_pipeline.swizzle(r, chunk, cpr) if swizzled else chunk)
         for r in range(first_row, first_row + 8)])


def smem_ceiling(cfg) -> tuple[float, int]:
    """FLOP/s if shared memory (one 128-byte wavefront per clock per SM) were the only limit,
    and the wavefronts one block needs per k-slice (ldmatrix reads plus cp.async writes)."""
    m = machine()
    a_row, b_row = 2 * cfg.bk, 2 * cfg.bn
    steps = cfg.bk // 16
    a_wf = sum(_phase_wavefronts(a_row, 2 * ks + h, cfg.swizzle, 8 * q)
               for ks in range(steps) for h in (0, 1) for q in (0, 1)) // steps
    b_wf = sum(_phase_wavefronts(b_row, 2 * p + h, cfg.swizzle, 8 * q)
               for p in range(cfg.bn // 16) for h in (0, 1) for q in (0, 1)) // (cfg.bn // 16)
    reads = cfg.warps * steps * ((cfg.wm // 16) * a_wf + (cfg.wn // 16) * b_wf)
    writes = cfg.stage_bytes // 128
    flop = 2 * cfg.bm * cfg.bn * cfg.bk
    return flop / (reads + writes) * m["sms"] * m["clock_hz"], reads + writes


def prediction_rows() -> list[dict]:
    """Each rung's ceilings before it ran: HBM (tile intensity × measured read bandwidth),
    shared memory (wavefronts), and the prediction, the lowest of those and the peak."""
    m = machine()
    c1 = rung1_ceilings()
    rows = [{"kernel": "tc_naive_fp16", "wavefronts": None, "hbm": c1["hbm"] / 1e12,
             "smem": None, "l1": c1["l1"] / 1e12, "predicted": c1["l1"] / 1e12}]
    for name in FED:
        cfg = k08_tc_pipeline.RUNG_CONFIGS[name]
        hbm = model.tile_intensity(cfg.bm, cfg.bn, 2) * m["read_bps"]
        smem, wavefronts = smem_ceiling(cfg)
        rows.append({"kernel": name, "wavefronts": wavefronts, "hbm": hbm / 1e12,
                     "smem": smem / 1e12, "l1": None,
                     "predicted": min(hbm, smem, m["peak"]) / 1e12})
    return rows


def prediction_table():
    """The predictions, rung by rung (the model, before the measurements)."""
    return page.table(prediction_rows(), ["kernel", "wavefronts", "l1", "hbm", "smem",
                                          "predicted"],
                      {"wavefronts": "wavefronts/slice", "l1": "L1 (TFLOP/s)",
                       "hbm": "HBM (TFLOP/s)", "smem": "smem (TFLOP/s)",
                       "predicted": "predicted (TFLOP/s)"})


def values() -> dict:
    """The machine behind the predictions and the warp tile's instruction counts."""
    m = machine()
    warp64 = k08_tc_pipeline.RUNG_CONFIGS["tc_warp64"]
    return {"peak_tflops": f"{m['peak'] / 1e12:.0f}",
            "tensor_peak_source": m["peak_source"],
            "warp64_ldsm": str(warp64.wm // 16 + warp64.wn // 16),
            "warp64_mma": str((warp64.wm // 16) * (warp64.wn // 8))}
