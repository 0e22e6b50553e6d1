"""Section 5, past rung 8: the 16-bit output, the variants tried, FP8 in clusters, and fast.cu's
kernel 12, each against the yardstick with its own output type (``hopper_past``)."""
from __future__ import annotations

from functools import lru_cache

from lab import page, results


@lru_cache(maxsize=None)
def past_data() -> dict:
    """``hopper_past``: the final measurement (children, GPU-only timing) and its profile."""
    return results.load("hopper_past")


def summary(kernel: str, dtype: str, size: int) -> dict:
    for r in past_data()["rows"]:
        if (r["part"] == "summary" and r["kernel"] == kernel and r["dtype"] == dtype
                and r["m"] == size):
            return r
    raise KeyError(f"hopper_past.json has no summary row for {kernel} {dtype} {size}³")


def profile(kernel: str) -> dict:
    for r in past_data()["rows"]:
        if r["part"] == "profile" and r["kernel"] == kernel:
            return r
    raise KeyError(f"hopper_past.json has no profile row for {kernel}")


def past_table():
    """Every row of the final measurement: median over the processes, the ratio to the
    yardstick with the same output type and its spread, the SM clock."""
    rows = [{"kernel": r["kernel"], "type": r["dtype"], "size": r["m"], "C": r["out"],
             "TFLOP/s": r["tflops"], "ratio": r["ratio"],
             "ratio min–max": (f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}"
                               if r["ratio_min"] is not None else ""),
             "processes": r["processes"], "SM MHz": r["sm_mhz"]}
            for r in past_data()["rows"] if r["part"] == "summary"]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def past_profile_table():
    """Nsight Compute on rung 8, rung 9 and cuBLAS (FP16, 4096³, one launch each)."""
    rows = [{"kernel": r["kernel"], "GPU µs": r["duration_us"],
             "tensor pipe %": r["tensor_active_pct"], "SM MHz": r["sm_mhz"],
             "L2→SM GB": r["l2_to_sm_bytes"] / 1e9 if r.get("l2_to_sm_bytes") else None,
             "DRAM read GB": r["dram_read_bytes"] / 1e9 if r.get("dram_read_bytes") else None,
             "DRAM write GB": r["dram_write_bytes"] / 1e9 if r.get("dram_write_bytes")
             else None}
            for r in past_data()["rows"] if r["part"] == "profile"]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def values() -> dict:
    """The numbers of section 5's prose."""
    def ratio(kernel, dtype, size):
        return f"{summary(kernel, dtype, size)['ratio']:.3f}"

    def tflops(kernel, dtype, size):
        return f"{summary(kernel, dtype, size)['tflops']:.0f}"

    p8, p9 = profile("wgmma_cluster_fp16"), profile("wgmma_out16_fp16")
    pc = profile("cublas_fp16")
    return {
        "past_processes": str(min(r["processes"] for r in past_data()["rows"]
                                  if r["part"] == "summary")),
        "past_cluster_4096_fp16": ratio("cluster", "float16", 4096),
        "past_cluster_8192_fp16": ratio("cluster", "float16", 8192),
        "past_cluster_4096_bf16": ratio("cluster", "bfloat16", 4096),
        "past_cluster_8192_bf16": ratio("cluster", "bfloat16", 8192),
        "past_out16_4096_fp16": ratio("cluster 16-bit out", "float16", 4096),
        "past_out16_8192_fp16": ratio("cluster 16-bit out", "float16", 8192),
        "past_out16_4096_bf16": ratio("cluster 16-bit out", "bfloat16", 4096),
        "past_out16_8192_bf16": ratio("cluster 16-bit out", "bfloat16", 8192),
        "past_tms16_4096_fp16": ratio("tmastore 16-bit out", "float16", 4096),
        "past_tms16_4096_bf16": ratio("tmastore 16-bit out", "bfloat16", 4096),
        "past_fastcu_4096": ratio("fast.cu kernel 12 (BF16 out)", "bfloat16", 4096),
        "past_fastcu_8192": ratio("fast.cu kernel 12 (BF16 out)", "bfloat16", 8192),
        "past_fastcu_8192_tflops": tflops("fast.cu kernel 12 (BF16 out)", "bfloat16", 8192),
        "past_out16_8192_bf16_tflops": tflops("cluster 16-bit out", "bfloat16", 8192),
        "past_torchmm_8192_bf16_tflops": tflops("torch.mm bf16 (BF16 out)", "bfloat16", 8192),
        "past_p8_us": f"{p8['duration_us']:.0f}",
        "past_p9_us": f"{p9['duration_us']:.0f}",
        "past_pc_us": f"{pc['duration_us']:.0f}",
        "past_p8_tensor": f"{p8['tensor_active_pct']:.1f}",
        "past_p9_tensor": f"{p9['tensor_active_pct']:.1f}",
        "past_pc_tensor": f"{pc['tensor_active_pct']:.1f}",
        "past_p8_write_mb": f"{p8['dram_write_bytes'] / 1e6:.0f}",
        "past_p9_write_mb": f"{p9['dram_write_bytes'] / 1e6:.0f}",
        "past_fp8_cluster_8192": ratio("fp8 cluster bf16 out", "e4m3", 8192),
        "past_fp8_cluster_8192_f32": ratio("fp8 cluster f32 out", "e4m3", 8192),
        "past_fp8_cluster_8192_tflops": tflops("fp8 cluster bf16 out", "e4m3", 8192),
        "past_fp8_cluster_4096": ratio("fp8 cluster bf16 out", "e4m3", 4096),
        "past_fp8_plain_4096": ratio("fp8 bf16 out", "e4m3", 4096),
        "past_fp8_plain_8192": ratio("fp8 bf16 out", "e4m3", 8192),
    }
