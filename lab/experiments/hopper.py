"""Experiment ``hopper``: the Hopper ladder (wgmma, TMA, mbarriers, warp specialization) against
chapter 5's best mma.sync kernel and cuBLAS, FP16 and BF16, at 4096³ and 8192³.

Every kernel is checked before it is timed: against float64 on odd shapes (1×1×1, not multiples
of any tile, non-square) on fresh inputs, and at ``CHECK_SIZE``³ on inputs shared by all the
kernels of one dtype (cuBLAS included). Then, per size, every kernel and cuBLAS are timed in the
same process run (CUDA events, warm-up, median/min/max of ``REPEATS``), and each row carries its
ratio to cuBLAS of the same input type measured in that run. Inputs are cache-hot (one buffer set).

The sweep (:data:`lab.kernels.wgmma.rungs.SWEEP_CONFIGS`, FP16): variations of Hopper rungs 7 and
8, one change each (grouping, wgmma wait depth, elect.sync producer, setmaxnreg split, epilogue),
each checked at 257×129×67 and 1000×1030×999, then timed at both sizes beside cuBLAS FP16; rows
have ``rung`` = ``"sweep"``. ``run(progress, quick=True)`` runs the sweep alone (and cuBLAS
FP16; ``measure --quick`` does not ask for it); ``LAB_HOPPER_SWEEP=0`` leaves it out of the full
run.

Hangs: a kernel whose barriers deadlock never returns, and its process cannot go on. So the
kernels new since the last committed run (:data:`PREFLIGHT`) and every sweep configuration are
first run once, on small shapes, in a child process that reports each one as it finishes; one
that takes more than ``PREFLIGHT_S`` seconds is declared hung, the child is killed, and the rest
go on in a new child. Hung or failing kernels are left out of the run and named in the file's
``excluded``. Every check and timing of the main run is also under a watchdog that ends the
process with a message naming the kernel after ``WATCHDOG_S`` seconds of holding the GPU
(waiting for a turn in a ``--jobs`` run does not count).
"""
from __future__ import annotations

import numpy as np

import os
import sys

from lab import accuracy, bench

CHAPTER = "7.1"
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16", "tc_bf16", "wgmma_ws_fp16", "wgmma_ws_bf16")
H200_SECONDS = 150  # estimate: 18 kernels and 9 sweep configurations checked and timed
H200_SECONDS_QUICK = 60  # estimate with quick=True: the sweep alone
#: ``measure --quick`` leaves this experiment as it is: its quick run is the sweep alone, without
#: the rungs the chapters read (call ``run(progress, quick=True)`` for it).
QUICK_IN_MEASURE = False

SIZES = (4096, 8192)
CHECK_SIZE = 4096
RUNGS = ("wgmma_cpasync", "wgmma_tma", "wgmma_2wg", "wgmma_ws", "wgmma_persistent",
         "wgmma_pingpong", "wgmma_tmastore", "wgmma_cluster")
#: The newest rungs (launch protocols most likely to hang on another GPU or driver): each runs
#: once in a child process, killed when hung, before the main run.
PREFLIGHT = ("wgmma_tmastore_fp16", "wgmma_tmastore_bf16", "wgmma_cluster_fp16",
             "wgmma_cluster_bf16")
PREFLIGHT_SHAPES = ((257, 129, 67), (384, 520, 130))   # the second: 3 block rows (odd pairs)
PREFLIGHT_S = 40         # one kernel's compile and small checks; longer = hung
WATCHDOG_S = 60          # one check or timing of the main run
SWEEP_CHECKS = ((257, 129, 67), (1000, 1030, 999))
MMA_SYNC = {"f16": "tc_fp16", "bf16": "tc_bf16"}
BASELINE = {"f16": "fp16", "bf16": "bf16"}
ODD_SHAPES = ((1, 1, 1), (17, 33, 5), (257, 129, 67), (1000, 1030, 999), (130, 260, 72))
REPEATS = 20
ROW_FIELDS = ("kernel", "rung", "dtype", "m", "n", "k", "median_ms", "min_ms", "max_ms",
              "tflops", "ratio_to_cublas")
SWEEP_PREFIX = "sweep: "


def kernels(kind: str, excluded=()) -> list[str]:
    """Our kernels for one input type, ladder order: chapter 5's best, then the rungs."""
    suffix = "_fp16" if kind == "f16" else "_bf16"
    return [n for n in [MMA_SYNC[kind]] + [r + suffix for r in RUNGS] if n not in excluded]


