"""Chapter 3, section 6: Numba against CUDA C, the T4 study's register kernel as a twin."""
from __future__ import annotations

from lab import page, results, twins
from lab.chapters.common import loop_counts, report
from lab.chapters.ch3.s5_measured import TWIN, TWIN_OF, sweep, signed_sweep
from lab.chapters.ch3.s3_check import PATCH
from lab.chapters.ch3.s1_idea import _f
from lab.chapters.ch3.s4_bill import compiler_rows


#: The pairs of chapters 1-2 (Numba kernel, CUDA C twin) timed in ``naive_tiled``: every twin
#: in :mod:`lab.twins` but the register kernel's, in the order the twins are listed there.
EARLIER_TWINS = tuple((t.twin_of, t.name) for t in twins.TWINS.values() if t.name != TWIN)


def twin_compile_table():
    """``patch4`` (Numba) beside its CUDA C twin (nvcc -O3): registers and the hottest loop."""
    rows = []
    for target, who in ((TWIN_OF, "Numba"), (f"twin:{TWIN}", "nvcc -O3")):
        r = report(target)
        rows.append({"kernel": r.kernel, "compiler": who, "registers": r.registers,
                     **loop_counts(r)})
    return page.table(rows, ["kernel", "compiler", "registers", "loop", "ffma", "share", "lds"],
                      {"loop": "loop instr.", "ffma": "FFMA", "share": "FFMA share",
                       "lds": "shared loads"})


def twin_rows() -> list[dict]:
    """Numba against CUDA C at 4096³: chapters 1–2's pairs and the register kernel."""
    size = {(r["kernel"], r["n"]): r for r in results.rows("naive_tiled", part="size")}
    rows = []
    for ours, twin in EARLIER_TWINS:
        mine, theirs = size.get((ours, 4096)), size.get((twin, 4096))
        if mine and theirs:
            rows.append({"ours": ours, "twin": twin, "ours_ms": mine["median_ms"],
                         "twin_ms": theirs["median_ms"],
                         "ratio": theirs["median_ms"] / mine["median_ms"]})
    s = sweep()
    mine, theirs = s["ours"].get(TWIN_OF), s["twin"]
    if mine and theirs:
        rows.append({"ours": TWIN_OF, "twin": TWIN, "ours_ms": mine["median_ms"],
                     "twin_ms": theirs["median_ms"],
                     "ratio": theirs["median_ms"] / mine["median_ms"]})
    return rows


def twin_table():
    """The register kernel's row of :func:`twin_rows` as a table (twin time ÷ Numba time; ≥ 1:
    Numba at least as fast); chapters 1 and 2 show their own pairs."""
    return page.table([r for r in twin_rows() if r["twin"] == TWIN],
                      ["ours", "twin", "ours_ms", "twin_ms", "ratio"],
                      {"ours": "Numba kernel", "twin": "CUDA C twin", "ours_ms": "Numba (ms)",
                       "twin_ms": "twin (ms)", "ratio": "twin ÷ Numba"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    rows = {r["kernel"]: r for r in compiler_rows()}
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {}
    p4, p8 = ours["patch4"], ours["patch8"]
    twin = report(f"twin:{TWIN}")
    v["regs_twin"] = str(twin.registers)
    v["share_twin"] = _f(loop_counts(twin)["share"], 2)
    v["lds_twin"] = loop_counts(twin)["lds"]
    v["lds_patch4"] = loop_counts(report(TWIN_OF))["lds"]
    if s["twin"]:
        ratio = s["twin"]["median_ms"] / p4["median_ms"]
        v["twin_ratio"] = f"{ratio:.2f}"
        v["twin_tflops"] = _f(s["twin"]["tflops"])
        v["twin_verdict"] = ("at least as fast as" if ratio >= 1
                             else f"at {ratio:.0%} of the speed of")
    else:
        v["twin_ratio"] = v["twin_tflops"] = "(not measured)"
        v["twin_verdict"] = "not yet measured against"
    earlier = [r["ratio"] for r in twin_rows() if r["ours"] != TWIN_OF]
    v["earlier_lo"] = f"{min(earlier):.2f}" if earlier else "-"
    v["earlier_hi"] = f"{max(earlier):.2f}" if earlier else "-"
    v["twin_k_per_trip"] = str(loop_counts(twin)["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["patch4_k_per_trip"] = str(rows[TWIN_OF]["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["twin_warps"] = str(s["twin"]["warps_per_sm"]) if s["twin"] else "-"
    return v
