"""Experiment ``launch_cost`` (chapter 9b): host time per call and GPU time of every kernel
family, launched the old way (Numba's launch), through launch plans, and from a CUDA graph.

At :data:`SIZE`³ FP16 (FP32 C), PyTorch-allocated buffers, for each family — chapter 5's
``tc_fp16`` (a plain Numba launch), the Hopper launcher (``wgmma_tmastore_fp16``), the cluster
launch (``wgmma_cluster_fp16``) — and each path:

* ``numba`` — the launcher as it was: every launch through ``kernel[grid, block, 0, shared]``
  (the cluster launch marshals its arguments on every call), tensor maps looked up per call;
* ``bindings`` — the launcher's Python each call, each launch through its cached plan
  (:func:`lab.enqueue.launch`: a dictionary look-up), the driver called by ``cuda.bindings``;
* ``plan`` — the same, the driver's ``cuLaunchKernel`` called by ctypes (the default; a
  cluster launch always goes through ``cuda.bindings``' ``cuLaunchKernelEx``);
* ``memo`` — the registered launcher: a repeated call replays the plans it recorded
  (:func:`lab.enqueue.memo`), none of the launcher's Python runs;
* ``graph`` — a CUDA graph of :data:`GRAPH_CALLS` calls replayed (``lab.enqueue.Graph``),
  per call;

and ``lab.gemm`` with PyTorch tensors (FP16 out) and cuBLAS (``torch.mm``, plain and from a
``torch.cuda.CUDAGraph``) at :data:`SMALL`³, :data:`SIZE`³ and the decode shape
:data:`DECODE` (the small-M kernel). Each row: ``host_us`` (wall time of :data:`HOST_CALLS` calls queued
behind a busy kernel, so that the host never waits for the GPU, per call), ``as_called``
(events around each call of a loop, median) and ``gpu_ms`` (graph replay, per call). Rows with
``part = "marshal"`` compare what a plan marshals with Numba's own ``_prepare_args`` for each
family's main kernel.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

CHAPTER = "9b"
#: ``measure --jobs N`` runs this experiment alone, after the others: its rows are the host's time
#: per call, which compiling beside it inflates.
ALONE = True
NEEDS = ("torch",)
#: None: the families this GPU cannot run are left out (lab.gemm and cuBLAS rows remain).
NEEDS_KERNELS = ()
H200_SECONDS = 30  # measured: 37 s beside sweep, 11 s of it waiting for the GPU

SIZE = 2048
SMALL = 256
#: A decode shape (M, N, K) for lab.gemm's host cost on the small-M kernel.
DECODE = (1, 4096, 4096)
HOST_CALLS = 200
GRAPH_CALLS = 20
FAMILIES = ("tc_fp16", "wgmma_tmastore_fp16", "wgmma_cluster_fp16")
PATHS = ("numba", "bindings", "plan", "memo", "graph")


def _host_us(call, calls: int = HOST_CALLS) -> float:
    """Host wall time per call with the GPU kept busy (a spin kernel first)."""
    import torch
    from lab.timing import process_spinner

    call()
    torch.cuda.synchronize()
    spinner = process_spinner()
    best = []
    for _ in range(3):
        spinner.launch(5.0)
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        best.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return float(min(best))


def _marshal_rows(spec, A, B, C) -> list[dict]:
    """What the plans of one call marshalled, against Numba's ``_prepare_args``."""
    from lab import enqueue

    rows = []
    cp = spec.launch.plan_for(A, B, C) if hasattr(spec.launch, "plan_for") else None
    for p in (cp.plans if cp else ()):
        compiled = p.kernel.compile(p.signature) if getattr(p, "signature", None) else None
        if compiled is None:
            continue
        values, keep = [], []
        for ty, v in zip(compiled.argument_types, p.args):
            compiled._prepare_args(ty, v, 0, keep, values)
        theirs = [getattr(v, "value", v) for v in values]
        ours = enqueue.cell_values(p.cells)
        rows.append({"part": "marshal", "kernel": spec.name, "path": p.name, "m": 2048,
                     "values": len(ours), "ok": [int(x) for x in ours] ==
                     [int(x) for x in theirs]})
    return rows


