"""Chapter 1, section 8: the RTX 3090 tutorial's analysis (its metrics and effective bandwidth),
recomputed for our runs.
"""
from __future__ import annotations

from lab import model, page, roofline, seeds
from lab.chapters.common import gpu, measured, model_reads


def metrics_rows() -> list[dict]:
    """The RTX 3090 tutorial's "typical naive kernel" ranges beside the selected GPU's numbers at 1024³."""
    n = 1024
    r = measured()[("naive", n)]
    m = seeds.NAIVE_METRICS_003
    return [
        {"metric": "kernel time", "seed": f"{m['ms']} ms", "ours": f"{r['median_ms']:.3f} ms"},
        {"metric": "throughput", "seed": f"{m['gflops']} GFLOP/s",
         "ours": f"{r['tflops']:.2f} TFLOP/s"},
        {"metric": "global loads", "seed": m["global_loads"],
         "ours": f"2n³ = {2 * n ** 3 / 1e9:.2f} billion (model)"},
        {"metric": "arithmetic intensity", "seed": m["intensity"],
         "ours": f"{model.naive_intensity(4):.2f} FLOP/byte (model)"},
        {"metric": "data reuse", "seed": m["reuse"], "ours": "none in the kernel; caches only"},
    ]


def metrics_table():
    """The RTX 3090 tutorial's naive-kernel metrics, recomputed."""
    return page.table(metrics_rows(), ["metric", "seed", "ours"],
                      {"seed": "the RTX 3090 tutorial (any GPU)", "ours": f"{gpu()}, 1024³"})


def bandwidth_rows() -> list[dict]:
    """Effective bandwidth (the model's global reads ÷ measured time) here and on the RTX 3090 tutorial's
    RTX 3090, once as the seed states it and once from its own bytes and times."""
    n = 1024
    size = measured()
    read = roofline.measured()["read_gbps"]
    rows = []
    for kernel, tile in (("naive", 1), ("tiled16", 16)):
        reads = 4 * model.tiled_global_loads(n, tile)
        ms = size[(kernel, n)]["median_ms"]
        gbps = reads / (ms * 1e-3) / 1e9
        rows.append({"kernel": kernel, "gpu": gpu(), "reads": reads / 1e9, "ms": ms,
                     "gbps": gbps, "roof": 100 * gbps / read})
    by_size = {x["n"]: x for x in seeds.NAIVE_TILED_3090}[n]
    for s in seeds.BANDWIDTH_003:
        ms = by_size["naive_ms"] if s["kernel"] == "naive" else by_size["tiled_ms"]
        rows.append({"kernel": s["kernel"], "gpu": "RTX 3090, as the RTX 3090 tutorial states",
                     "reads": s["global_reads_gb"], "ms": None,
                     "gbps": f"~{s['effective_gbps']}", "roof": f"~{s['pct_of_peak']}"})
        implied = s["global_reads_gb"] / (ms * 1e-3)
        rows.append({"kernel": s["kernel"], "gpu": "RTX 3090, its GB ÷ its ms",
                     "reads": s["global_reads_gb"], "ms": ms, "gbps": implied,
                     "roof": 100 * implied / seeds.PEAK_GBPS_3090})
    return rows


def bandwidth_table():
    """The RTX 3090 tutorial's bandwidth table, recomputed (read roof: chapter 0's streaming read; the RTX
    3090's: its 936 GB/s peak as the RTX 3090 tutorial states it)."""
    return page.table(bandwidth_rows(), ["kernel", "gpu", "reads", "ms", "gbps", "roof"],
                      {"gpu": "GPU", "reads": "reads (GB)", "ms": "time (ms)",
                       "gbps": "GB/s", "roof": "% read roof"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    roofs = roofline.measured()
    v = {}
    rtx = {s["n"]: s for s in seeds.NAIVE_TILED_3090}[1024]
    bw = bandwidth_rows()
    stated = seeds.BANDWIDTH_003[0]
    v["eff_bw_naive"] = f"{bw[0]['gbps'] / 1e3:.1f}"
    v["eff_bw_share"] = f"{bw[0]['roof']:.0f}%"
    v["read_tbps"] = f"{roofs['read_gbps'] / 1e3:.2f}"
    v["eff_bw_3090"] = f"{bw[3]['gbps']:,.0f}"
    v["eff_bw_3090_share"] = f"{bw[3]['roof']:.0f}%"
    v["seed_naive_ms_at_700"] = f"{stated['global_reads_gb'] / stated['effective_gbps'] * 1e3:.0f}"
    v["seed_bw_stated"] = f"{stated['effective_gbps']}"
    v["seed_reads"] = f"{stated['global_reads_gb']:g}"
    v["seed_naive_ms"] = f"{rtx['naive_ms']:g}"
    v["peak_3090"] = f"{seeds.PEAK_GBPS_3090}"
    v["model_reads_gb"] = f"{model_reads('naive', 1024) / 1e9:.1f}"
    return v
