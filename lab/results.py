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
  row(s) of the same shape (or the row's own ``cublas_tflops``, itself within the cuBLAS rows);
* summary rows (``part`` "summary") against the rows they summarise: median, lowest, highest
  and count (:data:`SUMMARISED`);
* provenance against the data: every SM clock (provenance and rows) within the GPU's range —
  at most its ``max_sm_clock_mhz``, and for a GPU in :data:`GPU_CLOCKS` within its supported
  clocks, its maximum and memory clock exactly; a maximum the file states where it sampled
  clocks (``max_sm_mhz``) the GPU's, not a cap's;
* no timed row repeated field for field (two timings are never bit-identical: a repeated one is
  a copied row, not a second measurement), nor two timed rows of one measurement
  (:func:`identity`) with different values.

:func:`load` also checks that the GPU named in the provenance is the GPU of the folder the
file lies in. It reads and validates a file once: what it returns is kept (:data:`FILES_KEPT`
files) by the file's path, modification time, size and inode, so a file rewritten is read
again, and is read-only (:class:`Frozen`, :class:`FrozenList`: every caller gets the same
data, and a change raises TypeError; :func:`thaw` makes a copy to change). :func:`save` writes atomically (a temporary file beside the target, flushed to
disk, then renamed over it), so a writer killed or a disk filled mid-write leaves the previous
file as it was, under the folder's write lock (:func:`locked`).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import json
import math
import os
import re
import statistics
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


# ----------------------------------------------------------------------------- read-only data

_SHARED = ("results from lab.results.load are shared by every caller and read-only; copy what "
           "you change (dict(row), list(rows), or lab.results.thaw(data))")


def _refuse(self, *args, **kwargs):
    raise TypeError(_SHARED)


class Frozen(dict):
    """A JSON object of a loaded results file: a dict that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return Frozen, (dict(self),)


class FrozenList(list):
    """A JSON array of a loaded results file: a list that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __reduce__(self):
        return FrozenList, (list(self),)


def freeze(value):
    """``value`` (parsed JSON) with every dict a :class:`Frozen` and every list a
    :class:`FrozenList`."""
    if isinstance(value, dict):
        return Frozen({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value):
    """A plain, changeable copy of ``value`` (loaded results, or any part of them)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


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
    "chapter": TEXT, "position": COUNT, "round": COUNT, "buffer_sets": SIZE,
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

#: An SM or memory clock: a number, or nvidia-smi's text.
CLOCK_MHZ = NONNEG | CLOCK
#: Types by the shape of a field's name, for fields :data:`ROW_TYPES` does not list.
SUFFIX_TYPES: tuple[tuple[str, Kind], ...] = (
    (r"_(ms|us|s)$", NONNEG), (r"(^|_)(tflops|gflops|gbps)(_|$)", NONNEG), (r"_bytes$", NONNEG),
    (r"^pct_", NONNEG), (r"_mhz$", CLOCK_MHZ), (r"^regs", COUNT),
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

#: What ``nvidia-smi`` reports for GPUs whose results are committed, by folder name: the range of
#: supported SM clocks (``nvidia-smi -q -d SUPPORTED_CLOCKS``; the top is ``clocks.max.sm``) and
#: the memory clock, in MHz. A file from one of these GPUs must stay inside them.
GPU_CLOCKS: dict[str, dict] = {"h200": {"sm_mhz": (345, 1980), "mem_mhz": 3201}}
#: Row and provenance fields that hold an SM clock in MHz.
SM_CLOCK_FIELD = re.compile(r"^(max_)?sm_(clock_)?(after_)?mhz(_(min|max|median))?$")


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


#: What a summary row (``part`` "summary") says of the rows it summarises — the rows of other
#: parts with its kernel (and dtype, m, n, k where both carry them), second timings (``again``)
#: left out: their field, its median, lowest and highest in the summary, and how many there are.
SUMMARISED = (("tflops", "tflops", "tflops_min", "tflops_max", "processes"),
              ("median_ms", "median_ms", "min_ms", "max_ms", "processes"),
              ("ms_per_call", "median_ms", "min_ms", "max_ms", "repeats"))
SUMMARY_KEY = ("kernel", "dtype", "m", "n", "k")


def _summarised(summary: dict, rows: list) -> list[tuple[int, dict]]:
    return [(j, r) for j, r in enumerate(rows) if r.get("part") != "summary"
            and not r.get("again")
            and all(r.get(f) == summary[f] for f in SUMMARY_KEY if f in summary and f in r)]


def _check_summaries(rows: list, source: str) -> None:
    """Every summary row against the rows it summarises (:data:`SUMMARISED`)."""
    for i, s in enumerate(rows):
        if s.get("part") != "summary":
            continue
        them = _summarised(s, rows)
        claims = [e for e in SUMMARISED if all(f in s for f in e[1:4])]
        checked = [_check_summary(i, s, e, them, source) for e in claims]
        if claims and not any(checked):
            _fail(source, f"rows[{i}]", f"summarises {s.get('kernel')!r}, but no row of another "
                  f"part of that kernel carries {' or '.join(e[0] for e in claims)}")


def _check_summary(i: int, s: dict, entry: tuple, them: list, source: str) -> bool:
    """One :data:`SUMMARISED` entry of the summary ``rows[i]``; False where none of the rows
    it summarises carries the field."""
    field, median, lowest, highest, count = entry
    found = [(j, r[field]) for j, r in them if _number(r.get(field))]
    if not found:
        return False
    values = sorted(v for _, v in found)
    named = f"the {len(found)} {field} of rows " + ", ".join(str(j) for j, _ in found)
    for f, want in ((median, statistics.median(values)), (lowest, values[0]),
                    (highest, values[-1])):
        if not (_number(s[f]) and _close(s[f], want)):
            _fail(source, f"rows[{i}].{f}", f"is {s[f]!r}, but {named} give {want!r}")
    if count in s and s[count] != len(found):
        _fail(source, f"rows[{i}].{count}", f"is {s[count]!r}, but it summarises {named}")
    return True


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
    _check_summaries(data["rows"], source)
    _check_clocks(data, source)
    _check_repeats(data["rows"], source, data["experiment"])
    return data


def _mhz(value) -> float | None:
    if isinstance(value, str) and value.strip().isdigit():
        return float(value)
    return float(value) if _number(value) else None


def _check_clocks(data: dict, source: str) -> None:
    """Every SM clock within the GPU's range (module docstring)."""
    prov = data["provenance"]
    known = GPU_CLOCKS.get(_slug(prov.get("gpu")))
    top = _mhz(prov.get("max_sm_clock_mhz"))
    if known:
        lo, hi = known["sm_mhz"]
        if top is not None and top != hi:
            _fail(source, "provenance.max_sm_clock_mhz", f"is {prov['max_sm_clock_mhz']!r}, "
                  f"but the {prov['gpu']}'s maximum SM clock is {hi} MHz")
        mem = _mhz(prov.get("mem_clock_mhz"))
        if mem is not None and mem != known["mem_mhz"]:
            _fail(source, "provenance.mem_clock_mhz", f"is {prov['mem_clock_mhz']!r}, but the "
                  f"{prov['gpu']}'s memory clock is {known['mem_mhz']} MHz")
    else:
        lo, hi = 1, top
    if hi is None:
        return
    _check_stated_maximum(data, source, hi)
    where = [(f"provenance.{k}", v) for k, v in prov.items() if SM_CLOCK_FIELD.match(k)]
    where += [(f"rows[{i}].{k}", v) for i, r in enumerate(data["rows"]) for k, v in r.items()
              if SM_CLOCK_FIELD.match(k)]
    for at, value in where:
        mhz = _mhz(value)
        if mhz is not None and not lo <= mhz <= hi:
            _fail(source, at, f"is {value!r} MHz, outside the {prov['gpu']}'s SM clock range "
                  f"{lo}…{hi:g} MHz")


def _check_stated_maximum(data: dict, source: str, top: float) -> None:
    """A file that states its GPU's maximum SM clock where it sampled the clock (``max_sm_mhz``
    in its parameters or rows) states the GPU's maximum ``top``: a lower one is a run under a
    clock cap, whose timings are not the GPU's."""
    where = [("parameters.max_sm_mhz", data["parameters"].get("max_sm_mhz"))]
    where += [(f"rows[{i}].max_sm_mhz", r.get("max_sm_mhz")) for i, r in enumerate(data["rows"])]
    for at, value in where:
        mhz = _mhz(value)
        if mhz is not None and mhz != top:
            _fail(source, at, f"is {value!r} MHz, but the {data['provenance']['gpu']}'s maximum "
                  f"SM clock is {top:g} MHz: measured under a clock cap, not at full clock")


def _is_timed(row: dict) -> bool:
    return any(_number(v) and re.search(r"_(ms|us|s)$", k) for k, v in row.items())


#: Row fields that say what a measurement found, not which measurement a row is.
VERDICT_FIELDS = frozenset({"ok", "passed", "checked", "errors", "error", "first_failure",
                            "returncode", "status", "summary", "cells", "failed", "skipped",
                            "launched", "regs_gpu_errors"})
#: Timed rows that repeat an identity in a committed file, by experiment and part, until it is
#: measured again: ``multi_gpu`` times the FP32 add once per input type's pass, and its rows do
#: not say which pass (``lab/multi/worker.py``).
KNOWN_REPEATS = {"multi_gpu": ("add",)}


def _measured(field: str, value) -> bool:
    kind = type_of(field)
    return (field in VERDICT_FIELDS or isinstance(value, float)
            or any(kind is k for k in (NONNEG, FRACTION, NUMBERS, CLOCK_MHZ)))


def identity(row: dict) -> dict:
    """Which measurement ``row`` is: its fields less what was measured or found (numbers of
    time, rate, share, clock; verdicts), with a sample's time ``t_s`` kept."""
    return {f: v for f, v in row.items() if f == "t_s" or not _measured(f, v)}


def _check_repeats(rows: list, source: str, experiment: str) -> None:
    """No timed row twice (module docstring): neither field for field nor as the same
    measurement (:func:`identity`) with other values, which a reader keyed on the row would
    take one of and a figure plot twice."""
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        if not _is_timed(row):
            continue
        j = seen.setdefault(json.dumps(identity(row), sort_keys=True), i)
        if j == i or row.get("part") in KNOWN_REPEATS.get(experiment, ()):
            continue
        what = (f"kernel {row.get('kernel', '?')!r}, shape {_shape_key(row)}")
        if row == rows[j]:
            raise ResultsError(f"{source}: rows[{i}] repeats rows[{j}] field for field ({what}); "
                               "a timing never comes out bit-identical twice, so one of them "
                               "is a copy — delete it or measure again")
        differ = ", ".join(f"{f} {rows[j].get(f)!r} and {row.get(f)!r}" for f in row
                           if row.get(f) != rows[j].get(f))
        raise ResultsError(f"{source}: rows[{i}] and rows[{j}] are the same measurement ({what}, "
                           f"every field that says which measurement alike) with different "
                           f"values ({differ}); a reader of one row takes either — keep one, "
                           "or add the field that tells them apart")


def _slug(name) -> str:
    from lab.device import gpu_slug

    return gpu_slug(str(name))


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


#: A GPU folder name as :func:`lab.device.gpu_slug` makes them: lower-case letters and digits in
#: words joined by single hyphens (``h200``, ``rtx-4090``, ``h200-x2``).
SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def store(root: Path | None = None) -> Path:
    """The results root ``root`` (default :data:`RESULTS_DIR`); ResultsError (not
    ResultsMissing: nothing here is "not measured yet") when it is not a folder, naming
    ``LAB_RESULTS_DIR`` when that chose it."""
    root = Path(root or RESULTS_DIR)
    if root.is_dir():
        return root
    chosen = os.environ.get("LAB_RESULTS_DIR")
    by = (f"LAB_RESULTS_DIR={chosen!r}" if root == RESULTS_DIR and chosen
          else "the results root")
    committed = Path(__file__).resolve().parent / "results"
    raise ResultsError(f"{by}: {root} is not a folder; correct it or unset LAB_RESULTS_DIR to "
                       f"read the committed results in {committed}")


def selected_gpu() -> str:
    """The GPU whose results the chapters show: ``LAB_GPU`` (a results folder name such as
    ``h200`` or ``rtx-4090``), else the reference H200. ValueError for a value that is not a
    folder name (a path, capitals, spaces) or names no folder of the results root, naming the
    folders there are."""
    gpu = os.environ.get("LAB_GPU", "").strip()
    if not gpu:
        return REFERENCE_GPU
    there = ", ".join(sorted(p.name for p in store().iterdir() if p.is_dir())) or "none"
    if not SLUG.fullmatch(gpu):
        raise ValueError(f"LAB_GPU={gpu!r} is not a GPU folder name: it must be lower-case "
                         "letters and digits joined by single hyphens, as `python -m lab "
                         f"measure` names them (folders in {RESULTS_DIR}: {there})")
    if not (RESULTS_DIR / gpu).is_dir():
        raise ValueError(f"LAB_GPU={gpu!r} names no results folder in {RESULTS_DIR} (folders "
                         f"there: {there}); correct or unset LAB_GPU, or measure on that GPU "
                         "first (`python -m lab measure all`)")
    return gpu


def resolve(experiment: str, gpu: str | None = None, root: Path | None = None) -> tuple[str, str]:
    """``(gpu it is read from, note)`` for one experiment.

    ``gpu=None`` means the selected GPU (:func:`selected_gpu`). When that GPU has no file for the
    experiment, the reference H200's file stands in and the note says so (it is printed under
    every table that cites the file); an explicit ``gpu`` never falls back.
    """
    if gpu is not None:
        return gpu, ""
    chosen = selected_gpu()
    if path_for(experiment, chosen, root).exists():
        return chosen, ""
    if chosen != REFERENCE_GPU and path_for(experiment, REFERENCE_GPU, root).exists():
        return REFERENCE_GPU, (f"No {experiment} results for {chosen}: the H200 reference "
                               "stands in.")
    other = measured_on(experiment, root)
    if other:                          # not yet measured on the reference: another GPU's file
        return other[0], (f"No {experiment} results for {chosen}: measured on "
                          f"{other[0]} only, which stands in.")
    return chosen, ""


def measured_on(experiment: str, root: Path | None = None) -> list[str]:
    """The GPU folders that hold ``experiment``'s results, sorted."""
    base = root or RESULTS_DIR
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir()
                  if p.is_dir() and (p / f"{experiment}.json").exists()
                  and folder_for(experiment, p.name) == p.name)


def load(experiment: str, gpu: str | None = None, root: Path | None = None) -> dict:
    """Read and validate one results file (ResultsMissing if it does not exist) — the selected
    GPU's unless ``gpu`` names one, falling back to the H200's as :func:`resolve` says."""
    root = store(root)
    gpu, _ = resolve(experiment, gpu, root)
    return load_path(path_for(experiment, gpu, root), folder=folder_for(experiment, gpu))


#: Results files kept read and validated (:func:`load_path`).
FILES_KEPT = 64


def _missing(path: Path) -> "ResultsMissing":
    return ResultsMissing(f"{path}: no such results file (run `python -m lab measure "
                          f"{path.stem}` on a GPU)")


def load_path(path: Path | str, *, folder: str | None = None) -> dict:
    """Read and validate the results file at ``path``; its ``experiment`` must match its name,
    and with ``folder`` (the GPU folder it is read as) the GPU its provenance names must be that
    folder's GPU. Read once per version of the file (its modification time, size and inode);
    the data is read-only and shared (module docstring)."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise _missing(path) from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from None
    data = _read(str(path.resolve()), st.st_mtime_ns, st.st_size, st.st_ino)
    gpu = data["provenance"]["gpu"]
    if folder is not None and folder_for(path.stem, _slug(gpu)) != folder:
        _fail(str(path), "provenance.gpu", f"is {gpu!r} (folder "
              f"{folder_for(path.stem, _slug(gpu))!r}), but the file lies in the folder of "
              f"GPU {folder!r}")
    return data


# functools' LRU cache, not lab.lru's: this module imports nothing but the standard library
# (the book's build loads it on its own, without the lab package).
@functools.lru_cache(maxsize=FILES_KEPT)
def _read(name: str, mtime_ns: int, size: int, inode: int) -> Frozen:
    """The file ``name`` read, validated and frozen, once per version (the other arguments:
    what says that the file changed)."""
    path = Path(name)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise _missing(path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from None
    data = validate(parse(text, str(path)), str(path))
    if data["experiment"] != path.stem:
        _fail(str(path), "experiment", f"is {data['experiment']!r}, but the file is named "
              f"{path.name}")
    return freeze(data)


def rerunnable(command: str) -> str:
    """``command`` as a reader would rerun it: the directory given to ``--out`` (a path of the
    machine that ran it) recorded as ``DIR``."""
    import re
    return re.sub(r"(--out[ =])(\S+)", r"\1DIR", command)


def save(experiment: str, rows: list[dict], *, parameters: dict, command: str,
         provenance: dict | None = None, row_fields=None, root: Path | None = None,
         gpu: str | None = None, notes: str | None = None) -> Path:
    """Validate and write a results file; returns its path."""
    from lab import device

    prov = provenance or device.provenance()
    data = {"schema_version": SCHEMA_VERSION, "experiment": experiment,
            "parameters": parameters, "command": rerunnable(command), "provenance": prov,
            "rows": rows}
    if row_fields is not None:
        data["row_fields"] = list(row_fields)
    if notes:
        data["notes"] = notes
    # through JSON first: numpy scalars become numbers, and the check sees what is written
    text = json.dumps(data, indent=1, default=_jsonable) + "\n"
    validate(json.loads(text), f"<{experiment} before saving>")
    own = device.gpu_slug(prov["gpu"])
    if gpu is not None and folder_for(experiment, gpu) != folder_for(experiment, own):
        _fail(f"<{experiment} before saving>", "provenance.gpu", f"is {prov['gpu']!r} "
              f"(folder {folder_for(experiment, own)!r}), but it is to be saved in the folder "
              f"of GPU {gpu!r}")
    path = path_for(experiment, gpu or own, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.parent):
        _remove_leftovers(path.parent)
        write_atomic(path, text)
    return path


#: Folders whose write lock this process holds, and how many times over.
_LOCKED: dict[str, int] = {}


def lock_file(folder: Path, what: str) -> str:
    """The lock file ``what`` (``"write"``, ``"gpu"``) of the results folder ``folder``:
    ``.<gpu>.<what>.lock`` beside that folder in the results root (git-ignored), so that every
    process writing there finds the same file whatever its ``TMPDIR``. Creates the root."""
    folder = Path(folder).resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    return str(folder.parent / f".{folder.name}.{what}.lock")


@contextlib.contextmanager
def locked(folder: Path):
    """Hold the write lock of a results folder (:func:`lock_file`) inside: one writer at a time
    per folder among every process on the machine, so a read-merge-write
    (:func:`lab.notebooks.save`) loses no other writer's rows. Re-entrant in one process."""
    import fcntl

    key = str(Path(folder).resolve())
    if _LOCKED.get(key):
        _LOCKED[key] += 1
        try:
            yield
        finally:
            _LOCKED[key] -= 1
        return
    with open(lock_file(folder, "write"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        _LOCKED[key] = 1
        try:
            yield
        finally:
            del _LOCKED[key]
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` all at once: written to a hidden temporary file in the same
    folder (``.<name>.<random>.tmp``) with the mode the umask gives a new file, flushed to disk,
    then renamed over ``path`` (the folder flushed too), so a reader sees the old file or the
    new one and never a part. A write that fails (a full disk) or is killed leaves ``path`` as
    it was; a failed one removes its temporary file, a killed one's is removed by the next
    :func:`save` to the folder (:func:`_remove_leftovers`)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):      # the rename itself on disk (POSIX only)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_leftovers(folder: Path) -> None:
    """Remove the temporary files of writers killed mid-write in ``folder``: every write there
    holds the folder's write lock (:func:`locked`), so under it any such file is a leftover."""
    with contextlib.suppress(OSError):
        for tmp in folder.glob(".*.json.*.tmp"):
            tmp.unlink()


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


class Keyed(dict):
    """Rows of one results file by a field (:func:`by`): asking for a row the file does not
    hold raises a KeyError that names the file, the field and what was asked for."""

    def __init__(self, rows, field: str, where: str):
        super().__init__((r[field], r) for r in rows)
        self.field, self.where = field, where

    def __missing__(self, key):
        raise KeyError(f"{self.where} has no row with {self.field} = {key!r} (it has: "
                       f"{', '.join(map(repr, self)) or 'none'}); measure it again or restore "
                       "the file")


def by(experiment: str, field: str = "kernel", gpu: str | None = None, **match) -> Keyed:
    """:func:`rows` of ``experiment`` keyed by ``field`` (a missing key names the file)."""
    gpu_, _ = resolve(experiment, gpu)
    where = f"{path_for(experiment, gpu_).name} ({gpu_}"
    where += ", " + ", ".join(f"{k}={v!r}" for k, v in match.items()) + ")" if match else ")"
    return Keyed(rows(experiment, gpu, **match), field, where)


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


def execution_key(root: Path | None = None) -> str:
    """What a chapter's outputs depend on besides its code: the selected GPU (``LAB_GPU``), the
    results root (``LAB_RESULTS_DIR``) and a SHA-256 digest of every results file under that
    root (a chapter reads its GPU's folder, the H200's it falls back to and the multi-GPU
    folders beside them). The book's execution cache keys each notebook on its code *and* this
    (``book/_ext/book_fixes.py`` for the build, the root ``conftest.py`` for the notebooks that
    ``pytest`` executed), so a build for another GPU or after a re-measurement re-executes.

    Needs nothing but the standard library: the build loads this module on its own."""
    root = Path(root or RESULTS_DIR).resolve()
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.json")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"{selected_gpu()} {root} {digest.hexdigest()}"


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

