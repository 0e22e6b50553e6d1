"""Experiment ``precision``: what each input format buys in speed and costs in accuracy.

One pair of float32 matrices (uniform in [−1, 1)), ``SIZE``³, and the float64 product of
exactly those values as the reference. Each row runs the product in one format — FP32 on the
CUDA cores (our best FP32 kernel and cuBLAS), TF32 (cuBLAS), FP16 and BF16 on the tensor cores
(ours and cuBLAS), FP16 with an FP16 output (cuBLAS) — and reports its speed and its error:
``max |error| / max |entry|`` and the relative Frobenius error, against the reference (so the
rounding of the inputs to the format counts), and also against the float64 product of the
rounded inputs (what the kernel's own summation adds).

The FP32 kernel is ``FP32_KERNEL`` (environment ``LAB_FP32_KERNEL`` overrides); if it is not
registered, the last FP32 kernel of the ladder is used and the row says which.
"""
from __future__ import annotations

import os

import numpy as np

from lab import accuracy, bench, model

CHAPTER = "5"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16", "tc_bf16")
H200_SECONDS = 6  # measured: 6 s on the H200

SIZE = 2048
REPEATS = 20
FP32_KERNEL = "warptile_tuned"
ROW_FIELDS = ("kernel", "format", "median_ms", "min_ms", "max_ms", "tflops",
              "max_err_over_max_entry", "rel_frobenius")


def fp32_kernel() -> str:
    from lab.kernels import REGISTRY, page_order

    wanted = os.environ.get("LAB_FP32_KERNEL", FP32_KERNEL)
    if wanted in REGISTRY:
        return wanted
    fp32 = [n for n, s in REGISTRY.items() if np.dtype(s.dtype) == np.float32
            and page_order(s.chapter) < page_order("5")]
    return fp32[-1]


def errors(out: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(max |error| / max |entry|, relative Frobenius error) of ``out`` against ``ref``."""
    diff = np.asarray(out, dtype=np.float64) - ref
    return (float(np.abs(diff).max() / np.abs(ref).max()),
            float(np.linalg.norm(diff) / np.linalg.norm(ref)))


def run(progress) -> dict:
    from numba import cuda

    from lab import baselines
    from lab.kernels import get_spec

    n = SIZE
    rng = np.random.default_rng(2048)
    a32 = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    b32 = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    exact = a32.astype(np.float64) @ b32.astype(np.float64)
    inputs = {}
    for fmt, dtype in (("float32", np.float32), ("float16", np.float16),
                       ("bfloat16", np.uint16)):
        a, b = bench.to_format(a32, dtype), bench.to_format(b32, dtype)
        rounded_ref = bench.to_float64(a) @ bench.to_float64(b)
        inputs[fmt] = (cuda.to_device(a), cuda.to_device(b), rounded_ref)

    fp32_name = fp32_kernel()
    cases = [(fp32_name, "float32", "FP32, CUDA cores (ours)", None),
             ("cublas_fp32", "float32", "FP32, CUDA cores (cuBLAS)", "fp32"),
             ("cublas_tf32", "float32", "TF32, tensor cores (cuBLAS)", "tf32"),
             ("tc_fp16", "float16", "FP16 in, FP32 acc + out, tensor cores (ours)", None),
             ("cublas_fp16", "float16", "FP16 in, FP32 acc + out, tensor cores (cuBLAS)", "fp16"),
             ("cublas_fp16_out16", "float16", "FP16 in, FP32 acc, FP16 out (cuBLAS)",
              "fp16_out16"),
             ("tc_bf16", "bfloat16", "BF16 in, FP32 acc + out, tensor cores (ours)", None),
             ("cublas_bf16", "bfloat16", "BF16 in, FP32 acc + out, tensor cores (cuBLAS)",
              "bf16")]
    have = baselines.available()
    rows = []
    for name, fmt, title, kind in progress(cases, desc="precision"):
        if kind is not None and kind not in have:
            continue
        d_a, d_b, rounded_ref = inputs[fmt]
        out_dtype = baselines.get_kind(kind).out_dtype if kind else np.float32
        d_c = cuda.to_device(accuracy.poisoned((n, n), out_dtype))
        if kind:
            def call(i, kind=kind, d_c=d_c):
                baselines.launch(kind, d_a, d_b, d_c)
        else:
            launch = get_spec(name).launch

            def call(i, launch=launch, d_c=d_c):
                launch(d_a, d_b, d_c)
        call(0)
        out = d_c.copy_to_host().astype(np.float64)
        if not np.all(np.isfinite(out)):
            raise AssertionError(f"{name}: non-finite output")
        max_err, frob = errors(out, exact)
        max_err_own, frob_own = errors(out, rounded_ref)
        t = bench.time_gpu(call, repeats=REPEATS)
        rows.append({"kernel": name, "format": fmt, "title": title,
                     "out_dtype": np.dtype(out_dtype).name, "m": n, "n": n, "k": n, **t.row(),
                     "tflops": model.flops(n, n, n) / (t.median_ms * 1e-3) / 1e12,
                     "max_err_over_max_entry": max_err, "rel_frobenius": frob,
                     "max_err_vs_rounded_inputs": max_err_own,
                     "rel_frobenius_vs_rounded_inputs": frob_own})
    fp32 = next(r for r in rows if r["kernel"] == fp32_name)
    for row in rows:
        row["speed_vs_our_fp32"] = row["tflops"] / fp32["tflops"]
        row["error_vs_our_fp32"] = row["rel_frobenius"] / fp32["rel_frobenius"]
    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"size": n, "repeats": REPEATS, "fp32_kernel": fp32_name,
                           "inputs": "float32 uniform(-1, 1), seed 2048, cache-hot",
                           "reference": "float64 product of the float32 inputs"},
            "notes": "Errors against the float64 product of the unrounded float32 inputs; the "
                     "*_vs_rounded_inputs columns use the product of the inputs as rounded to "
                     "the row's format."}