# ----------------------------------------------------------------------------- hang guards

class watchdog:
    """``with watchdog(what):`` — end the process (exit status 3) with a message naming
    ``what`` if the block keeps the GPU busy longer than ``seconds``. Only the time this
    process holds the GPU counts: in a ``measure --jobs`` run it also waits for its turns and
    compiles with the GPU let go of (:mod:`lab.gpulock`), which is no sign of a hang. A
    thread looks every ``poll_s`` seconds and prints and exits (the CUDA driver's waits release
    the GIL); ``faulthandler`` backs it up from C a few seconds after the deadline, with every
    thread's stack."""

    def __init__(self, what: str, seconds: float = WATCHDOG_S, *, clock=None, poll_s=1.0,
                 fire=None):
        self.what, self.seconds, self.poll_s = what, seconds, poll_s
        self.clock = clock or _gpu_seconds
        self.fire = fire or self._end_process

    def _end_process(self):
        print(f"\nhopper experiment: {self.what} did not finish in {self.seconds:.0f} s "
              "(a hung kernel?); ending the process", file=sys.stderr, flush=True)
        os._exit(3)

    def __enter__(self):
        import faulthandler
        import threading

        start = self.clock()
        self._stop = threading.Event()

        def watch():
            while True:
                used = self.clock() - start
                if used > self.seconds:
                    self.fire()
                    return
                faulthandler.dump_traceback_later(self.seconds - used + self.poll_s + 5,
                                                  exit=True)
                if self._stop.wait(self.poll_s):
                    return
        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        import faulthandler
        self._stop.set()
        self._thread.join()
        faulthandler.cancel_dump_traceback_later()
        return False


def _gpu_seconds() -> float:
    """Seconds on this process's GPU clock: the time it has held the GPU in a ``--jobs`` run
    (:mod:`lab.gpulock`), the wall clock otherwise."""
    import time

    from lab import gpulock

    lock = gpulock.CURRENT
    return lock.held_seconds() if lock is not None else time.monotonic()


def _preflight_child(items: list[str]) -> None:
    """In the child: run each item once on the small shapes; one line per event."""
    from lab.kernels import wgmma as K

    for item in items:
        print(f"START\t{item}", flush=True)
        try:
            shapes = SWEEP_CHECKS[:1] if item.startswith(SWEEP_PREFIX) else PREFLIGHT_SHAPES
            for m, n, k in shapes:
                verdict = _check_item(item, m, n, k, K)
                if not verdict.passed:
                    raise AssertionError(verdict.line())
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which goes on
            message = f"{type(exc).__name__}: {str(exc)[:300]}".replace("\n", " ")
            print(f"FAIL\t{item}\t{message}", flush=True)
            continue
        print(f"OK\t{item}", flush=True)


def _check_item(item: str, m: int, n: int, k: int, K):
    """Check a registered kernel, or a sweep configuration (``"sweep: <label>"``), once."""
    if not item.startswith(SWEEP_PREFIX):
        return bench.check(item, m, n, k)
    from numba import cuda

    launch = K.launcher(K.SWEEP_CONFIGS[item[len(SWEEP_PREFIX):]])
    a, b = bench.random_inputs(m, n, k, np.float16)
    out = cuda.to_device(np.full((m, n), np.nan, np.float32))
    launch(cuda.to_device(a), cuda.to_device(b), out)
    return bench.compare(out.copy_to_host(), a, b, kernel=item)


