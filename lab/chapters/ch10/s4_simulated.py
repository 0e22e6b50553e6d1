"""Chapter 10, section 4: every scheme checked first on two ranks in one process (the
simulator).
"""
from __future__ import annotations

import numpy as np

from lab import page
from lab.multi import schemes


#: The simulated check: N and K odd, so the ranks' shards differ; tails in every tile.
SIM_SHAPE = (37, 45, 29)


def simulated_rows(shape=SIM_SHAPE) -> list[dict]:
    """Every scheme on two simulated ranks: FP32 through ``warptile_tuned`` (in the simulator
    where there is no GPU), FP16 through the float64 stand-in (the tensor-core kernel needs a
    GPU). Each row: the verdict against float64."""
    m, n, k = shape
    rng = np.random.default_rng(10)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    rows = []
    for dtype, label in (("float32", "warptile_tuned"), ("float16", "float64 stand-in")):
        a, b = A.astype(dtype), B.astype(dtype)
        for s in schemes.SCHEMES:
            if dtype == "float32":
                out = schemes.simulate(s, a, b, kernel="warptile_tuned")
            else:
                out = schemes.simulate(s, a, b, matmul_fn=schemes.numpy_matmul)
            v = out["verdict"]
            rows.append({"scheme": s, "inputs": dtype, "kernel": label,
                         "copies": len(out["C"]), "bound": "≤ 1" if v.err_over_bound <= 1
                         else f"{v.err_over_bound:.1f}", "verdict": "PASS" if v.passed
                         else "FAIL"})
    return rows


def simulated_table(shape=SIM_SHAPE):
    """One row per scheme, one column per input type and kernel: the verdict and the largest
    error over the bound."""
    m, n, k = shape
    rows = {}
    for r in simulated_rows(shape):
        rows.setdefault(r["scheme"], {"scheme": r["scheme"]})[r["inputs"]] = \
            f"{r['verdict']} ({r['bound']})"
    return page.table(list(rows.values()), ["scheme", "float32", "float16"],
                      {"float32": "FP32, warptile_tuned", "float16": "FP16, float64 stand-in"},
                      title=f"Two simulated ranks, M × N × K = {m} × {n} × {k}: verdict "
                            "(largest error / bound)")


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    return {"sim_shape": " × ".join(map(str, SIM_SHAPE))}