# ----------------------------------------------------------------------------- timing

def _events(n):
    import torch
    return [torch.cuda.Event(enable_timing=True) for _ in range(n)]


def _summary(ms: list) -> dict:
    return {"median_ms": float(np.median(ms)), "min_ms": float(min(ms)),
            "max_ms": float(max(ms)), "repeats": len(ms)}


def as_called(call, repeats: int, warmup: int = 3) -> dict:
    """Events around each call of a plain Python loop (queued: no sync between calls)."""
    import torch

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    starts, stops = _events(repeats), _events(repeats)
    t0 = time.perf_counter()
    for i in range(repeats):
        starts[i].record()
        call()
        stops[i].record()
    host = (time.perf_counter() - t0) / repeats
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) for s, e in zip(starts, stops)]
    return dict(_summary(ms), host_us=1e6 * host, ms=ms)


def gpu_only(replay, calls: int, repeats: int) -> dict:
    """Events around replays of a graph of ``calls`` calls: ms per call."""
    import torch

    replay()
    torch.cuda.synchronize()
    starts, stops = _events(repeats), _events(repeats)
    for i in range(repeats):
        starts[i].record()
        replay()
        stops[i].record()
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) / calls for s, e in zip(starts, stops)]
    return dict(_summary(ms), ms=ms)


def torch_graph(call, calls: int):
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        call()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            call()
    return g.replay


