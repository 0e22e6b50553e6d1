"""Chapter 7's exercises, solved: descriptors (1), stage and ring sizes (2), the gains of the
ladder (3), the setmaxnreg budget (4). :func:`values` names every number the solutions quote."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lab import compiler, hopper, model, results
from lab.chapters.ch7 import common
from lab.kernels import wgmma


def ex07_1(rung: str = "wgmma_2wg", stage: int = 2, wg: int = 1, ks: int = 3) -> dict:
    """The A and B descriptors one consumer warpgroup of ``rung`` builds for k-step ``ks`` of
    ``stage`` (dynamic shared memory taken to start at address 0), the fields they decode to,
    and a check with the NumPy twins that they read what TMA wrote there."""
    cfg = wgmma.RUNG_CONFIGS[rung]
    base = stage * cfg.stage_bytes
    b_box = wgmma.BK * wgmma.ROW
    a_addr = base + wg * cfg.wg_rows * wgmma.ROW + 32 * ks        # mi = 0: the first 64 rows
    b_addr = base + cfg.a_bytes + ks * 16 * wgmma.ROW
    da, db = hopper.desc_value(a_addr, 16, 1024), hopper.desc_value(b_addr, b_box, 1024)
    fa, fb = hopper.desc_fields(da), hopper.desc_fields(db)
    a_off, b_off = a_addr - base, b_addr - base
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
            "a_lbo": fa["lbo"], "a_sbo": fa["sbo"], "b_lbo": fb["lbo"], "b_sbo": fb["sbo"],
            "swizzle": fb["swizzle"], "a_step": 32, "b_step": 16 * wgmma.ROW,
            "reads_what_tma_wrote": bool(a_ok and b_ok)}


def ex07_2() -> dict:
    """Shared memory per stage and the deepest ring that fits in 227 KB, per tile shape of the
    rungs (the kernel's own check: stages × stage bytes + 1 KB for barriers and alignment)."""
    out = {"max_kb": wgmma.MAX_SHARED // 1024, "reserve": 1024}
    for name, cfg in (("128x128", wgmma.RUNG_CONFIGS["wgmma_tma"]),
                      ("128x256", wgmma.RUNG_CONFIGS["wgmma_ws"])):
        deepest = (wgmma.MAX_SHARED - out["reserve"]) // cfg.stage_bytes
        try:                                   # one stage more than fits: the check refuses it
            replace(cfg, stages=deepest + 1).validate()
            refused = False
        except ValueError:
            refused = True
        out.update({f"stage_kb_{name}": cfg.stage_bytes // 1024, f"max_stages_{name}": deepest,
                    f"used_kb_{name}": cfg.shared_bytes // 1024, f"refused_{name}": refused})
    out["pingpong_stages"] = wgmma.RUNG_CONFIGS["wgmma_pingpong"].stages
    out["pingpong_kb"] = wgmma.RUNG_CONFIGS["wgmma_pingpong"].shared_bytes // 1024
    return out


def ex07_3(kind: str = "fp16") -> dict:
    """Each rung's gain over the rung it builds on at 4096³ and 8192³ (medians of three
    processes), and the k-slices per tile that set how much work done once per tile weighs."""
    out = {"parents": dict(common.PARENT)}
    cfg = wgmma.RUNG_CONFIGS["wgmma_persistent"]
    sms = results.load("hopper_profile")["provenance"]["sm_count"]
    for size in common.SIZES:
        t = {k: common.summary(f"{k}_{kind}", size)["tflops"] for k in ["tc", *common.RUNGS]}
        gains = {k: t[k] / t[common.PARENT[k]] for k in common.RUNGS}
        out[f"best_{size}"] = max(gains, key=gains.get)
        out[f"gains_{size}"] = gains
        out[f"slices_{size}"] = size // wgmma.BK
        out[f"tiles_per_sm_{size}"] = model.tile_grid(size, size, cfg.bm, cfg.bn) / sms
    return out


def ex07_4(rung: str = "wgmma_ws", consumers_alt: int = 3) -> dict:
    """setmaxnreg's budget: registers per thread at entry with one block per SM, the most a
    consumer can take once the producer drops to 40, what remains beside its accumulators;
    the same for ``consumers_alt`` consumer warpgroups."""
    regs_sm = model.SM90_LIMITS["registers"]
    cfg = wgmma.RUNG_CONFIGS[rung]
    producer = cfg.producer_regs

    def budget(consumers: int) -> dict:
        threads = 128 * (consumers + 1)
        entry = regs_sm // threads // 8 * 8
        top = (regs_sm - 128 * producer) // (128 * consumers) // 8 * 8
        return {"threads": threads, "entry": entry, "max_consumer": min(top, 256)}

    b, alt = budget(cfg.consumers), budget(consumers_alt)
    acc = cfg.mt * cfg.bn // 2
    return {"threads": b["threads"], "entry": b["entry"],
            "ptxas": compiler.report(f"{rung}_fp16")[0].registers, "producer": producer,
            "max_consumer": b["max_consumer"], "chosen": cfg.regs, "file": regs_sm,
            "used": 128 * producer + 128 * cfg.consumers * cfg.regs,
            "accumulators": acc, "left": cfg.regs - acc, "alt_consumers": consumers_alt,
            "alt_entry": alt["entry"], "alt_max": alt["max_consumer"],
            "alt_left": alt["max_consumer"] - acc}


def values() -> dict:
    """Every number the solutions quote, by the name the page glues."""
    s1, s2, s3, s4 = ex07_1(), ex07_2(), ex07_3(), ex07_4()
    g4, g8 = s3["gains_4096"], s3["gains_8192"]
    return {
        "ex07_1_wg": str(s1["wg"]), "ex07_1_ks": str(s1["ks"]), "ex07_1_stage": str(s1["stage"]),
        "ex07_1_stage_bytes": str(s1["stage_bytes"]),
        "ex07_1_a_address": str(s1["a_address"]), "ex07_1_a_desc": s1["a_desc"],
        "ex07_1_a_sbo": str(s1["a_sbo"]), "ex07_1_b_address": str(s1["b_address"]),
        "ex07_1_b_desc": s1["b_desc"], "ex07_1_b_lbo": str(s1["b_lbo"]),
        "ex07_1_b_sbo": str(s1["b_sbo"]), "ex07_1_swizzle": str(s1["swizzle"]),
        "ex07_1_a_step": str(s1["a_step"]), "ex07_1_b_step": str(s1["b_step"]),
        "ex07_1_ok": "yes" if s1["reads_what_tma_wrote"] else "no",
        "ex07_2_max_kb": str(s2["max_kb"]),
        "ex07_2_stage_kb_128x128": str(s2["stage_kb_128x128"]),
        "ex07_2_stage_kb_128x256": str(s2["stage_kb_128x256"]),
        "ex07_2_max_stages_128x128": str(s2["max_stages_128x128"]),
        "ex07_2_max_stages_128x256": str(s2["max_stages_128x256"]),
        "ex07_2_refused": "yes" if s2["refused_128x128"] and s2["refused_128x256"] else "no",
        "ex07_2_pingpong_stages": str(s2["pingpong_stages"]),
        "ex07_2_pingpong_kb": str(s2["pingpong_kb"]),
        "ex07_3_best_4096": s3["best_4096"], "ex07_3_best_8192": s3["best_8192"],
        "ex07_3_gain_2wg_4096": f"{g4['wgmma_2wg']:.2f}",
        "ex07_3_gain_tma_4096": f"{g4['wgmma_tma']:.2f}",
        "ex07_3_gain_persistent_4096": f"{g4['wgmma_persistent']:.3f}",
        "ex07_3_gain_persistent_8192": f"{g8['wgmma_persistent']:.3f}",
        "ex07_3_gain_tmastore_4096": f"{g4['wgmma_tmastore']:.3f}",
        "ex07_3_gain_tmastore_8192": f"{g8['wgmma_tmastore']:.3f}",
        "ex07_3_gain_cluster_8192": f"{g8['wgmma_cluster']:.3f}",
        "ex07_3_slices_4096": str(s3["slices_4096"]), "ex07_3_slices_8192": str(s3["slices_8192"]),
        "ex07_3_tiles_per_sm_4096": f"{s3['tiles_per_sm_4096']:.1f}",
        "ex07_3_tiles_per_sm_8192": f"{s3['tiles_per_sm_8192']:.1f}",
        "ex07_4_threads": str(s4["threads"]), "ex07_4_entry": str(s4["entry"]),
        "ex07_4_ptxas": str(s4["ptxas"]), "ex07_4_producer": str(s4["producer"]),
        "ex07_4_max_consumer": str(s4["max_consumer"]), "ex07_4_chosen": str(s4["chosen"]),
        "ex07_4_file": str(s4["file"]), "ex07_4_used": str(s4["used"]),
        "ex07_4_accumulators": str(s4["accumulators"]), "ex07_4_left": str(s4["left"]),
        "ex07_4_alt_consumers": str(s4["alt_consumers"]), "ex07_4_alt_entry": str(s4["alt_entry"]),
        "ex07_4_alt_max": str(s4["alt_max"]), "ex07_4_alt_left": str(s4["alt_left"]),
    }
