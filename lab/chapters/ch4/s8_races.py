"""Chapter 4, section 8: races, compute-sanitizer's verdict on every rung."""
from __future__ import annotations

from lab import page, results


def sanitizer_table():
    """compute-sanitizer's memcheck and racecheck on the double-buffered kernels."""
    rows = [r for r in results.rows("sanitizer")
            if r["kernel"] in ("pipelined", "warptile", "warptile_tuned")]
    out: dict = {}
    for r in rows:
        key = (r["kernel"], f"{r['m']}×{r['n']}×{r['k']}")
        errors = r["errors"] if r["errors"] is not None else f"exit {r['returncode']}"
        out.setdefault(key, {"kernel": key[0], "shape": key[1]})[r["tool"]] = errors
    return page.table(list(out.values()), ["kernel", "shape", "memcheck", "racecheck"],
                      {"shape": "M×N×K", "memcheck": "memcheck errors",
                       "racecheck": "racecheck hazards"},
                      source=results.source_line("sanitizer"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    san = [r for r in results.rows("sanitizer")
           if r["kernel"] in ("pipelined", "warptile", "warptile_tuned")]
    v["sanitizer_runs"] = str(len(san))
    v["sanitizer_errors"] = str(sum(r["errors"] or 0 for r in san))
    return v
