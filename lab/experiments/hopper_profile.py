"""Experiment ``hopper_profile`` (chapter 7): what every Hopper rung does inside the SM, and how
steady the ladder's numbers are from one process to the next.

Two parts, run side by side in child processes that compile at the same time on the host's
cores and take turns on the GPU (:mod:`lab.gpulock`: one process at a time launches, copies or
times); rows carry ``part``:

* ``profile`` — one launch of each rung (FP16, :data:`PROFILE_N`³), of chapter 5's ``tc_fp16``
  and of cuBLAS FP16 under Nsight Compute (``--clock-control none``, caches flushed before each
  profiled launch): tensor-pipe utilisation, issue-slot use and active warps, every stall reason
  (warps stalled per issued instruction), L2 and DRAM bytes, the SM clock over the kernel, its
  duration, grid and cluster size. A tiny marker kernel is launched before each one, so the
  profiled launches are told apart by position, not by name (Hopper rungs 4–8 share one kernel
  function). Metrics this ``ncu`` does not know are left out (``ncu --query-metrics``).
* ``stability`` — :data:`PROCESSES` separate processes, each timing every rung, ``tc_*`` and
  cuBLAS at 4096³ and 8192³, FP16 and BF16, after a check on an odd shape and a warm-up of
  :data:`WARM_S` seconds of back-to-back calls per row; each row is timed for about
  :data:`ROW_S` seconds (CUDA events per call) while NVML samples the SM clock, board power and
  temperature every 20 ms (:class:`lab.clocks.Sampler`); the host's enqueue time per call is
  recorded too. Each process takes the kernels of a group in another order (rotated by its
  index), and times :data:`AGAIN` a second time at the end of each group (``again``), as the
  committed ``hopper`` run did in its sweep. ``ratio_to_cublas`` is over cuBLAS with the same
  input type, size and process. Inputs are cache-hot (one buffer set per group).
* ``summary`` — per kernel, size and type: the median over processes of each process's median
  time (``median_ms``; ``min_ms``/``max_ms`` the lowest and highest of those medians), and of
  its ratio to cuBLAS (``ratio_to_cublas``, with ``ratio_min``/``ratio_max``).

``python -m lab.experiments.hopper_profile --stability-child LOCK INDEX`` and
``--profile-child LOCK NAME…`` are the children (they print one ``ROW`` line per row).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

CHAPTER = "7.1"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("wgmma_tmastore_fp16", "wgmma_cluster_fp16", "tc_fp16")
H200_SECONDS = 300  # estimate: 4 children compiling side by side, ~3 min of GPU turns

RUNGS = ("wgmma_cpasync", "wgmma_tma", "wgmma_2wg", "wgmma_ws", "wgmma_persistent",
         "wgmma_pingpong", "wgmma_tmastore", "wgmma_cluster")
KINDS = ("fp16", "bf16")
SIZES = (4096, 8192)
PROFILE_N = 4096
PROFILE_KERNELS = ("tc_fp16", *(r + "_fp16" for r in RUNGS), "cublas_fp16")
PROCESSES = 3
WARM_S = 0.1
ROW_S = 0.3
MIN_REPEATS, MAX_REPEATS = 20, 4000
#: Kernels timed a second time at the end of every group of a stability process.
AGAIN = ("wgmma_tmastore", "wgmma_cluster", "cublas")
CHECK_SHAPE = (257, 129, 67)
#: A call slower than this many times the row's fastest counts as slow (``slow_share``).
SLOW = 1.3
CHILD_TIMEOUT_S = 270
ROW_FIELDS = ("part", "kernel")

#: Sections whose metrics the profile reads (page ``raw`` prints all of them).
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "SchedulerStats", "WarpStateStats",
            "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis")
#: Metrics asked for by name besides the sections' (each kept only where ``ncu`` knows it).
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__cycles_active.avg", "sm__cycles_active.max", "sm__cycles_active.min",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_bytes.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "sm__ctas_launched.sum",
)
#: Row field -> the metrics that give it, first found wins.
FIELDS = {
    "duration_us": ("gpu__time_duration.sum",),
    "sm_mhz": ("sm__cycles_elapsed.avg.per_second",),
    "tensor_active_pct": ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                          "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
    "tensor_any_active_pct": ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",),
    "issue_active_pct": ("smsp__issue_active.avg.pct_of_peak_sustained_active",),
    "warps_active_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "inst_executed": ("smsp__inst_executed.sum",),
    "gmma_inst": ("sm__inst_executed_pipe_tensor_op_gmma.sum",),
    "hmma_inst": ("sm__inst_executed_pipe_tensor_op_hmma.sum",),
    "dram_read_bytes": ("dram__bytes_read.sum",),
    "dram_write_bytes": ("dram__bytes_write.sum",),
    "l2_bytes": ("lts__t_bytes.sum",),
    "l2_read_sectors": ("lts__t_sectors_op_read.sum",),
    "l2_write_sectors": ("lts__t_sectors_op_write.sum",),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    "l2_to_sm_bytes": ("l1tex__m_xbar2l1tex_read_bytes.sum",),
    "sm_active_cycles_avg": ("sm__cycles_active.avg",),
    "sm_active_cycles_max": ("sm__cycles_active.max",),
    "sm_active_cycles_min": ("sm__cycles_active.min",),
    "ctas": ("sm__ctas_launched.sum", "launch__grid_size"),
    "grid_size": ("launch__grid_size",),
    "cluster_size": ("launch__cluster_dim_x", "launch__cluster_size"),
    "registers": ("launch__registers_per_thread",),
}
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
MARKER = "profile_marker"


def kernels(kind: str) -> list[str]:
    """One stability group's providers: chapter 5's best, the rungs, cuBLAS."""
    return [f"tc_{kind}", *(f"{r}_{kind}" for r in RUNGS), f"cublas_{kind}"]


def group_order(names: list[str], index: int) -> list[str]:
    """Process ``index``'s order of one group: rotated by ``3·index``, then :data:`AGAIN`'s
    kernels a second time."""
    shift = (3 * index) % len(names)
    order = names[shift:] + names[:shift]
    return order + [n for n in names if n.rsplit("_", 1)[0] in AGAIN]


# ----------------------------------------------------------------------------- ncu output

_SCALE = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
          "ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
          "s": 1e6, "second": 1e6, "cycle/nsecond": 1e3, "cycle/usecond": 1.0,
          "cycle/msecond": 1e-3, "cycle/second": 1e-6, "hz": 1e-6, "khz": 1e-3, "mhz": 1.0,
          "ghz": 1e3}

#: Fields whose raw metric is converted with :data:`_SCALE` (to µs or MHz or bytes).
_SCALED = {"duration_us", "sm_mhz", "dram_read_bytes", "dram_write_bytes", "l2_bytes",
           "l2_to_sm_bytes"}


def number(text: str) -> float | None:
    """A value of ncu's CSV as a float (thousands separators dropped), None for n/a."""
    text = (text or "").strip().replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def parse_raw_csv(text: str) -> list[dict]:
    """ncu ``--csv --page raw`` output -> one dict per profiled launch: ``name`` (the kernel
    name), ``values`` {metric: float} and ``units`` {metric: unit}. Lines that are not CSV
    (the program's own output, ``==PROF==`` lines) are skipped."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        return []
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    header = table[0]
    if "ID" not in header:
        return []
    has_units = len(table) > 1 and not table[1][header.index("ID")].strip().isdigit()
    units = table[1] if has_units else [""] * len(header)
    body = table[2:] if has_units else table[1:]
    out = []
    for rec in body:
        if len(rec) != len(header) or not rec[header.index("ID")].strip().isdigit():
            continue
        values, unit = {}, {}
        for name, u, v in zip(header, units, rec):
            x = number(v)
            if "__" in name and x is not None:
                values[name], unit[name] = x, u
        out.append({"name": rec[header.index("Kernel Name")] if "Kernel Name" in header
                    else "?", "values": values, "units": unit})
    return out


def split_by_marker(launches: list[dict], names: list[str]) -> dict[str, list[dict]]:
    """The profiled launches between marker kernels -> ``names`` in order (a group per name;
    launches before the first marker are dropped)."""
    groups: list[list[dict]] = []
    for launch in launches:
        if MARKER in launch["name"]:
            groups.append([])
        elif groups:
            groups[-1].append(launch)
    return {name: group for name, group in zip(names, groups)}


def profile_row(name: str, group: list[dict], dtype: str = "float16") -> dict:
    """One ``profile`` row from the launches of ``name`` (the longest one, for cuBLAS's)."""
    row = {"part": "profile", "kernel": name, "m": PROFILE_N, "n": PROFILE_N, "k": PROFILE_N,
           "dtype": dtype, "error": None}
    if not group:
        row["error"] = "no profiled launch"
        return row
    main = max(group, key=lambda g: g["values"].get("gpu__time_duration.sum", 0.0))
    row["launched"] = [g["name"] for g in group]
    row["ncu_kernel"] = main["name"]
    vals, units = main["values"], main["units"]
    for field, metrics in FIELDS.items():
        metric = next((m for m in metrics if m in vals), None)
        if metric is None:
            row[field] = None
            continue
        value = vals[metric]
        if field in _SCALED:
            scale = _SCALE.get(units.get(metric, "").strip().lower())
            if scale is None:
                row[field] = None
                row.setdefault("unknown_units", []).append(f"{metric} [{units.get(metric)}]")
                continue
            value *= scale
        row[field] = value
    for field in ("l2_read_sectors", "l2_write_sectors"):
        if row.get(field) is not None:
            row[field.replace("_sectors", "_bytes")] = 32.0 * row[field]
    stalls = {}
    for metric, value in vals.items():
        hit = STALL.match(metric)
        if hit:
            stalls[hit.group(1)] = value
    row["stalls"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1]))
    if row["duration_us"]:
        row["tflops_ncu"] = 2.0 * PROFILE_N ** 3 / (row["duration_us"] * 1e-6) / 1e12
    return row


