"""Worked solutions of the chapter's exercises."""
from __future__ import annotations

from lab import results
from lab.chapters.ch9b.s2_host_cost import _host


def exercise_1() -> dict:
    """How many 2048³ FP16 products a second each way of calling the Hopper kernel could issue
    if the host were the only limit (1e6 / host µs per call)."""
    return {path: 1e6 / _host("wgmma_tmastore_fp16", path)
            for path in ("numba", "plan", "memo", "graph")}


def exercise_2() -> float:
    """At which size does the host stop mattering for the Hopper kernel as called: the smallest
    square whose GPU time exceeds the memoised launcher's host cost (so the GPU never waits)."""
    host = _host("wgmma_tmastore_fp16", "memo")
    squares = sorted((r["m"], 1e3 * r["median_ms"]) for r in results.rows("suite")
                     if r.get("impl") == "lab.gemm" and r.get("group") == "square"
                     and r.get("method") == "gpu_only" and r.get("dtype") == "float16")
    return next(n for n, us in squares if us > host)


def values() -> dict:
    e1 = exercise_1()
    return {"ex09b_1_numba": f"{e1['numba']:,.0f}", "ex09b_1_memo": f"{e1['memo']:,.0f}",
            "ex09b_1_graph": f"{e1['graph']:,.0f}", "ex09b_2_square": f"{exercise_2()}"}
