"""Experiment ``tensor_cores``: using tensor cores vs feeding them, against cuBLAS FP16.

Three parts, every kernel checked against float64 before it is timed:

* ``ladder`` rows — every tensor-core rung (rung 1 ``tc_naive_fp16`` … ``tc_fp16``, and
  ``tc_bf16``) and cuBLAS (FP16 in/FP32 out, FP16 out, BF16) at ``SIZE``³, with the ratio to
  cuBLAS FP16 measured in the same run, and each rung's tile intensity (FLOP per byte of
  global loads) as the prediction's input.
* ``size`` rows — the tuned kernel and cuBLAS FP16 over a curve of square sizes.
* ``padding`` rows — at an odd size the launch pads A and B to the tile: the whole call, the
  padding copy alone, and the kernel on already padded inputs.

Inputs are cache-hot (one buffer set), as in the other chapters' ladders; the 4096³ operands
(2 × 32 MB FP16) fit the 60 MB L2 only partly anyway.
"""
from __future__ import annotations

import numpy as np

from lab import accuracy, bench, model

CHAPTER = "5"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16", "tc_bf16")
H200_SECONDS = 29  # measured: 29 s on the H200

SIZE = 4096
CHECK_SIZE = 4096
LADDER = ("tc_naive_fp16", "tc_smem", "tc_warp64", "tc_pipeline", "tc_swizzle", "tc_fp16",
          "tc_bf16")
BASELINES = ("fp16", "fp16_out16", "bf16")
CURVE = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192)
CURVE_KERNEL = "tc_fp16"
ODD_SIZE = 4097
REPEATS = 20
ROW_FIELDS = ("part", "kernel", "m", "n", "k", "median_ms", "min_ms", "max_ms", "tflops")


def tile_intensity(kernel: str) -> float:
    """FLOP per byte of the kernel's own global loads (16-bit inputs)."""
    from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS

    if kernel in RUNG_CONFIGS:
        cfg = RUNG_CONFIGS[kernel]
        return model.tile_intensity(cfg.bm, cfg.bn, bytes_per_element=2)
    if kernel.startswith("tc_naive"):
        return model.tile_intensity(16, 16, bytes_per_element=2)
    return float("nan")


def _errors(out: np.ndarray, ref: np.ndarray) -> dict:
    out = out.astype(np.float64)
    diff = out - ref
    return {"rel_frobenius": float(np.linalg.norm(diff) / np.linalg.norm(ref)),
            "max_err_over_max_entry": float(np.abs(diff).max() / np.abs(ref).max())}


def _check_all(names, kinds, n: int) -> dict:
    """Each kernel/baseline once on shared fresh inputs at n³; error dicts by name."""
    from numba import cuda

    from lab import baselines
    from lab.api import matmul
    from lab.kernels import get_spec

    rng = np.random.default_rng()
    out: dict = {}
    by_dtype: dict = {}
    for name in names:
        by_dtype.setdefault(np.dtype(get_spec(name).dtype), []).append(name)
    for kind in kinds:
        by_dtype.setdefault(np.dtype(baselines.get_kind(kind).in_dtype), []).append(
            ("cublas", kind))
    for dtype, members in by_dtype.items():
        a, b = bench.random_inputs(n, n, n, dtype, rng)
        ref = bench.to_float64(a) @ bench.to_float64(b)
        for member in members:
            if isinstance(member, tuple):
                kind = member[1]
                spec = baselines.get_kind(kind)
                d_c = cuda.to_device(accuracy.poisoned((n, n), spec.out_dtype))
                baselines.launch(kind, cuda.to_device(a), cuda.to_device(b), d_c)
                result, tol, name = d_c.copy_to_host(), spec.tolerance, f"cublas_{kind}"
            else:
                result, tol, name = matmul(a, b, kernel=member), 1e-2, member
            if not np.all(np.isfinite(result)):
                raise AssertionError(f"{name}: non-finite output at {n}³")
            errs = _errors(result, ref)
            if max(errs.values()) > tol:
                raise AssertionError(f"{name}: error {errs} above tolerance {tol} at {n}³")
            out[name] = errs
    return out


