"""Experiment ``ncu_dram`` (chapters 1–2): DRAM and L2 bytes that Nsight Compute counts for one
launch of each ch1–2 kernel at 1024³, beside the model's global-memory estimate.

Each kernel runs in its own ``ncu`` child process (``lab.experiments._target``) with
``--clock-control none`` and the default ``--cache-control all`` (caches flushed before the
profiled launch). Rows: kernel, n, dram_read_bytes (``dram__bytes_read.sum``),
dram_write_bytes, l2_read_bytes (``lts__t_sectors_srcunit_tex_op_read.sum`` × 32),
model_bytes (the model's global reads + C written), ideal_bytes, error (text, when ncu failed).
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys

from lab import model

CHAPTER = "1"
NEEDS = ("ncu",)
H200_SECONDS = 29  # measured: 29 s on the H200 (six ncu child processes)

KERNELS = ("naive", "naive_swapped", "naive_literal", "tiled8", "tiled16", "tiled32")
N = 1024
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum")


def ncu_path() -> str | None:
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",)
                                        if os.path.exists(p)), None)


def model_bytes(kernel: str, n: int) -> float:
    tile = int(kernel[5:]) if kernel.startswith("tiled") else 1
    return 2.0 * 4 * n ** 3 / tile + 4.0 * n * n


def _to_bytes(value: str, unit: str) -> float:
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6,
             "GB": 1e9, "sector": 32}.get(unit.strip(), 1)
    return float(value.replace(",", "")) * scale


def measure(kernel: str, n: int = N) -> dict:
    ncu = ncu_path()
    row = {"kernel": kernel, "n": n, "model_bytes": model_bytes(kernel, n),
           "ideal_bytes": model.ideal_bytes(n, n, n, 4, 4), "error": None,
           "dram_read_bytes": None, "dram_write_bytes": None, "l2_read_bytes": None}
    if ncu is None:
        row["error"] = "ncu not found"
        return row
    cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", ",".join(METRICS),
           "--launch-count", "1", sys.executable, "-m", "lab.experiments._target",
           kernel, str(n), str(n), str(n)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith('"')]
    if not lines:
        row["error"] = (run.stdout + run.stderr).strip()[-400:]
        return row
    for rec in csv.DictReader(io.StringIO("\n".join(lines))):
        name, unit, value = rec.get("Metric Name"), rec.get("Metric Unit", ""), rec.get(
            "Metric Value")
        if name == METRICS[0]:
            row["dram_read_bytes"] = _to_bytes(value, unit)
        elif name == METRICS[1]:
            row["dram_write_bytes"] = _to_bytes(value, unit)
        elif name == METRICS[2]:
            row["l2_read_bytes"] = float(value.replace(",", "")) * 32
    return row


def run(progress) -> dict:
    rows = [measure(k) for k in progress(KERNELS, desc="ncu")]
    return {"rows": rows, "row_fields": ["kernel", "n", "dram_read_bytes", "model_bytes"],
            "parameters": {"n": N, "metrics": list(METRICS), "ncu": ncu_path(),
                           "options": "--clock-control none, default --cache-control all, "
                                      "first launch profiled"}}
