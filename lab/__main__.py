"""Command line: ``python -m lab list|check|compile|measure|compare|notebooks|predict``.

* ``list`` — the registered kernels and the experiments (chapter, tools needed, time estimate).
* ``check [KERNEL ...]`` — every registered kernel (or those named) against float64 on this
  device, on fresh random inputs at shapes derived from its block tile (``lab.kernels.shapes_for``).
  A kernel this device cannot run (the simulator and inline PTX; a GPU outside the kernel's
  compute capabilities) is skipped with one line saying why. Exit status 1 on any failure, and
  when nothing at all was checked. ``check --record`` (a GPU, the whole registry): each shape
  twice, ``lab.gemm``'s variants and the Hopper grouped kernels too, and what passed written
  to ``lab/facts/gpu_checks.json`` for these kernel sources (:mod:`lab.gpu_checks`; a test fails while it is of other sources).
  ``--jobs N`` checks N kernels at a time, each in a process of its own.
* ``compile [KERNEL ...]`` — registers, spills, stack, shared memory, inner-loop mix (sm_90).
  ``LAB_FACTS=record python -m lab compile`` records the committed facts again:
  ``lab/facts/compiler.json`` and the test suite's ``lab/facts/checks.json``.
* ``measure EXPERIMENT [EXPERIMENT ...] [--out DIR] [--quick] [--jobs N] [--missing] [--until
  S]`` — GPU only. ``all`` is every experiment the book reads, in chapter order. Writes
  ``<DIR>/<gpu>/<experiment>.json`` as each one finishes (DIR defaults to ``lab/results``); an
  experiment that needs a tool this machine lacks (CuPy, ncu, compute-sanitizer) or a newer GPU
  is skipped with one line; a summary ends the run. ``--quick`` shrinks the two tuning sweeps and
  runs ``grouped`` and ``suite`` in one process. ``--jobs N`` runs N experiments at once (default
  4, fewer with fewer CPU cores or less GPU memory: :func:`default_jobs`) in processes of their
  own that compile side by side and take turns on the GPU (:mod:`lab.gpulock`); ``--jobs 1`` runs
  them one after another in this process. Exit status 1 if one failed or none ran. ``measure
  all`` also records the run itself in ``<DIR>/<gpu>/measure_all.json``: one row per experiment
  (status, seconds, the seconds its process held and waited for the GPU) and the whole run's wall
  time. A run too long for one sitting goes in parts: ``--until S`` starts no experiment after S
  seconds (those left are listed), and ``--missing`` keeps every experiment whose results file
  this GPU's folder already has, the record of ``measure all`` keeping their earlier rows.
* ``compare OLD_DIR NEW_DIR`` — two folders of results files (one GPU each): per experiment,
  the rows matched on what they measure and the spread of new / old median times.
* ``notebooks [NOTEBOOK ...] [--out DIR] [--jobs N]`` — runs every chapter (or those named)
  through nbval (``--jobs N`` at a time, each in its own process) and records cells
  passed/failed and seconds per notebook in ``<DIR>/<gpu>/notebooks.json``. On a GPU DIR
  defaults to ``lab/results``; without one (the simulator) the run is recorded only when
  ``--out`` says where. Exit status 1 if a notebook failed.
* ``predict GPU [--out DIR] [--force]`` — no GPU needed: the course's models carry the H200's
  committed results over to another GPU (``h100-80gb-hbm3``) by both datasheets, before it is
  measured (:mod:`lab.predict`); writes ``<DIR>/<GPU>/predictions.json`` (DIR defaults to
  ``lab/results``) and prints the table. An existing predictions file is kept unless ``--force``.

Then ``LAB_GPU=<gpu> jupyter-book build .`` builds the book from that GPU's results.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
import traceback
from pathlib import Path

import lab
from lab import bench, device, experiments, gpu_checks, kernels, results


class StageBar:
    """One tqdm bar for one task: each ``progress(iterable, desc=...)`` call the task makes is a
    stage of the same bar, named in its description. Redrawn rarely when output is not a
    terminal (a log file gets a handful of lines, not thousands); one printed line per stage
    where tqdm is not installed."""

    def __init__(self, name: str):
        self.name = name
        self.bar = None

    def __call__(self, iterable, desc: str | None = None, total: int | None = None, **_):
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
        label = f"{self.name}: {desc}" if desc else self.name
        try:
            from tqdm import tqdm
        except ImportError:
            print(f"  {label} ({total if total is not None else '?'} steps)", flush=True)
            return iter(iterable)
        if self.bar is None:
            tty = sys.stderr.isatty()
            self.bar = tqdm(total=total, desc=label, file=sys.stderr, dynamic_ncols=tty,
                            mininterval=0.5 if tty else 30.0, maxinterval=30.0 if tty else 300.0)
        else:
            self.bar.reset(total=total)
            self.bar.set_description(label, refresh=False)
        return self._stage(iterable)

    def _stage(self, iterable):
        for item in iterable:
            yield item
            self.bar.update()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _command(argv) -> str:
    return "python -m lab " + " ".join(shlex.quote(a) for a in argv)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


# ----------------------------------------------------------------------------- list

def cmd_list(_args) -> int:
    for name, spec in lab.REGISTRY.items():
        where = "GPU+simulator" if spec.simulator else "GPU only"
        cc = "%d.%d" % spec.min_cc + (" only" if spec.max_cc == spec.min_cc else "+")
        print(f"{name:<24} ch{spec.chapter:<4} {spec.dtype_name:<9} {where:<14} CC {cc:<9} "
              f"{spec.title}")
    print("\nexperiments (`python -m lab measure NAME` or `all`; seconds are H200 estimates):")
    for name in experiments.book_order():
        exp = experiments.info(name)
        needs = ", ".join(exp.needs + exp.needs_kernels) or "-"
        est = f"~{exp.h200_seconds:.0f} s" if exp.h200_seconds else "no estimate"
        print(f"  {name:<16} ch{exp.chapter:<4} {est:>11}  needs: {needs}")
    if experiments.HISTORICAL:
        print(f"kept as measured once, not in `all`: {', '.join(experiments.HISTORICAL)}")
    return 0


# ----------------------------------------------------------------------------- show

def cmd_show(args) -> int:
    """A kernel as its configuration compiles it (:func:`lab.listing.listing`); ``--parent``:
    the unified diff against the rung it changes."""
    import difflib

    from lab.kernels import get_spec
    from lab.kernels.wgmma import rungs
    from lab.listing import listing

    def text(name: str, header: bool = True) -> str:
        spec = get_spec(name)
        if not spec.compile:
            raise ValueError(f"{name} has no compiled kernel to show")
        return listing(spec.compile[0][0], header=header)

    name = rungs.registry_name(args.kernel)
    if not args.parent:
        print(text(name), end="")
        return 0
    parent = rungs.parent_of(name)
    if parent is None:
        raise ValueError(f"{name} is not a Hopper rung with a parent rung in lab.kernels.wgmma")
    print("".join(difflib.unified_diff(text(parent, False).splitlines(True),
                                       text(name, False).splitlines(True), parent, name)),
          end="")
    return 0


# ----------------------------------------------------------------------------- check

def cmd_check(args) -> int:
    if args.record and args.kernels:
        raise ValueError("check --record checks the whole registry: name no kernels")
    if args.record and (device.SIMULATOR or kernels.current_cc() is None):
        raise ValueError("check --record records what a GPU ran; this session runs in mode "
                         f"{device.MODE!r}, with no GPU")
    calls = gpu_checks.CALLS if args.record else 1
    names = [lab.get_spec(name).name for name in (args.kernels or lab.REGISTRY)]
    print(device.describe())
    variants = grouped = 0
    if args.record:                         # lab.gemm's unregistered configurations too
        from lab.experiments import suite

        variants = suite.variant_count()
        grouped = len(gpu_checks.grouped_names(kernels.current_cc()))
    if args.jobs > 1:                       # each kernel in a process of its own, N at a time
        import concurrent.futures
        import multiprocessing

        with concurrent.futures.ProcessPoolExecutor(
                args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            pending = [pool.submit(suite.check_variant, i) for i in range(variants)]
            pending += [pool.submit(gpu_checks.check_grouped, i) for i in range(grouped)]
            results = list(pool.map(gpu_checks.check_kernel, names, [calls] * len(names),
                                    [args.verbose] * len(names)))
            checked_variants = [p.result() for p in pending]
    else:
        results = [gpu_checks.check_kernel(name, calls, args.verbose) for name in names]
        checked_variants = [suite.check_variant(i) for i in range(variants)]
        checked_variants += [gpu_checks.check_grouped(i) for i in range(grouped)]
    checked, skipped, failures, record = [], {}, 0, {}
    for name, entry, reason, lines in results:
        print("\n".join(lines))
        if entry is None:
            skipped[name] = reason
            continue
        failures += not entry["passed"]
        checked.append(name)
        record[name] = entry
    for bad, entry in checked_variants:
        failures += bad
        record.update(entry)
    if not checked:
        print(f"nothing checked: all {len(skipped)} requested kernel(s) were skipped (see "
              "above); checking nothing is not a pass", file=sys.stderr)
        return 1
    tail = f"{len(checked)} checked" + (f", {len(skipped)} skipped above" if skipped else "")
    if failures:
        print(f"{failures} check(s) FAILED ({tail})" + ("; nothing recorded" if args.record
                                                         else ""))
        return 1
    print(f"all kernels passed ({tail})")
    if args.record:
        path = gpu_checks.record(device.gpu_slug(), kernels.current_cc(), record, skipped)
        print(f"recorded in {path} for these kernel sources")
    return 0


# ----------------------------------------------------------------------------- compile

def cmd_compile(args) -> int:
    from lab import compiler, tables

    for name in args.kernels:               # unknown or uncompiled names, before compiling any
        if ":" not in name and not kernels.get_spec(name).compile:       # (module:function)
            raise ValueError(f"{name} declares nothing to compile")
    names = args.kernels or [n for n, s in lab.REGISTRY.items() if s.compile]
    print(tables.render(compiler.table(names)))
    if not args.kernels:
        # the facts the book prints besides the registry's: unregistered kernels and the CUDA C
        # twins (nvcc), so that a machine without nvcc reads them from the committed file
        from lab import twins

        compiler.prefetch(kernels.TEACHING)
        compiler.wgmma_probe()
        for name in twins.TWINS:
            twins.compile_report(name)
        print(f"also: {len(kernels.TEACHING)} unregistered kernels, "
              f"{len(twins.TWINS)} CUDA C twins")
        if compiler.recording():
            _record_checks(names)
    return 0


def _record_checks(names: list[str]) -> None:
    """With ``LAB_FACTS=record``: what the tests conclude from compiling offline, recorded in
    ``lab/facts/checks.json`` (each kernel's capability verdicts, the test files' workers)."""
    from lab import compiler, workers

    compiler.prefetch(names, kind="capability")
    ran = workers.record_all()
    print(f"recorded: capability facts of {len(names)} kernels, {len(ran)} test workers")


# ----------------------------------------------------------------------------- measure

def experiment_names(requested: list[str]) -> list[str]:
    """The experiments ``requested`` names, ``all`` expanded to every experiment in chapter
    order, duplicates dropped; ValueError naming an unknown one (checked before anything
    else, so a typo is never reported as a missing GPU)."""
    known = experiments.names()
    out: list[str] = []
    for name in requested:
        chosen = experiments.book_order() if name == "all" else [name]
        for n in chosen:
            if n not in known:
                raise ValueError(f"unknown experiment {n!r}; known: all, {', '.join(known)}")
            if n not in out:
                out.append(n)
    return out


def save_experiment(name: str, out: dict, *, command: str, root: Path | None,
                    seconds: float | None = None) -> Path:
    """Save what an experiment's ``run`` returned as ``<root>/<gpu>/<name>.json`` with this
    device's provenance (and the run's wall time, ``wall_seconds``); returns the path."""
    import os

    prov = device.provenance()
    if seconds is not None:
        prov["wall_seconds"] = round(seconds, 1)
    shared = int(os.environ.get("LAB_MEASURE_JOBS", "1"))
    if shared > 1:      # wall_seconds then includes the turns it waited for the GPU
        from lab import gpulock

        prov["measure_jobs"] = shared
        if gpulock.CURRENT is not None:
            prov["gpu_turns_seconds"] = round(gpulock.CURRENT.held_seconds(), 1)
    return results.save(name, out["rows"], parameters=out["parameters"], command=command,
                        provenance=prov, row_fields=out.get("row_fields"),
                        notes=out.get("notes"), root=root)


def _plan(names: list[str], quick: bool) -> list[dict]:
    plan = []
    for name in names:
        exp = experiments.info(name)
        plan.append({"experiment": name, "quick": quick and exp.quick,
                     "estimate_s": exp.estimate(quick),
                     "alone": bool(getattr(exp.module, "ALONE", False)),
                     "skip": experiments.skip_reason(name)})
    return plan


def default_jobs(gpu_bytes: int | None = None, cores: int | None = None) -> int:
    """``measure --jobs`` unless told: four processes (on the H200 the whole ``measure all``
    took 10.6 minutes against 19.7 one at a time: ``lab/results/h200/measure_all.json``),
    but no more than the CPU cores that compile for them, nor than one per 20 GB of GPU
    memory — each process keeps its own operands and CuPy's memory pool on the GPU, so a
    16 GB T4 runs one at a time and a 40 GB A100 two."""
    if gpu_bytes is None:
        from numba import cuda

        gpu_bytes = cuda.current_context().get_memory_info()[1]
    cores = cores or os.cpu_count() or 1
    return max(1, min(4, cores, int(gpu_bytes // 20e9)))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _results_root(text: str) -> str:
    """``--out DIR``, checked before anything runs: a folder, or a path where one can be made —
    not a file (which the save at the end of the run would trip on)."""
    path = Path(text)
    there = next((p for p in (path, *path.parents) if p.exists()), None)
    if there is not None and not there.is_dir():
        raise argparse.ArgumentTypeError(f"{there} is a file, not a folder: --out names the "
                                         "folder the results go under (DIR/<gpu>/<name>.json)")
    return text


def _child_command(name: str, lock: str, *, quick: bool, root: Path | None) -> list[str]:
    """The command that measures experiment ``name`` as one process of a ``--jobs N`` run."""
    cmd = [sys.executable, "-m", "lab", "measure", name, "--jobs", "1", "--gpu-lock", lock]
    cmd += ["--quick"] if quick else []
    return cmd + (["--out", str(root)] if root is not None else [])


def _keep_measured(plan: list[dict], slug: str, root: Path | None) -> None:
    """``measure --missing``: mark each runnable step whose results file this GPU's folder
    already has as kept, with the date it was measured and, from the folder's record of an
    earlier ``measure all`` (``measure_all.json``), the seconds that run took for it."""
    earlier = {}
    record = results.path_for(experiments.RUN_RECORD, slug, root)
    if record.exists():
        earlier = {r["experiment"]: r for r in results.load_path(record)["rows"]
                   if r.get("status") in ("wrote", "kept")}
    for step in plan:
        path = results.path_for(step["experiment"], slug, root)
        if step["skip"] or not path.exists():
            continue
        date = results.load_path(path)["provenance"].get("date", "?")
        before = earlier.get(step["experiment"], {})
        step["kept"] = {"seconds": before.get("seconds"), "note": f"measured {date}",
                        "gpu_held_s": before.get("gpu_held_s"),
                        "gpu_waited_s": before.get("gpu_waited_s")}


def _past(deadline: float | None, row: dict, until: int | None) -> bool:
    """Whether ``deadline`` (``--until``) has passed; if so ``row`` is marked left."""
    if deadline is None or time.perf_counter() < deadline:
        return False
    row.update(status="left", note=f"not started: {until} s had passed (--until)")
    print(f"{row['head']}: left — {row['note']}", flush=True)
    return True


def _measure_side_by_side(todo: list, jobs: int, *, root: Path | None, slug: str,
                          command: str, deadline: float | None = None,
                          until: int | None = None) -> None:
    """Run each (step, row) of ``todo`` as ``python -m lab measure NAME`` in a process of its
    own, ``jobs`` at a time, sharing the GPU through :mod:`lab.gpulock`; then the steps marked
    ``alone`` (experiments that time the host), one at a time with nothing beside them. Fills
    in the rows. A line when each starts and ends; each process's output goes to a log, whose
    tail is printed if it fails."""
    import os
    import subprocess
    import tempfile

    from lab import gpulock

    with tempfile.TemporaryDirectory(prefix="lab-measure-") as tmp:
        lock = gpulock.folder_lock((root or results.RESULTS_DIR) / slug)
        env = dict(os.environ, LAB_MEASURE_COMMAND=command, LAB_MEASURE_JOBS=str(jobs))
        # the longest first, so the last to start are short and the run ends together; those
        # that time the host last, alone
        pending = sorted(todo, key=lambda t: (t[0].get("alone", False),
                                              -(t[0]["estimate_s"] or 0)))
        running = []
        while pending or running:
            while pending and len(running) < (1 if pending[0][0].get("alone") else jobs):
                step, row = pending.pop(0)
                if _past(deadline, row, until):
                    continue
                log_path = Path(tmp) / f"{step['experiment']}.log"
                with open(log_path, "w") as log:
                    proc = subprocess.Popen(
                        _child_command(step["experiment"], lock, quick=step["quick"], root=root),
                        stdout=log, stderr=subprocess.STDOUT, env=env)
                running.append((proc, step, row, time.perf_counter(), log_path))
                est = f" (~{step['estimate_s']:.0f} s on an H200)" if step["estimate_s"] else ""
                print(f"{row['head']}: running{est}", flush=True)
            time.sleep(0.5)
            for entry in [e for e in running if e[0].poll() is not None]:
                running.remove(entry)
                proc, step, row, t0, log_path = entry
                seconds = time.perf_counter() - t0
                path = results.path_for(step["experiment"], slug, root)
                lines = log_path.read_text(errors="replace").splitlines()
                turns = next((ln for ln in reversed(lines)
                              if ln.startswith(gpulock.SUMMARY_HEAD)), "")
                held = re.search(r"held (\d+) s, waited (\d+) s", turns)
                if held:
                    row.update(gpu_held_s=int(held[1]), gpu_waited_s=int(held[2]))
                if proc.returncode == 0 and path.exists():
                    turns = f" ({turns})" if turns else ""
                    row.update(status="wrote", seconds=round(seconds), note=str(path))
                    print(f"{row['head']}: done in {seconds:.0f} s{turns}, wrote {path}",
                          flush=True)
                    continue
                cause = next((ln.split("— ", 1)[-1] for ln in reversed(lines)
                              if ": FAILED after" in ln), None)
                cause = cause or next((ln for ln in reversed(lines) if ln.strip()),
                                      f"exit status {proc.returncode}")
                row.update(status="FAILED", seconds=round(seconds), note=cause.strip()[:160])
                print("\n".join(lines[-15:]))
                print(f"{row['head']}: FAILED after {seconds:.0f} s — {row['note']}", flush=True)


def _measure_here(step: dict, row: dict, *, root: Path | None, command: str) -> None:
    """Run one experiment in this process with its progress bar; fills in its summary row."""
    name, head = step["experiment"], row["head"]
    est = f" (~{step['estimate_s']:.0f} s on an H200)" if step["estimate_s"] else ""
    print(f"{head}: running{est}", flush=True)
    bar = StageBar(name)
    t0 = time.perf_counter()
    try:
        run = experiments.get(name).run
        out = run(bar, quick=True) if step["quick"] else run(bar)
        bar.close()
        seconds = time.perf_counter() - t0
        path = save_experiment(name, out, command=command, root=root, seconds=seconds)
    except Exception as exc:  # noqa: BLE001 - report it, go on with the next experiment
        bar.close()
        traceback.print_exc()
        row.update(status="FAILED", seconds=round(time.perf_counter() - t0),
                   note=f"{type(exc).__name__}: {exc}".splitlines()[0][:160])
        print(f"{head}: FAILED after {row['seconds']:.0f} s — {row['note']}", flush=True)
        return
    row.update(status="wrote", seconds=round(seconds), note=str(path))
    print(f"{head}: done in {seconds:.0f} s, wrote {path}", flush=True)


def cmd_measure(args) -> int:
    import os

    from lab import tables

    names = experiment_names(args.experiments)
    bench.require_gpu("measure")
    lock = None
    if args.gpu_lock:                       # one experiment of a ``--jobs N`` run
        from lab import gpulock

        lock = gpulock.share(args.gpu_lock)
    prov = device.provenance()
    slug = device.gpu_slug(prov["gpu"])
    root = Path(args.out) if args.out else None
    where = results.path_for(names[0], slug, root).parent
    plan = _plan(names, args.quick)
    if args.missing:
        _keep_measured(plan, slug, root)
    print(device.describe())
    print(f"results go to {where}/<experiment>.json, each as soon as it is measured")
    runnable = [p for p in plan if not p["skip"] and not p.get("kept")]
    known = [p["estimate_s"] for p in runnable if p["estimate_s"]]
    unknown = [p["experiment"] for p in runnable if not p["estimate_s"]]
    quicker = sum(experiments.info(p["experiment"]).estimate(True) or 0 for p in runnable)
    hint = (f" (with --quick: {_minutes(quicker)})"
            if not args.quick and quicker < sum(known) else "")
    jobs = max(1, min(args.jobs or default_jobs(), len(runnable)))
    print(f"{len(runnable)} of {len(plan)} experiment(s) to run; estimated "
          f"{_minutes(sum(known))} on an H200{hint}"
          + (f" plus {', '.join(unknown)} (no estimate)" if unknown else "")
          + " — slower GPUs take longer", flush=True)
    if jobs > 1:
        print(f"{jobs} experiments at a time: they compile side by side and take turns on the "
              "GPU (one process at a time launches, copies or times); the estimate is for one "
              "at a time (on the H200, four at a time took half as long; --jobs 1 for one at "
              "a time)", flush=True)
    if lock is None and jobs == 1:           # a serial run takes turns with any other run
        from lab import gpulock

        lock = gpulock.share(gpulock.folder_lock((root or results.RESULTS_DIR) / slug))
    command = os.environ.get("LAB_MEASURE_COMMAND") or _command(args.argv)
    summary = []
    started = time.perf_counter()
    for i, step in enumerate(plan, 1):
        row = {"experiment": step["experiment"], "status": "", "seconds": None,
               "estimate_s": step["estimate_s"], "note": "", "head": f"[{i}/{len(plan)}] "
               f"{step['experiment']}"}
        summary.append(row)
        if step["skip"]:
            row.update(status="skipped", note=step["skip"])
            print(f"{row['head']}: skipped — {step['skip']}", flush=True)
        elif step.get("kept"):
            row.update(status="kept", **step["kept"])
            print(f"{row['head']}: kept — {row['note']}", flush=True)
    todo = [(step, row) for step, row in zip(plan, summary)
            if not step["skip"] and not step.get("kept")]
    deadline = started + args.until if args.until else None
    if jobs > 1:
        _measure_side_by_side(todo, jobs, root=root, slug=slug, command=command,
                              deadline=deadline, until=args.until)
    else:
        for step, row in todo:
            if _past(deadline, row, args.until):
                continue
            _measure_here(step, row, root=root, command=command)
    if lock is not None:
        print(lock.summary(), flush=True)   # the parent adds it to this experiment's line
        from lab import gpulock

        gpulock.unshare(lock)
    print()
    print(tables.render(summary, ["experiment", "status", "seconds", "estimate_s", "note"],
                        {"seconds": "took s", "estimate_s": "H200 est. s"}))
    wrote = [r for r in summary if r["status"] == "wrote"]
    failed = [r for r in summary if r["status"] == "FAILED"]
    skipped = [r for r in summary if r["status"] == "skipped"]
    kept = [r for r in summary if r["status"] == "kept"]
    left = [r for r in summary if r["status"] == "left"]
    print(f"\n{len(wrote)} written, {len(skipped)} skipped, {len(failed)} failed"
          + (f", {len(kept)} kept" if kept else "")
          + (f", {len(left)} left for a run with --missing" if left else "")
          + f", in {_minutes(time.perf_counter() - started)}")
    if wrote and args.experiments == ["all"]:
        save_run(summary, jobs=jobs, quick=args.quick, command=command, root=root,
                 seconds=time.perf_counter() - started)
    if wrote:
        env = f"LAB_GPU={slug}"
        if root is not None:
            env = f"LAB_RESULTS_DIR={shlex.quote(str(root))} " + env
        print(f"build the book from these results: {env} jupyter-book build .")
    if not wrote and not failed:
        why = ("every experiment asked for was skipped or already measured (--missing)" if kept
               else "every experiment asked for was skipped")
        print(f"nothing was measured: {why}", file=sys.stderr)
    return 0 if wrote and not failed else 1


def save_run(summary: list[dict], *, jobs: int, quick: bool, command: str,
             root: Path | None, seconds: float) -> Path:
    """Record a ``measure all`` run as ``<root>/<gpu>/measure_all.json``: one row per
    experiment (status, seconds, H200 estimate, the seconds its process held and waited for
    the GPU in a ``--jobs`` run, the file name it wrote or why it wrote none) and, in the
    provenance, the whole run's wall time."""
    rows = [{"experiment": r["experiment"], "status": r["status"],
             "seconds": r["seconds"], "estimate_s": r["estimate_s"],
             "gpu_held_s": r.get("gpu_held_s"), "gpu_waited_s": r.get("gpu_waited_s"),
             "note": Path(r["note"]).name if r["status"] == "wrote" else r["note"]}
            for r in summary]
    prov = {**device.provenance(), "wall_seconds": round(seconds, 1), "measure_jobs": jobs}
    return results.save(experiments.RUN_RECORD, rows, command=command, provenance=prov,
                        root=root, parameters={"jobs": jobs, "quick": quick,
                                    "experiments": [r["experiment"] for r in summary]},
                        row_fields=["experiment", "status"],
                        notes="seconds: from the start of the experiment's process (or call) "
                              "to its end, waits for the GPU included; gpu_held_s / "
                              "gpu_waited_s: its process's turns on the GPU (--jobs runs only).")


