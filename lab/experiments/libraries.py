"""Experiment ``libraries`` (chapter 9): the same GEMMs through every layer of the stack.

Providers (:mod:`lab.providers`), all in one process run, side by side:

* ours — ``tc_fp16`` (FP16 in, FP32 out) and ``warptile_tuned`` (FP32), the ladder's tops;
* cuBLAS — ``cublas_fp16``, ``cublas_fp16_out16``, ``cublas_fp32`` (``cublasGemmEx`` via CuPy);
* cuBLASLt — ``cublaslt_fp16`` (FP16 out), ``cublaslt_fp32`` (``torch.mm`` with cuBLASLt
  preferred: the heuristic's first algorithm);
* Triton — ``triton_fp16`` (FP32 out), ``triton_fp32`` (IEEE), our autotuned matmul;
* CUTLASS Python DSL — not run; ``parameters.cutlass_dsl`` says why on the measuring machine.

Parts (``part``):

* ``check`` — every provider against float64 at an odd shape and a round one before anything
  is timed (:data:`CHECK_SHAPES`);
* ``time`` — each provider at n³ for n in :data:`SIZES`, cache-hot inputs shared by all
  providers of one dtype, CUDA events, 3 warm-up calls (Triton's first call at a new shape
  runs its autotuner), median with min and max of :data:`REPEATS`; ``ratio_to_cublas`` is the
  rate over cuBLAS's with the same input type and FP32 output in the same run; ``path`` is
  the provider's code path at that shape (Triton: the configuration its autotuner kept);
* ``kernels`` — the GPU kernels one call launches (PyTorch's profiler, which sees every
  kernel of the process): which kernel cuBLAS's and cuBLASLt's heuristics picked, per shape.

A provider that cannot run on the measuring machine (no PyTorch, no Triton), or a library
provider that fails there (its check, or its call at one size), is left out with its reason in
``parameters.skipped``; ours and cuBLAS are required.
"""
from __future__ import annotations

import importlib.metadata

import numpy as np

from lab import bench, libraries, model, providers

CHAPTER = "9"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16", "warptile_tuned")
#: Estimate: Numba compiles (~15 s), Triton's compiles and autotuning (7 configurations, two
#: specialisations, ~30 s), checks with float64 references, 27 timed shapes, the profiler.
H200_SECONDS = 50  # measured: 46 s on the H200

FP16 = ("tc_fp16", "cublas_fp16", "cublas_fp16_out16", "cublaslt_fp16", "triton_fp16")
FP32 = ("warptile_tuned", "cublas_fp32", "cublaslt_fp32", "triton_fp32")
REQUIRED = ("tc_fp16", "warptile_tuned", "cublas_fp16", "cublas_fp32")
#: The cuBLAS row each input type is compared with (FP32 output, same run).
CUBLAS_OF = {"float16": "cublas_fp16", "float32": "cublas_fp32"}
SIZES = (4096, 4097, 8192)
CHECK_SHAPES = ((1000, 1030, 999), (1024, 1024, 1024))
REPEATS = 20
WARMUP = 3
ROW_FIELDS = ("part", "kernel", "m", "n", "k")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def plan() -> tuple[list[str], dict[str, str]]:
    """(providers that run here, {provider: why not} for the others); RuntimeError when a
    required one (ours, cuBLAS) cannot run."""
    run, skipped = [], {}
    for name in FP16 + FP32:
        why = providers.get(name).reason()
        if why is None:
            run.append(name)
        elif name in REQUIRED:
            raise RuntimeError(why)
        else:
            skipped[name] = why
    return run, skipped


def _check_row(verdict) -> dict:
    if not verdict.passed:
        raise AssertionError(f"check failed before timing: {verdict.line()}")
    m, n, k = verdict.shape
    return {"part": "check", "kernel": verdict.kernel, "m": m, "n": n, "k": k,
            "dtype": verdict.dtype, "rel_frobenius": verdict.rel_frobenius,
            "max_err_over_max_entry": verdict.max_err_over_max_entry,
            "err_over_bound": verdict.err_over_bound, "passed": True}


