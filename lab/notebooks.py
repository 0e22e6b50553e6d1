"""The recorded notebook run: every chapter executed through nbval, one results row per notebook.

``python -m lab notebooks`` runs each ``book/*.ipynb`` in its own process as
``pytest --nbval-lax --junitxml=REPORT NOTEBOOK`` — every code cell must run, the cells marked
``# NBVAL_CHECK_OUTPUT`` must print what the committed notebook printed — reads the JUnit report
(one test case per code cell) with :func:`parse_junit`, and saves ``notebooks.json`` through
:mod:`lab.results` (:func:`save`): one row per notebook with ``notebook``, ``cells``, ``passed``,
``failed``, ``skipped``, ``seconds`` (the whole process, kernel start-up included),
``returncode``, ``first_failure`` (the first failing cell and why) and ``error`` (when pytest
wrote no report at all, e.g. a notebook that timed out).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Callable, Iterable, Sequence

from lab import results

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
EXPERIMENT = "notebooks"
ROW_FIELDS = ("notebook", "cells", "passed", "failed", "seconds")
#: Seconds one notebook may take before its run is stopped and recorded as timed out.
NOTEBOOK_TIMEOUT_S = 1800
#: Seconds one cell may take (nbval's own limit).
CELL_TIMEOUT_S = 900

_ANSI = re.compile(r"(?:#x1B|\x1b)\[[0-9;]*m")


def find(names: Sequence[str] | None = None, book: Path = BOOK) -> list[Path]:
    """The chapters to run: every ``book/*.ipynb`` in order, or those ``names`` pick
    (``01_naive``, ``01_naive.ipynb`` or ``book/01_naive.ipynb``); ValueError naming the
    known notebooks for a name that matches none."""
    known = sorted(book.glob("*.ipynb"))
    if not known:
        raise ValueError(f"no notebooks in {book}")
    if not names:
        return known
    by_stem = {p.stem: p for p in known}
    chosen = []
    for name in names:
        stem = Path(name).name.removesuffix(".ipynb")
        if stem not in by_stem:
            raise ValueError(f"unknown notebook {name!r}; known: "
                             f"{', '.join(p.name for p in known)}")
        chosen.append(by_stem[stem])
    return chosen


def _why(case_name: str, message: str) -> str:
    """One line for a failed cell: nbval's headline and, after a traceback, its last line."""
    text = _ANSI.sub("", message)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = next((m.group(1) for ln in lines if (m := re.match(r"Cell \d+: (.*)", ln))),
                lines[0] if lines else "failed")
    if "Traceback:" in text and lines:
        head = f"{head}: {lines[-1]}"
    return f"{case_name}: {head}"[:300]


def parse_junit(xml_text: str, notebook: str, seconds: float, returncode: int) -> dict:
    """One results row from the JUnit report of one notebook's nbval run: a test case per code
    cell, failed = failures + errors. ValueError when the text is not a JUnit report."""
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as exc:
        raise ValueError(f"{notebook}: the JUnit report is not XML ({exc})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"{notebook}: the JUnit report's root is <{root.tag}>, not "
                         "<testsuites> or <testsuite>")
    cells = passed = failed = skipped = 0
    first_failure = None
    for case in root.iter("testcase"):
        cells += 1
        bad = [c for c in case if c.tag in ("failure", "error")]
        if bad:
            failed += 1
            if first_failure is None:
                first_failure = _why(case.get("name", "?"),
                                     bad[0].get("message") or bad[0].text or "")
        elif any(c.tag == "skipped" for c in case):
            skipped += 1
        else:
            passed += 1
    return {"notebook": notebook, "cells": cells, "passed": passed, "failed": failed,
            "skipped": skipped, "seconds": round(seconds, 1), "returncode": returncode,
            "first_failure": first_failure, "error": None}


def run_one(path: Path, *, timeout: float = NOTEBOOK_TIMEOUT_S,
            cell_timeout: float = CELL_TIMEOUT_S) -> dict:
    """Run one notebook through nbval in a child process; its results row (see the module
    docstring). The child inherits the environment (``LAB_DEVICE``, ``LAB_GPU``, …)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", str(path), "-o", "addopts=", "--nbval-lax",
               "-p", "no:cacheprovider", "-q", f"--junitxml={report}",
               f"--nbval-cell-timeout={int(cell_timeout)}"]
        # The notebook's kernel starts in book/: it finds ``lab`` through PYTHONPATH, installed
        # or not.
        path_var = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path_var)
        t0 = time.perf_counter()
        try:
            run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=timeout)
            returncode, tail = run.returncode, (run.stdout + run.stderr).strip()[-400:]
        except subprocess.TimeoutExpired:
            returncode, tail = None, f"timed out after {timeout:.0f} s"
        seconds = time.perf_counter() - t0
        if returncode is not None and report.exists():
            return parse_junit(report.read_text(), path.name, seconds, returncode)
    return {"notebook": path.name, "cells": 0, "passed": 0, "failed": 0, "skipped": 0,
            "seconds": round(seconds, 1), "returncode": returncode, "first_failure": None,
            "error": tail if returncode is None else
            f"pytest exited with status {returncode} and wrote no report: {tail}"}


def require_tools() -> None:
    """RuntimeError naming what is missing when pytest, nbval or ipykernel cannot be imported."""
    import importlib.util

    missing = [m for m in ("pytest", "nbval", "ipykernel") if importlib.util.find_spec(m) is None]
    if missing:
        raise RuntimeError(f"the notebook run needs {', '.join(missing)}: "
                           "pip install -r requirements.txt")


def run(paths: Iterable[Path], progress: Callable = iter,
        report: Callable[[dict], None] = lambda row: None, jobs: int = 1, **kw) -> list[dict]:
    """Run every notebook of ``paths`` (:func:`run_one`), calling ``report(row)`` after each;
    the rows in the order of ``paths``. ``jobs`` > 1 runs that many notebook processes at
    once (most of a notebook's seconds are its kernel starting and Numba compiling, on one
    core each): the cells' printed timings then share the GPU, but nothing nbval compares
    depends on them."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    paths = list(paths)
    done: dict[Path, dict] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:   # 1: one after another
        futures = {pool.submit(run_one, path, **kw): path for path in paths}
        completed = as_completed(futures)
        for _ in progress(range(len(paths))):       # (a count the progress bar can size)
            future = next(completed)
            row = future.result()
            report(row)
            done[futures[future]] = row
    return [done[path] for path in paths]


def ok(row: dict) -> bool:
    """Whether a notebook ran through: a report, at least one cell, no failed cell."""
    return row["error"] is None and row["cells"] > 0 and row["failed"] == 0


def line(row: dict) -> str:
    """One printed line per notebook."""
    if row["error"]:
        return f"{row['notebook']:<28} ERROR after {row['seconds']:.0f} s: {row['error']}"
    text = (f"{row['notebook']:<28} {row['cells']:3d} cells  {row['passed']:3d} passed  "
            f"{row['failed']:3d} failed  {row['skipped']:3d} skipped  {row['seconds']:6.0f} s")
    return text + (f"  first failure: {row['first_failure']}" if row["first_failure"] else "")


def merge(rows: list[dict], previous: dict | None, gpu: str,
          known: Iterable[str] | None = None) -> list[dict]:
    """``rows`` plus the rows of a previous ``notebooks`` file of the same GPU for notebooks
    this run did not execute (so a run split over several calls ends in one file), in the
    book's order. A kept row keeps the date it was run (``ran``: its own, else its file's).
    Where ``known`` names the book's notebooks, a previous row of a notebook the book no
    longer has (renamed or split since) is dropped rather than kept as if it still ran."""
    if not previous or previous["provenance"].get("gpu") != gpu:
        return rows
    ran = {r["notebook"] for r in rows}
    known = None if known is None else set(known)
    kept = [{**r, "ran": r.get("ran") or previous["provenance"]["date"]}
            for r in previous["rows"]
            if r["notebook"] not in ran and (known is None or r["notebook"] in known)]
    return sorted(rows + kept, key=lambda r: r["notebook"])


def save(rows: list[dict], *, command: str, parameters: dict, root: Path | None = None,
         provenance: dict | None = None, known: Iterable[str] | None = None) -> Path:
    """Write ``notebooks.json`` for this device through :func:`lab.results.save`, merged with
    an earlier file of the same GPU at the same place (:func:`merge`, ``known``: the book's
    notebooks); returns its path."""
    from lab import device

    prov = provenance or device.provenance()
    gpu = device.gpu_slug(prov["gpu"])
    target = results.path_for(EXPERIMENT, gpu, root)
    params = {"runner": "pytest --nbval-lax, one process per notebook",
              "device_mode": device.MODE, "lab_gpu": os.environ.get("LAB_GPU"),
              "notebooks_this_run": [r["notebook"] for r in rows], **parameters}
    with results.locked(target.parent):      # no other run writes between the read and the write
        previous = _previous(target)
        merged = merge([{**r, "ran": prov["date"]} for r in rows], previous, prov["gpu"],
                       known)
        return results.save(EXPERIMENT, merged, parameters=params, command=command,
                            provenance=prov, row_fields=ROW_FIELDS, root=root, gpu=gpu)


def _previous(target: Path) -> dict | None:
    """The notebooks file at ``target`` to merge with (None where there is none). One that
    cannot be read (damaged, or breaking the schema) is not replaced unseen: it is moved aside
    to ``<name>.unreadable-<time>`` and a warning names both."""
    try:
        return results.load_path(target)
    except results.ResultsMissing:
        return None
    except results.ResultsError as exc:
        aside = target.with_name(f"{target.name}.unreadable-{time.strftime('%Y%m%dT%H%M%S')}")
        os.replace(target, aside)
        warnings.warn(f"{exc}; moved it to {aside}: this run's rows are written alone, the "
                      "earlier runs' rows are in that file", stacklevel=3)
        return None
