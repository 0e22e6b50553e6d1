"""Section 5, past rung 8: the 16-bit output, the whole-tile store and the 128-block grid (rungs
9-11), FP8 in clusters and with the new store, and fast.cu's kernel 12, each against the
yardstick with its own output type (``hopper_past``)."""
from __future__ import annotations

from lab import page, results
from lab.kernels import wgmma


#: Rung 11 on cuBLAS's tile at 4096³, 256×128: its label in ``hopper_past``'s rows, and its
#: profile row's name.
CUBLAS_TILE = "tmastore 16-bit out whole-tile grid 128 256x128"
CUBLAS_TILE_PROFILE = "past:" + CUBLAS_TILE
#: Rung 11 and one change: waits that sleep, 16-row tile groups, the ring's slot kept as a
#: counter (and that with 16-row groups, or with descriptor steps); rung 7 (FP32 C) on 128
#: blocks, with slot counters, descriptor steps and a ring of 4 staging boxes (rungs 13 and 14
#: are ``STEPS`` and ``F32_RING``); two other FP32 epilogues on that main loop: C stored from
#: registers (4 stages), and per-warp staging.
R11 = "tmastore 16-bit out whole-tile grid 128"
SLEEP, GROUP16, COUNTERS = R11 + " sleeping waits", R11 + " group_m 16", R11 + " slot counters"
COUNTERS16, STEPS = COUNTERS + " group_m 16", COUNTERS + " descriptor steps"
F32, F32_COUNTERS = "tmastore 3 stages grid 128", "tmastore 3 stages grid 128 slot counters"
F32_STEPS = F32_COUNTERS + " descriptor steps"
F32_RING = F32_STEPS + " ring 4"
VECTOR = "vector store grid 128 slot counters descriptor steps"
F32_WARP = F32_STEPS + " per-warp staging"
UNIFORM, F32_UNIFORM = STEPS + " uniform index", F32_RING + " uniform index"
EVICT, F32_EVICT = UNIFORM + " C evict-first", F32_UNIFORM + " C evict-first"
#: fast.cu's kernel 12 (public CUDA C, built with nvcc), timed by the same harness.
FASTCU = "fast.cu kernel 12 (BF16 out)"
#: Rung 17: rung 16 with its staged C handed to store threads.
F32_HANDOFF = F32_UNIFORM + " store threads"


def summary(kernel: str, dtype: str, size: int, data: dict | None = None) -> dict:
    data = data or results.load("hopper_past")
    for r in data["rows"]:
        if (r["part"] == "summary" and r["kernel"] == kernel and r["dtype"] == dtype
                and r["m"] == size):
            return r
    raise KeyError(f"{data['experiment']}.json has no summary row for {kernel} {dtype} {size}³")


def profile(kernel: str, data: dict | None = None) -> dict:
    data = data or results.load("hopper_past")
    for r in data["rows"]:
        if r["part"] == "profile" and r["kernel"] == kernel:
            return r
    raise KeyError(f"{data['experiment']}.json has no profile row for {kernel}")


def trace(kernel: str, dtype: str = "float16", data: dict | None = None) -> dict:
    """The traced launch of ``kernel`` (``hopper_past``'s ``trace`` rows): each warpgroup-tile's
    main loop and epilogue on the GPU's nanosecond timer, 10th, 50th and 90th percentiles."""
    data = data or results.load("hopper_past")
    for r in data["rows"]:
        if r["part"] == "trace" and r["kernel"] == kernel and r["dtype"] == dtype:
            if not r["passed"]:
                raise ValueError(f"the traced {kernel} {dtype} failed its check")
            return r
    raise KeyError(f"{data['experiment']}.json has no trace row for {kernel} {dtype}")


