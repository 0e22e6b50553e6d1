"""Section 1, the result: ``lab.gemm`` against cuBLAS (``torch.mm``, same inputs, same 16-bit
output) over the suite of shapes a model calls, GPU-only and in a tight loop, at the targets
the course set itself (the ``suite`` results)."""
from __future__ import annotations

import math

from lab import page, results, roofline

SUITE = "suite"
METHODS = {"gpu_only": "GPU only", "loop": "tight loop"}
#: Decode shapes whose time is reading B: M at most this.
DECODE_READ_M = 16
#: Squares whose 128×256 tiles leave a partial last wave on 132 SMs (the suite's reasons).
PARTIAL_WAVE = (3072, 5120, 6144, 12288)
HOST_US = 10.0


def rows(method: str = "gpu_only", dtype: str | None = None, impl: str = "lab.gemm"
         ) -> list[dict]:
    """The suite's rows of ``impl`` for one method (and input type, or both)."""
    return [r for r in results.rows(SUITE) if r.get("impl") == impl
            and r.get("method") == method and (dtype is None or r.get("dtype") == dtype)
            and "ratio_to_cublas" in r]


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def shape(r: dict) -> str:
    return f"{r['m']}×{r['n']}×{r['k']}"


def read_roof() -> tuple[float, str]:
    """The HBM read bandwidth (bytes/s) of the GPU the suite was measured on: chapter 0's
    streaming read where that GPU has a ``roofline`` file, else its datasheet's figure; and
    which of the two it is."""
    gpu = results.resolve(SUITE)[0]
    if results.path_for("roofline", gpu).exists():
        return roofline.measured(gpu)["read_gbps"] * 1e9, "measured"
    name = results.load(SUITE)["provenance"]["gpu"]
    return roofline.DATASHEETS[name]["hbm_tbps"] * 1e12, "datasheet"


def read_share(r: dict) -> float:
    """The share of the HBM read bandwidth (:func:`read_roof`) at which a row read B."""
    return 2.0 * r["k"] * r["n"] / (r["median_ms"] * 1e-3) / read_roof()[0]