# ----------------------------------------------------------------------------- ncu itself

def ncu_path() -> str | None:
    from lab.experiments.ncu_dram import ncu_path as find

    return find()


def known_metrics(ncu: str) -> set[str] | None:
    """The metric base names ``ncu`` knows for Hopper (``--query-metrics --chip gh100``), or
    None when it would not say."""
    try:
        out = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(re.findall(r"^([a-z0-9]+__[A-Za-z0-9_]+)\s", out, flags=re.M))
    return names or None


def usable_metrics(known: set[str] | None) -> list[str]:
    """:data:`METRICS` whose base name ``ncu`` knows (all of them when it would not say)."""
    if known is None:
        return list(METRICS)
    return [m for m in METRICS if m.split(".")[0] in known]


def ncu_command(ncu: str, metrics: list[str], lock: str, names,
                module: str = "lab.experiments.hopper_profile") -> list[str]:
    """Nsight Compute over ``module --profile-child LOCK NAME…`` (another experiment's module
    when it profiles configurations of its own, through :func:`profile_child`'s ``launcher``)."""
    cmd = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base"]
    for section in SECTIONS:
        cmd += ["--section", section]
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    return cmd + [sys.executable, "-m", module, "--profile-child", lock, *names]


# ----------------------------------------------------------------------------- children

