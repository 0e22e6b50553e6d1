"""Experiment ``sweep`` (chapter 9b): ``lab.gemm`` against cuBLAS over squares, LLM shapes,
skinny and odd sizes — GPU-only and as called from Python, in :data:`PROCESSES` processes one
after another (each its own first calls, tuning included); each row is the median process's
(by ``ratio_to_cublas``), with every process's ratio beside it.

Shapes (:data:`SQUARES`, :data:`LLM_M` × :data:`LLM_NK`, :data:`ODD`): FP16 inputs, FP16
output (``lab.gemm`` with an FP16 ``out``; cuBLAS through ``torch.mm``, which writes FP16),
and on the squares FP32 output too (``torch.mm(..., out_dtype=torch.float32)``). PyTorch
tensors in, for both: the same buffers, the same values.

Per shape, first a check: ``out`` filled with NaN, ``lab.gemm`` run, the result compared with
the float64 product of the same inputs on the GPU (relative error = max |error| / max |entry|;
FP16 output passes under :data:`TOLERANCE`). Then two timings of each of ``lab.gemm`` and
cuBLAS, side by side, in :data:`ROUNDS` rounds ordered ours, cuBLAS, cuBLAS, ours (a board at
its power limit lowers its SM clock within a run: at 16384³ the clock was seen between 930 and
1980 MHz, so whichever side ran second could be the slower), each side's samples pooled:

* ``as_called`` — a Python loop of calls, a CUDA event recorded before and after each one
  (queued, no synchronisation between calls): what a caller sees, host cost included when the
  host is slower than the kernel;
* ``gpu_only`` — a CUDA graph of :data:`GRAPH_CALLS` calls (``lab.gemm.graph`` /
  ``torch.cuda.CUDAGraph``), replayed between two events: the GPU's own time per call.

Repeats shrink with the product's size so that the whole sweep fits one 8-minute command.
Each row carries the median SM clock and mean board power NVML reported while it was timed
(``sm_mhz``, ``power_w``; sampled every 20 ms, so short rows have few or no samples).
Triton is not in this sweep (chapter 9's ``libraries`` experiment times it at fewer shapes).
Inputs are cache-hot (one buffer set per shape; at 16384³ the operands exceed L2 anyway).
``ratio_to_cublas`` = cuBLAS median time / ours (> 1: ours faster), same method, same shape.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CHAPTER = "9b"
SUMMARY = ("lab.gemm against cuBLAS over squares, LLM shapes, skinny and odd sizes — GPU-only "
           "and as called from Python, in three processes one after another")
NEEDS = ("torch",)
#: None: lab.gemm picks a kernel this GPU runs (any compute capability from 7.5).
NEEDS_KERNELS = ()
H200_SECONDS = 500  # a process measured 140-200 s (the first also checks the variants)
#: Processes, one after another; a row's headline ratio is the median of theirs.
PROCESSES = 3

SQUARES = (256, 512, 1024, 2048, 4096, 8192, 16384)
LLM_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336))
ODD = ((4097, 4097, 4097), (1000, 1030, 999), (8191, 8191, 8191), (3000, 5000, 777),
       (12345, 768, 2048), (64, 8192, 8192), (8192, 64, 8192), (127, 4099, 4096),
       (2049, 2049, 2049))
TOLERANCE = 1e-2
GRAPH_CALLS = 10
#: Timing rounds per shape, in the order ours, cuBLAS, cuBLAS, ours (ABBA): both sides see
#: the same share of a warm board, whose SM clock falls when it reaches its power limit.
ROUNDS = 2
#: Seconds of calls each timing aims at (repeats between MIN_REPEATS and MAX_REPEATS).
TARGET_S = 0.08
MIN_REPEATS, MAX_REPEATS = 10, 200


def shapes() -> list[tuple[str, int, int, int]]:
    out = [("square", s, s, s) for s in SQUARES]
    out += [("llm", m, n, k) for n, k in LLM_NK for m in LLM_M]
    out += [("odd", m, n, k) for m, n, k in ODD]
    return out


def _events(n):
    import torch
    return [torch.cuda.Event(enable_timing=True) for _ in range(n)]


def guess_ms(m: int, n: int, k: int) -> float:
    """A product's time guessed at 500 TFLOP/s, plus 10 µs (ms)."""
    return 2.0 * m * n * k / 500e12 * 1e3 + 0.01