def past_table():
    """Every row of the final measurement: median over the processes, the ratio to the
    yardstick with the same output type and its spread, the SM clock."""
    rows = [{"kernel": r["kernel"], "type": r["dtype"], "size": r["m"], "C": r["out"],
             "TFLOP/s": r["tflops"], "ratio": r["ratio"],
             "ratio min–max": (f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"
                               if r["ratio_min"] is not None else ""),
             "processes": r["processes"], "SM MHz": r["sm_mhz"]}
            for r in results.load("hopper_past")["rows"] if r["part"] == "summary"]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def past_profile_table():
    """Nsight Compute on every profiled row of ``hopper_past`` (FP16, 4096³, one launch each:
    rungs 8-11, the ``past:`` variants, cuBLAS and ``torch.mm``): time, tensor pipe, the
    barrier stall (warps waiting at a barrier per issued instruction), L2 and DRAM."""
    rows = [{"kernel": r["kernel"], "GPU µs": r["duration_us"],
             "tensor pipe %": r["tensor_active_pct"], "SM MHz": r["sm_mhz"],
             "blocks": r.get("grid_size"),
             "barrier stall": r.get("stalls", {}).get("barrier"),
             "L2 read GB": r["l2_read_bytes"] / 1e9 if r.get("l2_read_bytes") else None,
             "L2 hit %": r.get("l2_hit_pct"),
             "DRAM read GB": r["dram_read_bytes"] / 1e9 if r.get("dram_read_bytes") else None,
             "DRAM write GB": r["dram_write_bytes"] / 1e9 if r.get("dram_write_bytes")
             else None}
            for r in results.load("hopper_past")["rows"] if r["part"] == "profile"]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def steps_table():
    """Rung 7 with a 16-bit C, one change at a time up to rung 11 and past it: the median ratio
    to ``torch.mm`` (same output type) at both sizes and both types, with the processes' range;
    the FP32-output rows against cuBLAS with FP32 output."""
    steps = (("rung 7 + 16-bit C", "tmastore 16-bit out"),
             ("+ 3 stages", "tmastore 16-bit out 3 stages"),
             ("+ whole-tile staging = rung 10", "tmastore 16-bit out whole-tile"),
             ("+ grid of 128 = rung 11", "tmastore 16-bit out whole-tile grid 128"),
             ("rung 11 on a 256×128 tile (cuBLAS's)", CUBLAS_TILE),
             ("rung 11 + sleeping waits", SLEEP),
             ("rung 11 + 16-row tile groups", GROUP16),
             ("rung 11 + slot counters", COUNTERS),
             ("rung 11 + slot counters + 16-row groups", COUNTERS16),
             ("rung 11 + slot counters + descriptor steps = rung 13", STEPS),
             ("rung 13 + uniform index = rung 15", UNIFORM),
             ("rung 15 + C evict-first", EVICT),
             ("rung 9 (rung 8 + 16-bit C)", "cluster 16-bit out"),
             ("fast.cu kernel 12", FASTCU),
             ("FP32 C: rung 8", "cluster"),
             ("FP32 C: rung 7, 3 stages, grid of 128", F32),
             ("FP32 C: + slot counters", F32_COUNTERS),
             ("FP32 C: + descriptor steps", F32_STEPS),
             ("FP32 C: + ring of 4 staging boxes = rung 14", F32_RING),
             ("FP32 C: rung 14's main loop, C from registers, 4 stages", VECTOR),
             ("FP32 C: rung 14 with per-warp staging", F32_WARP),
             ("FP32 C: rung 14 + uniform index = rung 16", F32_UNIFORM),
             ("FP32 C: rung 16 + C evict-first", F32_EVICT),
             ("FP32 C: rung 16 + store threads = rung 17", F32_HANDOFF))
    rows = [{"step": title, **ratio_cells(kernel)} for title, kernel in steps]
    return page.table(rows, source=results.source_line("hopper_past"))


def rungs_table():
    """Rungs 9 to 17 (stream-K, rung 12, has a run of its own): one row per rung, its median
    ratio to the yardstick with the same output type at both sizes and both types, with the
    processes' range -- the numbers each rung's paragraph stands on."""
    rungs = (("9 wgmma_out16", "torch.mm", "cluster 16-bit out"),
             ("10 wgmma_tile16", "torch.mm", "tmastore 16-bit out whole-tile"),
             ("11 wgmma_grid128", "torch.mm", R11),
             ("13 wgmma_lean", "torch.mm", STEPS),
             ("14 wgmma_ring", "cuBLAS, FP32 C", F32_RING),
             ("15 wgmma_uniform", "torch.mm", UNIFORM),
             ("16 wgmma_ring_uniform", "cuBLAS, FP32 C", F32_UNIFORM),
             ("17 wgmma_handoff", "cuBLAS, FP32 C", F32_HANDOFF))
    rows = [{"rung": title, "against": against, **ratio_cells(kernel)}
            for title, against, kernel in rungs]
    return page.table(rows, source=results.source_line("hopper_past"))


