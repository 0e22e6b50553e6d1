"""Experiment ``waves`` (chapter 6.1): wave quantization measured — a sweep of N through several
multiples of a full wave of tiles, for our two tuned kernels and cuBLAS.

M = :data:`M` = 33·128 rows and K = :data:`K`; N runs over every multiple of 128 from
:data:`N_TILES`\\ [0]·128 to :data:`N_TILES`\\ [-1]·128. With 128 × 128 tiles ``tc_fp16`` launches
33·(N/128) blocks; two fit on each of the H200's 132 SMs, so a wave holds 264 = 33·8 tiles and
a new wave starts every 8 columns of tiles (every 1024 in N). ``warptile_tuned``'s 64 × 128 tiles
give 66·(N/128) blocks, four per SM, 528 = 66·8 a wave: the same steps. The model predicts time
∝ waves (a flat stretch, then a step) where cuBLAS may switch kernels or tiles instead; the
figure in chapter 6.1 puts both on one axis.

Every row: kernel, impl, m, n, k, dtype, median/min/max ms over 20 calls (CUDA events, warm-up
3, cache-hot), tflops. Each implementation is checked once against float64 at N = 1024 and at
an odd N first. Budget: ≈ 40–70 s (two compiles, 63 sizes × 4 implementations; FP32 dominates).
"""
from __future__ import annotations

import numpy as np

from lab import baselines, bench, model
from numba import cuda  # noqa: E402  (after lab: simulator decided first)

CHAPTER = "6.1"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16",)
H200_SECONDS = 30  # measured: 25 s on the H200

M = 33 * 128
K = 2048
N_TILES = tuple(range(2, 65))          # N = 256 … 8192 in steps of 128
IMPLS = (("numba", "tc_fp16", np.float16), ("cublas", "fp16", np.float16),
         ("numba", "warptile_tuned", np.float32), ("cublas", "fp32", np.float32))
CHECK_N = (1024, 1000)
REPEATS = 20


def label(impl) -> str:
    return f"cublas_{impl[1]}" if impl[0] == "cublas" else impl[1]


def _launch(impl):
    if impl[0] == "cublas":
        return lambda A, B, C: baselines.launch(impl[1], A, B, C)
    from lab.kernels import get_spec

    return get_spec(impl[1]).launch


def run(progress) -> dict:
    bench.require_gpu("the waves experiment")
    for kind in ("fp32", "fp16"):
        if kind not in baselines.available():
            raise RuntimeError(f"cuBLAS {kind} is not available (CuPy missing?)")
    rows = []
    bench.compile_ahead([impl[1] for impl in IMPLS if impl[0] != "cublas"])
    for impl in progress(IMPLS, desc="checks"):
        for n in CHECK_N:
            v = (bench.check("cublas_" + impl[1], 512, n, 512) if impl[0] == "cublas"
                 else bench.check(impl[1], 512, n, 512))
            if not v.passed:
                raise AssertionError(f"check failed before timing: {v.line()}")
            rows.append({"part": "check", "kernel": label(impl), "m": 512, "n": n, "k": 512,
                         "rel_frobenius": v.rel_frobenius, "passed": True})
    rng = np.random.default_rng(9)
    operands = {}
    for dtype in (np.float16, np.float32):
        a = bench.to_format(rng.uniform(-1, 1, (M, K)).astype(np.float32), dtype)
        b = bench.to_format(rng.uniform(-1, 1, (K, N_TILES[-1] * 128)).astype(np.float32),
                            dtype)
        operands[np.dtype(dtype).name] = (cuda.to_device(a), b)
    for nt in progress(N_TILES, desc="N"):
        n = nt * 128
        c = cuda.device_array((M, n), np.float32)
        for impl in IMPLS:
            d_a, b_host = operands[np.dtype(impl[2]).name]
            d_b = cuda.to_device(np.ascontiguousarray(b_host[:, :n]))
            launch = _launch(impl)
            t = bench.time_gpu(lambda i: launch(d_a, d_b, c), warmup=3, repeats=REPEATS)
            rows.append({"part": "sweep", "kernel": label(impl), "impl": impl[0], "m": M,
                         "n": n, "k": K, "dtype": np.dtype(impl[2]).name, **t.row(),
                         "tflops": t.tflops(model.flops(M, n, K))})
    return {"rows": rows, "row_fields": ["part", "kernel", "m", "n", "k"],
            "parameters": {"m": M, "k": K, "n_values": [t * 128 for t in N_TILES],
                           "impls": [label(i) for i in IMPLS], "repeats": REPEATS,
                           "check_n": list(CHECK_N),
                           "inputs": "cache-hot; B is the first N columns of one K x 8192 "
                                     "matrix (copied contiguous)",
                           "cublas": "cublasGemmEx via CuPy; fp32 = TF32 off; fp16 = FP16 in, "
                                     "FP32 accumulate and out"}}
