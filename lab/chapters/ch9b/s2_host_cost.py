"""Section 2, the host's cost: microseconds of Python and driver per call for every kernel
family, launched the old way, through plans, replayed, and from a CUDA graph (``launch_cost``)."""
from __future__ import annotations

from lab import page, results

#: The launch paths of one kernel family, and the calls of a library, with their column heads.
PATHS = {"numba": "Numba launch", "plan": "plan", "memo": "memoised", "graph": "graph replay"}
CALLS = {"call": "host µs a call", "graph": "graph replay"}


def host_rows(paths: dict = PATHS, kernels: bool = True) -> list[dict]:
    """One row per kernel family (``kernels``) or library call at each size: host µs per call
    on each of ``paths``, and the GPU time of one call (from the graph's replays)."""
    rows = [r for r in results.rows("launch_cost") if r.get("part") == "host"]
    out: dict[tuple, dict] = {}
    for r in rows:
        family = "call" not in {x["path"] for x in rows if x["kernel"] == r["kernel"]}
        if family != kernels or r["path"] not in paths:
            continue
        row = out.setdefault((r["kernel"], r["m"]), {"kernel": r["kernel"], "size": f"{r['m']}³",
                                                     **dict.fromkeys(paths), "gpu_us": None})
        row[r["path"]] = r["host_us"]
        if r["path"] == "graph":
            row["gpu_us"] = 1e3 * r["median_ms"]
    return list(out.values())


def host_table():
    """Host µs per call of each kernel family at 2048³, launched each way."""
    return page.table(host_rows(), ["kernel", *PATHS, "gpu_us"],
                      {**PATHS, "gpu_us": "GPU µs"}, digits=3,
                      title="Host µs per call, 2048³ FP16, FP32 C (GPU µs: one call on the GPU)",
                      source=results.source_line("launch_cost"))


def call_table():
    """Host µs per call of ``lab.gemm`` (with and without ``out``) and ``torch.mm``."""
    return page.table(host_rows(CALLS, kernels=False), ["kernel", "size", *CALLS, "gpu_us"],
                      {**CALLS, "gpu_us": "GPU µs"}, digits=3,
                      title="lab.gemm and torch.mm, FP16 in and out: host µs per call",
                      source=results.source_line("launch_cost"))


def _host(kernel: str, path: str, m: int = 2048) -> float:
    return next(r["host_us"] for r in results.rows("launch_cost")
                if r.get("part") == "host" and r["kernel"] == kernel and r["path"] == path
                and r["m"] == m)


def marshal_ok() -> tuple[int, int]:
    """(plans whose marshalled values equal Numba's ``_prepare_args``, plans compared)."""
    rows = [r for r in results.rows("launch_cost") if r.get("part") == "marshal"]
    return sum(bool(r.get("ok")) for r in rows), len(rows)


def values() -> dict:
    ok, total = marshal_ok()
    return {"host_tmastore_numba": f"{_host('wgmma_tmastore_fp16', 'numba'):.0f}",
            "host_tmastore_memo": f"{_host('wgmma_tmastore_fp16', 'memo'):.0f}",
            "host_tmastore_plan": f"{_host('wgmma_tmastore_fp16', 'plan'):.0f}",
            "host_cluster_numba": f"{_host('wgmma_cluster_fp16', 'numba'):.0f}",
            "host_cluster_memo": f"{_host('wgmma_cluster_fp16', 'memo'):.0f}",
            "host_tc_numba": f"{_host('tc_fp16', 'numba'):.0f}",
            "host_tc_memo": f"{_host('tc_fp16', 'memo'):.0f}",
            "host_graph": f"{_host('wgmma_tmastore_fp16', 'graph'):.1f}",
            "host_gemm": f"{_host('lab.gemm', 'call'):.0f}",
            "host_gemm_alloc": f"{_host('lab.gemm out=None', 'call'):.0f}",
            "host_torch": f"{_host('cublas (torch.mm)', 'call'):.0f}",
            "marshal_ok": str(ok), "marshal_total": str(total)}
