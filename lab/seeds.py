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
    {"machine": "Tesla T4 (measured, FP32)", "tflops": 6.41, "gbps": 265, "source": "the T4 study"},
    {"machine": "RTX 3090 (FP32)", "tflops": 36.0, "gbps": 936, "source": "the RTX 3090 tutorial"},
    {"machine": "A100 (FP32, model)", "tflops": 19.5, "gbps": None, "source": "the step-by-step model"},
    {"machine": "H100 SXM (FP32)", "tflops": 67.0, "gbps": 3350, "source": "the tiling primer"},
    {"machine": "H100 SXM (BF16 tensor)", "tflops": 989.0, "gbps": 3350, "source": "the tiling primer"},
]
#: Seed 004's second memory number for the same T4: a kernel that reads and writes (GB/s),
#: against the 265 GB/s of a pure read above.
READ_WRITE_T4_GBPS = 230


# ----------------------------------------------------------------------------- chapter 5
# Tensor cores and precision, as seed 004 reports them (Tesla T4, 2048³ unless noted).

#: Seed 004's ladder end: hand-written WMMA vs cuBLAS, same formats (TFLOP/s).
TENSOR_CORES_T4 = [
    {"what": "hand-written WMMA, FP16 in -> FP32 out", "tflops": 3.30,
     "flop_per_byte": 8, "gpu": "Tesla T4", "source": "the T4 study"},
    {"what": "cuBLAS FP32 (CUDA cores)", "tflops": 3.60, "flop_per_byte": None,
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"what": "cuBLAS FP16 in -> FP32 out", "tflops": 21.9, "flop_per_byte": None,
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"what": "cuBLAS FP16 in -> FP16 out", "tflops": 23.3, "flop_per_byte": None,
     "gpu": "Tesla T4", "source": "the T4 study"},
]

#: Seed 004's precision table (2048³ against float64).
PRECISION_T4 = [
    {"format": "FP32, CUDA cores", "tflops": 3.69, "max_err_over_max_entry": 1.0e-6,
     "rel_frobenius": 5.7e-7, "gpu": "Tesla T4", "source": "the T4 study"},
    {"format": "FP16, tensor cores", "tflops": 20.0, "max_err_over_max_entry": 4.6e-4,
     "rel_frobenius": 3.3e-4, "gpu": "Tesla T4", "source": "the T4 study"},
]


# ----------------------------------------------------------------------------- chapters 1-2
# The naive and tiled kernels as seeds 003 and 004 report them. Seed 004: Tesla T4, 1024³.
# Seed 003: RTX 3090 (its by-size table) and "typical" ranges it gives for any GPU.

#: Seed 004, 1024³ on the T4: the naive kernel (prose 4.6 ms; its tile table 4.65 ms) and the
#: same kernel with thread x along rows ("one index swapped": 17.9 ms, 3.9× slower).
NAIVE_T4 = [
    {"kernel": "naive", "n": 1024, "ms": 4.65, "tflops": 0.46, "gpu": "Tesla T4",
     "source": "the T4 study"},
    {"kernel": "naive_swapped", "n": 1024, "ms": 17.9, "tflops": 0.12, "gpu": "Tesla T4",
     "source": "the T4 study"},
]
#: Seed 004's slowdown of the swapped mapping from the two times above (it states "3.9×").
SWAPPED_SLOWDOWN_T4 = NAIVE_T4[1]["ms"] / NAIVE_T4[0]["ms"]
#: The T4's L2 as seed 004 states it (bytes).
L2_T4_BYTES = 4 * 2**20

#: Seed 004's tile table, 1024³ on the T4 (tile 1 = the naive kernel, no tiling).
TILES_T4 = [
    {"tile": 1, "ms": 4.65, "tflops": 0.46, "gpu": "Tesla T4", "source": "the T4 study"},
    {"tile": 8, "ms": 4.23, "tflops": 0.51, "gpu": "Tesla T4", "source": "the T4 study"},
    {"tile": 16, "ms": 2.93, "tflops": 0.73, "gpu": "Tesla T4", "source": "the T4 study"},
    {"tile": 32, "ms": 2.47, "tflops": 0.87, "gpu": "Tesla T4", "source": "the T4 study"},
]

#: Seed 003's "naive vs tiled (TILE_SIZE = 16)" table on an RTX 3090: n³ products.
NAIVE_TILED_3090 = [
    {"n": 256, "naive_ms": 0.12, "tiled_ms": 0.06, "speedup": 2.0, "naive_gflops": 280,
     "tiled_gflops": 560},
    {"n": 512, "naive_ms": 0.85, "tiled_ms": 0.22, "speedup": 3.9, "naive_gflops": 316,
     "tiled_gflops": 1217},
    {"n": 1024, "naive_ms": 6.2, "tiled_ms": 1.1, "speedup": 5.6, "naive_gflops": 347,
     "tiled_gflops": 1954},
    {"n": 2048, "naive_ms": 48.5, "tiled_ms": 7.8, "speedup": 6.2, "naive_gflops": 355,
     "tiled_gflops": 2203},
    {"n": 4096, "naive_ms": 385.0, "tiled_ms": 58.2, "speedup": 6.6, "naive_gflops": 357,
     "tiled_gflops": 2362},
]
GPU_3090 = "RTX 3090"