def repeats_for(ms_guess: float) -> int:
    return int(min(MAX_REPEATS, max(MIN_REPEATS, TARGET_S / max(ms_guess, 1e-3) * 1e3)))


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


def check(A, B, out, ref) -> float:
    import torch
    import lab

    out.fill_(float("nan"))
    lab.gemm(A, B, out)
    torch.cuda.synchronize()
    got = out.double()
    if torch.isnan(got).any():
        return float("inf")
    return float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def _row(base: dict, t: dict, m: int, n: int, k: int) -> dict:
    row = dict(base, **t)
    row["tflops"] = 2.0 * m * n * k / (row["median_ms"] * 1e-3) / 1e12
    return row


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _clocks(sampler, labels) -> dict:
    """Median SM clock (MHz) and mean board power (W) over the samples of ``labels``."""
    mine = [x for x in sampler.samples if x.phase in set(labels)]
    if not mine:
        return {"sm_mhz": None, "power_w": None, "clock_samples": 0}
    return {"sm_mhz": float(np.median([x.sm_mhz for x in mine])),
            "power_w": float(np.mean([x.power_w for x in mine])),
            "clock_samples": len(mine)}


def measure_shape(group: str, m: int, n: int, k: int, out_types=("float16",),
                  sampler=None) -> list[dict]:
    import torch
    import lab

    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 11 + k)
    A = (torch.rand((m, k), device="cuda", generator=g) * 2 - 1).half()
    B = (torch.rand((k, n), device="cuda", generator=g) * 2 - 1).half()
    ref = A.double() @ B.double()
    rows = []
    for odt in out_types:
        tdt = getattr(torch, odt)
        out = torch.empty((m, n), dtype=tdt, device="cuda")
        ref_out = torch.empty((m, n), dtype=tdt, device="cuda")
        err = check(A, B, out, ref)
        choice = lab.gemm.explain(A, B, out)          # after the first call: what it picked
        base = {"group": group, "m": m, "n": n, "k": k, "dtype": "float16", "out_dtype": odt,
                "kernel": choice.kernel, "splits": choice.splits, "tuned": choice.tuned,
                "max_err_over_max_entry": err, "passed": bool(err < TOLERANCE)}
        for field in ("bn", "bm", "blocks", "fixup"):    # tile, stream-K's blocks and fix-up
            if getattr(choice, field):
                base[field] = getattr(choice, field)
        if odt == "float16":
            def theirs():
                torch.mm(A, B, out=ref_out)
        else:
            def theirs():
                torch.mm(A, B, out_dtype=torch.float32, out=ref_out)
        try:
            theirs()
        except (TypeError, RuntimeError) as exc:
            rows.append(dict(base, impl="cublas", error=f"torch.mm: {exc}"[:200]))
            continue

        def ours():
            lab.gemm(A, B, out)
        reps = repeats_for(guess_ms(m, n, k))
        impls = (("lab.gemm", ours), ("cublas", theirs))
        replays = {"lab.gemm": lab.gemm.graph(A, B, out, GRAPH_CALLS).launch,
                   "cublas": torch_graph(theirs, GRAPH_CALLS)}
        got = {}
        for r in range(ROUNDS):                # ours, cuBLAS, then cuBLAS, ours: ABBA
            for impl, call in (impls if r % 2 == 0 else impls[::-1]):
                for method in ("as_called", "gpu_only"):
                    label = f"{m}x{n}x{k} {odt} {impl} {method} {r}"
                    with (sampler.phase(label) if sampler else _nothing()):
                        t = (as_called(call, max(1, reps // ROUNDS)) if method == "as_called"
                             else gpu_only(replays[impl], GRAPH_CALLS,
                                           max(3, reps // GRAPH_CALLS // ROUNDS)))
                    g = got.setdefault((impl, method), {"ms": [], "host": [], "labels": []})
                    g["ms"] += t["ms"]
                    g["labels"].append(label)
                    if "host_us" in t:
                        g["host"].append(t["host_us"])
        pair = {key: float(np.median(g["ms"])) for key, g in got.items()}
        for (impl, method), g in got.items():
            b = dict(base, impl=impl, method=method, rounds=ROUNDS)
            if impl == "cublas":
                b["kernel"] = "cublas (torch.mm)"
            t = _summary(g["ms"])
            if g["host"]:
                t["host_us"] = float(np.mean(g["host"]))
            if sampler:
                t.update(_clocks(sampler, g["labels"]))
            row = _row(b, t, m, n, k)
            row["ratio_to_cublas"] = pair[("cublas", method)] / pair[("lab.gemm", method)]
            rows.append(row)
        torch.cuda.synchronize()
    return rows


#: Tile-edge shapes at which process 0 checks the kernels ``lab.gemm`` builds beyond the
#: registered ones (:func:`lab.gemm.variants`: narrower tiles, stream-K's atomic fix-up).
CHECK_SHAPES = ((1, 1, 1), (97, 4100, 3000), (257, 129, 67), (128, 1000, 14336))


def check_variants(path: str) -> None:
    """Each variant's check (fresh inputs, C poisoned with NaN, float64 reference) at
    :data:`CHECK_SHAPES`, twice through one launcher; a failure stops the sweep."""
    import lab
    from lab.experiments import hopper_past
    from lab.kernels import wgmma as K

    rng = np.random.default_rng(7)
    for cfg in lab.gemm.variants():
        launch = K.launcher(cfg)
        for rep in range(2):
            for m, n, k in CHECK_SHAPES:
                r = hopper_past.check(cfg, m, n, k, rng, launch)
                if not r["passed"]:
                    raise AssertionError(f"{cfg.label} failed at {m}x{n}x{k}: {r['line']}")
                with open(path, "a") as f:
                    f.write(json.dumps({"group": "check", "impl": cfg.label, "method":
                                        f"call {rep + 1}", "m": m, "n": n, "k": k,
                                        "out_dtype": cfg.out, "passed": True,
                                        "line": r["line"]}) + "\n")


def child(path: str, index: int) -> None:
    """One process's sweep: every shape in turn, each row appended to ``path`` (JSON lines)
    as soon as it is measured, tagged with the process's ``index``; process 0 first checks
    :func:`lab.gemm.variants`."""
    import torch

    from lab import clocks

    if index == 0:
        check_variants(path)

    why_not = clocks.reason()
    sampler = clocks.Sampler() if why_not is None else None
    with (sampler if sampler else _nothing()):
        for group, m, n, k in shapes():
            outs = ("float16", "float32") if group == "square" else ("float16",)
            try:
                got = measure_shape(group, m, n, k, outs, sampler)
            except Exception as exc:  # noqa: BLE001 - a failed shape is recorded, not fatal
                got = [{"group": group, "m": m, "n": n, "k": k, "impl": "lab.gemm",
                        "error": f"{type(exc).__name__}: {exc}"[:300]}]
            with open(path, "a") as f:
                for r in got:
                    r.pop("ms", None)
                    f.write(json.dumps(dict(r, process=index)) + "\n")
            torch.cuda.empty_cache()
    from lab import enqueue
    with open(path, "a") as f:
        f.write(json.dumps({"part": "board", "process": index,
                            "power_limit_w": sampler.power_limit_w if sampler else None,
                            "max_sm_mhz": sampler.max_sm_mhz if sampler else None,
                            "graph_failures": enqueue.STATS["graph_failures"]}) + "\n")


def merge(rows: list[dict], processes: int) -> list[dict]:
    """One row per (group, impl, method, shape, output type): the row of the process whose
    ``ratio_to_cublas`` is the median (the lower middle of an even count), with every
    process's ratio (``ratios``, in process order), their min and max, and the kernels the
    processes picked. A shape that failed in any process keeps one error row instead."""
    checks = [r for r in rows if r.get("group") == "check"]
    rows = [r for r in rows if r.get("group") != "check"]
    failed: dict = {}
    for r in rows:
        if "error" in r:
            failed.setdefault((r["group"], r["m"], r["n"], r["k"]), dict(r))
    keyed: dict = {}
    for r in rows:
        if r.get("part") == "board" or (r["group"], r["m"], r["n"], r["k"]) in failed:
            continue
        key = (r["group"], r.get("impl"), r.get("method"), r["m"], r["n"], r["k"],
               r.get("out_dtype"))
        keyed.setdefault(key, []).append(r)
    short = [k for k, g in keyed.items() if len(g) != processes]
    if short:
        raise RuntimeError(f"sweep: {len(short)} rows missing from some process, e.g. "
                           f"{short[0]}")
    out = checks + [dict(r, processes=processes) for r in failed.values()]
    for group in keyed.values():
        ordered = sorted(group, key=lambda r: r["ratio_to_cublas"])
        middle = dict(ordered[(len(ordered) - 1) // 2])
        middle.pop("process", None)
        ratios = [r["ratio_to_cublas"] for r in sorted(group, key=lambda r: r["process"])]
        middle.update(processes=len(group), ratios=ratios, ratio_min=min(ratios),
                      ratio_max=max(ratios), kernels=sorted({r["kernel"] for r in group}))
        out.append(middle)
    return out


def run(progress, quick: bool = False) -> dict:
    import torch

    from lab import clocks

    why_not = clocks.reason()
    work = tempfile.mkdtemp(prefix="sweep_")
    raw = []
    for index in progress(range(PROCESSES), desc="processes"):
        path = os.path.join(work, f"process{index}.jsonl")
        done = subprocess.run([sys.executable, "-m", "lab.experiments.sweep", "--child", path,
                               str(index)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"sweep process {index} failed: {done.stderr[-800:]}")
        with open(path) as f:
            raw += [json.loads(line) for line in f]
    boards = [r for r in raw if r.get("part") == "board"]
    board = boards[0] if boards else {}
    rows = merge(raw, PROCESSES)
    return {"rows": rows,
            "row_fields": ["group", "impl", "method", "m", "n", "k", "out_dtype"],
            "parameters": {"squares": list(SQUARES), "llm_m": list(LLM_M),
                           "llm_nk": [list(x) for x in LLM_NK], "odd": [list(x) for x in ODD],
                           "tolerance": TOLERANCE, "graph_calls": GRAPH_CALLS,
                           "target_s": TARGET_S, "repeats": [MIN_REPEATS, MAX_REPEATS],
                           "rounds": ROUNDS, "processes": PROCESSES,
                           "clocks": ("NVML every {:.0f} ms".format(1e3 * clocks.INTERVAL_S)
                                      if why_not is None else f"not sampled: {why_not}"),
                           "power_limit_w": board.get("power_limit_w"),
                           "max_sm_mhz": board.get("max_sm_mhz"),
                           "graph_failures": sum(b.get("graph_failures", 0) for b in boards),
                           "inputs": "PyTorch tensors, uniform(-1, 1) in FP16, cache-hot",
                           "cublas": "torch.mm (FP16 out), torch.mm(out_dtype=float32) "
                                     "(FP32 out)",
                           "torch": torch.__version__},
            "notes": "as_called: events around each call of a Python loop; gpu_only: a CUDA "
                     "graph of graph_calls calls replayed, per call. ratio_to_cublas = cuBLAS "
                     "median / lab.gemm median, same method and shape. error: max |error| / "
                     "max |entry| against float64 on the GPU, out poisoned with NaN first. "
                     "Timings in rounds (ours, cuBLAS, cuBLAS, ours), samples pooled; sm_mhz "
                     "and power_w: NVML's median SM clock and mean power over a row's "
                     "timings. Each row is the median process's (by ratio_to_cublas); ratios: "
                     "every process's, in order; kernels: what the processes picked."}


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], int(sys.argv[3]))
