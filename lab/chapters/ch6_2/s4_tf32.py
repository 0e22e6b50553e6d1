"""Section "TF32: a switch, not a kernel": cuBLAS on the same float32 arrays with FP32, TF32
and 16-bit inputs (``precision``), and the kernel cuBLAS's TF32 call launched at 4096³
(``cublas_kernels``)."""
from __future__ import annotations

from lab import page, results, tables

#: The precision rows of the table.
PRECISION_ROWS = ("cublas_fp32", "cublas_tf32", "cublas_fp16", "cublas_bf16")


def tf32_rows() -> list[dict]:
    """Per compute type: size, TFLOP/s and error of the ``precision`` run."""
    prec = results.by("precision")
    return [prec[k] for k in PRECISION_ROWS]


def tf32_table():
    """cuBLAS on the same float32 arrays: FP32, TF32, and 16-bit inputs."""
    return page.table(tf32_rows(), ["title", "m", "tflops", "rel_frobenius"],
                      {"title": "cuBLAS", "m": "n", "tflops": "TFLOP/s",
                       "rel_frobenius": "rel. Frobenius vs float64"},
                      source=results.source_line("precision"))


def values() -> dict:
    """How much faster TF32 ran than FP32 on the same arrays, and the kernel it launched."""
    by = {r["kernel"]: r for r in tf32_rows()}
    named = {r["kernel"]: r["launched"] for r in results.rows("cublas_kernels", n=4096)}
    return {"tf32_speedup": f"{by['cublas_tf32']['tflops'] / by['cublas_fp32']['tflops']:.1f}",
            "tf32_kernel": ", ".join(tables.kernel_name(x) for x in named["cublas_tf32"])}
