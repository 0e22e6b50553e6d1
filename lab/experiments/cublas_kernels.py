"""Experiment ``cublas_kernels``: which kernel cuBLAS actually launches, by name.

"cuBLAS is not one kernel" (seed 004): the library picks a kernel per shape and type. Nsight
Compute names every launch; one child process per (kind, n) runs a single cuBLAS call through
:mod:`lab.baselines` under ``ncu --clock-control none`` and records the kernel name(s) and
duration, for every size of the chapter's alignment table in FP16 and FP32 (and BF16, TF32 at
4096). On Hopper the names tell which instruction family the library uses (``sm90_xmma``
… ``gmma`` kernels are built on wgmma, which ``mma.sync`` kernels such as ours cannot use).
"""
from __future__ import annotations

import csv
import io
import subprocess
import sys

from lab.experiments.ncu_dram import ncu_path

CHAPTER = "6.2"
NEEDS = ("cupy", "ncu")
H200_SECONDS = 75  # measured: 72 s on the H200 (twenty ncu child processes)

#: Every size of chapter 6.2's alignment table (``shapes``' ALIGN_SIZES), FP16 and FP32: the
#: kernel behind each timed cell is named, not inferred from its speed.
ALIGN_SIZES = (2048, 2049, 4088, 4092, 4096, 4097, 4100, 4104)
CASES = tuple((kind, n) for kind in ("fp16", "fp32") for n in ALIGN_SIZES) + (
    ("bf16", 4096), ("tf32", 4096))

CHILD = """
import sys, numpy as np
import lab
from numba import cuda
from lab import baselines, bench
kind, n = sys.argv[1], int(sys.argv[2])
k = baselines.KINDS[kind]
a, b = bench.random_inputs(n, n, n, k.in_dtype)
C = cuda.device_array((n, n), dtype=k.out_dtype)
baselines.launch(kind, cuda.to_device(a), cuda.to_device(b), C)
cuda.synchronize()
"""


def names(kind: str, n: int) -> dict:
    row = {"kernel": f"cublas_{kind}", "n": n, "launched": None, "duration_us": None,
           "ncu_unit": None, "error": None}
    ncu = ncu_path()
    if ncu is None:
        row["error"] = "ncu not found"
        return row
    cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", "gpu__time_duration.sum",
           sys.executable, "-c", CHILD, kind, str(n)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith('"')]
    recs = list(csv.DictReader(io.StringIO("\n".join(lines)))) if lines else []
    if not recs:
        row["error"] = (run.stdout + run.stderr).strip()[-400:]
        return row
    row["launched"] = sorted({r.get("Kernel Name", "?") for r in recs})
    times = [float(r["Metric Value"].replace(",", "")) for r in recs
             if r.get("Metric Name") == "gpu__time_duration.sum"]
    unit = next((r.get("Metric Unit", "") for r in recs), "")
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
             "msecond": 1e3}.get(unit.strip())
    row["ncu_unit"] = unit
    row["duration_us"] = sum(times) * scale if times and scale else None
    return row


def run(progress) -> dict:
    rows = []
    for kind, n in progress(CASES, desc="cublas kernels"):
        try:
            rows.append(names(kind, n))
        except subprocess.TimeoutExpired:
            rows.append({"kernel": f"cublas_{kind}", "n": n, "launched": None,
                         "duration_us": None, "ncu_unit": None,
                         "error": "ncu child process timed out after 300 s"})
    return {"rows": rows, "row_fields": ["kernel", "n"],
            "parameters": {"cases": [list(c) for c in CASES], "ncu": ncu_path(),
                           "options": "--clock-control none, one call per process"}}
