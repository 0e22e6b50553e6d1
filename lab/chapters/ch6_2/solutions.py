"""Worked solutions to chapter 6.2's exercises, from the committed results."""
from __future__ import annotations

from lab import results


def two_adic(n: int) -> int:
    """The largest power of two dividing ``n``."""
    return n & -n


def exercise_1() -> dict:
    """cuBLAS FP16 at the alignment sizes, sorted by the largest power of two dividing n: the
    slowest aligned size against the fastest unaligned one, and where the cliff sits."""
    rows = sorted(results.rows("shapes", part="alignment", kernel="cublas_fp16"),
                  key=lambda r: (two_adic(r["n"]), r["n"]))
    table = [{"n": r["n"], "power_of_two": two_adic(r["n"]), "tflops": r["tflops"]}
             for r in rows]
    slow = [t for t in table if t["power_of_two"] < 8]
    fast = [t for t in table if t["power_of_two"] >= 8]
    return {"rows": table, "slow_max": max(t["tflops"] for t in slow),
            "fast_min": min(t["tflops"] for t in fast),
            "slow_sizes": [t["n"] for t in slow],
            "cliff": min(t["power_of_two"] for t in fast)}


def values() -> dict:
    """The numbers the solutions quote."""
    one = exercise_1()
    return {"ex62_1_cliff": str(one["cliff"]), "ex62_1_fast_min": f"{one['fast_min']:.0f}",
            "ex62_1_slow_sizes": ", ".join(map(str, one["slow_sizes"])),
            "ex62_1_slow_max": f"{one['slow_max']:.0f}"}
