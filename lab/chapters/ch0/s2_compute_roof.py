"""Chapter 0, section 2: the compute roof, FMA chains in registers, and what the compiler made
of the kernel.
"""
from __future__ import annotations

from lab import compiler, page


#: The FMA kernel as :mod:`lab.compiler` names it.
FMA_KERNEL = "lab.roofline:fma_kernel"


def fma_report():
    """The offline compile report (sm_90) of the FMA-chains kernel."""
    return compiler.report(FMA_KERNEL)[0]


def compiler_table():
    """Registers, spills and the hottest loop of the FMA kernel, from ptxas and nvdisasm."""
    r = fma_report()
    loop = r.loop_mix
    total = sum(loop.values())
    row = {"registers": r.registers, "spill_bytes": r.spill_stores + r.spill_loads,
           "loop": total, "ffma": loop.get("FFMA", 0), "other": total - loop.get("FFMA", 0),
           "share": loop.get("FFMA", 0) / total}
    return page.table([row], list(row),
                      {"registers": "registers", "spill_bytes": "spills (bytes)",
                       "loop": "loop instructions", "ffma": "FFMA", "other": "other",
                       "share": "FFMA share"})
