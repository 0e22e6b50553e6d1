"""Chapter 4, section 6: edges, shapes that are not tile multiples."""
from __future__ import annotations

from lab import page, results


def edge_rows() -> list[dict]:
    """Shapes one past, one short of and four past 4096: cuBLAS and ``warptile_tuned``."""
    rows = results.rows("fp32_ladder", part="edges")
    by = {(r["kernel"], r["n"]): r for r in rows}
    out = []
    for n in sorted({r["n"] for r in rows}):
        cub, ours = by.get(("cublas_fp32", n)), by.get(("warptile_tuned", n))
        out.append({"n": n, "cublas_ms": cub and cub["median_ms"],
                    "ours_ms": ours and ours["median_ms"], "tflops": ours and ours["tflops"],
                    "pct": ours and ours["pct_cublas"]})
    return out


def edge_table():
    """:func:`edge_rows` as a table."""
    return page.table(edge_rows(), ["n", "cublas_ms", "ours_ms", "tflops", "pct"],
                      {"cublas_ms": "cuBLAS (ms)", "ours_ms": "warptile_tuned (ms)",
                       "tflops": "TFLOP/s", "pct": "% cuBLAS"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    edge = [r["pct"] for r in edge_rows() if r["pct"] is not None]
    v["edge_lo"], v["edge_hi"] = f"{min(edge):.0f}%", f"{max(edge):.0f}%"
    edges_n = results.load("fp32_ladder")["parameters"].get("edge_sizes") or []
    v["edge_sizes"] = (", ".join(str(n) for n in edges_n[:-1]) + f" and {edges_n[-1]}"
                       if len(edges_n) > 1 else ", ".join(str(n) for n in edges_n))
    return v
