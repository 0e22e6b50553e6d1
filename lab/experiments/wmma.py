"""Experiment ``wmma``: the WMMA rung beside ``mma.sync`` and cuBLAS, and what its fragments hold.

Three parts:

* ``check`` rows — every WMMA kernel (three shapes × FP32/FP16 accumulators) checked against
  float64 on the 14 shapes :func:`lab.kernels.shapes_for` gives on a GPU (1×1×1, one past each
  tile edge, mixed edges, odd shapes past two tiles, 1000×1030×999 and 1024³), output poisoned
  with NaN; a kernel that fails is recorded as such and not timed.
* ``timing`` rows — at ``SIZE``³, cache-hot: the WMMA kernels, ``mma.sync`` rung 1
  (``tc_naive_fp16``, the same regime: fragments straight from global memory), the tuned
  ``mma.sync`` kernel ``tc_fp16`` and cuBLAS FP16, in one process, CUDA events after warm-up,
  median with min and max; ratios to cuBLAS FP16 and to ``tc_naive_fp16`` of the same run.
* ``probe`` rows — for each shape, one warp ``wmma.load``s A, B and an FP32 C whose elements
  hold their own flat index, and writes its registers out: ``map`` is, per lane, the flat index
  of every value it holds in register order (16-bit halves low first).
"""
from __future__ import annotations

from lab import bench, device

CHAPTER = "5"
NEEDS = ("cupy",)
#: The WMMA kernels run from compute capability 7.5, but the rows chapter 5 reads set them beside
#: mma.sync (8.0): on a 7.5 GPU the experiment is skipped with that line, not failed midway.
NEEDS_KERNELS = ("wmma_m16n16k16_f32", "tc_naive_fp16", "tc_fp16")
H200_SECONDS = 11  # measured: 10 s on the H200 (compiles, 84 checks, 9 timings, 3 probes)

SIZE = 4096
KERNELS = ("wmma_m16n16k16_f32", "wmma_m16n16k16_f16", "wmma_m32n8k16_f32",
           "wmma_m32n8k16_f16", "wmma_m8n32k16_f32", "wmma_m8n32k16_f16")
BESIDE = ("tc_naive_fp16", "tc_fp16", "cublas_fp16")
REPEATS = 20
ROW_FIELDS = ("part", "kernel", "m", "n", "k")


def run(progress) -> dict:
    from lab.kernels import get_spec, k07_wmma, shapes_for
    from lab.wmma import SHAPES

    rows, failed = [], []
    bench.compile_ahead(KERNELS + BESIDE[:2])
    for name in progress(KERNELS, desc="WMMA checks"):
        for m, n, k in shapes_for(get_spec(name), gpu=True):
            v = bench.check(name, m, n, k)
            rows.append({"part": "check", "kernel": name, "m": m, "n": n, "k": k,
                         "passed": v.passed, "err_over_bound": v.err_over_bound,
                         "rel_frobenius": v.rel_frobenius, "seed": v.seed})
            if not v.passed and name not in failed:
                failed.append(name)
    timed = [n for n in KERNELS if n not in failed] + list(BESIDE)
    for name in progress(timed, desc=f"timing at {SIZE}³"):
        row = bench.time(name, SIZE, SIZE, SIZE, repeats=REPEATS, check_first=False)
        row["part"] = "timing"
        rows.append(row)
    timing = {r["kernel"]: r for r in rows if r["part"] == "timing"}
    for row in timing.values():
        for ref in ("cublas_fp16", "tc_naive_fp16"):
            if ref in timing:
                row[f"ratio_to_{ref}"] = row["tflops"] / timing[ref]["tflops"]
    for shape in progress(SHAPES, desc="fragment probe"):
        maps = k07_wmma.probe_registers(shape)
        m, n, k = SHAPES[shape]
        for operand, values in maps.items():
            rows.append({"part": "probe", "kernel": f"wmma_{shape}", "shape": shape,
                         "operand": operand, "m": m, "n": n, "k": k,
                         "rows_cols": {"A": [m, k], "B": [k, n], "C": [m, n]}[operand],
                         "map": values.tolist()})
    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"size": SIZE, "kernels": list(KERNELS), "beside": list(BESIDE),
                           "repeats": REPEATS, "inputs": "cache-hot (one buffer set)",
                           "check_shapes": "lab.kernels.shapes_for(spec, gpu=True)",
                           "failed": failed, "simulator": device.SIMULATOR},
            "notes": "probe: element (r, c) of each tile holds r·cols + c; map[lane] lists the "
                     "flat indices a lane's registers hold, in register order, low half first. "
                     "Ratios compare with rows of the same run."}