def ratio_cells(kernel: str, data: dict | None = None) -> dict:
    """One row's cells "FP16 4096³" … "BF16 8192³": the median ratio over the processes and
    their range, blank where the run has no such row (fast.cu's kernel 12: BF16 only)."""
    cells = {}
    for dtype, short in (("float16", "FP16"), ("bfloat16", "BF16")):
        for size in (4096, 8192):
            try:
                r = summary(kernel, dtype, size, data)
            except KeyError:
                cells[f"{short} {size}³"] = ""
                continue
            cells[f"{short} {size}³"] = (f"{r['ratio']:.3f} ({r['ratio_min']:.3f}–"
                                         f"{r['ratio_max']:.3f})")
    return cells


def streamk_table():
    """Rung 12 (stream-K) beside rungs 10 and 11 in one run: ratio to ``torch.mm`` with the
    range over the processes, and what Nsight Compute saw at 4096³ FP16."""
    data = results.load("hopper_streamk")
    rows = []
    for title, kernel, prof in (("rung 10", "tmastore 16-bit out whole-tile", None),
                                ("rung 11", "tmastore 16-bit out whole-tile grid 128",
                                 "wgmma_grid128_fp16"),
                                ("rung 12 (stream-K)", "tmastore 16-bit out whole-tile stream-K",
                                 "wgmma_streamk_fp16")):
        row = {"rung": title, **ratio_cells(kernel, data)}
        p = profile(prof, data) if prof else {}
        row["µs (ncu)"] = f"{p['duration_us']:.0f}" if p else ""
        row["tensor pipe %"] = f"{p['tensor_active_pct']:.1f}" if p else ""
        rows.append(row)
    return page.table(rows, source=results.source_line("hopper_streamk"))


def streamk_in_suite() -> list[dict]:
    """The shapes where ``lab.gemm`` (chapter 9b's suite, the current stream-K kernel) picked
    rung 12 on its first call: GPU-only FP16 rows, smallest product first."""
    rows = [r for r in results.rows("suite") if r.get("impl") == "lab.gemm"
            and r.get("method") == "gpu_only" and r.get("dtype") == "float16"
            and r["kernel"].startswith("wgmma_streamk")]
    return sorted(rows, key=lambda r: r["m"] * r["n"] * r["k"])