def run(progress) -> dict:
    from numba import cuda

    from lab import baselines
    from lab.kernels import get_spec
    from lab.kernels.k07_tensor_core import pad_inputs
    from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS

    kinds = [k for k in BASELINES if k in baselines.available()]
    rows = []
    bench.compile_ahead(LADDER)
    errors = _check_all(LADDER, kinds, CHECK_SIZE)
    for name in progress(LADDER, desc="tensor-core ladder"):
        for m, n, k in ((17, 33, 5), (257, 129, 67), (1000, 1030, 999)):
            verdict = bench.check(name, m, n, k)
            if not verdict.passed:
                raise AssertionError(verdict.line())
        row = bench.time(name, SIZE, SIZE, SIZE, repeats=REPEATS, check_first=False)
        cfg = RUNG_CONFIGS.get(name)
        row.update(part="ladder", **errors[name], intensity=tile_intensity(name),
                   config=cfg.label if cfg else "16x16 per warp, from global",
                   title=get_spec(name).title)
        rows.append(row)
    for kind in progress(kinds, desc="cuBLAS"):
        row = bench.time(f"cublas_{kind}", SIZE, SIZE, SIZE, repeats=REPEATS, check_first=False)
        row.update(part="ladder", **errors[f"cublas_{kind}"],
                   title=baselines.get_kind(kind).title)
        rows.append(row)
    ref = next((r["tflops"] for r in rows if r["kernel"] == "cublas_fp16"), None)
    for row in rows:
        row["ratio_to_cublas_fp16"] = row["tflops"] / ref if ref else None

    for size in progress(CURVE, desc="size curve"):
        check = size <= 2048      # larger sizes: float64 references take too long on the host
        ours = bench.time(CURVE_KERNEL, size, size, size, repeats=REPEATS,
                          check_first=check)
        ours["part"] = "size"
        rows.append(ours)
        if "fp16" in kinds:
            theirs = bench.time("cublas_fp16", size, size, size, repeats=REPEATS,
                                check_first=check)
            theirs["part"] = "size"
            ours["ratio_to_cublas_fp16"] = ours["tflops"] / theirs["tflops"]
            rows.append(theirs)

    # Padding: the whole call at an odd size, the pad copy alone, the kernel on padded inputs.
    spec = get_spec(CURVE_KERNEL)
    cfg = RUNG_CONFIGS[CURVE_KERNEL]
    n = ODD_SIZE
    a, b = bench.random_inputs(n, n, n, spec.dtype)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    whole = bench.time_gpu(lambda i: spec.launch(d_a, d_b, d_c), repeats=REPEATS)
    pad = bench.time_gpu(lambda i: pad_inputs(d_a, d_b, cfg.bm, cfg.bn, cfg.bk),
                         repeats=REPEATS)
    p_a, p_b = pad_inputs(d_a, d_b, cfg.bm, cfg.bn, cfg.bk)
    p_a, p_b = p_a.copy_to_host(), p_b.copy_to_host()   # own copies: the cache is reused
    d_pa, d_pb = cuda.to_device(p_a), cuda.to_device(p_b)
    d_pc = cuda.device_array((p_a.shape[0], p_b.shape[1]), dtype=np.float32)
    kernel_only = bench.time_gpu(lambda i: spec.launch(d_pa, d_pb, d_pc), repeats=REPEATS)
    flops = model.flops(n, n, n)
    for what, t in (("whole call (pad + kernel)", whole), ("padding copy only", pad),
                    ("kernel on padded inputs", kernel_only)):
        rows.append({"part": "padding", "kernel": CURVE_KERNEL, "what": what, "m": n, "n": n,
                     "k": n, "padded_to": [int(p_a.shape[0]), int(p_b.shape[1]),
                                           int(p_a.shape[1])],
                     **t.row(), "tflops": flops / (t.median_ms * 1e-3) / 1e12})
    if "fp16" in kinds:
        row = bench.time("cublas_fp16", n, n, n, repeats=REPEATS, check_first=False)
        row.update(part="padding", what="cuBLAS at the odd size")
        rows.append(row)

    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"size": SIZE, "check_size": CHECK_SIZE, "ladder": list(LADDER),
                           "baselines": kinds, "curve": list(CURVE),
                           "curve_kernel": CURVE_KERNEL, "odd_size": ODD_SIZE,
                           "repeats": REPEATS, "inputs": "cache-hot (one buffer set)",
                           "configs": {k: c.label for k, c in RUNG_CONFIGS.items()}},
            "notes": "ratio_to_cublas_fp16 compares with cuBLAS FP16-in/FP32-out measured in "
                     "the same run; intensity = FLOP per byte of a block's own global loads."}
