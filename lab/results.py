"""The results store: ``lab/results/<gpu-slug>/<experiment>.json``, one file per experiment.

A file holds ``experiment``, ``parameters``, ``rows`` (one dict per measurement), ``provenance``
(GPU, CC, SMs, driver, CUDA, numba, numba-cuda, numpy, CuPy, clocks, date, host) and the
``command`` that made it. :func:`load` validates a file and raises :class:`ResultsError` naming
the file, the row and the field when anything is wrong; :func:`save` validates before writing,
so a bad file is never written. A file that does not exist raises :class:`ResultsMissing` (a
ResultsError): the one case a chapter may report as "not measured yet".

What :func:`validate` checks:

* the top level, the provenance fields and their types (``date`` an ISO 8601 string,
  ``schema_version`` an int and not a bool, ``compute_capability`` like ``"9.0"``, …);
* no NaN or infinity anywhere (a JSON file may not even spell them: ``NaN``/``Infinity`` are
  refused while parsing);
* every row field whose name is known (:data:`ROW_TYPES`, then :data:`SUFFIX_TYPES`) against its
  type — sizes are positive ints, times, rates and errors non-negative numbers, shares in [0, 1],
  flags booleans; bools never pass as numbers; ``null`` stands for "not measured" except in the
  fields the file requires (``row_fields``);
* derived fields against their sources: ``tflops`` (and ``gflops``) against
  ``2·m·n·k / median_ms``, ``min_ms ≤ median_ms ≤ max_ms``, and ``pct_cublas`` against the cuBLAS
  row(s) of the same shape (or the row's own ``cublas_tflops``, itself within the cuBLAS rows).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from pathlib import Path
from typing import Callable

#: The committed store; ``LAB_RESULTS_DIR`` points elsewhere (e.g. a scratch copy for drafts).
RESULTS_DIR = Path(os.environ.get("LAB_RESULTS_DIR") or Path(__file__).resolve().parent / "results")
REFERENCE_GPU = "h200"
SCHEMA_VERSION = 1

#: Fields every row must carry unless the file names its own ``row_fields``.
TIMED_ROW = ("kernel", "median_ms", "min_ms", "max_ms")
#: Relative tolerance of a derived field against its sources (both are stored doubles).
DERIVED_RTOL = 1e-9


class ResultsError(ValueError):
    """A results file is unreadable or breaks the schema; the message names file and field."""


class ResultsMissing(ResultsError):
    """The results file does not exist (not measured yet on this GPU)."""


# ----------------------------------------------------------------------------- value types

class Kind:
    """A named predicate on one JSON value."""

    def __init__(self, name: str, test: Callable[[object], bool]):
        self.name, self.test = name, test

    def __or__(self, other: "Kind") -> "Kind":
        return Kind(f"{self.name} or {other.name}", lambda v: self.test(v) or other.test(v))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


NUMBER = Kind("a finite number", _number)
NONNEG = Kind("a finite non-negative number", lambda v: _number(v) and v >= 0)
FRACTION = Kind("a number in [0, 1]", lambda v: _number(v) and 0 <= v <= 1)
INT = Kind("an integer", _int)
COUNT = Kind("a non-negative integer", lambda v: _int(v) and v >= 0)
SIZE = Kind("a positive integer", lambda v: _int(v) and v >= 1)
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
TEXT = Kind("a string", lambda v: isinstance(v, str))
LIST = Kind("a list", lambda v: isinstance(v, list))
NULL = Kind("null", lambda v: v is None)
NUMBERS = Kind("a list of finite numbers", lambda v: isinstance(v, list)
               and all(_number(x) for x in v))
SIZES = Kind("a list of positive integers", lambda v: isinstance(v, list)
             and all(_int(x) and x >= 1 for x in v))
TEXTS = Kind("a list of strings", lambda v: isinstance(v, list)
             and all(isinstance(x, str) for x in v))
#: nvidia-smi reports clocks as text, e.g. "1980".
CLOCK = Kind("a clock in MHz (a string of digits)", lambda v: isinstance(v, str)
             and v.strip().isdigit())

#: The type of every row field the chapters read, by name.
ROW_TYPES: dict[str, Kind] = {
    # what and where
    "kernel": TEXT, "impl": TEXT, "part": TEXT, "dtype": TEXT, "out_dtype": TEXT,
    "format": TEXT, "config": TEXT, "title": TEXT, "rung": TEXT, "layout": TEXT, "path": TEXT,
    "timing": TEXT, "what": TEXT, "when": TEXT, "roof": TEXT, "varies": TEXT, "tool": TEXT,
    "summary": TEXT, "check": TEXT, "limited_by": TEXT, "ncu_unit": TEXT, "notebook": TEXT,
    "twin_of": TEXT | NULL, "error": TEXT | NULL, "first_failure": TEXT | NULL,
    "experiment": TEXT, "status": TEXT,
    # sizes and configuration
    "m": SIZE, "n": SIZE, "k": SIZE, "bm": SIZE, "bn": SIZE, "bk": SIZE, "wm": SIZE, "wn": SIZE,
    "patch": COUNT, "stages": SIZE, "group_m": SIZE, "threads": SIZE, "batch": SIZE,
    "chains": SIZE, "unroll": SIZE, "trips": SIZE, "check_size": SIZE, "lb": COUNT,
    "chapter": COUNT, "position": COUNT, "round": COUNT, "buffer_sets": SIZE,
    "repeats": SIZE, "warmup": COUNT, "seed": COUNT, "swizzle": BOOL, "rotated": BOOL,
    "padded_to": SIZES, "launched": LIST,
    # compiler and occupancy facts
    "regs": COUNT, "regs_gpu": COUNT, "regs_ptxas": COUNT, "regs_nvcc": COUNT,
    "shared_gpu": COUNT, "spill_bytes": COUNT, "stack_bytes": COUNT, "blocks_per_sm": COUNT,
    "blocks/SM": COUNT, "warps_per_sm": COUNT, "occupancy": FRACTION,
    "loop_ffma_share": FRACTION, "smem_KB": NONNEG, "smem_intensity": NONNEG,
    "smem_reads_per_fma": NONNEG, "intensity": NONNEG, "regs_gpu_errors": TEXTS,
    # times, rates, bytes
    "median_ms": NONNEG, "min_ms": NONNEG, "max_ms": NONNEG, "first_ms": NONNEG,
    "duration_us": NONNEG, "compile_s": NONNEG, "seconds": NONNEG, "tflops": NONNEG,
    "tflops_after": NONNEG, "tflops_best": NONNEG, "cublas_tflops": NONNEG, "gflops": NONNEG,
    "gbps": NONNEG, "gbps_best": NONNEG, "weight_gbps": NONNEG, "bytes": COUNT,
    "ideal_bytes": COUNT, "model_bytes": NONNEG, "dram_read_bytes": NONNEG,
    "dram_write_bytes": NONNEG, "l2_read_bytes": NONNEG, "footprint_mb": NONNEG,
    "burst_samples": NUMBERS, "spin_covered": FRACTION,
    # comparisons
    "pct_cublas": NONNEG, "ratio_to_cublas": NONNEG, "ratio_to_cublas_fp16": NONNEG,
    "vs_cublas": NONNEG, "ratio_swapped": NONNEG, "twin_over_numba": NONNEG,
    "speed_vs_our_fp32": NONNEG, "error_vs_our_fp32": NONNEG,
    # correctness
    "rel_frobenius": NONNEG, "max_err_over_max_entry": NONNEG, "err_over_bound": NONNEG,
    "rel_frobenius_vs_rounded_inputs": NONNEG, "max_err_vs_rounded_inputs": NONNEG,
    "tolerance": NONNEG, "checked": BOOL, "ok": BOOL, "passed": BOOL | COUNT,
    "errors": COUNT, "returncode": INT | NULL, "cells": COUNT, "failed": COUNT,
    "skipped": COUNT,
}

#: Types by the shape of a field's name, for fields :data:`ROW_TYPES` does not list.
SUFFIX_TYPES: tuple[tuple[str, Kind], ...] = (
    (r"_(ms|us|s)$", NONNEG), (r"(^|_)(tflops|gflops|gbps)(_|$)", NONNEG), (r"_bytes$", NONNEG),
    (r"^pct_", NONNEG), (r"_mhz$", NONNEG | CLOCK), (r"^regs", COUNT),
)

TOP_LEVEL = {"schema_version": INT, "experiment": TEXT, "parameters": Kind("an object",
             lambda v: isinstance(v, dict)), "rows": LIST,
             "provenance": Kind("an object", lambda v: isinstance(v, dict)), "command": TEXT}
OPTIONAL_TOP = {"row_fields": TEXTS, "notes": TEXT}
PROVENANCE = ("gpu", "compute_capability", "sm_count", "driver", "cuda_runtime", "numba",
              "numba_cuda", "numpy", "date", "host")


def _iso_date(v) -> bool:
    if not isinstance(v, str):
        return False
    try:
        _dt.datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


PROVENANCE_TYPES: dict[str, Kind] = {
    "gpu": TEXT, "host": TEXT, "numba": TEXT, "numba_cuda": TEXT, "numpy": TEXT,
    "date": Kind("an ISO 8601 date string", _iso_date),
    "compute_capability": Kind("a string like '9.0'", lambda v: isinstance(v, str)
                               and re.fullmatch(r"\d+\.\d+", v) is not None) | NULL,
    "sm_count": SIZE | NULL, "l2_bytes": COUNT | NULL, "driver": TEXT | NULL,
    "cuda_runtime": TEXT | NULL, "cupy": TEXT | NULL, "python": TEXT,
    "device_mode": Kind("'gpu', 'simulator' or 'compile'",
                        lambda v: v in ("gpu", "simulator", "compile")),
    "sm_clock_mhz": CLOCK | NULL, "mem_clock_mhz": CLOCK | NULL,
    "max_sm_clock_mhz": CLOCK | NULL, "sm_clock_after_mhz": CLOCK | NULL,
    "wall_seconds": NONNEG,
}
ROW_TYPES["ran"] = PROVENANCE_TYPES["date"]         # when a merged row was measured


def type_of(field: str) -> Kind | None:
    """The type a row field must have, by name (None for a field the schema does not know)."""
    if field in ROW_TYPES:
        return ROW_TYPES[field]
    for pattern, kind in SUFFIX_TYPES:
        if re.search(pattern, field):
            return kind
    return None


# ----------------------------------------------------------------------------- validation

#: Experiments that run on several GPUs of one host, and on how many: their files live in
#: ``<gpu>-x<count>/`` beside the one-GPU folder (``h200-x2/multi_gpu.json``).
MULTI_GPU = {"multi_gpu": 2}


def folder_for(experiment: str, gpu: str) -> str:
    """The results folder of ``experiment`` for the GPU folder name ``gpu``: ``gpu`` itself,
    or ``<gpu>-x<count>`` for a :data:`MULTI_GPU` experiment (unchanged if already so)."""
    count = MULTI_GPU.get(experiment)
    if count and not gpu.endswith(f"-x{count}"):
        return f"{gpu}-x{count}"
    return gpu


def path_for(experiment: str, gpu: str = REFERENCE_GPU, root: Path | None = None) -> Path:
    """Where the results of ``experiment`` on ``gpu`` live: ``<root>/<gpu>/<experiment>.json``
    (``<gpu>-x<count>`` for a multi-GPU experiment: :func:`folder_for`)."""
    return (root or RESULTS_DIR) / folder_for(experiment, gpu) / f"{experiment}.json"


def _fail(source: str, where: str, message: str):
    raise ResultsError(f"{source}: field '{where}' {message}")


def _finite_everywhere(value, source: str, where: str) -> None:
    """No NaN or infinity anywhere inside ``value`` (for data that did not come from JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        _fail(source, where, f"is {value!r}; NaN and infinities are not allowed")
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite_everywhere(v, source, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite_everywhere(v, source, f"{where}[{i}]")


def _check(kind: Kind, value, source: str, where: str) -> None:
    if not kind.test(value):
        _fail(source, where, f"must be {kind.name}, got {value!r} ({type(value).__name__})")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=DERIVED_RTOL, abs_tol=1e-12)


def _shape_key(row: dict) -> tuple:
    return tuple(row.get(f) for f in ("m", "n", "k"))


def _is_cublas(row: dict) -> bool:
    return str(row.get("kernel", "")).startswith("cublas") or row.get("impl") == "cublas"


def _check_derived(rows: list, source: str) -> None:
    cublas: dict[tuple, list[dict]] = {}
    for r in rows:
        if _is_cublas(r) and _number(r.get("tflops")):
            cublas.setdefault(_shape_key(r), []).append(r)
    for i, r in enumerate(rows):
        at = f"rows[{i}]"
        times = [r.get(f) for f in ("min_ms", "median_ms", "max_ms")]
        if all(_number(t) for t in times) and not times[0] <= times[1] <= times[2]:
            _fail(source, f"{at}.median_ms", f"is {times[1]!r}, outside min_ms {times[0]!r} "
                  f"… max_ms {times[2]!r}")
        ms = r.get("median_ms")
        if all(_number(r.get(f)) for f in "mnk") and _number(ms) and ms > 0:
            flops = 2.0 * r["m"] * r["n"] * r["k"]
            for field, scale in (("tflops", 1e12), ("gflops", 1e9)):
                v = r.get(field)
                if _number(v) and not _close(v, flops / (ms * 1e-3) / scale):
                    _fail(source, f"{at}.{field}", f"is {v!r}, but 2·m·n·k / median_ms gives "
                          f"{flops / (ms * 1e-3) / scale!r} (m={r['m']}, n={r['n']}, "
                          f"k={r['k']}, median_ms={ms!r})")
        pct = r.get("pct_cublas")
        if not (_number(pct) and _number(r.get("tflops")) and pct > 0):
            continue
        implied = 100.0 * r["tflops"] / pct           # the cuBLAS TFLOP/s pct was taken against
        own = r.get("cublas_tflops")
        if _number(own) and not _close(implied, own):
            _fail(source, f"{at}.pct_cublas", f"is {pct!r}, but 100·tflops / cublas_tflops "
                  f"gives {100.0 * r['tflops'] / own!r}")
        same = [c for c in cublas.get(_shape_key(r), [])
                if r.get("dtype") is None or c.get("dtype") in (None, r.get("dtype"))]
        if same:
            lo = min(c["tflops"] for c in same)
            hi = max(c["tflops"] for c in same)
            if not (lo * (1 - DERIVED_RTOL) <= implied <= hi * (1 + DERIVED_RTOL)):
                rows_named = ", ".join(f"rows[{rows.index(c)}] ({c['tflops']!r})" for c in same)
                _fail(source, f"{at}.pct_cublas", f"is {pct!r}, taken against {implied!r} "
                      f"TFLOP/s, but the cuBLAS row(s) of that shape say {rows_named}")


def validate(data: object, source: str = "<results>") -> dict:
    """Check ``data`` against the schema (module docstring); return it, or raise ResultsError
    naming the source, the field (``rows[3].tflops``) and what is wrong with it."""
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: top level must be a JSON object, got "
                           f"{type(data).__name__}")
    for key, kind in TOP_LEVEL.items():
        if key not in data:
            _fail(source, key, "is missing")
        _check(kind, data[key], source, key)
    for key, kind in OPTIONAL_TOP.items():
        if key in data:
            _check(kind, data[key], source, key)
    if data["schema_version"] != SCHEMA_VERSION:
        _fail(source, "schema_version", f"is {data['schema_version']}, this code reads "
              f"{SCHEMA_VERSION}")
    if not data["experiment"]:
        _fail(source, "experiment", "is empty")
    _finite_everywhere(data, source, "")
    prov = data["provenance"]
    for key in PROVENANCE:
        if key not in prov:
            _fail(source, f"provenance.{key}", "is missing")
    for key, value in prov.items():
        if key in PROVENANCE_TYPES:
            _check(PROVENANCE_TYPES[key], value, source, f"provenance.{key}")
    if not data["rows"]:
        _fail(source, "rows", "is empty")
    required = data.get("row_fields", TIMED_ROW)
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            _fail(source, f"rows[{i}]", f"must be an object, got {type(row).__name__}")
        for f in required:
            if f not in row:
                _fail(source, f"rows[{i}].{f}", "is missing")
            if row[f] is None:
                _fail(source, f"rows[{i}].{f}", "is null, but the file requires it")
        for f, v in row.items():
            kind = type_of(f)
            if kind is not None and not (v is None and f not in required):
                _check(kind, v, source, f"rows[{i}].{f}")
    _check_derived(data["rows"], source)
    return data


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number a results file may hold")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows to {value}")
    return value


