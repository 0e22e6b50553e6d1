"""Section 2, the host's cost: microseconds of Python and driver per call for every kernel
family, launched the old way, through plans, replayed, and from a CUDA graph (``launch_cost``)."""
from __future__ import annotations

from lab import page, results

#: The paths a call can take (the measurement's names) and the table's column heads.
HEADERS = {"numba": "Numba launch", "bindings": "plan (cuda.bindings)", "plan": "plan (ctypes)",
           "memo": "memoised", "graph": "graph replay", "call": "call", "gpu_us": "GPU µs"}


def host_rows() -> list[dict]:
    """One row per kernel family (or library) and size: host µs per call on each path it has,
    and the GPU time of one call (from the graph's replays)."""
    rows = [r for r in results.rows("launch_cost") if r.get("part") == "host"]
    out: dict[tuple, dict] = {}
    for r in rows:
        row = out.setdefault((r["kernel"], r["m"]), {"kernel": r["kernel"], "size": f"{r['m']}³",
                                                     **dict.fromkeys(HEADERS)})
        row[r["path"]] = r["host_us"]
        if r["path"] == "graph":
            row["gpu_us"] = 1e3 * r["median_ms"]
    return list(out.values())


def host_table():
    """Host µs per call: a row per kernel and size, a column per path."""
    return page.table(host_rows(), ["kernel", "size", *HEADERS],
                      HEADERS, digits=3, title="Host µs per call, and one call's GPU µs",
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
