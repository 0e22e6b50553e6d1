"""Section 4, how a call is served: the dispatcher's choice (``lab.gemm.explain``, for any GPU
capability, no GPU needed), a check under the simulator, and the launch path (``lab.enqueue``)."""
from __future__ import annotations

import numpy as np

from lab import enqueue, page
from lab.dispatch import SM_DEFAULT, SMALL_M, choose

SHAPES = ((4096, 4096, 4096), (1024, 1024, 1024), (1, 4096, 4096), (8192, 64, 8192),
          (4097, 4097, 4097))
CAPABILITIES = ((9, 0), (8, 0), (7, 5))


def choice_rows() -> list[dict]:
    """What ``lab.gemm`` picks for FP16 in and out at a few shapes on three GPU generations."""
    out = []
    for m, n, k in SHAPES:
        row = {"shape": f"{m}×{n}×{k}"}
        for cc in CAPABILITIES:
            c = choose(m, n, k, "float16", "float16", cc, SM_DEFAULT)
            name = c.kernel + (f" /{c.splits}" if c.splits > 1 else "")
            row[f"{cc[0]}.{cc[1]}"] = name + (" (timed)" if c.candidates else "")
        out.append(row)
    return out


def choice_table():
    return page.table(choice_rows(), title="FP16 in, FP16 out; /s: split-K into s slices; "
                      "(timed): candidates timed on the first call")


def explain(m: int = 1, n: int = 4096, k: int = 4096, cc=(9, 0)) -> str:
    """``lab.gemm.explain``'s explanation for one shape."""
    return str(choose(m, n, k, "float16", "float16", cc, SM_DEFAULT))


def simulator_check(seed: int = 9) -> str:
    """``lab.gemm`` on small odd FP16 shapes here (on a GPU: its kernel; in the simulator: the
    SIMT path), each against float64, ``out`` poisoned with NaN first."""
    import lab
    from numba import cuda

    rng = np.random.default_rng(seed)
    lines = []
    for m, n, k in ((1, 1, 1), (17, 9, 33), (40, 24, 7)):
        a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
        c = cuda.to_device(np.full((m, n), np.nan, np.float16))
        lab.gemm(cuda.to_device(a), cuda.to_device(b), c)
        got = c.copy_to_host().astype(np.float64)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
        ok = not np.isnan(got).any() and err < 1e-2
        lines.append(f"{m}x{n}x{k}: {'passed' if ok else 'FAILED'} (error below 1e-2: {ok})")
    return "\n".join(lines)


def plan_source():
    """A plan's launch: one driver call."""
    return page.source(enqueue, "plan_launch")


def values() -> dict:
    return {"dispatch_small_m": str(SMALL_M)}