def parse(text: str, source: str) -> dict:
    """JSON text -> dict, refusing ``NaN``, ``Infinity`` and numbers that overflow."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                           f"column {exc.colno})") from None
    except ValueError as exc:
        raise ResultsError(f"{source}: not valid results JSON ({exc})") from None


def selected_gpu() -> str:
    """The GPU whose results the chapters show: ``LAB_GPU`` (a results folder name such as
    ``h200`` or ``rtx-4090``), else the reference H200."""
    return os.environ.get("LAB_GPU", "").strip() or REFERENCE_GPU


def resolve(experiment: str, gpu: str | None = None, root: Path | None = None) -> tuple[str, str]:
    """``(gpu it is read from, note)`` for one experiment.

    ``gpu=None`` means the selected GPU (:func:`selected_gpu`). When that GPU has no file for the
    experiment, the reference H200's file stands in and the note says so (it is printed under
    every table that cites the file); an explicit ``gpu`` never falls back.
    """
    if gpu is not None:
        return gpu, ""
    chosen = selected_gpu()
    if chosen != REFERENCE_GPU and not path_for(experiment, chosen, root).exists():
        return REFERENCE_GPU, (f"No {experiment} results for {chosen}: the H200 reference "
                               "stands in.")
    return chosen, ""


def load(experiment: str, gpu: str | None = None, root: Path | None = None) -> dict:
    """Read and validate one results file (ResultsMissing if it does not exist) — the selected
    GPU's unless ``gpu`` names one, falling back to the H200's as :func:`resolve` says."""
    gpu, _ = resolve(experiment, gpu, root)
    return load_path(path_for(experiment, gpu, root))


def load_path(path: Path | str) -> dict:
    """Read and validate the results file at ``path``; its ``experiment`` must match its name."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultsMissing(f"{path}: no such results file (run `python -m lab measure "
                             f"{path.stem}` on a GPU)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from None
    data = validate(parse(text, str(path)), str(path))
    if data["experiment"] != path.stem:
        _fail(str(path), "experiment", f"is {data['experiment']!r}, but the file is named "
              f"{path.name}")
    return data


