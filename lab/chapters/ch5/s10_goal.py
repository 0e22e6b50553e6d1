"""Section 'The goal, and what stands between us and the library': wgmma's target, the compiler's
facts for the rungs, and compute-sanitizer's verdicts.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from lab import compiler, device, model, page, results
from lab.chapters.ch5.common import ladder
from lab.kernels import k08_tc_pipeline


#: Kernels whose compile facts the chapter shows (the BF16 twins compile to the same code).
COMPILED = ("wmma_m16n16k16_f32", "tc_naive_fp16", "tc_smem", "tc_pipeline", "tc_fp16")


def compile_reports() -> dict:
    """Offline compile reports (sm_90) of :data:`COMPILED`; under the simulator each compiles in
    its own process, two at a time."""
    with ThreadPoolExecutor(max_workers=2 if device.SIMULATOR else 1) as pool:
        reports = dict(zip(COMPILED, pool.map(lambda k: compiler.report(k)[0], COMPILED)))
    return reports


def compile_rows(reports: dict) -> list[dict]:
    """Registers, resident warps and the hottest loop's instruction mix per kernel."""
    rows = []
    for name, rep in reports.items():
        cfg = k08_tc_pipeline.RUNG_CONFIGS.get(name)
        threads = cfg.threads if cfg else 128
        smem = cfg.shared_bytes if cfg else 0
        blocks = model.blocks_per_sm(threads, rep.registers, smem)
        loop = rep.loop_mix
        total = sum(loop.values())
        rows.append({"kernel": name, "registers": rep.registers,
                     "spills": rep.spill_stores + rep.spill_loads,
                     "warps": blocks * threads // 32, "hmma": loop.get("HMMA", 0),
                     "loads": sum(v for op, v in loop.items()
                                  if op == "LD" or op.startswith(("LDG", "LDSM", "LDGSTS"))),
                     "total": total, "share": loop.get("HMMA", 0) / total})
    return rows


def compile_table(reports: dict):
    """The compile facts table (not a measurement: the compiler's output for sm_90)."""
    return page.table(compile_rows(reports), ["kernel", "registers", "warps", "hmma", "loads",
                                              "total", "share"],
                      {"warps": "warps/SM", "hmma": "loop HMMA",
                       "loads": "loop loads", "total": "loop total", "share": "HMMA share"})


def compile_values(reports: dict) -> dict:
    """The compile facts the prose quotes."""
    rows = {r["kernel"]: r for r in compile_rows(reports)}
    fp16, naive, wmma = rows["tc_fp16"], rows["tc_naive_fp16"], rows["wmma_m16n16k16_f32"]
    wmma_rep = reports["wmma_m16n16k16_f32"]
    rep = reports["tc_fp16"]
    ops = sorted(set(re.findall(r"\b(?:HMMA|LDSM|LDGSTS)\.[\w.]+", rep.sass)))
    target = next(ln for ln in rep.sass.splitlines() if ln.strip().startswith(".target"))
    return {"fp16_regs": str(fp16["registers"]), "fp16_warps": str(fp16["warps"]),
            "fp16_hmma_share": f"{fp16['share']:.0%}",
            "naive_loop_loads": str(naive["loads"]), "naive_loop_hmma": str(naive["hmma"]),
            "wmma_loop_loads": str(wmma["loads"]), "wmma_loop_hmma": str(wmma["hmma"]),
            "wmma_loop_movm": str(reports["wmma_m16n16k16_f32"].loop_mix.get("MOVM", 0)),
            "wmma_hmma_per_mma": str(wmma_rep.mix.get("HMMA", 0)
                                     // sum(text.count("wmma.mma.sync") for text in
                                            compiler.ptx("wmma_m16n16k16_f32")[1])),
            "wmma_hmma_op": next(iter(sorted(set(re.findall(
                r"\bHMMA\.[\w.]+", reports["wmma_m16n16k16_f32"].sass)))), "-"),
            "fp16_opcodes": ", ".join(ops), "ptx_target": target.split()[-1],
            "ptxas_version": ptxas_version()}


def ptxas_version() -> str:
    """The release of the ``ptxas`` behind the compiler facts the chapter prints (e.g. ``"13.5"``):
    the pinned wheel that recorded ``lab/facts/compiler.json``."""
    version = compiler.facts_toolchain().get("nvidia-cuda-nvcc") or "?"
    return ".".join(version.split(".")[:2])


def wgmma_probe() -> list[str]:
    """``wgmma.fence`` assembled by ptxas for sm_90 and for sm_90a (the committed facts where a
    machine lacks the pinned ptxas); one verdict each."""
    lines = []
    for target, (ok, messages) in compiler.wgmma_probe().items():
        verdict = ("assembles" if ok else
                   "refused: " + re.sub(r"^.*error\s*:\s*", "", messages.splitlines()[0]))
        lines.append(f"wgmma.fence for {target:<7} {verdict}")
    return lines


def sanitizer_table():
    """compute-sanitizer over the tensor-core kernels, one row per kernel."""
    by: dict = {}
    for r in results.rows("sanitizer"):
        if r["kernel"].startswith("tc_"):
            by.setdefault(r["kernel"], []).append(r)
    rows = []
    for name, rs in by.items():
        shapes = sorted({(r["m"], r["n"], r["k"]) for r in rs}, reverse=True)
        rows.append({"kernel": name, "tools": ", ".join(sorted({r["tool"] for r in rs})),
                     "shapes": ", ".join("×".join(map(str, s)) for s in shapes),
                     "errors": sum(r["errors"] for r in rs),
                     "check": "PASS" if all(r["check"] == "PASS" for r in rs) else "FAIL"})
    return page.table(rows, ["kernel", "tools", "shapes", "errors", "check"],
                      {"shapes": "shapes (M×N×K)"}, source=results.source_line("sanitizer"))


def values() -> dict:
    """The goal's numbers: the share of cuBLAS reached, BF16's, the ladder's whole gain and the
    accumulator registers of the tuned warp tile."""
    lad = ladder()
    fp16 = k08_tc_pipeline.RUNG_CONFIGS["tc_fp16"]
    return {"goal_pct": f"{lad['tc_fp16']['ratio_to_cublas_fp16']:.1%}",
            "bf16_pct": f"{lad['tc_bf16']['tflops'] / lad['cublas_bf16']['tflops']:.1%}",
            "ladder_gain": f"{lad['tc_fp16']['tflops'] / lad['tc_naive_fp16']['tflops']:.0f}",
            "acc_regs": str(fp16.wm * fp16.wn // 32)}
