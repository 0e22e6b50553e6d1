"""Section 2, the host's cost: microseconds of Python and driver per call for every kernel
family, launched the old way, through plans, replayed, and from a CUDA graph (``launch_cost``)."""
from __future__ import annotations

from lab import page, results

PATH_NAMES = {"numba": "Numba launch (before)", "bindings": "plan, cuda.bindings",
              "plan": "plan, ctypes", "memo": "memoised launcher", "graph": "CUDA graph replay",
              "call": "call"}


def host_rows() -> list[dict]:
    """One row per kernel family and path: host µs per call, time as called, GPU time."""
    rows = [r for r in results.rows("launch_cost") if r.get("part") == "host"]
    gpu = {(r["kernel"], r["m"]): r["median_ms"] for r in rows if r["path"] == "graph"}
    out = []
    for r in rows:
        out.append({"kernel": r["kernel"], "size": f"{r['m']}³",
                    "path": PATH_NAMES.get(r["path"], r["path"]), "host_us": r["host_us"],
                    "called_us": 1e3 * r["median_ms"] if r["method"] == "as_called" else None,
                    "gpu_us": 1e3 * gpu[(r["kernel"], r["m"])]
                    if (r["kernel"], r["m"]) in gpu else None})
    return out


def host_table():
    """The host-µs table."""
    return page.table(host_rows(), ["kernel", "size", "path", "host_us", "called_us", "gpu_us"],
                      {"host_us": "host µs per call", "called_us": "as called (µs)",
                       "gpu_us": "GPU only (µs)"}, digits=3,
                      source=results.source_line("launch_cost"),
                      show=lambda r: r["kernel"].startswith("wgmma")
                      or (r["size"] == "2048³" and r["path"] == "call"))


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
