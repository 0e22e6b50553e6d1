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


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    sass = {r["kernel"]: r for r in sass_rows()}
    mix16 = compiler.report("tiled16")[0].loop_mix
    v["lds_per_ffma_16"] = f"{sass['tiled16']['lds_per_ffma']:.2f}"
    v["lds128_16"] = str(mix16.get("LDS.128", 0))
    v["lds32_16"] = str(mix16.get("LDS", 0))
    v["ffma_16"] = str(mix16.get("FFMA", 0))
    v["loop_16"] = str(sass["tiled16"]["loop"])
    if "s003_tiled16" in sass:
        v["loop_twin_16"] = str(sass["s003_tiled16"]["loop"])
        v["ffma_s004_16"] = str(sass["s004_tiled16"]["ffma"])
        v["steps_s004_16"] = str(sass["s004_tiled16"]["ffma"] // 16)
        v["bar_s004_16"] = str(sass["s004_tiled16"]["bar"])
    else:
        for key in ("loop_twin_16", "ffma_s004_16", "steps_s004_16", "bar_s004_16"):
            v[key] = "(nvcc not installed)"
    return v