def run(progress) -> dict:
    import torch
    import lab
    from lab import enqueue
    from lab.kernels import get_spec

    n = SIZE
    g = torch.Generator(device="cuda").manual_seed(1)
    A = (torch.rand((n, n), device="cuda", generator=g) * 2 - 1).half()
    B = (torch.rand((n, n), device="cuda", generator=g) * 2 - 1).half()
    C = torch.empty((n, n), dtype=torch.float32, device="cuda")
    C16 = torch.empty((n, n), dtype=torch.float16, device="cuda")
    from numba import cuda
    a, b, c = (cuda.as_cuda_array(x) for x in (A, B, C))
    ref = (A.double() @ B.double())
    rows = []
    enqueue.KEEP_ARGS = True
    from lab.kernels import runnable

    for name in progress([f for f in FAMILIES if runnable(f)[0]]):
        spec = get_spec(name)
        for path in PATHS:
            enqueue.NUMBA_LAUNCH = path == "numba"
            if path in ("bindings", "plan"):
                enqueue.DIRECT = path == "plan"
                enqueue.clear()
            if path in ("numba", "bindings", "plan"):
                def call():
                    spec.launch.__wrapped__(a, b, c)
            else:
                def call():
                    spec.launch(a, b, c)
            c.copy_to_device(np.full((n, n), np.nan, np.float32))
            call()
            torch.cuda.synchronize()
            err = float((C.double() - ref).abs().max() / ref.abs().max())
            row = {"part": "host", "kernel": name, "path": path, "m": n, "n": n, "k": n,
                   "max_err_over_max_entry": err, "passed": bool(err < 1e-3)}
            if path == "graph":
                graph = enqueue.Graph(call, GRAPH_CALLS)
                row["host_us"] = _host_us(graph.launch, 20) / GRAPH_CALLS
                t = gpu_only(graph.launch, GRAPH_CALLS, 10)
                row.update({"median_ms": t["median_ms"], "min_ms": t["min_ms"],
                            "max_ms": t["max_ms"], "repeats": t["repeats"],
                            "method": "gpu_only"})
            else:
                row["host_us"] = _host_us(call)
                t = as_called(call, 50)
                row.update({"median_ms": t["median_ms"], "min_ms": t["min_ms"],
                            "max_ms": t["max_ms"], "repeats": t["repeats"],
                            "method": "as_called"})
            rows.append(row)
        enqueue.NUMBA_LAUNCH = False
        try:
            rows += _marshal_rows(spec, a, b, c)
        except Exception as exc:  # noqa: BLE001
            rows.append({"part": "marshal", "kernel": name, "path": "?", "m": 2048,
                         "error": str(exc)[:200]})
    enqueue.KEEP_ARGS = False
    # lab.gemm and cuBLAS as a PyTorch user calls them (FP16 out), plain and from graphs;
    # one unrecorded pass over the three shapes first (the first shape measured was seen
    # 40 % slower for both, a warm-up effect of the process, not of the shape)
    shapes = ((SMALL,) * 3, (n,) * 3, DECODE)
    operands = []
    for mm, nn, kk in shapes:
        x = (torch.rand((mm, kk), device="cuda", generator=g) * 2 - 1).half()
        y = (torch.rand((kk, nn), device="cuda", generator=g) * 2 - 1).half()
        operands.append((x, y, torch.empty((mm, nn), dtype=torch.float16, device="cuda")))
    for x, y, o16 in operands:
        r16 = torch.empty_like(o16)
        for call in (lambda: lab.gemm(x, y, o16), lambda: lab.gemm(x, y),
                     lambda: torch.mm(x, y, out=r16)):
            _host_us(call)
    for (mm, nn, kk), (x, y, o16) in zip(shapes, operands):
        r16 = torch.empty_like(o16)
        for impl, call in (("lab.gemm", lambda: lab.gemm(x, y, o16)),
                           ("lab.gemm out=None", lambda: lab.gemm(x, y)),
                           ("cublas (torch.mm)", lambda: torch.mm(x, y, out=r16))):
            t = as_called(call, 50)
            rows.append({"part": "host", "kernel": impl, "path": "call", "m": mm, "n": nn,
                         "k": kk, "host_us": _host_us(call), "method": "as_called",
                         "median_ms": t["median_ms"], "min_ms": t["min_ms"],
                         "max_ms": t["max_ms"], "repeats": t["repeats"]})
            if impl == "lab.gemm out=None":
                continue
            replay = (lab.gemm.graph(x, y, o16, GRAPH_CALLS).launch if impl == "lab.gemm"
                      else torch_graph(call, GRAPH_CALLS))
            t = gpu_only(replay, GRAPH_CALLS, 10)
            rows.append({"part": "host", "kernel": impl, "path": "graph", "m": mm,
                         "n": nn, "k": kk, "host_us": _host_us(replay, 20) / GRAPH_CALLS,
                         "method": "gpu_only", "median_ms": t["median_ms"],
                         "min_ms": t["min_ms"], "max_ms": t["max_ms"],
                         "repeats": t["repeats"]})
    del C16
    raw = os.environ.get("LAB_RAW_ROWS")
    if raw:                                   # kept even if saving the file fails
        with open(raw + ".launch_cost", "w") as f:
            json.dump(rows, f)
    return {"rows": rows, "row_fields": ["part", "kernel", "path", "m"],
            "parameters": {"size": SIZE, "small": SMALL, "decode": list(DECODE), "host_calls": HOST_CALLS,
                           "graph_calls": GRAPH_CALLS, "families": list(FAMILIES),
                           "paths": list(PATHS), "torch": torch.__version__,
                           "inputs": "PyTorch tensors (FP16, uniform(-1, 1)), cache-hot"},
            "notes": "host_us: wall time per call of host_calls calls queued behind a 5 ms "
                     "spin kernel (best of 3), graph rows per call of the graph; as_called: "
                     "events around each call of a Python loop (median of 50); gpu_only: "
                     "graph replays, per call. marshal rows: a plan's values against "
                     "numba's _prepare_args for the same arguments."}
