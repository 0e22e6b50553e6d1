"""Worked solutions to chapter 6.1's exercises, from the model and the committed results."""
from __future__ import annotations

import numpy as np

from lab import model, results
from lab.chapters.ch6_1.roofs import WEIGHTS, roofs
from lab.chapters.ch6_1.s2_waves import occupancy
from lab.chapters.ch6_1.s4_splitk import launch_floor_us, splitk_rows

#: Kernel launches per split-K call (lab/kernels/splitk.py): two-pass runs the split
#: kernel, then ``reduce_kernel``; atomic runs ``zero_kernel``, then the split kernel. Shapes
#: that are multiples of the tile need no padding copy in front.
SPLITK_LAUNCHES = {"two_pass": 2, "atomic": 2}


def exercise_1(lo: int = 4096, hi: int = 8192, step: int = 128, below: float = 0.85) -> dict:
    """tc_fp16's model efficiency (waves × useful outputs) from 4096 to 8192, and the rate the
    worst size should reach, scaled from the measured 4096³ rate."""
    o = occupancy("tc_fp16")
    sms = roofs()["sm_count"]

    def eff(n):
        return (model.wave_efficiency(n, n, *o["tile"], sms, o["blocks"])
                * model.tile_efficiency(n, n, *o["tile"]))

    sizes = range(lo, hi + 1, step)
    low = [n for n in sizes if eff(n) < below]
    worst = min(sizes, key=eff)
    rate = next(r["tflops"] for r in results.rows("shapes", part="size", kernel="tc_fp16")
                if r["m"] == 4096)
    return {"tile": "×".join(map(str, o["tile"])), "blocks_per_sm": o["blocks"],
            "eff_4096": eff(4096), "sizes": low, "worst": worst, "eff_worst": eff(worst),
            "rate_4096": rate, "predicted_worst": rate * eff(worst) / eff(4096)}


def exercise_2(m: int = 512, n: int = 512, k: int = 16384, splits=(2, 4, 8, 16)) -> dict:
    """Split-K for (512 × 16384) · (16384 × 512) in FP16: the slots the work units fill and the
    traffic the split adds (the model); then the measured FP16 rows against the launches per
    call times our kernels' per-call launch floor, the model's GPU time and cuBLAS."""
    o = occupancy("tc_fp16")
    slots = roofs()["sm_count"] * o["blocks"]
    out = {"tiles": model.tile_grid(m, n, *o["tile"]), "block_slots": slots,
           "ideal_mb": model.ideal_bytes(m, n, k, 2, 4) / 1e6,
           "fill": {s: min(1.0, model.split_k_tiles(m, n, *o["tile"], s) / slots)
                    for s in splits},
           "extra_mb": {s: model.split_k_extra_bytes(m, n, s) / 1e6 for s in splits}}
    out["fills"] = min(s for s in splits if out["fill"][s] >= 0.9)
    floor = launch_floor_us()
    out["launch_floor_us"] = floor
    out["launches"] = SPLITK_LAUNCHES["two_pass"]
    here = [r for r in splitk_rows()
            if r["design"] == "fp16" and (r["m"], r["n"], r["k"]) == (m, n, k)]
    for mode in ("two_pass", "atomic"):
        best = min((r for r in here if r["mode"] == mode and r["slices"] > 1),
                   key=lambda r: r["us"])
        out[mode] = {"us": best["us"], "slices": best["slices"], "model_us": best["model_us"],
                     "timing": best["timing"],
                     "over_floors": best["us"] / (SPLITK_LAUNCHES[mode] * floor)}
    out["unsplit_us"] = next(r["us"] for r in here if r["mode"] == "unsplit")
    lib = next(r for r in here if r["mode"] == "library")
    out["cublas_us"], out["cublas_timing"] = lib["us"], lib["timing"]
    return out


