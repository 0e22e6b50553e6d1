"""Chapter 4, section 2: run and check, every rung against float64 past its tile edges."""
from __future__ import annotations

from lab import bench, page
from lab.kernels import k04_vectorized
from lab.chapters.ch4.s1_kernel import config


#: Correctness checks: a shape just past the block tile (the edge kernel) and a tile multiple.
CHECKS = (("vectorized", (129, 17, 11)), ("vectorized_spread", (17, 33, 11)),
          ("pipelined", (128, 128, 16)), ("warptile", (33, 17, 13)),
          ("warptile_tuned", (64, 128, 16)))


def check_table():
    """Each check of :data:`CHECKS` on fresh random inputs against float64."""
    rows = []
    for name, (m, n, k) in CHECKS:
        cfg = config(name)
        v = bench.check(name, m, n, k)
        fast = k04_vectorized.tiles_fit(cfg, m, n, k)
        rows.append({"kernel": name, "shape": f"{m}×{n}×{k}",
                     "tile": f"{cfg.BM}×{cfg.BN}×{cfg.BK}",
                     "path": "16-byte (tile multiple)" if fast else "edges (bounds checks)",
                     "verdict": "PASS" if v.passed else f"FAIL ({v.reason})"})
    return page.table(rows, ["kernel", "shape", "tile", "path", "verdict"],
                      {"shape": "M×N×K", "tile": "block tile", "path": "kernel taken"})