def _emit(row: dict) -> None:
    print("ROW\t" + json.dumps(row, default=float), flush=True)


def _launcher(name: str, d_a, d_b, d_c):
    import lab
    from lab import baselines

    if name.startswith("cublas_"):
        kind = name.split("_", 1)[1]
        return lambda: baselines.launch(kind, d_a, d_b, d_c)
    spec = lab.get_spec(name)
    return lambda: spec.launch(d_a, d_b, d_c)


#: Input kind -> (host dtype of the inputs, the dtype name rows carry).
INPUTS = {"fp16": (np.float16, "float16"), "bf16": (np.uint16, "bfloat16"),
          "fp32": (np.float32, "float32")}


def _dtype(kind: str):
    return INPUTS[kind][0]


def profile_child(lock_path: str, names: list[str], kind: str = "fp16",
                  launcher=None) -> None:
    """Under ncu: compile, take the GPU, then launch the marker and each kernel once.
    ``launcher(name, d_a, d_b, d_c)`` makes each launch (default: a registered kernel or a
    ``cublas_`` yardstick); a name no kernel registers compiles at its first launch."""
    from numba import cuda, float32

    from lab import bench, gpulock
    from lab.kernels import REGISTRY

    launcher = launcher or _launcher
    bench.compile_ahead([n for n in names if n in REGISTRY])

    @cuda.jit
    def profile_marker(out):
        out[0] = float32(1)

    a, b = bench.random_inputs(PROFILE_N, PROFILE_N, PROFILE_N, _dtype(kind),
                               np.random.default_rng(7))
    lock = gpulock.GpuLock(lock_path)
    lock.acquire()
    t0 = time.time()
    try:
        flag = cuda.device_array(1, dtype=np.float32)
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        d_c = cuda.device_array((PROFILE_N, PROFILE_N), dtype=np.float32)
        for name in names:
            d_c.copy_to_device(np.full((PROFILE_N, PROFILE_N), np.nan, np.float32))
            profile_marker[1, 1](flag)
            cuda.synchronize()
            error = None
            try:
                launcher(name, d_a, d_b, d_c)()
                cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - one kernel's failure is its row's
                error = f"{type(exc).__name__}: {exc}"[:300]
            finite = bool(np.isfinite(d_c.copy_to_host()).all()) if error is None else False
            _emit({"kernel": name, "finite": finite, "error": error})
    finally:
        lock.release()
        _emit({"kernel": "__turn__", "start": t0, "end": time.time()})


