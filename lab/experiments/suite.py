"""Experiment ``suite`` (chapter 9b): ``lab.gemm`` against cuBLAS (``torch.mm``, same inputs,
same 16-bit output type) over a fixed suite of shapes a model calls, FP16 and BF16, by two
methods, in :data:`PROCESSES` processes one after another (each its own first calls: tuning,
or the tuning kept on disk by the first process); each row is the median process's.

The suite (:func:`shapes`, each shape with its reason): the linear layers of five public model
configurations (:data:`LAYERS`: QKV, O, gate/up, down) at decode (:data:`DECODE_M`) and prefill
(:data:`PREFILL_M`) token counts; squares from 256 to 16384 (:data:`SQUARES`: powers of two and
sizes that leave a partial last wave of tiles); skinny and odd shapes (:data:`ODD`).

Per shape and input type, first a check: fresh uniform(-1, 1) inputs, ``out`` filled with NaN,
``lab.gemm`` run, its result compared with the float64 product on the GPU (max |error| / max
|entry| under :data:`TOLERANCE`); a shape that fails is recorded and not timed. Then, on the
same buffers:

* ``gpu_only`` — a CUDA graph of ``calls`` calls for each side (``lab.gemm.graph`` and
  ``torch.cuda.CUDAGraph``), replayed between two events: the GPU's time per call;
* ``loop`` — events around ``calls`` plain calls, no event or synchronisation between them:
  what a framework's queue sees (the host's cost shows only where it exceeds the GPU's);
* ``host`` — the host's own cost per call: wall time of ``calls`` calls enqueued behind a
  spin kernel that keeps the GPU busy, measured without waiting for the GPU (µs per call, both
  sides). Until 7 December the bursts ran without the spin, on a GPU left idle by the last
  synchronisation: a fixed cost of about 30 µs a burst and about 13 µs a call on the H200,
  where ``launch_cost`` (GPU busy) times the same repeated call at 8.7.

The two sides alternate burst by burst (ours, cuBLAS, ours, …; a burst is ``calls`` calls,
about :data:`BURST_MS` of GPU time) for :data:`BURSTS` bursts each, so that both see the same
SM clock as the board warms to its power limit; each burst's time per call is a sample, the
median is the row's. NVML samples the SM clock and board power during each (shape, method):
``sm_mhz`` and ``power_w`` (one value for both sides, which ran interleaved).

``ratio_to_cublas`` = cuBLAS median / ours (> 1: ours faster); for ``host``, cuBLAS's µs per
call over ours. The first process also checks every kernel configuration ``lab.gemm`` builds
beyond the registered ones (:func:`lab.gemm.variants`) at shapes past their tile edges.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from lab.gemm import TUNE_METHOD

CHAPTER = "9b"
#: ``measure --jobs N`` runs this experiment alone, after the others: its tight-loop ratios and
#: host µs include the host's time per call, which compiling beside it inflates.
ALONE = True
SUMMARY = ("lab.gemm against cuBLAS over a suite of LLM, square and odd shapes, FP16 and BF16, "
           "GPU-only, in a tight loop and host cost, in three processes")
NEEDS = ("torch",)
NEEDS_KERNELS = ()
H200_SECONDS = 560
H200_SECONDS_QUICK = 240            # one process
PROCESSES = 3

#: (model, layer, N, K): C[M, N] = A[M, K] · B[K, N], the layer's weight B. QKV is the fused
#: projection (query heads + 2 × key-value heads × head size); gate/up the fused pair.
LAYERS = (
    ("Llama-3 8B", "qkv", 6144, 4096), ("Llama-3 8B", "o", 4096, 4096),
    ("Llama-3 8B", "gate/up", 28672, 4096), ("Llama-3 8B", "down", 4096, 14336),
    ("Llama-3 70B", "qkv", 10240, 8192), ("Llama-3 70B", "o", 8192, 8192),
    ("Llama-3 70B", "gate/up", 57344, 8192), ("Llama-3 70B", "down", 8192, 28672),
    ("Qwen2.5 7B", "qkv", 4608, 3584), ("Qwen2.5 7B", "o", 3584, 3584),
    ("Qwen2.5 7B", "gate/up", 37888, 3584), ("Qwen2.5 7B", "down", 3584, 18944),
    ("Qwen2.5 72B", "gate/up", 59136, 8192), ("Qwen2.5 72B", "down", 8192, 29568),
    ("Mixtral 8x7B", "expert w1", 14336, 4096),
)
DECODE_M = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PREFILL_M = (512, 2048, 8192)
#: Prefill at 16384 tokens for the smallest model's layers only (the 70B layers take 20 ms a
#: call there).
LONG_PREFILL = (16384, "Llama-3 8B")
#: Squares: powers of two, and sizes whose 128×256 tiles leave a partial last wave on 132 SMs
#: (3072: 288 tiles, 2.2 waves; 5120: 800, 6.1; 6144: 1152, 8.7; 12288: 4608, 34.9).
SQUARES = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 6144, 8192, 12288, 16384)
ODD = (
    ((1, 1, 1), "one element"), ((127, 4099, 4096), "every edge past a tile"),
    ((1000, 1030, 999), "no multiple of anything"), ((4097, 4097, 4097), "one past 4096"),
    ((2049, 2049, 2049), "one past 2048"), ((3000, 5000, 777), "short odd K"),
    ((12345, 768, 2048), "tall and narrow"), ((8192, 64, 8192), "64 columns, long K"),
    ((64, 8192, 8192), "64 rows, long K"), ((16384, 1024, 1024), "tall, few columns"),
    ((1024, 16384, 1024), "wide, few rows"), ((512, 512, 16384), "deep K"),
)
DTYPES = ("float16", "bfloat16")
TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2}
#: GPU time a burst aims at (calls per burst between 2 and MAX_CALLS), bursts per side.
BURST_MS = 2.0
MAX_CALLS = 50
BURSTS = 6
#: Bursts at the largest shapes (a call of 10 ms or more): fewer, as the budget needs.
BURSTS_BIG = 4


def shapes() -> list[dict]:
    """The suite: one dict per shape (group, m, n, k, model, layer, reason)."""
    out = []
    for model, layer, n, k in LAYERS:
        for m in DECODE_M:
            out.append(dict(group="decode", m=m, n=n, k=k, model=model, layer=layer,
                            reason=f"{model} {layer}, {m} token(s)"))
    for model, layer, n, k in LAYERS:
        ms = PREFILL_M + ((LONG_PREFILL[0],) if model == LONG_PREFILL[1] else ())
        for m in ms:
            out.append(dict(group="prefill", m=m, n=n, k=k, model=model, layer=layer,
                            reason=f"{model} {layer}, {m} tokens"))
    for s in SQUARES:
        tiles = -(-s // 128) * -(-s // 256)
        out.append(dict(group="square", m=s, n=s, k=s, model="", layer="",
                        reason=f"{tiles} tiles of 128x256: {tiles / 132:.1f} waves of 132 SMs"))
    for (m, n, k), why in ODD:
        out.append(dict(group="odd", m=m, n=n, k=k, model="", layer="", reason=why))
    return out


def guess_ms(m: int, n: int, k: int) -> float:
    """A call's GPU time guessed from 600 TFLOP/s and 4 TB/s, plus 4 µs (ms)."""
    flops = 2.0 * m * n * k / 600e12
    moved = 2.0 * (m * k + k * n + m * n) / 4e12
    return 1e3 * max(flops, moved) + 0.004