def preflight(items, *, per_item_s: float = PREFLIGHT_S, progress=None,
              command: tuple = (sys.executable, "-m", "lab.experiments.hopper", "--preflight"),
              startup_s: float = 120.0) -> dict:
    """Run ``items`` (kernel names or ``"sweep: <label>"``) once each in child processes
    (``command`` + the items still to do; it prints ``START``/``OK``/``FAIL`` lines, tab-
    separated); returns {item: reason} for those that hung or failed (empty when all
    passed)."""
    import queue
    import subprocess
    import threading

    todo = list(items)
    bad = {}
    while todo:
        child = subprocess.Popen([*command, *todo], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        lines: queue.Queue = queue.Queue()

        def pump(stream=child.stdout, out=lines):
            for ln in stream:
                out.put(ln)
            out.put(None)
        threading.Thread(target=pump, daemon=True).start()
        current, tail = None, []
        startup = startup_s                          # import numba, create the context
        while True:
            try:
                line = lines.get(timeout=per_item_s if current else startup)
            except queue.Empty:
                child.kill()                         # (this process started it)
                child.wait()
                if current is None:
                    raise RuntimeError("hopper preflight: the child did not start; last output: "
                                       + " | ".join(tail[-5:]))
                bad[current] = f"hung: no result within {per_item_s:.0f} s (killed)"
                print(f"hopper preflight: {current} HUNG, left out of the run", file=sys.stderr)
                todo = todo[todo.index(current) + 1:]
                break
            if line is None:                         # the child ended
                child.wait()
                if current is not None:              # it died inside an item
                    bad[current] = "crashed: " + " | ".join(tail[-3:])
                    todo = todo[todo.index(current) + 1:]
                else:
                    todo = []
                if child.returncode and current is None and todo:
                    raise RuntimeError("hopper preflight child failed: " + " | ".join(tail[-5:]))
                break
            line = line.rstrip("\n")
            tail.append(line)
            word, _, rest = line.partition("\t")
            item, _, message = rest.partition("\t")
            if word == "START":
                current = item
            elif word in ("OK", "FAIL") and item == current:
                if word == "FAIL":
                    bad[current] = "failed: " + message
                    print(f"hopper preflight: {current} FAILED: {message}", file=sys.stderr)
                if progress is not None:
                    progress(current)
                current = None
    return bad


def _check_shared(names, kind: str, n: int) -> dict:
    """Every kernel of one input type (and its cuBLAS) on the same fresh n³ inputs."""
    from numba import cuda

    from lab import baselines
    from lab.api import matmul
    from lab.kernels import get_spec

    spec0 = get_spec(names[0])
    a, b = bench.random_inputs(n, n, n, spec0.dtype)
    out = {}
    for name in names:
        verdict = bench.compare(matmul(a, b, kernel=name), a, b, dtype_name=spec0.dtype_name,
                                kernel=name)
        if not verdict.passed:
            raise AssertionError(verdict.line())
        out[name] = verdict
    base = BASELINE[kind]
    if base in baselines.available():
        spec = baselines.get_kind(base)
        d_c = cuda.to_device(accuracy.poisoned((n, n), spec.out_dtype))
        baselines.launch(base, cuda.to_device(a), cuda.to_device(b), d_c)
        verdict = bench.compare(d_c.copy_to_host(), a, b, dtype_name=spec0.dtype_name,
                                kernel=f"cublas_{base}")
        if not verdict.passed:
            raise AssertionError(verdict.line())
        out[f"cublas_{base}"] = verdict
    return out


def _sweep(progress, available, excluded) -> tuple[list, dict]:
    """Check and time every sweep configuration (FP16) at both sizes; rows and checks."""
    from numba import cuda

    from lab.kernels import wgmma as K

    rows, failed = [], {}
    labels = [lb for lb in K.SWEEP_CONFIGS if SWEEP_PREFIX + lb not in excluded]
    for label in progress(labels, desc="sweep checks"):
        item = SWEEP_PREFIX + label
        for m, n, k in SWEEP_CHECKS:
            with watchdog(f"the check of {item} at {m}×{n}×{k}"):
                verdict = _check_item(item, m, n, k, K)
            if not verdict.passed:
                failed[item] = verdict.line()
                break
    for size in SIZES:
        a, b = bench.random_inputs(size, size, size, np.float16)
        d_a, d_b = cuda.to_device(a), cuda.to_device(b)
        d_c = cuda.device_array((size, size), dtype=np.float32)
        ref = None
        if "fp16" in available:
            from lab import baselines
            with watchdog(f"cuBLAS FP16 at {size}³"):
                t = bench.time_gpu(lambda i: baselines.launch("fp16", d_a, d_b, d_c),
                                   repeats=REPEATS)
            ref = t.tflops(2.0 * size ** 3)
            rows.append({"kernel": "cublas_fp16", "rung": "sweep", "dtype": "float16",
                         "m": size, "n": size, "k": size, **t.row(), "tflops": ref,
                         "ratio_to_cublas": 1.0, "config": "cuBLAS FP16 in, FP32 out"})
        for label in progress([lb for lb in labels if SWEEP_PREFIX + lb not in failed],
                              desc=f"sweep {size}³"):
            cfg = K.SWEEP_CONFIGS[label]
            launch = K.launcher(cfg)
            with watchdog(f"timing {SWEEP_PREFIX + label} at {size}³"):
                t = bench.time_gpu(lambda i: launch(d_a, d_b, d_c), repeats=REPEATS)
            tf = t.tflops(2.0 * size ** 3)
            rows.append({"kernel": SWEEP_PREFIX + label, "rung": "sweep", "dtype": "float16",
                         "m": size, "n": size, "k": size, **t.row(), "tflops": tf,
                         "ratio_to_cublas": tf / ref if ref else None, "config": cfg.label})
    return rows, failed


def run(progress, *, quick: bool = False) -> dict:
    from lab import baselines
    from lab.kernels import get_spec
    from lab.kernels.wgmma import RUNG_CONFIGS, SWEEP_CONFIGS, TITLES

    available = baselines.available()
    sweep = quick or os.environ.get("LAB_HOPPER_SWEEP", "1") != "0"
    risky = ([] if quick else list(PREFLIGHT)) + (
        [SWEEP_PREFIX + lb for lb in SWEEP_CONFIGS] if sweep else [])
    excluded = preflight(risky) if risky else {}
    rows = []
    checks = {}
    if not quick:
        bench.compile_ahead([n for kind in ("f16", "bf16") for n in kernels(kind, excluded)])
        for kind in progress(("f16", "bf16"), desc="checks"):
            names = kernels(kind, excluded)
            for name in names:
                for m, n, k in ODD_SHAPES:
                    with watchdog(f"the check of {name} at {m}×{n}×{k}"):
                        verdict = bench.check(name, m, n, k)
                    if not verdict.passed:
                        raise AssertionError(verdict.line())
            with watchdog(f"the {CHECK_SIZE}³ checks of the {kind} kernels", 4 * WATCHDOG_S):
                checks.update(_check_shared(names, kind, CHECK_SIZE))

        for size in SIZES:
            for kind in ("f16", "bf16"):
                base = BASELINE[kind]
                group = []
                if base in available:
                    row = bench.time(f"cublas_{base}", size, size, size, repeats=REPEATS,
                                     check_first=False)
                    row.update(rung="cuBLAS", title=baselines.get_kind(base).title)
                    group.append(row)
                for name in progress(kernels(kind, excluded), desc=f"{size}³ {kind}"):
                    with watchdog(f"timing {name} at {size}³"):
                        row = bench.time(name, size, size, size, repeats=REPEATS,
                                         check_first=False)
                    rung = name.rsplit("_", 1)[0]
                    cfg = RUNG_CONFIGS.get(rung)
                    row.update(rung=rung if cfg else "mma.sync (chapter 5)",
                               title=TITLES.get(rung, get_spec(name).title),
                               config=cfg.label if cfg else "128x128x64, 3 stages, mma.sync")
                    group.append(row)
                ref = next((r["tflops"] for r in group if r["kernel"] == f"cublas_{base}"),
                           None)
                for row in group:
                    verdict = checks.get(row["kernel"])
                    if verdict is not None:
                        row.update(check_size=CHECK_SIZE, rel_frobenius=verdict.rel_frobenius,
                                   max_err_over_max_entry=verdict.max_err_over_max_entry)
                    row["ratio_to_cublas"] = row["tflops"] / ref if ref else None
                rows.extend(group)
    sweep_failed = {}
    if sweep:
        sweep_rows, sweep_failed = _sweep(progress, available, excluded)
        rows.extend(sweep_rows)

    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"sizes": list(SIZES), "check_size": CHECK_SIZE,
                           "odd_shapes": [list(s) for s in ODD_SHAPES],
                           "rungs": [] if quick else list(RUNGS),
                           "baselines": [b for b in BASELINE.values() if b in available],
                           "repeats": REPEATS, "inputs": "cache-hot (one buffer set), "
                           "uniform(-1, 1)", "quick": quick, "sweep": sweep,
                           "sweep_checks": [list(s) for s in SWEEP_CHECKS],
                           "configs": {k: c.label for k, c in RUNG_CONFIGS.items()},
                           "sweep_configs": ({k: c.label for k, c in SWEEP_CONFIGS.items()}
                                             if sweep else {})},
            "excluded": {**excluded, **sweep_failed},
            "notes": "ratio_to_cublas: TFLOP/s over cuBLAS with the same input type (FP16 or "
                     "BF16 in, FP32 out) measured in the same run at the same size. Rows with "
                     "rung 'sweep' are FP16 variations of rungs 7-8 (one change each), timed "
                     "beside their own cuBLAS FP16 row. 'excluded': kernels that hung or "
                     "failed before timing, with the reason."}


if __name__ == "__main__" and sys.argv[1:2] == ["--preflight"]:
    _preflight_child(sys.argv[2:])