def stability_child(lock_path: str, index: int) -> None:
    """One process of the stability part: compile, check, then time every group in this
    process's order while NVML samples the clocks."""
    from numba import cuda

    from lab import bench, clocks, gpulock

    every = [n for kind in KINDS for n in kernels(kind)]
    bench.compile_ahead([n for n in every if not n.startswith("cublas_")])
    inputs = {(size, kind): bench.random_inputs(size, size, size, _dtype(kind),
                                                np.random.default_rng(100 * index + size % 97))
              for size in SIZES for kind in KINDS}
    lock = gpulock.GpuLock(lock_path)
    lock.acquire()
    t0 = time.time()
    why = clocks.reason()
    sampler = None
    try:
        failed = {}
        for name in every:
            try:
                verdict = bench.check(name, *CHECK_SHAPE)
                if not verdict.passed:
                    failed[name] = verdict.line()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:300]
        clusters = {}
        for kind in KINDS:
            try:
                clusters[kind] = max_active_clusters(kind)
            except Exception as exc:  # noqa: BLE001 - recorded, not needed for timing
                clusters[kind] = f"{type(exc).__name__}: {exc}"[:200]
        _emit({"kernel": "__process__", "index": index, "failed": failed,
               "max_active_clusters": clusters, "nvml": why})
        if why is None:
            try:
                sampler = clocks.Sampler().__enter__()
            except Exception as exc:  # noqa: BLE001 - time without clocks, say why
                _emit({"kernel": "__process__", "index": index, "nvml": repr(exc)[:200]})
        for size in SIZES:
            for kind in KINDS:
                a, b = inputs[size, kind]
                d_a, d_b = cuda.to_device(a), cuda.to_device(b)
                d_c = cuda.device_array((size, size), dtype=np.float32)
                names = [n for n in kernels(kind) if n not in failed]
                if not names:
                    continue
                timed: dict[str, float] = {}
                for position, name in enumerate(group_order(names, index)):
                    row = _time_row(name, size, kind, d_a, d_b, d_c, sampler,
                                    f"{name} {size} #{position}", queued=True)
                    again = name in timed
                    row.update(process=index, position=position, again=again)
                    if not again:
                        timed[name] = row["median_ms"]
                    _emit(row)
                del d_a, d_b, d_c
    finally:
        if sampler is not None:
            sampler.__exit__(None, None, None)
        lock.release()
        _emit({"kernel": "__turn__", "index": index, "start": t0, "end": time.time()})