def split_k_matmul(A: np.ndarray, B: np.ndarray, splits: int, kernel: str = "tiled16") -> np.ndarray:
    """C = A·B as ``splits`` registered-kernel products over slices of K, then summed: the
    method of exercise 2 with any registered kernel (the simulator runs ``tiled16``). Each
    slice is one launch writing its own partial output; the sum is the reduction."""
    import lab

    k = A.shape[1]
    edges = np.linspace(0, k, splits + 1).astype(int)
    partial = [lab.matmul(np.ascontiguousarray(A[:, a:b]), np.ascontiguousarray(B[a:b]),
                          kernel=kernel) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    return np.sum(partial, axis=0, dtype=np.float32)


def exercise_3() -> dict:
    """Decode (M = 1): cuBLAS FP16's GPU time with the weights from HBM (queued timing, the
    launch path left out), the bandwidth it reached, and the time that bandwidth predicts for
    BF16 and FP32 weights."""
    row = next(r for r in results.rows("shapes", part="skinny_queued", kernel="cublas_fp16")
               if r["m"] == 1 and r["rotated"])
    k, n = WEIGHTS
    out = {"fp16_us": row["median_ms"] * 1e3, "weight_gbps": row["weight_gbps"]}
    for name, e in (("fp16", 2), ("bf16", 2), ("fp32", 4)):
        out[f"{name}_mb"] = k * n * e / 1e6
        out[f"{name}_pred_us"] = k * n * e / (row["weight_gbps"] * 1e9) * 1e6
    return out


def values() -> dict:
    """The numbers the solutions quote."""
    one, two, three = exercise_1(), exercise_2(), exercise_3()
    fill, extra = two["fill"], two["extra_mb"]
    return {
        "ex61_1_tile": one["tile"], "ex61_1_blocks_per_sm": str(one["blocks_per_sm"]),
        "ex61_1_eff_4096": f"{one['eff_4096']:.0%}", "ex61_1_count": str(len(one["sizes"])),
        "ex61_1_sizes": ", ".join(map(str, one["sizes"])),
        "ex61_1_worst": str(one["worst"]), "ex61_1_eff_worst": f"{one['eff_worst']:.0%}",
        "ex61_1_rate_4096": f"{one['rate_4096']:.0f}",
        "ex61_1_predicted_worst": f"{one['predicted_worst']:.0f}",
        "ex61_2_tiles": str(two["tiles"]), "ex61_2_slots": str(two["block_slots"]),
        "ex61_2_fills": ", ".join(f"{fill[s]:.0%}" for s in fill),
        "ex61_2_extra_mb": ", ".join(f"{extra[s]:.0f}" for s in extra),
        "ex61_2_splits": ", ".join(map(str, fill)),
        "ex61_2_ideal_mb": f"{two['ideal_mb']:.0f}", "ex61_2_first_full": str(two["fills"]),
        "ex61_2_launches": str(two["launches"]),
        "ex61_2_launch_floor_us": f"{two['launch_floor_us']:.0f}",
        "ex61_2_floors_us": f"{two['launches'] * two['launch_floor_us']:.0f}",
        "ex61_2_two_pass_us": f"{two['two_pass']['us']:.0f}",
        "ex61_2_two_pass_slices": str(two["two_pass"]["slices"]),
        "ex61_2_atomic_us": f"{two['atomic']['us']:.0f}",
        "ex61_2_atomic_slices": str(two["atomic"]["slices"]),
        "ex61_2_timing": ", ".join(sorted({two[m]["timing"] for m in ("two_pass", "atomic")})),
        "ex61_2_two_pass_over_floors": f"{two['two_pass']['over_floors']:.2f}",
        "ex61_2_atomic_over_floors": f"{two['atomic']['over_floors']:.2f}",
        "ex61_2_two_pass_model_us": f"{two['two_pass']['model_us']:.0f}",
        "ex61_2_atomic_model_us": f"{two['atomic']['model_us']:.0f}",
        "ex61_2_cublas_us": f"{two['cublas_us']:.0f}",
        "ex61_2_cublas_timing": two["cublas_timing"],
        "ex61_3_fp16_mb": f"{three['fp16_mb']:.1f}", "ex61_3_fp16_us": f"{three['fp16_us']:.1f}",
        "ex61_3_weight_gbps": f"{three['weight_gbps']:,.0f}",
        "ex61_3_bf16_mb": f"{three['bf16_mb']:.1f}",
        "ex61_3_bf16_pred_us": f"{three['bf16_pred_us']:.1f}",
        "ex61_3_fp32_mb": f"{three['fp32_mb']:.1f}",
        "ex61_3_fp32_pred_us": f"{three['fp32_pred_us']:.1f}",
        "ex61_3_fp32_over_fp16": f"{three['fp32_pred_us'] / three['fp16_pred_us']:.1f}"}