def save(experiment: str, rows: list[dict], *, parameters: dict, command: str,
         provenance: dict | None = None, row_fields=None, root: Path | None = None,
         gpu: str | None = None, notes: str | None = None) -> Path:
    """Validate and write a results file; returns its path."""
    from lab import device

    prov = provenance or device.provenance()
    data = {"schema_version": SCHEMA_VERSION, "experiment": experiment,
            "parameters": parameters, "command": command, "provenance": prov, "rows": rows}
    if row_fields is not None:
        data["row_fields"] = list(row_fields)
    if notes:
        data["notes"] = notes
    # through JSON first: numpy scalars become numbers, and the check sees what is written
    text = json.dumps(data, indent=1, default=_jsonable) + "\n"
    validate(json.loads(text), f"<{experiment} before saving>")
    path = path_for(experiment, gpu or device.gpu_slug(prov["gpu"]), root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _jsonable(x):
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
    except ImportError:
        pass
    raise TypeError(f"cannot store {type(x).__name__} in a results file")


def rows(experiment: str, gpu: str | None = None, **match) -> list[dict]:
    """The rows of a results file whose fields equal ``match``."""
    data = load(experiment, gpu)
    return [r for r in data["rows"] if all(r.get(k) == v for k, v in match.items())]


def source_line(experiment: str, gpu: str | None = None) -> str:
    """The citation printed under a table: file, GPU, date (and the fallback note, if any)."""
    gpu, note = resolve(experiment, gpu)
    data = load(experiment, gpu)
    p = data["provenance"]
    path = path_for(experiment, gpu)
    try:
        rel = path.relative_to(Path(__file__).resolve().parent.parent)
    except ValueError:
        rel = path
    line = (f"Source: {rel} — {p['gpu']}, driver {p['driver']}, numba-cuda {p['numba_cuda']}, "
            f"measured {p['date'][:10]}.")
    return f"{line} {note}" if note else line


def available(gpu: str | None = None) -> list[str]:
    """The experiments with a results file for ``gpu`` (default: the selected GPU)."""
    return sorted(p.stem for p in (RESULTS_DIR / (gpu or selected_gpu())).glob("*.json"))


# ----------------------------------------------------------------------------- two runs

#: The fields that say which measurement a row is (not what it measured): rows of two runs of
#: one experiment with equal values here are the same measurement made twice.
IDENTITY_FIELDS = ("kernel", "impl", "part", "dtype", "out_dtype", "format", "config", "title",
                   "rung", "layout", "timing", "what", "when", "roof", "tool", "m", "n", "k",
                   "bm", "bn", "bk", "wm", "wn", "patch", "stages", "group_m", "threads",
                   "batch", "chains", "unroll", "trips", "lb", "round", "buffer_sets",
                   "swizzle", "rotated", "padded_to")


def _identity(row: dict) -> tuple:
    return tuple((f, json.dumps(row[f])) for f in IDENTITY_FIELDS if f in row)


def compare(old: dict, new: dict, field: str = "median_ms") -> dict:
    """Two runs of one experiment, row by row: rows matched on :data:`IDENTITY_FIELDS` (in
    order where a key repeats), and the ratio new / old of ``field`` for each matched pair where
    both are positive numbers. Returns matched, only_old, only_new and the sorted ratios."""
    if old.get("experiment") != new.get("experiment"):
        raise ResultsError(f"cannot compare {old.get('experiment')!r} with "
                           f"{new.get('experiment')!r}: different experiments")
    pool: dict = {}
    for row in old["rows"]:
        pool.setdefault(_identity(row), []).append(row)
    matched, only_new, ratios = 0, 0, []
    for row in new["rows"]:
        twins = pool.get(_identity(row))
        if not twins:
            only_new += 1
            continue
        before = twins.pop(0)
        matched += 1
        a, b = before.get(field), row.get(field)
        if _number(a) and _number(b) and a > 0 and b > 0:
            ratios.append(b / a)
    return {"matched": matched, "only_old": sum(len(v) for v in pool.values()),
            "only_new": only_new, "ratios": sorted(ratios)}