def tune(name: str, argv: list[str]) -> int:
    """``tools/tune_fp32.py`` and ``tools/tune_tc.py``: run the tuning experiment ``name``
    (all its configurations, or a few with ``--quick``), print its table, and save it only when
    ``--out DIR`` says where (as ``measure`` does)."""
    from lab import tables

    module = experiments.get(name)
    p = argparse.ArgumentParser(prog=f"tools/tune_{name.removesuffix('_tune')}.py",
                                description=module.__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a few configurations only")
    p.add_argument("--out", metavar="DIR", type=_results_root,
                   help=f"also save DIR/<gpu>/{name}.json")
    args = p.parse_args(argv)
    try:
        bench.require_gpu(name)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(device.describe(), flush=True)
    bar = StageBar(name)
    out = module.run(bar, quick=args.quick)
    bar.close()
    print(tables.render(out["rows"], module.COLUMNS))
    print(out["notes"])
    if args.out:
        command = f"python tools/tune_{name.removesuffix('_tune')}.py " + " ".join(
            shlex.quote(a) for a in argv)
        print(f"wrote {save_experiment(name, out, command=command, root=Path(args.out))}")
    return 0


# ----------------------------------------------------------------------------- compare

def cmd_compare(args) -> int:
    """Two folders of results files (e.g. ``lab/results/h200`` and a new run's ``h200``):
    per experiment in both, the rows matched and the spread of new / old median times."""
    import numpy as np

    from lab import tables

    old_dir, new_dir = Path(args.old), Path(args.new)
    for d in (old_dir, new_dir):
        if not d.is_dir():
            raise ValueError(f"{d}: not a folder of results files (e.g. lab/results/h200)")
    old_names = {p.stem for p in old_dir.glob("*.json")}
    new_names = {p.stem for p in new_dir.glob("*.json")}
    both = sorted(old_names & new_names)
    if not both:
        raise ValueError(f"{old_dir} and {new_dir} have no experiment in common")
    rows = []
    for name in both:
        old = results.load_path(old_dir / f"{name}.json")
        new = results.load_path(new_dir / f"{name}.json")
        c = results.compare(old, new)
        q = c["ratios"]
        row = {"experiment": name, "matched": c["matched"], "timed": len(q),
               "only_old": c["only_old"], "only_new": c["only_new"],
               "wall_old": old["provenance"].get("wall_seconds"),
               "wall_new": new["provenance"].get("wall_seconds")}
        if q:
            p10, median, p90 = np.percentile(q, [10, 50, 90])
            row.update(median=median, p10=p10, p90=p90, lo=q[0], hi=q[-1])
        rows.append(row)
    print(f"new / old median time of each matched row: {new_dir} over {old_dir}")
    print(tables.render(rows, ["experiment", "matched", "timed", "only_old", "only_new",
                               "median", "p10", "p90", "lo", "hi", "wall_old", "wall_new"],
                        {"lo": "min", "hi": "max", "wall_old": "old wall s",
                         "wall_new": "new wall s"}))
    alone = sorted(old_names ^ new_names)
    if alone:
        print(f"in one folder only: {', '.join(alone)}")
    return 0


# ----------------------------------------------------------------------------- notebooks

def cmd_notebooks(args) -> int:
    from lab import notebooks

    paths = notebooks.find(args.notebooks)
    notebooks.require_tools()
    if not device.GPU and not args.out:
        raise RuntimeError(
            f"notebooks records a GPU run in lab/results/<gpu>/; this session runs in mode "
            f"{device.MODE!r}, so no GPU run can be recorded there. Pass --out DIR to record "
            f"this run under DIR/{device.gpu_slug(device.provenance()['gpu'])}/ (or use "
            "`pytest --nbval-lax book/` to just test the notebooks)")
    print(device.describe())
    print(f"{len(paths)} notebook(s), each in its own pytest --nbval-lax process"
          + (f", {args.jobs} at a time" if args.jobs > 1 else ""), flush=True)
    bar = StageBar("notebooks")
    rows = notebooks.run(paths, progress=lambda items: bar(items, desc="executing"),
                         report=lambda row: print(notebooks.line(row), flush=True),
                         jobs=args.jobs, timeout=args.timeout, cell_timeout=args.cell_timeout)
    bar.close()
    path = notebooks.save(rows, command=_command(args.argv),
                          root=Path(args.out) if args.out else None,
                          known=[p.name for p in notebooks.find()],
                          parameters={"notebook_timeout_s": args.timeout,
                                      "cell_timeout_s": args.cell_timeout, "jobs": args.jobs})
    bad = [r for r in rows if not notebooks.ok(r)]
    print(f"wrote {path}")
    print(f"{len(rows) - len(bad)} of {len(rows)} notebook(s) ran clean"
          + (f"; not clean: {', '.join(r['notebook'] for r in bad)}" if bad else ""))
    return 1 if bad else 0


# ----------------------------------------------------------------------------- predict

def cmd_predict(args) -> int:
    """Predict another GPU's numbers from the reference's results (:mod:`lab.predict`), save
    them, and print them."""
    from lab import predict, tables

    path = predict.save(args.gpu, command=_command(args.argv),
                        root=Path(args.out) if args.out else None, force=args.force)
    rows = results.load_path(path)["rows"]
    print(tables.render(predict.table_rows(rows), ["id", "reference", "rule", "predicted",
                                                   "unit"],
                        {"reference": f"{predict.REFERENCE} (measured)",
                         "predicted": f"{args.gpu} (predicted)"}))
    print(f"wrote {path} ({len(rows)} quantities)")
    return 0


# ----------------------------------------------------------------------------- main

def parser() -> argparse.ArgumentParser:
    """The command line's argument parser (its help is this module's docstring)."""
    from lab import notebooks

    top = argparse.ArgumentParser(prog="python -m lab", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="registered kernels and experiments").set_defaults(func=cmd_list)
    p = sub.add_parser("show", help="a kernel as its configuration compiles it (no GPU needed)",
                       description="Print a registered kernel's source as its configuration "
                                   "compiles it: the branches other configurations take left "
                                   "out, every device function it calls listed once. A Hopper "
                                   "rung may be named without _fp16 (FP16 is shown).")
    p.add_argument("kernel", help="a name from `python -m lab list`, e.g. wgmma_table")
    p.add_argument("--parent", action="store_true",
                   help="the unified diff against the Hopper rung it changes")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("check", help="check every kernel against float64")
    p.add_argument("kernels", nargs="*")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--record", action="store_true",
                   help="on a GPU: every kernel (and lab.gemm's variants) twice a shape, and "
                        "what passed written to lab/facts/gpu_checks.json for these sources")
    p.add_argument("--jobs", type=_positive, default=1, metavar="N",
                   help="kernels at a time, each in a process of its own (they compile side "
                        "by side; default 1: one after another in this process)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("compile", help="registers/spills/SASS mix for sm_90 (no GPU needed)")
    p.add_argument("kernels", nargs="*")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("measure", help="run experiments on the GPU and save their results",
                       description="Run experiments on the GPU; write <DIR>/<gpu>/<name>.json "
                                   "as each finishes. `all`: every experiment, chapter order.")
    p.add_argument("experiments", nargs="+", metavar="EXPERIMENT",
                   help="a name from `python -m lab list`, or all")
    p.add_argument("--out", metavar="DIR", type=_results_root,
                   help="results root (default: lab/results)")
    p.add_argument("--quick", action="store_true",
                   help="the tuning sweeps (fp32_tune, tc_tune) time fewer configurations, "
                        "and grouped and suite run one process instead of three; every other "
                        "experiment is unchanged, and every file keeps the rows the book reads")
    p.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="experiments at a time, each in its own process: they compile side by "
                        "side and take turns on the GPU (default: 4, fewer if this machine has "
                        "fewer CPU cores or the GPU less than 20 GB per process; 1 runs them "
                        "one after another in this process)")
    p.add_argument("--missing", action="store_true",
                   help="keep the experiments whose results file this GPU's folder already "
                        "has (measure all: the run's record keeps their earlier rows)")
    p.add_argument("--until", type=_positive, default=None, metavar="S",
                   help="start no experiment after S seconds; those left are listed (run "
                        "again with --missing to measure them)")
    p.add_argument("--gpu-lock", help=argparse.SUPPRESS)    # set by --jobs for its processes
    p.set_defaults(func=cmd_measure)
    p = sub.add_parser("compare", help="two runs' results files, row by row",
                       description="Match the rows of two folders of results files (one GPU "
                                   "each, e.g. lab/results/h200 and a new run's) and print, "
                                   "per experiment, the spread of new / old median times.")
    p.add_argument("old", metavar="OLD_DIR")
    p.add_argument("new", metavar="NEW_DIR")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("notebooks", help="run the chapters through nbval and record the run",
                       description="Run book/*.ipynb through pytest --nbval-lax, one process "
                                   "each; write <DIR>/<gpu>/notebooks.json. Without a GPU, "
                                   "--out is required (the simulator's run is not recorded "
                                   "in lab/results).")
    p.add_argument("notebooks", nargs="*", metavar="NOTEBOOK",
                   help="e.g. 01_naive (default: every chapter)")
    p.add_argument("--out", metavar="DIR", type=_results_root,
                   help="results root (default on a GPU: lab/results)")
    p.add_argument("--timeout", type=float, default=notebooks.NOTEBOOK_TIMEOUT_S,
                   help="seconds per notebook (default %(default)s)")
    p.add_argument("--cell-timeout", type=float, default=notebooks.CELL_TIMEOUT_S,
                   help="seconds per cell (default %(default)s)")
    p.add_argument("--jobs", type=_positive, default=1, metavar="N",
                   help="notebooks at a time, each in its own process (default 1); the "
                        "timings the cells print then share the GPU")
    p.set_defaults(func=cmd_notebooks)
    p = sub.add_parser("predict", help="predict another GPU from the H200's results (no GPU "
                                       "needed)",
                       description="Carry the reference H200's committed results over to "
                                   "another GPU with the course's models and both datasheets; "
                                   "write <DIR>/<GPU>/predictions.json before that GPU is "
                                   "measured.")
    p.add_argument("gpu", metavar="GPU", help="the GPU's results folder name, e.g. "
                                              "h100-80gb-hbm3")
    p.add_argument("--out", metavar="DIR", type=_results_root,
                   help="results root (default: lab/results)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing predictions file")
    p.set_defaults(func=cmd_predict)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
