"""Chapter 3, section 3: run and check, every patch kernel against float64 past its tile edges."""
from __future__ import annotations

from lab import bench, page


#: Patch size of each kernel.
PATCH = {"patch1": 1, "patch2": 2, "patch4": 4, "patch8": 8, "block128": 8}


#: Correctness checks: shapes just past a block tile (every edge path) and one round shape.
CHECKS = (("patch1", (17, 9, 20)), ("patch2", (33, 10, 17)), ("patch4", (65, 20, 17)),
          ("patch4", (64, 64, 32)), ("block128", (129, 20, 9)))


def check_rows() -> list[dict]:
    """Each check of :data:`CHECKS` on fresh random inputs against float64."""
    rows = []
    for name, (m, n, k) in CHECKS:
        v = bench.check(name, m, n, k)
        rows.append({"kernel": name, "shape": f"{m}×{n}×{k}",
                     "tile": "{0}×{0}".format(16 * PATCH[name]) if name != "block128"
                     else "128×128",
                     "verdict": "PASS" if v.passed else f"FAIL ({v.reason})"})
    return rows


def check_table():
    """The verdicts of :func:`check_rows` (M×N×K, block tile, PASS/FAIL)."""
    return page.table(check_rows(), ["kernel", "shape", "tile", "verdict"],
                      {"shape": "M×N×K", "tile": "block tile"})