def max_active_clusters(kind: str) -> int:
    """How many 2-block clusters of Hopper rung 8 (``kind``) the GPU holds at once: the persistent
    grid the launch sizes itself to (``cuOccupancyMaxActiveClusters``)."""
    from dataclasses import replace

    from lab import hopper
    from lab.kernels import wgmma as K

    cfg = replace(K.RUNG_CONFIGS["wgmma_cluster"], kind="f16" if kind == "fp16" else "bf16")
    kernel, sig = K.kernel_for(cfg), K.signature(cfg)
    hopper.allow_dynamic_shared(kernel, sig, cfg.shared_bytes)
    return hopper.max_active_clusters(kernel, sig, cfg.threads, cfg.shared_bytes, cfg.cluster)


def _time_row(name, size, kind, d_a, d_b, d_c, sampler, label: str,
              queued: bool = False) -> dict:
    """Warm up for :data:`WARM_S`, then time for about :data:`ROW_S` (events per call); with
    ``queued``, also the GPU's own time per call with the launch path hidden
    (:func:`lab.bench.time_queued`: calls queued behind a busy kernel), as ``queued_ms``."""
    from numba import cuda

    from lab import bench, clocks

    call = _launcher(name, d_a, d_b, d_c)
    call()
    cuda.synchronize()
    start, stop = cuda.event(timing=True), cuda.event(timing=True)
    n = 5
    start.record()
    h0 = time.perf_counter()
    for _ in range(n):
        call()
    host_us = 1e6 * (time.perf_counter() - h0) / n
    stop.record()
    stop.synchronize()
    est_ms = max(cuda.event_elapsed_time(start, stop) / n, 1e-3)
    warm = max(1, int(WARM_S / (est_ms * 1e-3)))
    h0 = time.perf_counter()
    for _ in range(warm):
        call()
    host_us = min(host_us, 1e6 * (time.perf_counter() - h0) / warm)
    cuda.synchronize()
    repeats = int(min(MAX_REPEATS, max(MIN_REPEATS, ROW_S / (est_ms * 1e-3))))
    if sampler is not None:
        with sampler.phase(label):
            t = bench.time_gpu(lambda i: call(), warmup=0, repeats=repeats)
    else:
        t = bench.time_gpu(lambda i: call(), warmup=0, repeats=repeats)
    samples = np.array(t.samples_ms)
    row = {"part": "stability", "kernel": name, "m": size, "n": size, "k": size,
           "dtype": INPUTS[kind][1], **t.row(),
           "tflops": t.tflops(2.0 * size ** 3),
           "p10_ms": float(np.percentile(samples, 10)),
           "p90_ms": float(np.percentile(samples, 90)),
           "slow_share": float(np.mean(samples > SLOW * samples.min())),
           "host_us_per_call": host_us}
    if sampler is not None:
        try:
            s = clocks.summary(sampler.samples, label)
            row.update({f"clock_{k}" if not k.startswith(("sm_", "power", "temp")) else k: v
                        for k, v in s.items()})
        except ValueError:
            pass
    if queued:
        tq, covered = bench.time_queued(lambda i: call(), spinner=bench.process_spinner())
        row.update(queued_ms=tq.median_ms, queued_min_ms=tq.min_ms, queued_max_ms=tq.max_ms,
                   queued_tflops=tq.tflops(2.0 * size ** 3), spin_covered=covered)
    return row


# ----------------------------------------------------------------------------- the parent

def _read_rows(path: str) -> list[dict]:
    rows = []
    with open(path, errors="replace") as fh:
        for line in fh:
            if line.startswith("ROW\t"):
                try:
                    row = json.loads(line[4:])
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "kernel" in row:
                    rows.append(row)
    return rows