def targets() -> list[dict]:
    """Each target with what the suite measured (FP16 and BF16 together; each ratio the
    median of the processes)."""
    out = []
    for method, name in METHODS.items():
        rs = rows(method)
        low = min(rs, key=lambda r: r["ratio_to_cublas"])
        out.append({"target": f"geomean over the suite, {name}", "asks": 1.00,
                    "measured": geomean(r["ratio_to_cublas"] for r in rs),
                    "at": f"{len(rs)} rows"})
        out.append({"target": f"every shape, {name}", "asks": 0.90,
                    "measured": low["ratio_to_cublas"],
                    "at": f"{shape(low)} {low['dtype']} "
                          f"({sum(r['ratio_to_cublas'] < 0.9 for r in rs)} below)"})
    dec = [r for r in rows() if r["group"] == "decode" and r["m"] <= DECODE_READ_M]
    worst = min(dec, key=read_share)
    out.append({"target": f"decode M ≤ {DECODE_READ_M} reads B at ≥ 85% of HBM read "
                          f"({read_roof()[1]})",
                "asks": 0.85, "measured": read_share(worst), "at": shape(worst)})
    waves = [r for m in METHODS for r in rows(m)
             if r["group"] == "square" and r["m"] in PARTIAL_WAVE]
    low = min(waves, key=lambda r: r["ratio_to_cublas"])
    out.append({"target": "squares with a partial last wave", "asks": 0.95,
                "measured": low["ratio_to_cublas"], "at": f"{low['m']}³ {low['method']}"})
    host = sorted(rows("host"), key=lambda r: r["host_us"])
    out.append({"target": f"host µs per call ≤ {HOST_US:.0f} (median)", "asks": HOST_US,
                "measured": host[len(host) // 2]["host_us"],
                "at": f"highest {host[-1]['host_us']:.0f} at {shape(host[-1])}"})
    for t in out:
        host_row = t["target"].startswith("host")
        ok = t["measured"] <= t["asks"] if host_row else t["measured"] >= t["asks"]
        t["met"] = "yes" if ok else "no"
    return out


def targets_table():
    return page.table(targets(), ["target", "asks", "measured", "at", "met"],
                      {"asks": "asks", "measured": "measured"}, digits=3,
                      source=results.source_line(SUITE))


def values() -> dict:
    """The numbers the result paragraph quotes."""
    t = {x["target"]: x for x in targets()}
    g, lo = rows("gpu_only"), rows("loop")
    checks = [r for r in results.rows(SUITE) if r.get("group") == "check"]
    return {"result_shapes": str(len({(r["group"], r["m"], r["n"], r["k"]) for r in g})),
            "result_rows": str(len(g)),
            "suite_processes": (lambda n: f"{n} process" + ("es" if n != 1 else ""))(
                g[0].get("processes", 1)),
            "result_geo_gpu": f"{geomean(r['ratio_to_cublas'] for r in g):.3f}",
            "result_geo_loop": f"{geomean(r['ratio_to_cublas'] for r in lo):.3f}",
            "result_below_gpu": str(sum(r["ratio_to_cublas"] < 0.9 for r in g)),
            "result_targets_met": str(sum(x["met"] == "yes" for x in t.values())),
            "result_targets": str(len(t)),
            "result_variant_checks": str(len(checks)),
            "result_read_roof": f"{read_roof()[0] / 1e12:.2f} TB/s ({read_roof()[1]})",
            "result_gpu": results.load(SUITE)["provenance"].get("gpu", "?").removeprefix("NVIDIA ")}


def _process_geomeans(rs: list[dict]) -> list[float]:
    """The geomean over ``rs`` of each process's ratio (``ratios``: one per process)."""
    n = min(len(r.get("ratios") or [r["ratio_to_cublas"]]) for r in rs)
    return [geomean((r.get("ratios") or [r["ratio_to_cublas"]])[i] for r in rs)
            for i in range(n)]


def evidence_rows() -> list[dict]:
    """The headline's evidence: the geomean over the suite for each method (each side's
    geomean TFLOP/s, whose quotient is the geomean ratio; the range over the processes' own
    geomeans), and two single rows, a large square and a prefill layer, GPU only."""
    out = []
    for method, name in METHODS.items():
        ours, theirs = rows(method), {_key(r): r for r in rows(method, impl="cublas")}
        per = _process_geomeans(ours)
        out.append({"what": f"geomean of {len(ours)} rows, {name}",
                    "ours": geomean(r["tflops"] for r in ours),
                    "theirs": geomean(theirs[_key(r)]["tflops"] for r in ours),
                    "ratio": geomean(r["ratio_to_cublas"] for r in ours),
                    "lowest": min(per), "highest": max(per),
                    "mhz_ours": _median_mhz(ours), "mhz_theirs": _median_mhz(theirs.values())})
    for group, (m, n, k) in (("square", (8192, 8192, 8192)), ("prefill", (2048, 28672, 4096))):
        r = next(x for x in rows("gpu_only", "float16") if x["group"] == group
                 and (x["m"], x["n"], x["k"]) == (m, n, k))
        c = {_key(x): x for x in rows("gpu_only", "float16", impl="cublas")}[_key(r)]
        out.append({"what": f"{shape(r)} FP16, GPU only", "ours": r["tflops"],
                    "theirs": c["tflops"], "ratio": r["ratio_to_cublas"],
                    "lowest": r.get("ratio_min", r["ratio_to_cublas"]),
                    "highest": r.get("ratio_max", r["ratio_to_cublas"]),
                    "mhz_ours": r.get("sm_mhz"), "mhz_theirs": c.get("sm_mhz")})
    return out


def _key(r: dict) -> tuple:
    return r["group"], r["m"], r["n"], r["k"], r["dtype"]


def _median_mhz(rs) -> float | None:
    mhz = sorted(r["sm_mhz"] for r in rs if r.get("sm_mhz"))
    return mhz[len(mhz) // 2] if mhz else None


def evidence_box():
    """The evidence beside the headline (:func:`lab.chapters.common.evidence_box`)."""
    from lab.chapters.common import evidence_box as box

    data = results.load(SUITE)
    return box(evidence_rows(),
               claim=f"lab.gemm over the suite on the {values()['result_gpu']}, FP16 and BF16 "
                     "inputs, 16-bit C",
               method="GPU only: a CUDA graph of many calls replayed between two events; tight "
                      "loop: two events around many plain calls; the sides alternate burst by "
                      f"burst, {data['parameters'].get('processes', 1)} processes",
               yardstick="cuBLAS through torch.mm, same inputs and output type")