def values() -> dict:
    """The numbers of section 5's prose."""
    def ratio(kernel, dtype, size):
        return f"{summary(kernel, dtype, size)['ratio']:.3f}"

    def spread(kernel, dtype, size):
        r = summary(kernel, dtype, size)
        return f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"

    p8, p9 = profile("wgmma_cluster_fp16"), profile("wgmma_out16_fp16")
    p10, p11 = profile("wgmma_tile16_fp16"), profile("wgmma_grid128_fp16")
    pc = profile("cublas_fp16")
    pt = profile(CUBLAS_TILE_PROFILE)
    t7, s3 = "tmastore 16-bit out", "tmastore 16-bit out 3 stages"
    r11 = "tmastore 16-bit out whole-tile grid 128"
    f11 = "fp8 bf16 out whole-tile grid 128"
    sk = results.load("hopper_streamk")
    rsk = "tmastore 16-bit out whole-tile stream-K"
    p11s, p12 = profile("wgmma_grid128_fp16", sk), profile("wgmma_streamk_fp16", sk)

    def sk_ratio(kernel, dtype, size):
        return f"{summary(kernel, dtype, size, sk)['ratio']:.3f}"

    skc = wgmma.RUNG_CONFIGS["wgmma_streamk"]
    acc = skc.mt * skc.bn // 2                        # accumulators per consumer thread
    slot = acc * 128 * 4                              # bytes of one warpgroup's partial tile
    gap = p12["sm_active_cycles_max"] - p11s["sm_active_cycles_max"]

    picked = streamk_in_suite()
    best = max(picked, key=lambda r: r["ratio_to_cublas"])
    # slot counters beside fast.cu's kernel 12 (BF16, both sizes), where this GPU's run built it
    try:
        ahead = [summary(COUNTERS, "bfloat16", n)["ratio"] > summary(FASTCU, "bfloat16", n)["ratio"]
                 for n in (4096, 8192)]
        vs_fastcu = ("ahead of fast.cu's kernel 12" if all(ahead) else
                     "behind fast.cu's kernel 12" if not any(ahead) else
                     "level with fast.cu's kernel 12 (ahead at one size of two)")
    except KeyError:
        vs_fastcu = "with fast.cu's kernel 12 not built in this GPU's run"
    return {
        "left_counters_vs_fastcu": vs_fastcu,
        "sk_now_shapes": ", ".join(f"{r['m']}×{r['n']}×{r['k']}" for r in picked),
        "sk_now_best_shape": f"{best['m']}×{best['n']}×{best['k']}",
        "sk_now_best_us": f"{best['median_ms'] * 1e3:.0f}",
        "sk_now_best_ratio": f"{best['ratio_to_cublas']:.2f}",
        "sk_fix_rows": str(acc // 4 // max(1, slot // (skc.epi_boxes * wgmma.EPI_BOX))),
        "sk_4096_fp16": sk_ratio(rsk, "float16", 4096),
        "sk_8192_fp16": sk_ratio(rsk, "float16", 8192),
        "sk_r11_4096_fp16": sk_ratio(r11, "float16", 4096),
        "sk_processes": str(min(r["processes"] for r in sk["rows"] if r["part"] == "summary")),
        "sk_p12_us": f"{p12['duration_us']:.0f}",
        "sk_p11_us": f"{p11s['duration_us']:.0f}",
        "sk_p12_tensor": f"{p12['tensor_active_pct']:.1f}",
        "sk_p11_tensor": f"{p11s['tensor_active_pct']:.1f}",
        "sk_p12_write_mb": f"{p12['dram_write_bytes'] / 1e6:.0f}",
        "sk_r11_8192_fp16": sk_ratio(r11, "float16", 8192),
        "sk_acc": str(acc),
        "sk_vectors": str(acc // 4),
        "sk_slot_kb": f"{slot / 1024:.0f}",
        "sk_workspace_mb": f"{p12['grid_size'] * skc.consumers * slot / 1e6:.0f}",
        "sk_p12_kcycles": f"{p12['sm_active_cycles_max'] / 1e3:.0f}",
        "sk_p11_kcycles": f"{p11s['sm_active_cycles_max'] / 1e3:.0f}",
        "sk_gap_us": f"{gap / p12['sm_mhz']:.0f}",
        "sk_ncu_mhz": f"{p12['sm_mhz']:.0f}",
        "sk_p12_dram_read_mb": f"{p12['dram_read_bytes'] / 1e6:.0f}",
        "sk_p11_dram_read_mb": f"{p11s['dram_read_bytes'] / 1e6:.0f}",
        "sk_p12_l2_read_mb": f"{p12['l2_read_bytes'] / 1e6:.0f}",
        "sk_p11_l2_read_mb": f"{p11s['l2_read_bytes'] / 1e6:.0f}",
        "sk_p11_write_mb": f"{p11s['dram_write_bytes'] / 1e6:.0f}",
        "past_r11_4096_fp16": ratio(r11, "float16", 4096),
        "past_tms16_8192_fp16": ratio(t7, "float16", 8192),
        "past_s3_8192_fp16": ratio(s3, "float16", 8192),
        "past_p10_us": f"{p10['duration_us']:.1f}",
        "past_p11_us": f"{p11['duration_us']:.1f}",
        "past_p9_us1": f"{p9['duration_us']:.1f}",
        "past_p9_barrier": f"{p9['stalls']['barrier']:.2f}",
        "past_p10_barrier": f"{p10['stalls']['barrier']:.2f}",
        "past_p11_tensor": f"{p11['tensor_active_pct']:.1f}",
        "past_p10_l2_read_mb": f"{p10['l2_read_bytes'] / 1e6:.0f}",
        "past_p11_l2_read_mb": f"{p11['l2_read_bytes'] / 1e6:.0f}",
        "past_p10_dram_read_mb": f"{p10['dram_read_bytes'] / 1e6:.0f}",
        "past_p11_dram_read_mb": f"{p11['dram_read_bytes'] / 1e6:.0f}",
        "past_p10_l2_hit": f"{p10['l2_hit_pct']:.1f}",
        "past_p11_l2_hit": f"{p11['l2_hit_pct']:.1f}",
        "past_t256_4096_fp16": ratio(CUBLAS_TILE, "float16", 4096),
        "past_t256_8192_fp16": ratio(CUBLAS_TILE, "float16", 8192),
        "past_t256_4096_bf16": ratio(CUBLAS_TILE, "bfloat16", 4096),
        "past_t256_8192_bf16": ratio(CUBLAS_TILE, "bfloat16", 8192),
        "past_pt_us": f"{pt['duration_us']:.1f}",
        "past_pt_tensor": f"{pt['tensor_active_pct']:.1f}",
        "past_pt_regs": f"{pt['registers']:.0f}",
        "past_p11_regs": f"{p11['registers']:.0f}",
        "past_pt_gmma_m": f"{pt['gmma_inst'] / 1e6:.1f}",
        "past_p11_gmma_m": f"{p11['gmma_inst'] / 1e6:.1f}",
        "past_pc_gmma_m": f"{pc['gmma_inst'] / 1e6:.1f}",
        "past_pt_inst_m": f"{pt['inst_executed'] / 1e6:.1f}",
        "past_p11_inst_m": f"{p11['inst_executed'] / 1e6:.1f}",
        "past_pc_inst_m": f"{pc['inst_executed'] / 1e6:.1f}",
        "past_pt_l2_read_mb": f"{pt['l2_read_bytes'] / 1e6:.0f}",
        "past_fp8_grid_4096": ratio(f11, "e4m3", 4096),
        "past_fp8_grid_8192": ratio(f11, "e4m3", 8192),
        "past_processes": str(min(r["processes"] for r in results.load("hopper_past")["rows"]
                                  if r["part"] == "summary")),
        "past_out16_4096_fp16": ratio("cluster 16-bit out", "float16", 4096),
        "past_tms16_4096_fp16": ratio("tmastore 16-bit out", "float16", 4096),
        "past_p8_tensor": f"{p8['tensor_active_pct']:.1f}",
        "past_p9_tensor": f"{p9['tensor_active_pct']:.1f}",
        "past_pc_tensor": f"{pc['tensor_active_pct']:.1f}",
        "past_p8_write_mb": f"{p8['dram_write_bytes'] / 1e6:.0f}",
        "past_p9_write_mb": f"{p9['dram_write_bytes'] / 1e6:.0f}",
        **left_values(ratio, spread),
    }


def left_values(ratio, spread) -> dict:
    """The numbers of *What is left at 4096³*: torch.mm's kernel profiled beside rung 11, and
    rung 11 with one change each (sleeping waits, 16-row groups, slot counters, then
    descriptor steps); the FP32-C rung on 128 blocks, and its ring of staging boxes."""
    p11, pt = profile("wgmma_grid128_fp16"), profile("torch.mm f16")
    ps, pg, pk = (profile("past:" + SLEEP), profile("past:" + GROUP16),
                  profile("past:" + COUNTERS))
    pd, pfr = profile("past:" + STEPS), profile("past:" + F32_RING)
    pfk, pc = profile("past:" + F32_COUNTERS), profile("cublas_fp16")
    out = {
        "left_torch_kernel": pt["ncu_kernel"],
        "left_torch_us": f"{pt['duration_us']:.1f}",
        "left_r11_us": f"{p11['duration_us']:.1f}",
        "left_torch_tensor": f"{pt['tensor_active_pct']:.1f}",
        "left_r11_tensor": f"{p11['tensor_active_pct']:.1f}",
        "left_torch_mhz": f"{pt['sm_mhz']:.0f}",
        "left_r11_mhz": f"{p11['sm_mhz']:.0f}",
        "left_torch_dram_mb": f"{pt['dram_read_bytes'] / 1e6:.0f}",
        "left_r11_dram_mb": f"{p11['dram_read_bytes'] / 1e6:.0f}",
        "left_torch_inst_m": f"{pt['inst_executed'] / 1e6:.1f}",
        "left_r11_inst_m": f"{p11['inst_executed'] / 1e6:.1f}",
        "left_sleep_inst_m": f"{ps['inst_executed'] / 1e6:.1f}",
        "left_g16_dram_mb": f"{pg['dram_read_bytes'] / 1e6:.0f}",
        "left_counters_inst_m": f"{pk['inst_executed'] / 1e6:.1f}",
        "left_counters_issue": f"{pk['issue_active_pct']:.1f}",
        "left_r11_issue": f"{p11['issue_active_pct']:.1f}",
        "left_cublas_us": f"{pc['duration_us']:.1f}",
        "left_cublas_tensor": f"{pc['tensor_active_pct']:.1f}",
        "left_f32_write_mb": f"{pfk['dram_write_bytes'] / 1e6:.0f}",
        "left_r11_write_mb": f"{p11['dram_write_bytes'] / 1e6:.0f}",
        "left_counters_4096_range": spread(COUNTERS, "float16", 4096),
        "left_steps_inst_m": f"{pd['inst_executed'] / 1e6:.1f}",
        "left_steps_4096_range": spread(STEPS, "float16", 4096),
        "left_ring_us": f"{pfr['duration_us']:.1f}",
        "left_ring_tensor": f"{pfr['tensor_active_pct']:.1f}",
        "left_ring_barrier": f"{pfr['stalls']['barrier']:.2f}",
        "left_f32d_barrier": f"{profile('past:' + F32_STEPS)['stalls']['barrier']:.2f}",
        **uniform_values(ratio, spread),
    }
    out.update({
        "left_sleep_4096_fp16": ratio(SLEEP, "float16", 4096),
        "left_sleep_8192_fp16": ratio(SLEEP, "float16", 8192),
        "left_sleep_4096_bf16": ratio(SLEEP, "bfloat16", 4096),
        "left_sleep_8192_bf16": ratio(SLEEP, "bfloat16", 8192),
        "left_g16_4096_fp16": ratio(GROUP16, "float16", 4096),
        "left_g16_8192_fp16": ratio(GROUP16, "float16", 8192),
        "left_g16_4096_bf16": ratio(GROUP16, "bfloat16", 4096),
        "left_g16_8192_bf16": ratio(GROUP16, "bfloat16", 8192),
        "left_counters_4096_fp16": ratio(COUNTERS, "float16", 4096),
        "left_counters16_4096_fp16": ratio(COUNTERS16, "float16", 4096),
        "left_counters16_8192_fp16": ratio(COUNTERS16, "float16", 8192),
        "left_counters16_4096_bf16": ratio(COUNTERS16, "bfloat16", 4096),
        "left_counters16_8192_bf16": ratio(COUNTERS16, "bfloat16", 8192),
        "left_f32_4096_fp16": ratio(F32, "float16", 4096),
        "left_steps_4096_fp16": ratio(STEPS, "float16", 4096),
        "left_f32d_4096_fp16": ratio(F32_STEPS, "float16", 4096),
        "left_ring_4096_fp16": ratio(F32_RING, "float16", 4096),
        "left_vec_4096_fp16": ratio(VECTOR, "float16", 4096),
        "left_vec_8192_fp16": ratio(VECTOR, "float16", 8192),
        "left_vec_4096_bf16": ratio(VECTOR, "bfloat16", 4096),
        "left_vec_8192_bf16": ratio(VECTOR, "bfloat16", 8192),
        "left_warp_4096_fp16": ratio(F32_WARP, "float16", 4096),
        "left_warp_8192_fp16": ratio(F32_WARP, "float16", 8192),
        "left_warp_4096_bf16": ratio(F32_WARP, "bfloat16", 4096),
        "left_warp_8192_bf16": ratio(F32_WARP, "bfloat16", 8192),
    })
    return out


def uniform_values(ratio, spread) -> dict:
    """Rungs 15 and 16 (rungs 13 and 14 with the uniform index), the evict-first policy for C,
    and rung 17 (rung 16's C handed to store threads): their ratios, and what one profiled
    launch of each says beside the yardsticks."""
    pu, pf = profile("past:" + UNIFORM), profile("past:" + F32_UNIFORM)
    pe, ph = profile("past:" + EVICT), profile("past:" + F32_HANDOFF)
    pt, pc = profile("torch.mm f16"), profile("cublas_fp16")
    t15, t17 = trace(UNIFORM), trace(F32_HANDOFF)
    size = t17["m"]
    blocks = wgmma.RUNG_CONFIGS["wgmma_handoff"].grid
    tiles = t17["tiles"] // (2 * blocks)      # a block's tiles (two warpgroup-tiles each)

    def us(kernel, dtype):                    # the median time of one call at the traced size
        return 2 * size ** 3 / (summary(kernel, dtype, size)["tflops"] * 1e6)

    ours = us(F32_HANDOFF, "float16") - us(UNIFORM, "float16")
    lib = us("cublas_fp16 (FP32 out)", "float16") - us("torch.mm f16 (F16 out)", "float16")
    out = {"uni_inst_m": f"{pu['inst_executed'] / 1e6:.1f}",
           "uni_torch_inst_m": f"{pt['inst_executed'] / 1e6:.1f}",
           "uni_us": f"{pu['duration_us']:.1f}", "uni_torch_us": f"{pt['duration_us']:.1f}",
           "uni_f32_us": f"{pf['duration_us']:.1f}", "uni_cublas_us": f"{pc['duration_us']:.1f}",
           "evict_dram_mb": f"{pe['dram_read_bytes'] / 1e6:.0f}",
           "evict_uni_dram_mb": f"{pu['dram_read_bytes'] / 1e6:.0f}",
           "uni_4096_fp16_range": spread(UNIFORM, "float16", 4096),
           "h17_kcycles": f"{ph['sm_active_cycles_avg'] / 1e3:.1f}",
           "f32u_kcycles": f"{pf['sm_active_cycles_avg'] / 1e3:.1f}",
           "h17_barrier": f"{ph['stalls']['barrier']:.2f}",
           "f32u_barrier": f"{pf['stalls']['barrier']:.2f}",
           "h17_long": f"{ph['stalls']['long_scoreboard']:.1f}",
           "f32u_long": f"{pf['stalls']['long_scoreboard']:.1f}",
           "h17_4096_fp16_range": spread(F32_HANDOFF, "float16", 4096),
           "tile15_main_us": f"{t15['mainloop_p50_us']:.1f}",
           "tile15_epi_us": f"{t15['epilogue_p50_us']:.2f}",
           "tile17_main_us": f"{t17['mainloop_p50_us']:.1f}",
           "tile17_epi_us": f"{t17['epilogue_p50_us']:.2f}",
           "tile_count": f"{t17['tiles']:,}", "tile_per_block": str(tiles),
           "tile_f32_us": f"{ours:.1f}", "tile_cublas_f32_us": f"{lib:.1f}"}
    out.update({
        "uni_4096_fp16": ratio(UNIFORM, "float16", 4096),
        "evict_4096_fp16": ratio(EVICT, "float16", 4096),
        "evict_8192_fp16": ratio(EVICT, "float16", 8192),
        "evict_4096_bf16": ratio(EVICT, "bfloat16", 4096),
        "evict_8192_bf16": ratio(EVICT, "bfloat16", 8192),
        "f32e_4096_fp16": ratio(F32_EVICT, "float16", 4096),
        "f32e_8192_fp16": ratio(F32_EVICT, "float16", 8192),
        "f32e_4096_bf16": ratio(F32_EVICT, "bfloat16", 4096),
        "f32e_8192_bf16": ratio(F32_EVICT, "bfloat16", 8192),
        "h17_4096_fp16": ratio(F32_HANDOFF, "float16", 4096),
    })
    return out