def _tail(path: str, chars: int = 600) -> str:
    with open(path, errors="replace") as fh:
        return fh.read()[-chars:]


def summarize(rows: list[dict]) -> list[dict]:
    """Per (kernel, size, dtype): medians over processes of the first timing in each process
    (``again`` rows left out), with the lowest and highest of them; ``ratio_to_cublas`` the
    median of each process's own ratio; where the rows carry ``queued_ms``, the same for the
    GPU's own time (``queued_ratio_to_cublas``, ``queued_ratio_min``/``_max``)."""
    first = [r for r in rows if r.get("part") == "stability" and not r.get("again")]
    base = {(r["process"], r["m"], r["dtype"]): r["median_ms"] for r in first
            if r["kernel"].startswith("cublas_")}
    base_q = {(r["process"], r["m"], r["dtype"]): r["queued_ms"] for r in first
              if r["kernel"].startswith("cublas_") and r.get("queued_ms")}
    by: dict[tuple, list[dict]] = {}
    for r in first:
        by.setdefault((r["kernel"], r["m"], r["dtype"]), []).append(r)
    out = []
    for (kernel, size, dtype), group in by.items():
        ms = np.array([r["median_ms"] for r in group])
        ratios = [base[r["process"], size, dtype] / r["median_ms"] for r in group
                  if (r["process"], size, dtype) in base]
        median_ms = float(np.median(ms))
        row = {"part": "summary", "kernel": kernel, "m": size, "n": size, "k": size,
               "dtype": dtype, "processes": len(group), "median_ms": median_ms,
               "min_ms": float(ms.min()), "max_ms": float(ms.max()),
               "tflops": 2.0 * size ** 3 / (median_ms * 1e-3) / 1e12,
               "ratio_to_cublas": float(np.median(ratios)) if ratios else None,
               "ratio_min": float(min(ratios)) if ratios else None,
               "ratio_max": float(max(ratios)) if ratios else None}
        queued = [base_q[r["process"], size, dtype] / r["queued_ms"] for r in group
                  if r.get("queued_ms") and (r["process"], size, dtype) in base_q]
        if queued:
            row.update(queued_ms=float(np.median([r["queued_ms"] for r in group])),
                       queued_ratio_to_cublas=float(np.median(queued)),
                       queued_ratio_min=float(min(queued)), queued_ratio_max=float(max(queued)))
        out.append(row)
    for r in rows:                       # the ratio of every timed row, in its own process
        if r.get("part") == "stability":
            ref = base.get((r["process"], r["m"], r["dtype"]))
            r["ratio_to_cublas"] = ref / r["median_ms"] if ref else None
    return out