#: Seed 003's "typical naive kernel metrics" at 1024×1024 (ranges for no particular GPU).
NAIVE_METRICS_003 = {"ms": "~5–15", "gflops": "~150–400", "global_loads": "2N³ = 2.1 billion",
                     "intensity": "0.25 FLOP/byte", "reuse": "none"}

#: Seed 003's "bandwidth utilisation" table at 1024×1024 (RTX 3090, peak 936 GB/s).
BANDWIDTH_003 = [
    {"kernel": "naive", "global_reads_gb": 8.6, "effective_gbps": 700, "pct_of_peak": 75},
    {"kernel": "tiled16", "global_reads_gb": 0.54, "effective_gbps": 490, "pct_of_peak": 52},
]
PEAK_GBPS_3090 = 936


# ----------------------------------------------------------------------------- chapters 3-4
# Register patches as seeds 004 and 001 report them.

#: Seed 004's patch sweep on the T4 (1024³, 16×16 threads, everything else fixed). Its
#: register counts are the seed's own *estimates* from the kernel's variables, not compiler
#: output.
PATCH_SWEEP_T4 = [
    {"patch": 1, "smem_reads_per_fma": 2.0, "regs_estimate": "~11", "tflops": 0.72,
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"patch": 2, "smem_reads_per_fma": 1.0, "regs_estimate": "~16", "tflops": 1.35,
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"patch": 4, "smem_reads_per_fma": 0.5, "regs_estimate": "~32", "tflops": 2.28,
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"patch": 8, "smem_reads_per_fma": 0.25, "regs_estimate": "~88", "tflops": 2.51,
     "gpu": "Tesla T4", "source": "the T4 study"},
]
#: Seed 004's register kernel (64×64 block, 16×16 threads, 4×4 patch) and cuBLAS FP32, T4.
REGISTER_KERNEL_T4 = {"ms": 0.93, "tflops": 2.32, "pct_of_roof": 36, "x_naive": 5.0,
                      "cublas_fp32_tflops": 3.60, "gpu": "Tesla T4", "source": "the T4 study"}
#: Seed 001's model of its register-blocked kernel (128² block, 8² patch) at 4096³:
#: FLOP per byte from L2, and the modelled times on an A100 and an H100.
REGISTER_MODEL_001 = {"flop_per_byte_l2": 31.5, "a100_ms": 7.05, "h100_ms": 2.18,
                      "a100_tflops_model": 19.5, "source": "the step-by-step model (model)"}


# ----------------------------------------------------------------------------- chapter 6
# Shapes, as seed 004 reports them (Tesla T4, cuBLAS through PyTorch, FP16 unless noted).

#: Seed 004's size curve in words: n = 128 and 512, then a band past n = 1024 (TFLOP/s, FP16).
SIZE_T4 = [
    {"n": "128", "tflops": "0.1", "gpu": "Tesla T4", "source": "the T4 study"},
    {"n": "512", "tflops": "9", "gpu": "Tesla T4", "source": "the T4 study"},
    {"n": "> 1024", "tflops": "14–21 (wobbling)", "gpu": "Tesla T4", "source": "the T4 study"},
]

#: Seed 004's alignment findings: each size against its round neighbour, and the kernel the
#: profiler named. ``extra_time_pct`` is the seed's "more time" (or "behind") figure;
#: None where the seed gives no number for that size.
ALIGNMENT_T4 = [
    {"n": 4096, "dtype": "FP16", "tflops": 19.3, "vs": None, "extra_time_pct": None,
     "cublas_kernel": "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_nn"},
    {"n": 4088, "dtype": "FP16", "tflops": None, "vs": 4096, "extra_time_pct": None,
     "cublas_kernel": "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_nn"},
    {"n": 4092, "dtype": "FP16", "tflops": None, "vs": 4096, "extra_time_pct": 52,
     "cublas_kernel": "cutlass_75_tensorop_f16_s1688gemm_f16_256x128_nn_align2"},
    {"n": 4097, "dtype": "FP16", "tflops": 12.9, "vs": 4096, "extra_time_pct": 50,
     "cublas_kernel": "cutlass_75_tensorop_f16_s1688gemm_f16_256x128_nn_align1"},
    {"n": 4100, "dtype": "FP16", "tflops": None, "vs": 4096, "extra_time_pct": 55,
     "cublas_kernel": "cutlass_75_tensorop_f16_s1688gemm_f16_256x128_nn_align2"},
    {"n": 4104, "dtype": "FP16", "tflops": None, "vs": 4097, "extra_time_pct": -18,
     "cublas_kernel": "turing_fp16_s1688gemm_fp16_128x256_ldg8_f2f_stages_32x1_nn"},
    {"n": 2049, "dtype": "FP16", "tflops": None, "vs": 2048, "extra_time_pct": 54,
     "cublas_kernel": "cutlass_75_tensorop_f16_s1688gemm_f16_256x128_nn_align1"},
    {"n": 4097, "dtype": "FP32", "tflops": None, "vs": 4096, "extra_time_pct": 11,
     "cublas_kernel": "volta_sgemm_128x64_nn (every size)"},
]
#: Seed 004's control: its own 32×32 tiled kernel, one element past the round size.
TILED_EDGE_T4 = [
    {"n": 4097, "vs": 4096, "extra_time_pct": 4.4, "kernel": "tiled 32×32",
     "gpu": "Tesla T4", "source": "the T4 study"},
    {"n": 2049, "vs": 2048, "extra_time_pct": 9.3, "kernel": "tiled 32×32",
     "gpu": "Tesla T4", "source": "the T4 study"},
]
#: Seed 004 on layouts: transposed operands at 0.97–1.14× of the plain case in steady state;
#: 2–3× apart when timed in short bursts (the T4's clock moving).
LAYOUT_T4 = {"steady_low": 0.97, "steady_high": 1.14, "burst_spread": "2–3×",
             "gpu": "Tesla T4", "source": "the T4 study"}

