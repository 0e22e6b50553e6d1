"""Section 'Accuracy: what 16-bit inputs cost': speed and error of each format, the T4 study's
table, and FP16 against FP32 output.
"""
from __future__ import annotations

from lab import page, results, seeds
from lab.chapters.ch5.common import ladder


def _precision() -> dict:
    return results.by("precision")


def precision_table():
    """Speed and error of each format at 2048³ against the float64 product."""
    rows = list(_precision().values())
    return page.table(rows, ["title", "tflops", "max_err_over_max_entry", "rel_frobenius",
                             "rel_frobenius_vs_rounded_inputs"],
                      {"title": "format (implementation)", "tflops": "TFLOP/s",
                       "max_err_over_max_entry": "max |err| / max |C|",
                       "rel_frobenius": "rel. Frobenius",
                       "rel_frobenius_vs_rounded_inputs": "rel. Frob. vs rounded inputs"},
                      source=results.source_line("precision"))


def precision_seed_table():
    """The T4 study's precision table on its Tesla T4, labelled as the seed's."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.PRECISION_T4]
    return page.table(rows, ["format", "tflops", "max_err_over_max_entry", "rel_frobenius",
                             "gpu_source"],
                      {"format": "format (the T4 study)", "tflops": "TFLOP/s",
                       "max_err_over_max_entry": "max |err| / max |C|",
                       "rel_frobenius": "rel. Frobenius", "gpu_source": "GPU, source"})


def out16_rows() -> list[dict]:
    """cuBLAS FP16 with FP32 against FP16 output, at 4096³ and at 2048³."""
    lad, p = ladder(), _precision()
    rows = [{"where": "4096³ (tensor_cores)", "fp32": lad["cublas_fp16"]["tflops"],
             "fp16": lad["cublas_fp16_out16"]["tflops"]},
            {"where": "2048³ (precision)", "fp32": p["cublas_fp16"]["tflops"],
             "fp16": p["cublas_fp16_out16"]["tflops"]}]
    for r in rows:
        r["gain"] = 100 * (r["fp16"] / r["fp32"] - 1)
    return rows


def values() -> dict:
    """What the 16-bit formats cost and gain, ours beside the T4 study's."""
    p = _precision()
    t4 = {r["what"]: r["tflops"] for r in seeds.TENSOR_CORES_T4}
    t4p = {r["format"]: r["tflops"] for r in seeds.PRECISION_T4}
    pairs = [("warptile_tuned", "cublas_fp32"), ("tc_fp16", "cublas_fp16"),
             ("tc_bf16", "cublas_bf16")]
    same = [a for a, b in pairs if p[a]["rel_frobenius"] == p[b]["rel_frobenius"]
            and p[a]["max_err_over_max_entry"] == p[b]["max_err_over_max_entry"]]
    out16 = out16_rows()
    params = results.load("precision")["parameters"]
    fp16 = p["tc_fp16"]
    t4_out16, t4_out32 = t4["cuBLAS FP16 in -> FP16 out"], t4["cuBLAS FP16 in -> FP32 out"]
    out16_err = p["cublas_fp16_out16"]["rel_frobenius"]
    return {
        "prec_n": str(params["size"]), "prec_kernel": params["fp32_kernel"],
        "fp16_err_ratio": f"{fp16['rel_frobenius'] / fp16['rel_frobenius_vs_rounded_inputs']:.0f}",
        "bf16_over_fp16": f"{p['tc_bf16']['rel_frobenius'] / p['tc_fp16']['rel_frobenius']:.1f}",
        "cublas_fp16_over_fp32": f"{p['cublas_fp16']['tflops'] / p['cublas_fp32']['tflops']:.1f}",
        "t4_fp16_over_fp32": f"{t4p['FP16, tensor cores'] / t4p['FP32, CUDA cores']:.1f}",
        "same_error_pairs": f"{len(same)} of {len(pairs)}",
        "out16_gain_4096": f"{out16[0]['gain']:+.1f}%",
        "out16_gain_2048": f"{out16[1]['gain']:+.1f}%",
        "t4_out16_gain": f"{t4_out16 / t4_out32 - 1:+.0%}",
        "out16_err": f"{out16_err / p['cublas_fp16']['rel_frobenius']:.1f}",
    }