def run(progress, *, processes: int = PROCESSES) -> dict:
    """Start the children side by side, wait for them (at most :data:`CHILD_TIMEOUT_S`), and
    assemble their rows. Their logs stay in ``LAB_PROFILE_LOGS`` when that names a folder."""
    from lab import bench

    bench.require_gpu("hopper_profile")
    ncu = ncu_path()
    work = os.environ.get("LAB_PROFILE_LOGS") or tempfile.mkdtemp(prefix="hopper_profile_")
    os.makedirs(work, exist_ok=True)
    lock = os.path.join(tempfile.mkdtemp(prefix="hopper_profile_lock_"), "gpu.lock")
    open(lock, "a").close()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    children = []
    meta = {"ncu": ncu, "ncu_version": None, "ncu_metrics": [], "processes": processes}
    if ncu:
        meta["ncu_version"] = subprocess.run(
            [ncu, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
        meta["ncu_metrics"] = usable_metrics(known_metrics(ncu))
        cmd = ncu_command(ncu, meta["ncu_metrics"], lock, PROFILE_KERNELS)
        children.append(("profile", cmd))
    for index in range(processes):
        children.append((f"stability{index}", [
            sys.executable, "-m", "lab.experiments.hopper_profile", "--stability-child", lock,
            str(index)]))
    started = []
    for label, cmd in children:
        log = open(os.path.join(work, f"{label}.log"), "w")
        started.append((label, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                env=env)))
    meta["child_status"] = wait_all(started, progress)
    with open(os.path.join(work, "meta.json"), "w") as fh:
        json.dump(meta, fh)
    return assemble(work, meta)


def wait_all(started, progress, timeout_s: float = CHILD_TIMEOUT_S) -> dict:
    """Wait for the ``(label, Popen)`` children together, at most ``timeout_s`` seconds in
    all; kill those still running then. {label: exit status as text, or why it was killed}."""
    deadline = time.monotonic() + timeout_s
    status = {}
    for label, child in progress(started, desc="children"):
        try:
            child.wait(timeout=max(1.0, deadline - time.monotonic()))
            status[label] = str(child.returncode)
        except subprocess.TimeoutExpired:
            child.kill()                               # (the caller started it)
            child.wait()
            status[label] = f"killed after {timeout_s:.0f} s"
    return status


def assemble(work: str, meta: dict) -> dict:
    """The experiment's rows and parameters from the children's logs in ``work``."""
    rows: list[dict] = []
    turns, processes_seen, errors = [], [], {}
    status = meta.get("child_status", {})
    for label in sorted(status):
        log = os.path.join(work, f"{label}.log")
        got = _read_rows(log) if os.path.exists(log) else []
        for r in got:
            if r["kernel"] == "__turn__":
                turns.append({"child": label, **r})
            elif r["kernel"] == "__process__":
                processes_seen.append(r)
        if status[label] != "0":
            errors[label] = f"exit {status[label]}: " + (_tail(log) if os.path.exists(log)
                                                          else "no log")
        if label == "profile":
            launched = {r["kernel"]: r for r in got if not r["kernel"].startswith("__")}
            with open(log, errors="replace") as fh:
                groups = split_by_marker(parse_raw_csv(fh.read()), list(PROFILE_KERNELS))
            for name in PROFILE_KERNELS:
                row = profile_row(name, groups.get(name, []))
                info = launched.get(name, {})
                row["output_finite"] = info.get("finite")
                if info.get("error"):
                    row["error"] = info["error"]
                rows.append(row)
        else:
            rows.extend(r for r in got if r.get("part") == "stability")
    if not meta.get("ncu"):
        rows.extend({"part": "profile", "kernel": n, "error": "ncu not found"}
                    for n in PROFILE_KERNELS)
    rows.extend(summarize(rows))
    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"rungs": list(RUNGS), "kinds": list(KINDS), "sizes": list(SIZES),
                           "profile_n": PROFILE_N, "profile_kernels": list(PROFILE_KERNELS),
                           "processes": meta.get("processes", PROCESSES), "warm_s": WARM_S,
                           "row_s": ROW_S, "again": list(AGAIN),
                           "check_shape": list(CHECK_SHAPE), "slow": SLOW,
                           "ncu": meta.get("ncu"), "ncu_version": meta.get("ncu_version"),
                           "ncu_sections": list(SECTIONS),
                           "ncu_metrics": meta.get("ncu_metrics", []),
                           "ncu_options": "--clock-control none, default --cache-control all "
                                          "(caches flushed before each profiled launch)",
                           "inputs": "cache-hot (one buffer set per group), uniform(-1, 1)",
                           "turns": turns, "process_info": processes_seen,
                           "child_status": status, "child_errors": errors},
            "notes": "part 'profile': one launch per kernel under ncu at profile_n³ FP16; "
                     "stalls are warps stalled per issued instruction, by reason. part "
                     "'stability': one row per timing in each process (again = the second "
                     "timing at the end of its group); part 'summary': medians over the "
                     "processes of their first timings, ratio_to_cublas against cuBLAS of "
                     "the same type, size and process."}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--profile-child"]:
        profile_child(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:2] == ["--stability-child"]:
        stability_child(sys.argv[2], int(sys.argv[3]))