#: Seed 004's decode shape: (M×4096)·(4096×4096) FP16 through cuBLAS. M = 1: 0.18 ms,
#: 0.19 TFLOP/s, the weights read at 190 GB/s (of a 265 GB/s read roof); M = 64: 0.17 ms;
#: M = 1 is 1% of the TFLOP/s of M = 1024.
SKINNY_T4 = [
    {"m": 1, "ms": 0.18, "tflops": 0.19, "weight_gbps": 190, "gpu": "Tesla T4",
     "source": "the T4 study"},
    {"m": 64, "ms": 0.17, "tflops": None, "weight_gbps": None, "gpu": "Tesla T4",
     "source": "the T4 study"},
]
SKINNY_T4_M1_SHARE_OF_M1024 = 0.01
READ_ROOF_T4_GBPS = 265

#: Seed 004's whole ladder on the T4, 1024³ ("FLOPs per byte" as the seed's model states
#: it; None where it says "tuned per shape").
LADDER_T4 = [
    {"rung": "naive, uncoalesced mapping", "flop_per_byte": 0.25, "tflops": 0.12, "x_naive": 0.26},
    {"rung": "naive", "flop_per_byte": 0.25, "tflops": 0.46, "x_naive": 1.0},
    {"rung": "shared-memory tiles 8×8", "flop_per_byte": 2, "tflops": 0.51, "x_naive": 1.1},
    {"rung": "shared-memory tiles 16×16", "flop_per_byte": 4, "tflops": 0.73, "x_naive": 1.6},
    {"rung": "shared-memory tiles 32×32", "flop_per_byte": 8, "tflops": 0.87, "x_naive": 1.9},
    {"rung": "register tiles, 64×64 block", "flop_per_byte": 16, "tflops": 2.32, "x_naive": 5.0},
    {"rung": "cuBLAS FP32", "flop_per_byte": None, "tflops": 3.60, "x_naive": 7.8},
    {"rung": "hand-written tensor cores, FP16 in -> FP32 out", "flop_per_byte": 8,
     "tflops": 3.30, "x_naive": 7.1},
    {"rung": "cuBLAS FP16 in -> FP32 out", "flop_per_byte": None, "tflops": 21.9, "x_naive": 47},
    {"rung": "cuBLAS FP16", "flop_per_byte": None, "tflops": 23.3, "x_naive": 50},
]


# ----------------------------------------------------------------------------- chapter 8
# Seed 001's table "the four kernels on a 4096³ GEMM (model)": FLOP per byte from L2, the
# roof it names for the A100, and its modelled times on an A100 and an H100 (ms). Its other
# model numbers: the tensor ridge of the A100 (FLOP/byte) and the tensor kernel's rate there.
LADDER_MODEL_001 = [
    {"kernel": "naive", "title": "Naive", "flop_per_byte": 0.25, "bound_a100": "HBM",
     "a100_ms": 354.0, "h100_ms": 164.0},
    {"kernel": "shared", "title": "Shared-memory tiles (32²)", "flop_per_byte": 7.97,
     "bound_a100": "shared memory", "a100_ms": 29.1, "h100_ms": 16.9},
    {"kernel": "register", "title": "Register blocking (128², 8²)", "flop_per_byte": 31.5,
     "bound_a100": "FP32 ALUs", "a100_ms": 7.05, "h100_ms": 2.18},
    {"kernel": "tensor", "title": "Tensor cores (BF16, 128²)", "flop_per_byte": 62.1,
     "bound_a100": "HBM", "a100_ms": 1.42, "h100_ms": 0.661},
]
TENSOR_RIDGE_A100_001 = 201
TENSOR_TFLOPS_A100_001 = 96.5
LADDER_MODEL_001_SOURCE = "the step-by-step model (model; A100 and H100)"