#: Buffer sets a shape's calls rotate over: enough that what consecutive calls read exceeds
#: this many times the L2 cache (a model's layers each read their own weights from HBM; one
#: set, cache-hot, would time a decode shape's B read from L2), at most MAX_SETS.
L2_TIMES, MAX_SETS = 3, 8


def buffer_sets(m: int, n: int, k: int, l2_bytes: int) -> int:
    per_set = 2 * (m * k + k * n + m * n)
    return int(min(MAX_SETS, max(1, -(-L2_TIMES * l2_bytes // per_set))))


def burst_calls(ms: float) -> int:
    return int(min(MAX_CALLS, max(2, round(BURST_MS / ms))))


# ----------------------------------------------------------------------------- the methods

def _event():
    import torch
    return torch.cuda.Event(enable_timing=True)


def _timed(launch, calls: int) -> float:
    """Events around ``launch()`` (which issues ``calls`` calls): ms per call, after sync."""
    import torch

    start, stop = _event(), _event()
    start.record()
    launch()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / calls


def interleaved(ours, theirs, calls: int, bursts: int) -> dict:
    """``bursts`` timed bursts of each side, alternating (ours, cuBLAS, ours, …): each side's
    per-call milliseconds, one sample per burst."""
    out = {"lab.gemm": [], "cublas": []}
    for _ in range(bursts):
        out["lab.gemm"].append(_timed(ours, calls))
        out["cublas"].append(_timed(theirs, calls))
    return out


#: Milliseconds a spin kernel keeps the GPU busy ahead of each host-cost burst: longer than
#: enqueueing a burst of :data:`MAX_CALLS` calls takes.
HOST_SPIN_MS = 3.0


def host_cost(ours, theirs, calls: int, bursts: int, spin=None) -> dict:
    """µs of host time per call of each side, bursts alternating: ``calls`` calls enqueued
    between two readings of the wall clock, no wait for the GPU inside a burst, each burst
    behind ``spin(HOST_SPIN_MS)`` (a kernel that keeps the GPU busy, as ``launch_cost`` times
    the host: the calls then queue as a framework's do, and the first launch after the last
    burst's synchronisation is the spin's, not a timed call's)."""
    import torch

    out = {"lab.gemm": [], "cublas": []}
    for _ in range(bursts):
        for side, fn in (("lab.gemm", ours), ("cublas", theirs)):
            if spin is not None:
                spin(HOST_SPIN_MS)
            t0 = time.perf_counter()
            fn()
            out[side].append(1e6 * (time.perf_counter() - t0) / calls)
            torch.cuda.synchronize()
    return out


def _inputs(m, n, k, dtype):
    import torch

    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 11 + k * 13 + len(dtype))
    tdt = getattr(torch, dtype)
    A = (torch.rand((m, k), device="cuda", generator=g) * 2 - 1).to(tdt)
    B = (torch.rand((k, n), device="cuda", generator=g) * 2 - 1).to(tdt)
    return A, B


def check(A, B, out) -> float:
    """``out`` poisoned with NaN, ``lab.gemm`` run twice (the first call tunes and records,
    the second replays), the result against the float64 product: max |error| / max |entry|
    (inf if anything is NaN)."""
    import torch
    import lab

    ref = A.double() @ B.double()
    worst = 0.0
    for _ in range(2):
        out.fill_(float("nan"))
        lab.gemm(A, B, out)
        torch.cuda.synchronize()
        got = out.double()
        if torch.isnan(got).any():
            return float("inf")
        worst = max(worst, float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)))
    return worst


def _clocks(sampler, label) -> dict:
    mine = [x for x in sampler.samples if x.phase == label] if sampler else []
    if not mine:
        return {"sm_mhz": None, "power_w": None, "clock_samples": 0}
    return {"sm_mhz": float(np.median([x.sm_mhz for x in mine])),
            "power_w": float(np.mean([x.power_w for x in mine])), "clock_samples": len(mine)}


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def measure(shape: dict, dtype: str, sampler=None) -> list[dict]:
    """One shape and input type: the check, then ``gpu_only``, ``loop`` and ``host`` rows for
    each side (``ratio_to_cublas`` on both)."""
    import torch
    import lab
    from lab import timing
    from lab.experiments.launch_cost import torch_graph

    m, n, k = shape["m"], shape["n"], shape["k"]
    count = buffer_sets(m, n, k, torch.cuda.get_device_properties(0).L2_cache_size)
    sets = []
    for i in range(count):
        A, B = _inputs(m + i, n, k, dtype)
        A = A[:m] if i else A                      # (a fresh seed per set; a row-major view)
        sets.append((A.contiguous(), B, torch.empty((m, n), dtype=A.dtype, device="cuda"),
                     torch.empty((m, n), dtype=A.dtype, device="cuda")))
    A, B, out, ref_out = sets[0]
    err = check(A, B, out)
    base = dict(shape, dtype=dtype, out_dtype=dtype, max_err_over_max_entry=err,
                passed=bool(err < TOLERANCE[dtype]))
    if not base["passed"]:
        return [dict(base, impl="lab.gemm", method="check", error=f"error {err:.3g}")]
    choice = lab.gemm.explain(A, B, out)
    base.update(kernel=choice.kernel, tile_n=choice.bn or None, blocks=choice.blocks or None,
                splits=choice.splits, fixup=choice.fixup or None, tuned=choice.tuned)

    def theirs():                          # one call on each buffer set in turn
        for a, b, _, c in sets:
            torch.mm(a, b, out=c)

    def ours():
        for a, b, c, _ in sets:
            lab.gemm(a, b, c)
    ms = guess_ms(m, n, k)
    rounds = max(1, burst_calls(ms) // count)
    calls = rounds * count
    bursts = BURSTS_BIG if ms >= 10 else BURSTS
    ours()                                 # each set's first call records its plans
    graphs = {"lab.gemm": lab.gemm.graph_of(ours, rounds).launch,
              "cublas": torch_graph(theirs, rounds)}

    def many(fn):
        def go():
            for _ in range(rounds):
                fn()
        return go
    loops = {"lab.gemm": many(ours), "cublas": many(theirs)}
    for fn in (*graphs.values(), *loops.values()):      # warm: both sides, every path
        fn()
    torch.cuda.synchronize()
    rows = []
    for method in ("gpu_only", "loop", "host"):
        label = f"{m}x{n}x{k} {dtype} {method}"
        with (sampler.phase(label) if sampler else _Nothing()):
            if method == "host":
                got = host_cost(loops["lab.gemm"], loops["cublas"], calls, min(bursts, 4),
                                timing.process_spinner().launch)
            else:
                src = graphs if method == "gpu_only" else loops
                got = interleaved(src["lab.gemm"], src["cublas"], calls, bursts)
        med = {side: float(np.median(v)) for side, v in got.items()}
        for side, samples in got.items():
            row = dict(base, impl=side, method=method, calls=calls, buffer_sets=count,
                       bursts=len(samples),
                       ratio_to_cublas=med["cublas"] / med["lab.gemm"], **_clocks(sampler, label))
            if side == "cublas":
                row["kernel"] = "cublas (torch.mm)"
            if method == "host":
                row.update(host_us=med[side], host_min_us=float(min(samples)))
            else:
                row.update(median_ms=med[side], min_ms=float(min(samples)),
                           max_ms=float(max(samples)),
                           tflops=2.0 * m * n * k / (med[side] * 1e-3) / 1e12)
            rows.append(row)
    return rows


# ----------------------------------------------------------------------------- processes

#: The registered kernel whose configurations :func:`lab.gemm.variants` are (where it cannot
#: run, neither can they).
VARIANTS_OF = "wgmma_table_fp16"
#: Shapes past the tile edges at which the first process checks :func:`lab.gemm.variants`.
CHECK_SHAPES = ((1, 1, 1), (97, 4100, 3000), (257, 129, 67), (128, 1000, 14336),
                (385, 577, 200))


def check_variants(path: str) -> None:
    """Each variant's check (fresh inputs, C poisoned with NaN, float64 reference) at
    :data:`CHECK_SHAPES`, twice through one launcher; a failure stops the suite. The variants
    are sm_90a kernels: on any other GPU lab.gemm runs none of them, and none is checked."""
    import lab
    from lab.experiments import hopper_past
    from lab.kernels import runnable, wgmma as K

    if not runnable(VARIANTS_OF)[0]:
        return
    rng = np.random.default_rng(7)
    for cfg in lab.gemm.variants():
        launch = K.launcher(cfg)
        for rep in range(2):
            for m, n, k in CHECK_SHAPES:
                r = hopper_past.check(cfg, m, n, k, rng, launch)
                if not r["passed"]:
                    raise AssertionError(f"{cfg.label} failed at {m}x{n}x{k}: {r['line']}")
                with open(path, "a") as f:
                    f.write(json.dumps({"group": "check", "impl": cfg.label,
                                        "method": f"call {rep + 1}", "m": m, "n": n, "k": k,
                                        "dtype": cfg.kind, "passed": True,
                                        "line": r["line"]}) + "\n")


def child(path: str, index: int, only: str = "") -> None:
    """One process: (the first) the variants' checks, then every shape of the suite in each
    input type, each shape's rows appended to ``path`` as soon as they are measured."""
    import torch

    from lab import clocks, enqueue

    if index == 0:
        check_variants(path)
    sampler = clocks.Sampler() if clocks.reason() is None else None
    with (sampler if sampler else _Nothing()):
        for shape in shapes():
            if only and shape["group"] != only:
                continue
            for dtype in DTYPES:
                try:
                    got = measure(shape, dtype, sampler)
                except Exception as exc:  # noqa: BLE001 - recorded, not fatal
                    got = [dict(shape, dtype=dtype, impl="lab.gemm", method="error",
                                error=f"{type(exc).__name__}: {exc}"[:300])]
                with open(path, "a") as f:
                    for r in got:
                        f.write(json.dumps(dict(r, process=index)) + "\n")
            torch.cuda.empty_cache()
    with open(path, "a") as f:
        f.write(json.dumps({"part": "board", "process": index,
                            "power_limit_w": sampler.power_limit_w if sampler else None,
                            "max_sm_mhz": sampler.max_sm_mhz if sampler else None,
                            "graph_failures": enqueue.STATS["graph_failures"]}) + "\n")


ROW_FIELDS = ["group", "impl", "method", "m", "n", "k", "dtype"]


def merge(raw: list[dict], processes: int) -> list[dict]:
    """One row per :data:`ROW_FIELDS`: the median process's (by ``ratio_to_cublas``; the lower
    middle of an even count), with every process's ratio (``ratios``), their range, and the
    kernels the processes picked. A shape and type that failed (check or error) in any process
    keeps that process's failure row instead, so it cannot hide behind a median."""
    checks = [r for r in raw if r.get("group") == "check"]
    rows = [r for r in raw if r.get("part") != "board" and r.get("group") != "check"]
    failed = {}
    for r in rows:
        if r.get("error"):
            failed.setdefault((r["group"], r["m"], r["n"], r["k"], r["dtype"]), r)
    keyed: dict = {}
    for r in rows:
        if (r["group"], r["m"], r["n"], r["k"], r["dtype"]) in failed:
            continue
        keyed.setdefault(tuple(r[f] for f in ROW_FIELDS), []).append(r)
    out = checks + [dict(r, processes=processes) for r in failed.values()]
    for key, group in keyed.items():
        if len(group) != processes:
            raise RuntimeError(f"suite: row {key} measured in {len(group)} of {processes} "
                               "processes")
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

    from lab import clocks, experiments

    why_not = clocks.reason()
    processes = 1 if quick else PROCESSES
    raw = experiments.in_processes("suite", processes, progress)
    boards = [r for r in raw if r.get("part") == "board"]
    board = boards[0] if boards else {}
    return {"rows": merge(raw, processes), "row_fields": ROW_FIELDS,
            "parameters": dict(parameters(board, boards, why_not, torch.__version__),
                               processes=processes),
            "notes": NOTES}


NOTES = ("gpu_only: a CUDA graph of `calls` calls per side, replayed between two events; loop: "
         "events around `calls` plain calls, nothing between them; host: wall-clock µs per "
         "call enqueued behind a spin kernel that keeps the GPU busy (ratio: cuBLAS µs / "
         "ours). Sides alternate burst by burst; a row's value is the median burst. "
         "ratio_to_cublas = cuBLAS median / lab.gemm median, same method, shape and type; "
         "each row is the median process's, ratios lists every "
         "process's. sm_mhz, power_w: NVML's median SM clock and mean power over the method's "
         "interleaved bursts. A shape is timed only after its check (out poisoned with NaN, "
         "two calls, float64 reference on the GPU) passed.")


def parameters(board: dict, boards: list, why_not, torch_version: str) -> dict:
    from lab import clocks

    return {"layers": [list(x) for x in LAYERS], "decode_m": list(DECODE_M),
            "prefill_m": list(PREFILL_M), "long_prefill": list(LONG_PREFILL),
            "squares": list(SQUARES), "odd": [[*s, why] for s, why in ODD],
            "dtypes": list(DTYPES), "tolerance": TOLERANCE, "burst_ms": BURST_MS,
            "max_calls": MAX_CALLS, "bursts": BURSTS, "bursts_big": BURSTS_BIG,
            "processes": PROCESSES,
            "clocks": (f"NVML every {1e3 * clocks.INTERVAL_S:.0f} ms" if why_not is None
                       else f"not sampled: {why_not}"),
            "power_limit_w": board.get("power_limit_w"), "max_sm_mhz": board.get("max_sm_mhz"),
            "graph_failures": sum(b.get("graph_failures", 0) for b in boards),
            "inputs": f"PyTorch tensors, uniform(-1, 1); calls rotate over buffer sets whose "
                      f"operands exceed {L2_TIMES}x the L2 cache (at most {MAX_SETS} sets)",
            "cublas": "torch.mm(A, B, out=C), C of the inputs' type", "torch": torch_version,
            "first_call_tuning": TUNE_METHOD}     # how lab.gemm's picks were timed


def variant_count() -> int:
    """How many of ``lab.gemm``'s unregistered configurations this GPU checks (0 where their
    kernel cannot run)."""
    import lab
    from lab import kernels

    return len(lab.gemm.variants()) if kernels.runnable(VARIANTS_OF)[0] else 0


def check_variant(index: int) -> tuple[int, dict]:
    """The ``index``-th of :func:`lab.gemm.variants` at the suite's check shapes, twice
    (``lab.gpu_checks.CALLS``) through one launcher on fresh inputs: (failed checks, its record
    entry)."""
    import lab
    from lab import gpu_checks
    from lab.experiments import hopper_past
    from lab.kernels import wgmma

    cfg = lab.gemm.variants()[index]
    rng, bad = np.random.default_rng(), 0
    launch = wgmma.launcher(cfg)
    for _ in range(gpu_checks.CALLS):
        for m, n, k in CHECK_SHAPES:
            r = hopper_past.check(cfg, m, n, k, rng, launch)
            if not r["passed"]:
                bad += 1
                print(f"{cfg.label} at {m}x{n}x{k}: {r['line']}", flush=True)
    print(f"{cfg.label:<40} {len(CHECK_SHAPES)} shapes checked {gpu_checks.CALLS} times"
          + (f", {bad} FAILED" if bad else ""), flush=True)
    return bad, {f"lab.gemm variant {cfg.label}": {
        "shapes": [list(s) for s in CHECK_SHAPES], "calls": gpu_checks.CALLS, "passed": not bad}}


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], int(sys.argv[3]), *(sys.argv[4:5]))