def _time_row(name: str, n: int, call) -> dict:
    p = providers.get(name)
    t = bench.time_gpu(lambda i: call(), warmup=WARMUP, repeats=REPEATS)
    return {"part": "time", "kernel": name, "layer": p.layer, "impl": p.family,
            "m": n, "n": n, "k": n, "dtype": p.dtype_name,
            "out_dtype": np.dtype(p.out_dtype).name, **t.row(),
            "tflops": t.tflops(model.flops(n, n, n)), "path": p.path(n, n, n)}


def _kernels_row(name: str, n: int, call, profiler: str | None) -> dict | None:
    p = providers.get(name)
    if profiler is not None or p.family == "numba":
        return None
    try:
        launched, error = libraries.kernels_launched(call), None
    except Exception as exc:  # noqa: BLE001 - the names are a bonus; keep the timings
        launched, error = [], f"{type(exc).__name__}: {exc}"[:200]
    return {"part": "kernels", "kernel": name, "layer": p.layer, "m": n, "n": n, "k": n,
            "launched": launched, "error": error}


def ratios(rows: list[dict]) -> None:
    """Add ``ratio_to_cublas`` to the timed rows: over the cuBLAS row with the same input type
    and FP32 output at the same size."""
    ref = {(r["kernel"], r["m"]): r["tflops"] for r in rows if r["part"] == "time"}
    for r in rows:
        if r["part"] == "time":
            base = ref.get((CUBLAS_OF[r["dtype"]], r["m"]))
            r["ratio_to_cublas"] = r["tflops"] / base if base else None


def run(progress) -> dict:
    bench.require_gpu("the libraries experiment")
    names, skipped = plan()
    rows = []
    for name in progress(list(names), desc="checks"):
        try:
            checked = [_check_row(bench.check(name, *shape)) for shape in CHECK_SHAPES]
        except Exception as exc:  # noqa: BLE001 - a library that breaks here is named, not fatal
            if name in REQUIRED or providers.get(name).family != "library":
                raise
            skipped[name] = f"{name} failed here: {type(exc).__name__}: {exc}"[:300]
            names.remove(name)
            continue
        rows += checked
    profiler = libraries.torch_reason()
    inputs = bench.Operands()
    for n in progress(SIZES, desc="sizes"):
        for name in names:
            p = providers.get(name)
            d_a, d_b = inputs.operands(n, n, n, p.dtype)
            call = p.prepare(d_a, d_b, inputs.output(n, n, p.out_dtype))
            try:
                rows.append(_time_row(name, n, call))
            except Exception as exc:  # noqa: BLE001 - as above, for a library at one size
                if p.family != "library":
                    raise
                skipped[f"{name}@{n}"] = f"{name} failed at {n}³: {type(exc).__name__}: {exc}"[:300]
                continue
            kernels = _kernels_row(name, n, call, profiler)
            if kernels:
                rows.append(kernels)
        inputs.clear()
    ratios(rows)
    lt = {}
    if any(n.startswith("cublaslt") for n in names):
        lt = libraries.torch_settings()
    return {"rows": rows, "row_fields": list(ROW_FIELDS),
            "parameters": {
                "sizes": list(SIZES), "check_shapes": [list(s) for s in CHECK_SHAPES],
                "repeats": REPEATS, "warmup": WARMUP,
                "providers": {n: {"layer": providers.get(n).layer,
                                  "title": providers.get(n).title,
                                  "dtype": providers.get(n).dtype_name,
                                  "out_dtype": np.dtype(providers.get(n).out_dtype).name}
                              for n in names},
                "skipped": skipped, "cutlass_dsl": libraries.cutlass_reason(),
                "kernel_names": profiler or "torch.profiler (CUDA activity)",
                "torch_matmul": lt,
                "versions": {d: _version(d) for d in ("torch", "triton", "cupy-cuda13x",
                                                       "nvidia-cutlass-dsl")},
                "inputs": "cache-hot, uniform(-1, 1), one draw per size and dtype shared by "
                          "every provider"},
            "notes": "ratio_to_cublas = tflops / tflops of cublas_fp16 (FP16 inputs) or "
                     "cublas_fp32 (FP32 inputs), both FP32 out, same size, same run. path = "
                     "the provider's code path (ours: lab.kernels.KernelSpec.code_path; "
                     "Triton: the autotuner's configuration). kernels rows: the GPU kernels "
                     "one call launched, from torch.profiler."}
