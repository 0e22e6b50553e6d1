"""Chapter 1, section 5: Numba and CUDA C, one loop and two compilers (SASS counts, measured
ratios).
"""
from __future__ import annotations

from lab import compiler, page, twins
from lab.chapters import common
from lab.chapters.common import ratio_rows


#: Numba kernels and their nvcc-built twins for the SASS comparison.
SASS_NUMBA = ("naive_literal", "naive")


SASS_TWINS = ("s003_naive", "s004_naive")


#: (Numba kernel, CUDA C twin) pairs of the timing comparison.
PAIRS = (("naive_literal", "s003_naive"), ("naive", "s003_naive"), ("naive", "s004_naive"),
         ("naive_swapped", "s004_naive_swapped"))


def loop_row(report, compiled_by: str) -> dict:
    """Registers and the hottest loop's FFMA / LDG / total counts of one compile report."""
    loop = report.loop_mix
    total = sum(loop.values())
    ffma = loop.get("FFMA", 0)
    ldg = sum(c for op, c in loop.items() if op.startswith("LDG"))
    return {"kernel": report.kernel, "compiler": compiled_by, "registers": report.registers,
            "loop": total, "ffma": ffma, "ldg": ldg, "per_ffma": total / ffma}


def twin_reports() -> list:
    """nvcc -O3 compile reports of the sources' naive kernels ([] where nvcc is not installed)."""
    try:
        return [twins.compile_report(t) for t in SASS_TWINS]
    except FileNotFoundError:
        return []


def sass_rows() -> list[dict]:
    """One row per Numba kernel and nvcc twin: the hottest loop's instruction counts."""
    rows = [loop_row(compiler.report(k)[0], "Numba") for k in SASS_NUMBA]
    return rows + [loop_row(r, "nvcc -O3") for r in twin_reports()]


def sass_table():
    """The hottest loops of the literal and typed Numba kernels and of nvcc's twins."""
    return page.table(sass_rows(), ["kernel", "compiler", "registers", "loop", "ffma", "ldg",
                                    "per_ffma"],
                      {"loop": "loop instructions", "ffma": "FFMA", "ldg": "LDG",
                       "per_ffma": "per FFMA"})


def ratio_table(pairs=PAIRS):
    """Numba against CUDA C, kernel by kernel (:func:`lab.chapters.common.ratio_table`)."""
    return common.ratio_table(pairs)


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    sass = {r["kernel"]: r for r in sass_rows()}
    lit_mix = compiler.report("naive_literal")[0].loop_mix
    literal, typed, twin = (sass.get(name, {}) for name in ("naive_literal", "naive", "s003_naive"))
    v["loop_literal"] = str(literal.get("loop", "-"))
    v["ffma_literal"] = str(literal.get("ffma", "-"))
    v["loop_typed"] = str(typed.get("loop", "-"))
    v["ffma_typed"] = str(typed.get("ffma", "-"))
    v["ldg_typed"] = str(typed.get("ldg", "-"))
    v["loop_twin"] = str(twin.get("loop", "-"))
    v["ffma_twin"] = str(twin.get("ffma", "-"))
    v["ldg_twin"] = str(twin.get("ldg", "-"))
    v["sel_literal"] = str(sum(c for op, c in lit_mix.items() if op.endswith("SEL")))
    ratio = {(r["numba"], r["twin"], r["n"]): r["ratio"] for r in ratio_rows(PAIRS)}
    v["ratio_naive_1024"] = f"{ratio[('naive', 's003_naive', 1024)]:.2f}"
    v["ratio_naive_4096"] = f"{ratio[('naive', 's003_naive', 4096)]:.2f}"
    v["slowdown_literal"] = f"{1 / ratio[('naive_literal', 's003_naive', 1024)]:.1f}"
    return v
