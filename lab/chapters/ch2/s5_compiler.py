"""Chapter 2, section 5: what the compiler made of it (the inner loop's SASS, ours beside nvcc's
build of the sources' kernels).
"""
from __future__ import annotations

import functools

from lab import compiler, page, twins
from lab.chapters.ch2.s4_check import KERNELS


#: nvcc builds of the seeds' tiled kernels whose machine code the chapter reads.
SASS_TWINS = ("s003_tiled16", "s004_tiled16", "s004_tiled32")


def _loop_row(report, compiled_by: str) -> dict:
    loop = report.loop_mix
    total = sum(loop.values())
    ffma = loop.get("FFMA", 0)
    lds = sum(c for op, c in loop.items() if op.startswith("LDS"))
    return {"kernel": report.kernel, "compiler": compiled_by, "loop": total, "ffma": ffma,
            "lds": lds, "bar": loop.get("BAR", 0), "lds_per_ffma": lds / ffma,
            "share": ffma / total}


@functools.lru_cache(maxsize=None)
def sass_rows() -> tuple[dict, ...]:
    """The hottest loop of each tiled kernel (Numba) and of the sources' tiled kernels (nvcc)."""
    rows = [_loop_row(compiler.report(k)[0], "Numba") for k in KERNELS]
    try:
        rows += [_loop_row(twins.compile_report(t), "nvcc -O3") for t in SASS_TWINS]
    except FileNotFoundError:
        pass
    return tuple(rows)


def sass_table():
    """Instruction counts of the hottest loops."""
    return page.table(list(sass_rows()), ["kernel", "compiler", "loop", "ffma", "lds", "bar",
                                          "share"],
                      {"loop": "loop instructions", "ffma": "FFMA", "lds": "LDS", "bar": "BAR",
                       "share": "FFMA share"})
