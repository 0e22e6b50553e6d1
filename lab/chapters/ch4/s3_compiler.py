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
