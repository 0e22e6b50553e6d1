"""Section 1, the result: ``lab.gemm`` against cuBLAS (``torch.mm``, FP16 in and out) as a
Python loop calls them, at the issue's targets, from the ``sweep`` results."""
from __future__ import annotations

from lab import page, results

#: The targets: (label, rows of the sweep it covers, the ratio it asks for).
DECODE_M = 128


def rows(method: str = "as_called", out_dtype: str = "float16") -> list[dict]:
    """Our rows of the sweep (``lab.gemm``) for one timing method and output type."""
    return [r for r in results.rows("sweep") if r.get("impl") == "lab.gemm"
            and r.get("method") == method and r.get("out_dtype") == out_dtype]


def _square(n: int, method: str = "as_called") -> dict:
    return next(r for r in rows(method) if r["group"] == "square" and r["m"] == n)


def targets() -> list[dict]:
    """Each target with the ratio measured (the lowest over the shapes it covers)."""
    sweep = rows()
    big = [r for r in sweep if r["group"] == "square" and r["m"] >= 2048]
    out = [{"target": "squares 2048³ and larger", "asks": 0.90, "shapes": len(big),
            "lowest ratio": min(r["ratio_to_cublas"] for r in big),
            "at": "{m}³".format(**min(big, key=lambda r: r["ratio_to_cublas"]))},
           {"target": "1024³", "asks": 0.80, "shapes": 1,
            "lowest ratio": _square(1024)["ratio_to_cublas"], "at": "1024³"}]
    for n, k in sorted({(r["n"], r["k"]) for r in sweep if r["group"] == "llm"}):
        dec = [r for r in sweep if r["group"] == "llm" and (r["n"], r["k"]) == (n, k)
               and r["m"] <= DECODE_M]
        worst = min(dec, key=lambda r: r["ratio_to_cublas"])
        out.append({"target": f"decode M ≤ {DECODE_M}, N = {n}, K = {k}", "asks": 0.80,
                    "shapes": len(dec), "lowest ratio": worst["ratio_to_cublas"],
                    "at": f"M = {worst['m']}"})
    for r in sweep:
        if r["group"] == "odd" and cublas_falls(r):
            out.append({"target": f"odd {r['m']}×{r['n']}×{r['k']}", "asks": 1.0,
                        "shapes": 1, "lowest ratio": r["ratio_to_cublas"], "at": r["kernel"]})
    for t in out:
        t["met"] = "yes" if t["lowest ratio"] >= t["asks"] else "no"
    return out


def cublas_falls(r: dict) -> bool:
    """Where cuBLAS falls: a row of A (K values) or of B and C (N values) that is not a whole
    number of 16-byte vectors (FP16: K or N not a multiple of 8), so that its fast kernels
    (TMA, 16-byte loads) cannot read it."""
    return r["k"] % 8 != 0 or r["n"] % 8 != 0


def odd_rows() -> list[dict]:
    """Every odd shape of the sweep: cuBLAS's TFLOP/s on the GPU (where it falls and where it
    does not), ours, and the ratio as called (the median of the processes, with their range)."""
    gpu = {(r["impl"], r["m"], r["n"], r["k"]): r for r in results.rows("sweep")
           if r.get("method") == "gpu_only" and r.get("out_dtype") == "float16"
           and r.get("group") == "odd"}
    out = []
    for r in rows():
        if r["group"] != "odd":
            continue
        key = (r["m"], r["n"], r["k"])
        out.append({"shape": "{}×{}×{}".format(*key),
                    "aligned": "no" if cublas_falls(r) else "yes",
                    "cublas": gpu[("cublas", *key)]["tflops"],
                    "ours": gpu[("lab.gemm", *key)]["tflops"],
                    "gpu": gpu[("lab.gemm", *key)]["ratio_to_cublas"],
                    "called": r["ratio_to_cublas"],
                    "range": f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f}"})
    return out


def odd_table():
    """The odd shapes: cuBLAS falls where a row is not 16-byte aligned."""
    return page.table(odd_rows(), ["shape", "aligned", "cublas", "ours", "gpu", "called",
                                   "range"],
                      {"aligned": "rows 16-byte aligned", "cublas": "cuBLAS TFLOP/s (GPU)",
                       "ours": "ours TFLOP/s (GPU)", "gpu": "× cuBLAS GPU only",
                       "called": "× cuBLAS as called", "range": "as called, 3 processes"},
                      digits=3, source=results.source_line("sweep"))


def targets_table():
    """The targets, met or not (FP16 in and out, as called, against torch.mm; each ratio the
    median of the sweep's processes)."""
    return page.table(targets(), ["target", "asks", "lowest ratio", "at", "shapes", "met"],
                      {"asks": "asks ≥", "lowest ratio": "× cuBLAS (lowest)"}, digits=3,
                      source=results.source_line("sweep"))


def values() -> dict:
    """The numbers the result paragraph quotes."""
    t = targets()
    met = sum(x["met"] == "yes" for x in t)
    decode = [x for x in t if x["target"].startswith("decode")]
    odd = [x for x in t if x["target"].startswith("odd")]
    def pair(x):                       # "decode M ≤ 128, N = 4096, K = 4096" -> "N = 4096, ..."
        return x["target"].split(", ", 1)[1]

    odd_met = [x for x in odd if x["met"] == "yes"]
    odd_missed = [x for x in odd if x["met"] == "no"]
    best = max(odd, key=lambda x: x["lowest ratio"])
    aligned = [r for r in odd_rows() if r["aligned"] == "yes"]
    return {"result_targets_met": str(met), "result_targets": str(len(t)),
            "result_big_lowest": f"{t[0]['lowest ratio']:.3f}",
            "result_big_verdict": "met" if t[0]["met"] == "yes" else "missed",
            "result_big_lowest_at": t[0]["at"],
            "result_big_lowest_processes": ", ".join(
                f"{x:.2f}" for x in _square(int(t[0]["at"][:-1]))["ratios"]),
            "result_1024": f"{t[1]['lowest ratio']:.2f}",
            "result_decode": "; ".join(
                f"{pair(x)}: {x['lowest ratio']:.2f} at {x['at']}"
                + ("" if x["met"] == "yes" else ", missed") for x in decode),
            "result_odd": ((f"ahead at {len(odd_met)} of {len(odd)}" if odd_missed
                            else f"ahead at all {len(odd)}")
                           + f" (up to {best['lowest ratio']:.2f}× at {best['target'][4:]})"
                           + ("; behind at " + "; ".join(
                               f"{x['target'][4:]} ({x['lowest ratio']:.2f})"
                               for x in odd_missed) if odd_missed else "")),
            "result_shapes": str(len(rows())),
            "result_processes": str(rows()[0].get("processes", 1)),
            "result_aligned_odd": "; ".join(
                f"{r['shape']} ({r['called']:.2f})" for r in aligned) or "none"}
