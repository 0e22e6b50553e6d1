"""Chapter 1, section 4: run and check, every naive kernel against float64 past its edges."""
from __future__ import annotations

from lab import bench, page


#: Shapes the check runs at: one element, one just past a 16 × 16 block, and a round one.
CHECK_SHAPES = ((1, 1, 1), (17, 33, 19), (32, 32, 32))


def check_table(kernels=("naive", "naive_swapped", "naive_literal"), shapes=CHECK_SHAPES):
    """Each kernel at each check shape against float64 (output filled with NaN first)."""
    rows = []
    for name in kernels:
        row = {"kernel": name}
        for i, shape in enumerate(shapes):
            v = bench.check(name, *shape, seed=i)
            row["×".join(map(str, shape))] = "PASS" if v.passed else "FAIL"
        rows.append(row)
    return page.table(rows, title="M×N×K: verdict against float64")
