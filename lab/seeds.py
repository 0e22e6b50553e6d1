"""Numbers the seed documents report, each labelled with its GPU and source.

These are quotations shown *beside* our measurements, never as ours. Seeds:
000 "How a Matrix Multiply Runs on a GPU: Tiling, Shared Memory, and Tensor Cores, with
Pseudocode"; 001 "GEMM, step by step"; 002 "GEMM on NVIDIA GPUs: From Naive Kernels to Tiled
Pipelines"; 003 "Matrix Multiplication — Naive to Tiled"; 004 "Matrix Multiplication: The
Operation Behind Modern AI".
"""
from __future__ import annotations

TITLES = {
    "000": "How a Matrix Multiply Runs on a GPU: Tiling, Shared Memory, and Tensor Cores, "
           "with Pseudocode",
    "001": "GEMM, step by step",
    "002": "GEMM on NVIDIA GPUs: From Naive Kernels to Tiled Pipelines",
    "003": "Matrix Multiplication — Naive to Tiled",
    "004": "Matrix Multiplication: The Operation Behind Modern AI",
}

#: Machines as the seeds state them: compute roof (TFLOP/s), memory roof (GB/s).
MACHINES = [
    {"machine": "Tesla T4 (measured, FP32)", "tflops": 6.41, "gbps": 265, "source": "seed 004"},
    {"machine": "RTX 3090 (FP32)", "tflops": 36.0, "gbps": 936, "source": "seed 003"},
    {"machine": "A100 (FP32, model)", "tflops": 19.5, "gbps": None, "source": "seed 001"},
    {"machine": "H100 SXM (FP32)", "tflops": 67.0, "gbps": 3350, "source": "seed 000"},
    {"machine": "H100 SXM (BF16 tensor)", "tflops": 989.0, "gbps": 3350, "source": "seed 000"},
]
