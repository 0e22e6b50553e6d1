"""Experiment ``sanitizer``: compute-sanitizer memcheck and racecheck on every ch1–2 kernel and
every twin that accepts the shape, at the small odd shape 37×45×29, and on the pipelined
FP32 and tensor-core kernels (chapters 4–5) at an odd shape (edge path) and a tile-multiple
shape (fast path). Child processes run in parallel (one GPU, several host cores).

Each (kernel, tool) runs in its own child process (``lab.experiments._target``). Rows: kernel,
tool, errors (memcheck's "ERROR SUMMARY: N errors", racecheck's hazard count; None if the
tool printed no summary — which the chapter reports as a failure to check), check
(the child's own float64 verdict: PASS/FAIL), returncode.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from lab import twins

SUMMARY = ("memcheck and racecheck on the chapter 1–2 kernels and their twins, the pipelined "
           "FP32 and the tensor-core kernels, at odd and round shapes")
CHAPTER = "2"
NEEDS = ("compute-sanitizer",)
H200_SECONDS = 43  # measured: 43 s on the H200 (48 child processes, 8 at a time)

KERNELS = ("naive", "naive_swapped", "naive_literal", "tiled8", "tiled16", "tiled32")
SHAPE = (37, 45, 29)
#: Kernels with barriers, double buffers or cp.async stages, and the shapes they run at.
PIPELINED = ("pipelined", "warptile", "warptile_tuned", "tc_naive_fp16", "tc_pipeline",
             "tc_fp16", "tc_bf16")
PIPELINED_SHAPES = ((257, 129, 67), (256, 256, 256))
WORKERS = 8
TOOLS = ("memcheck", "racecheck")


def sanitizer_path() -> str | None:
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)


def check_one(kernel: str, tool: str, shape=SHAPE) -> dict:
    exe = sanitizer_path()
    row = {"kernel": kernel, "tool": tool, "errors": None, "check": None, "returncode": None,
           "m": shape[0], "n": shape[1], "k": shape[2]}
    if exe is None:
        row["check"] = "compute-sanitizer not found"
        return row
    cmd = [exe, "--tool", tool, sys.executable, "-m", "lab.experiments._target", kernel,
           *map(str, shape)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = run.stdout + run.stderr
    # memcheck ends with "ERROR SUMMARY: N errors"; racecheck with
    # "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)" — hazards are counted.
    found = (re.search(r"ERROR SUMMARY:\s*(\d+)", text)
             or re.search(r"RACECHECK SUMMARY:\s*(\d+) hazard", text))
    row["errors"] = int(found.group(1)) if found else None
    row["summary"] = next((line.strip() for line in text.splitlines()
                           if "SUMMARY" in line), None)
    row["check"] = "PASS" if " PASS" in text else "FAIL"
    row["returncode"] = run.returncode
    return row


def run(progress) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import lab
    from lab.kernels import runnable

    names = list(KERNELS) + [t for t in twins.available() if twins.supports(t, *SHAPE)]
    jobs = [(k, t, SHAPE) for k in names for t in TOOLS]
    verdicts = {k: runnable(k) for k in PIPELINED if k in lab.REGISTRY}
    jobs += [(k, t, s) for k, (ok, _) in verdicts.items() if ok
             for s in PIPELINED_SHAPES for t in TOOLS]
    with ThreadPoolExecutor(WORKERS) as pool:
        rows = list(progress(pool.map(lambda job: check_one(*job), jobs), total=len(jobs),
                             desc="sanitizer"))
    return {"rows": rows, "row_fields": ["kernel", "tool", "errors"],
            "parameters": {"shape": list(SHAPE), "pipelined_shapes": [list(s) for s in
                                                                     PIPELINED_SHAPES],
                           "tools": list(TOOLS), "sanitizer": sanitizer_path(),
                           "not_runnable_here": [line for ok, line in verdicts.values()
                                                 if not ok]}}
