"""Section 5, what falls short: the decode shapes (M ≤ 128), where the kernels, not the host,
are behind cuBLAS."""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch9b.s1_result import DECODE_M


def decode_rows() -> list[dict]:
    rs = [r for r in results.rows("sweep") if r.get("group") == "llm" and r["m"] <= DECODE_M
          and r.get("out_dtype") == "float16" and "median_ms" in r]
    by = {(r["impl"], r["method"], r["m"], r["n"], r["k"]): r for r in rs}
    out = []
    for r in rs:
        if r["impl"] != "lab.gemm" or r["method"] != "gpu_only":
            continue
        key = (r["m"], r["n"], r["k"])
        theirs = by[("cublas", "gpu_only", *key)]
        out.append({"M": r["m"], "N×K": f"{r['n']}×{r['k']}",
                    "kernel": r["kernel"] + (f" /{r['splits']}" if r["splits"] > 1 else ""),
                    "ours_us": 1e3 * r["median_ms"], "cublas_us": 1e3 * theirs["median_ms"],
                    "gpu": r["ratio_to_cublas"],
                    "called": by[("lab.gemm", "as_called", *key)]["ratio_to_cublas"],
                    "cublas_tbps": 2 * r["n"] * r["k"] / (theirs["median_ms"] * 1e-3) / 1e12})
    return out


def decode_table():
    return page.table(decode_rows(), ["M", "N×K", "kernel", "ours_us", "cublas_us", "gpu",
                                      "called", "cublas_tbps"],
                      {"ours_us": "ours, GPU (µs)", "cublas_us": "cuBLAS, GPU (µs)",
                       "gpu": "× cuBLAS GPU only", "called": "× cuBLAS as called",
                       "cublas_tbps": "cuBLAS reads B at (TB/s)"}, digits=3,
                      source=results.source_line("sweep"),
                      show=lambda r: r["M"] in (1, 128))


def values() -> dict:
    rs = decode_rows()
    one = [r for r in rs if r["M"] == 1 and r["N×K"] == "4096×4096"][0]
    return {"decode_one_ours": f"{one['ours_us']:.0f}",
            "decode_one_cublas": f"{one['cublas_us']:.0f}",
            "decode_one_tbps": f"{one['cublas_tbps']:.1f}",
            "decode_gpu_highest": f"{max(r['gpu'] for r in rs):.2f}"}
