"""Chapter 3, section 4: the register bill from the compiler (registers, spills, the hottest
loop), and the signed-index detour.
"""
from __future__ import annotations

from lab import model, page, seeds
from lab.chapters.common import loop_counts, report
from lab.kernels import k03_registers
from lab.chapters.ch3.s1_idea import _f


#: The chapter's kernels: the sweep (16 × 16 threads, BK 16) and the 128 × 128 block tile.
KERNELS = ("patch1", "patch2", "patch4", "patch8", "block128")


#: The first, signed-index build of each kernel (unregistered; compiled offline only).
SIGNED = {name: f"lab.kernels.k03_registers:int32_{name}" for name in KERNELS}


#: Threads per block in every kernel of the chapter.
BLOCK_THREADS = k03_registers.THREADS ** 2


def compiler_rows(signed: bool = False) -> list[dict]:
    """One row per kernel: registers, spills, stack, shared memory, occupancy, hottest loop."""
    rows = []
    for name in KERNELS:
        r = report(SIGNED[name] if signed else name)
        occ = model.occupancy(BLOCK_THREADS, r.registers, r.shared_bytes)
        rows.append({"kernel": name, "registers": r.registers, "spills": r.spill_stores,
                     "stack": r.stack_bytes, "shared": r.shared_bytes,
                     "blocks": occ["blocks_per_sm"], "warps": occ["warps_per_sm"],
                     **loop_counts(r)})
    return rows


def bill_table():
    """The register bill: registers, spills, stack, shared memory and the occupancy they allow."""
    return page.table(compiler_rows(), ["kernel", "registers", "spills", "stack", "shared",
                                        "blocks", "warps"],
                      {"spills": "spills (B)", "stack": "stack (B)", "shared": "shared (B)",
                       "blocks": "blocks/SM", "warps": "warps/SM"},
                      source="Source: lab/facts/compiler.json (ptxas -v, sm_90, pinned "
                             "wheels); occupancy from the sm_90 limits for 256-thread blocks.")


def loop_table():
    """The hottest loop of each kernel: instructions, FFMA, FFMA share, shared loads."""
    return page.table(compiler_rows(), ["kernel", "loop", "ffma", "share", "lds"],
                      {"loop": "instructions", "ffma": "FFMA", "share": "FFMA share",
                       "lds": "shared loads"},
                      source="Source: lab/facts/compiler.json (nvdisasm of the sm_90 binary); "
                             "the loop is the backward branch with the most FFMA.")


def signed_table():
    """Signed against unsigned indices, from the compiler: registers, warps, FFMA share."""
    rows = []
    for s, u in zip(compiler_rows(signed=True), compiler_rows()):
        rows.append({"kernel": s["kernel"], "regs_s": s["registers"], "regs_u": u["registers"],
                     "warps_s": s["warps"], "warps_u": u["warps"], "share_s": s["share"],
                     "share_u": u["share"]})
    return page.table(rows, ["kernel", "regs_s", "regs_u", "warps_s", "warps_u", "share_s",
                             "share_u"],
                      {"regs_s": "regs int32", "regs_u": "regs uint32",
                       "warps_s": "warps int32", "warps_u": "warps uint32",
                       "share_s": "FFMA share int32", "share_u": "FFMA share uint32"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    rows = {r["kernel"]: r for r in compiler_rows()}
    srows = {r["kernel"]: r for r in compiler_rows(signed=True)}
    v = {}
    v["regs_patch4"] = str(rows["patch4"]["registers"])
    v["regs_patch8"] = str(rows["patch8"]["registers"])
    v["warps_patch4"] = str(rows["patch4"]["warps"])
    v["warps_patch8"] = str(rows["patch8"]["warps"])
    v["blocks_patch8"] = str(rows["patch8"]["blocks"])
    v["loop_patch1"] = str(rows["patch1"]["loop"])
    v["loop_patch8"] = str(rows["patch8"]["loop"])
    v["ffma_patch1"] = str(rows["patch1"]["ffma"])
    v["ffma_patch8"] = str(rows["patch8"]["ffma"])
    v["share_patch8"] = _f(rows["patch8"]["share"], 2)
    v["regs_int32_patch8"] = str(srows["patch8"]["registers"])
    v["warps_int32_patch8"] = str(srows["patch8"]["warps"])
    v["loop_int32_patch1"] = str(srows["patch1"]["loop"])
    v["ffma_int32_patch1"] = str(srows["patch1"]["ffma"])
    v["share_int32_patch8"] = _f(srows["patch8"]["share"], 2)
    v["max_spills"] = str(max(r["spills"] + r["stack"] for r in rows.values()))
    v["t4_regs_p8"] = next(t["regs_estimate"] for t in seeds.PATCH_SWEEP_T4 if t["patch"] == 8)
    v["other_patch1_pct"] = f"{1 - rows['patch1']['share']:.0%}"
    v["sm90_regs"] = f"{model.SM90_LIMITS['registers']:,}"
    v["sm90_warps"] = str(model.SM90_LIMITS["threads"] // 32)
    return v
