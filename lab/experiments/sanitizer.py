"""Experiment ``sanitizer`` (chapters 1–2): compute-sanitizer memcheck and racecheck on every
ch1–2 kernel and every twin that accepts the shape, at the small odd shape 37×45×29.

Each (kernel, tool) runs in its own child process (``lab.experiments._target``). Rows: kernel,
tool, errors (from the "ERROR SUMMARY: N errors" line; None if the line is missing), check
(the child's own float64 verdict: PASS/FAIL), returncode.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from lab import twins

KERNELS = ("naive", "naive_swapped", "naive_literal", "tiled8", "tiled16", "tiled32")
SHAPE = (37, 45, 29)
TOOLS = ("memcheck", "racecheck")


def sanitizer_path() -> str | None:
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)


def check_one(kernel: str, tool: str) -> dict:
    exe = sanitizer_path()
    row = {"kernel": kernel, "tool": tool, "errors": None, "check": None, "returncode": None,
           "m": SHAPE[0], "n": SHAPE[1], "k": SHAPE[2]}
    if exe is None:
        row["check"] = "compute-sanitizer not found"
        return row
    cmd = [exe, "--tool", tool, sys.executable, "-m", "lab.experiments._target", kernel,
           *map(str, SHAPE)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = run.stdout + run.stderr
    found = re.search(r"ERROR SUMMARY:\s*(\d+)", text)
    row["errors"] = int(found.group(1)) if found else None
    row["check"] = "PASS" if " PASS" in text else "FAIL"
    row["returncode"] = run.returncode
    return row


def run(progress) -> dict:
    names = list(KERNELS) + [t for t in twins.available() if twins.supports(t, *SHAPE)]
    jobs = [(k, t) for k in names for t in TOOLS]
    rows = [check_one(k, t) for k, t in progress(jobs, desc="sanitizer")]
    return {"rows": rows, "row_fields": ["kernel", "tool", "errors"],
            "parameters": {"shape": list(SHAPE), "tools": list(TOOLS),
                           "sanitizer": sanitizer_path()}}
