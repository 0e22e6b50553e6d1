"""Chapter 4, section 3: evidence from the compiler (registers, spills, the main loop's SASS)."""
from __future__ import annotations

from lab import model, page
from lab.chapters import common
from lab.kernels import k03_registers
from lab.chapters.ch4.s1_kernel import config


#: Everything the compiler table shows: fast kernels, and the edge kernel of the tuned one.
COMPILED = ("block128", "vectorized", "warptile_tuned", "warptile_tuned#edges")


def _threads(name: str) -> int:
    """Threads per block of a compiled kernel (for its occupancy)."""
    return k03_registers.THREADS ** 2 if name == "block128" else config(name).threads


def compiler_rows() -> list[dict]:
    """Registers, occupancy, shared memory and the hottest loop of each of :data:`COMPILED`."""
    rows = []
    for target in COMPILED:
        name = target.split("#")[0]
        r = common.report(target)
        occ = model.occupancy(_threads(name), r.registers, r.shared_bytes)
        rows.append({"kernel": name + (" (edges)" if "#" in target else ""),
                     "registers": r.registers, "spills": r.spill_stores + r.stack_bytes,
                     "warps": occ["warps_per_sm"], "blocks": occ["blocks_per_sm"],
                     "shared": r.shared_bytes, "ldg128": r.mix.get("LDG.128", 0),
                     **common.loop_counts(r)})
    return rows


def compiler_table():
    """:func:`compiler_rows` as a table."""
    return page.table(compiler_rows(), ["kernel", "registers", "warps", "shared", "loop", "share",
                                        "lds"],
                      {"warps": "warps/SM", "shared": "shared (B)", "loop": "loop instr.",
                       "share": "FFMA share", "lds": "loop shared loads"},
                      source="Source: lab/facts/compiler.json (ptxas -v and nvdisasm, sm_90, "
                             "pinned wheels); occupancy from the sm_90 limits.")


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    comp = {r["kernel"]: r for r in compiler_rows()}
    b128, vec = comp["block128"], comp["vectorized"]
    tuned, edges = comp["warptile_tuned"], comp["warptile_tuned (edges)"]
    v = {}
    v["b128_regs"], v["b128_blocks"] = str(b128["registers"]), str(b128["blocks"])
    v["b128_loop"], v["b128_ffma"] = str(b128["loop"]), str(b128["ffma"])
    v["b128_lds"], v["b128_share"] = b128["lds"], f"{b128['share']:.2f}"
    v["b128_other"] = str(b128["loop"] - b128["ffma"] - b128["lds_count"])
    v["vec_loop"] = str(vec["loop"])
    v["vec_share"], v["vec_lds"] = f"{vec['share']:.2f}", vec["lds"]
    v["vec_k_per_loop"] = f"{vec['ffma'] // 64}"
    v["tuned_share"] = f"{tuned['share']:.2f}"
    v["tuned_loop"] = str(tuned["loop"])
    v["edge_regs"], v["edge_warps"] = str(edges["registers"]), str(edges["warps"])
    v["max_spills"] = str(max(r["spills"] for r in comp.values()))
    v["fast_regs_max"] = str(max(r["registers"] for k, r in comp.items() if "edges" not in k
                                 and k != "block128"))
    v["vec_warps"] = str(vec["warps"])
    return v
