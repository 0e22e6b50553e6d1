"""Section "Prediction": the bytes a fused epilogue saves and their time at the streaming-read
bandwidth, and what the product itself costs at small K — from the model, the ``roofline``
results and the shapes the ``splitk`` and ``epilogue`` runs timed."""
from __future__ import annotations

from lab import model, page, results
from lab.kernels.fused_epilogue import saved_bytes


def rates() -> dict:
    """The streaming-read bandwidth (GB/s) and the roof of each format (TFLOP/s): the FP32 FMA
    roof (``roofline``) and cuBLAS FP16's 4096³ rate (``tensor_cores``)."""
    by = results.by("roofline")
    fp16 = next(r for r in results.rows("tensor_cores", part="ladder", kernel="cublas_fp16"))
    return {"read_gbps": by["stream_read"]["gbps"],
            "peak": {"FP32": by["fma_chains"]["tflops"], "FP16": fp16["tflops"]}}


def epilogue_model_rows() -> list[dict]:
    """Bytes of the epilogue fused and unfused at the ``epilogue`` run's M × N, what fusing
    saves (the product written and read back), and that time at the read bandwidth."""
    bw = rates()["read_gbps"] * 1e9
    m, n, _ = results.load("epilogue")["parameters"]["shapes"][0]
    rows = []
    for label, c in (("bias + act", False), ("α·AB + β·C + bias, act", True)):
        s = saved_bytes(m, n, c=c)
        rows.append({"epilogue": label, "mn": f"{m}×{n}", "fused": s["fused"] / 2**20,
                     "unfused": s["unfused"] / 2**20, "saved": s["saved"] / 2**20,
                     "saved_us": s["saved"] / bw * 1e6})
    return rows


def epilogue_model_table():
    """Epilogue fusion, predicted."""
    return page.table(epilogue_model_rows(), ["epilogue", "mn", "fused", "unfused", "saved",
                                              "saved_us"],
                      {"mn": "M×N", "fused": "fused (MiB)", "unfused": "unfused (MiB)",
                       "saved": "saved (MiB)", "saved_us": "saved at read bandwidth (µs)"},
                      title="FP32 C, bias and D")


def small_k_model_rows() -> list[dict]:
    """At the ``splitk`` run's small-K shapes (M = N, a few small K): the FLOPs' time at the
    roof, the least bytes (inputs read, FP32 output written) at the read bandwidth, the
    output's share of those bytes, and what an unfused bias epilogue adds."""
    r = rates()
    bw = r["read_gbps"] * 1e9
    params = results.load("splitk")["parameters"]
    m = n = params["small_mn"]
    s = saved_bytes(m, n, c=False)
    rows = []
    for k in params["small_k"]:
        for fmt, e in (("FP16", 2), ("FP32", 4)):
            ideal = model.ideal_bytes(m, n, k, e, 4)
            rows.append({"k": k, "format": fmt, "m": m,
                         "flop_us": model.flops(m, n, k) / (r["peak"][fmt] * 1e12) * 1e6,
                         "bytes_us": ideal / bw * 1e6,
                         "out_share": 4 * m * n / ideal,
                         "unfused_extra_us": (s["unfused"] - s["fused"] + 4 * n) / bw * 1e6})
    return rows


def small_k_model_table():
    """Small K, predicted."""
    rows = small_k_model_rows()
    return page.table(rows, ["k", "format", "flop_us", "bytes_us", "out_share",
                             "unfused_extra_us"],
                      {"k": "K", "flop_us": "FLOPs at the roof (µs)",
                       "bytes_us": "least bytes at read bandwidth (µs)",
                       "out_share": "output's share of the bytes",
                       "unfused_extra_us": "unfused epilogue adds (µs)"},
                      title=f"M = N = {rows[0]['m']}, FP32 output")


def values() -> dict:
    """The prediction's numbers."""
    em = epilogue_model_rows()[0]
    fp16 = [r for r in small_k_model_rows() if r["format"] == "FP16"]
    return {"epi_saved_mib": f"{em['saved']:.0f}", "epi_saved_model_us": f"{em['saved_us']:.0f}",
            "smallk_flop_lo": f"{min(r['flop_us'] for r in fp16):.1f}",
            "smallk_flop_hi": f"{max(r['flop_us'] for r in fp16):.0f}",
            "smallk_out_lo": f"{min(r['out_share'] for r in fp16):.0%}",
            "smallk_out_hi": f"{max(r['out_share'] for r in fp16):.0%}",
            "smallk_unfused_extra": f"{fp16[0]['unfused_extra_us']:.0f}"}
