"""Experiment ``fp32_profile`` (chapters 1–4): the FP32 ladder's headline in several processes, and
what its last gap to cuBLAS is made of.

The method and the children are :mod:`lab.experiments.hopper_profile`'s, on FP32 inputs:

* ``profile`` — one launch of ``warptile_tuned`` (the ladder's best), ``warptile`` and cuBLAS FP32
  at :data:`PROFILE_N`³ under Nsight Compute: FMA-pipe and issue-slot use, active warps, every
  stall reason, L2 and DRAM bytes, the SM clock over the kernel.
* ``stability`` — :data:`PROCESSES` separate processes, each checking every rung on an odd shape,
  then timing every rung of chapters 1–4 and cuBLAS FP32 at :data:`SIZE`³ (warm-up, then about
  ``ROW_S`` seconds of calls with CUDA events, NVML sampling the SM clock and power), each
  process in another order.
* ``summary`` — per rung: the median over processes of each process's median time, and of its
  ratio to the cuBLAS FP32 of the same process, with the lowest and highest.

``python -m lab.experiments.fp32_profile --stability-child LOCK INDEX`` and
``--profile-child LOCK NAME…`` are the children.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from lab.experiments import hopper_profile as hp

CHAPTER = "4"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("warptile_tuned",)
H200_SECONDS = 150  # estimate: three processes compiling side by side, then ~1 min of turns

LADDER = ("naive", "tiled32", "patch8", "vectorized", "pipelined", "warptile", "warptile_tuned",
          "cublas_fp32")
PROFILE_KERNELS = ("warptile", "warptile_tuned", "cublas_fp32")
PROFILE_N = hp.PROFILE_N
SIZE = 4096
PROCESSES = 3
CHECK_SHAPE = hp.CHECK_SHAPE
KIND = "fp32"


def stability_child(lock_path: str, index: int) -> None:
    """One process: compile, check on an odd shape, then time the ladder in this process's
    order (rotated by its index) while NVML samples the clocks."""
    from numba import cuda

    from lab import bench, clocks, gpulock

    ours = [n for n in LADDER if not n.startswith("cublas_")]
    bench.compile_ahead(ours)
    a, b = bench.random_inputs(SIZE, SIZE, SIZE, np.float32,
                               np.random.default_rng(100 * index + 7))
    lock = gpulock.GpuLock(lock_path)
    lock.acquire()
    t0 = time.time()
    sampler = None
    try:
        failed = {}
        for name in LADDER:
            verdict = bench.check(name, *CHECK_SHAPE)
            if not verdict.passed:
                failed[name] = verdict.line()
        hp._emit({"kernel": "__process__", "index": index, "failed": failed,
                  "nvml": clocks.reason()})
        if clocks.reason() is None:
            sampler = clocks.Sampler().__enter__()
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        d_c = cuda.device_array((SIZE, SIZE), dtype=np.float32)
        names = [n for n in LADDER if n not in failed]
        shift = (2 * index) % len(names)
        for position, name in enumerate(names[shift:] + names[:shift]):
            row = hp._time_row(name, SIZE, KIND, d_a, d_b, d_c, sampler,
                               f"{name} {SIZE} #{position}")
            row.update(process=index, position=position, again=False)
            hp._emit(row)
    finally:
        if sampler is not None:
            sampler.__exit__(None, None, None)
        lock.release()
        hp._emit({"kernel": "__turn__", "index": index, "start": t0, "end": time.time()})


def run(progress, *, processes: int = PROCESSES) -> dict:
    """Start the ncu child and the stability children side by side and assemble their rows."""
    from lab import bench

    bench.require_gpu("fp32_profile")
    ncu = hp.ncu_path()
    work = os.environ.get("LAB_PROFILE_LOGS") or tempfile.mkdtemp(prefix="fp32_profile_")
    os.makedirs(work, exist_ok=True)
    lock = os.path.join(tempfile.mkdtemp(prefix="fp32_profile_lock_"), "gpu.lock")
    open(lock, "a").close()
    children = []
    meta = {"ncu": ncu, "ncu_metrics": []}
    if ncu:
        meta["ncu_metrics"] = hp.usable_metrics(hp.known_metrics(ncu))
        cmd = hp.ncu_command(ncu, meta["ncu_metrics"], lock, PROFILE_KERNELS)
        cmd[cmd.index("lab.experiments.hopper_profile")] = "lab.experiments.fp32_profile"
        children.append(("profile", cmd))
    for index in range(processes):
        children.append((f"stability{index}", [sys.executable, "-m",
                                               "lab.experiments.fp32_profile",
                                               "--stability-child", lock, str(index)]))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = [(label, subprocess.Popen(cmd, env=env, stderr=subprocess.STDOUT,
                                        stdout=open(os.path.join(work, f"{label}.log"), "w")))
               for label, cmd in children]
    status = hp.wait_all(started, progress)
    rows, errors, info = [], {}, []
    for label in sorted(status):
        log = os.path.join(work, f"{label}.log")
        got = hp._read_rows(log)
        info += [r for r in got if r["kernel"].startswith("__")]
        if status[label] != "0":
            errors[label] = f"exit {status[label]}: " + hp._tail(log)
        if label == "profile":
            launched = {r["kernel"]: r for r in got if not r["kernel"].startswith("__")}
            with open(log, errors="replace") as fh:
                groups = hp.split_by_marker(hp.parse_raw_csv(fh.read()), list(PROFILE_KERNELS))
            for name in PROFILE_KERNELS:
                row = hp.profile_row(name, groups.get(name, []), dtype="float32")
                row["output_finite"] = launched.get(name, {}).get("finite")
                if launched.get(name, {}).get("error"):
                    row["error"] = launched[name]["error"]
                rows.append(row)
        else:
            rows += [r for r in got if r.get("part") == "stability"]
    rows += hp.summarize(rows)
    return {"rows": rows, "row_fields": hp.ROW_FIELDS,
            "parameters": {"ladder": list(LADDER), "size": SIZE, "processes": processes,
                           "profile_n": PROFILE_N, "profile_kernels": list(PROFILE_KERNELS),
                           "check_shape": list(CHECK_SHAPE), "warm_s": hp.WARM_S,
                           "row_s": hp.ROW_S, "ncu": ncu, "ncu_metrics": meta["ncu_metrics"],
                           "ncu_sections": list(hp.SECTIONS),
                           "ncu_options": "--clock-control none, default --cache-control all",
                           "inputs": "cache-hot (one buffer set), uniform(-1, 1)",
                           "child_status": status, "child_errors": errors,
                           "process_info": json.loads(json.dumps(info, default=str))},
            "notes": "As hopper_profile, on FP32 inputs: profile rows from one launch under "
                     "ncu; stability rows one per process and rung; summary rows the medians "
                     "over processes, ratio_to_cublas against cuBLAS FP32 of the same process."}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--profile-child"]:
        hp.profile_child(sys.argv[2], sys.argv[3:], kind=KIND)
    elif sys.argv[1:2] == ["--stability-child"]:
        stability_child(sys.argv[2], int(sys.argv[3]))
