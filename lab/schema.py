"""What a results file must hold (:func:`validate`), and how its JSON is read (:func:`parse`).

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

"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
import statistics
from typing import Callable

#: Fields every row must carry unless the file names its own ``row_fields``.
TIMED_ROW = ("kernel", "median_ms", "min_ms", "max_ms")
#: Relative tolerance of a derived field against its sources (both are stored doubles).
DERIVED_RTOL = 1e-9
SCHEMA_VERSION = 1


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


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


NUMBER = Kind("a finite number", is_number)
NONNEG = Kind("a finite non-negative number", lambda v: is_number(v) and v >= 0)
FRACTION = Kind("a number in [0, 1]", lambda v: is_number(v) and 0 <= v <= 1)
INT = Kind("an integer", _int)
COUNT = Kind("a non-negative integer", lambda v: _int(v) and v >= 0)
SIZE = Kind("a positive integer", lambda v: _int(v) and v >= 1)
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
TEXT = Kind("a string", lambda v: isinstance(v, str))
LIST = Kind("a list", lambda v: isinstance(v, list))
NULL = Kind("null", lambda v: v is None)
NUMBERS = Kind("a list of finite numbers", lambda v: isinstance(v, list)
               and all(is_number(x) for x in v))
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

def fail(source: str, where: str, message: str):
    raise ResultsError(f"{source}: field '{where}' {message}")


def _finite_everywhere(value, source: str, where: str) -> None:
    """No NaN or infinity anywhere inside ``value`` (for data that did not come from JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        fail(source, where, f"is {value!r}; NaN and infinities are not allowed")
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite_everywhere(v, source, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite_everywhere(v, source, f"{where}[{i}]")


def _check(kind: Kind, value, source: str, where: str) -> None:
    if not kind.test(value):
        fail(source, where, f"must be {kind.name}, got {value!r} ({type(value).__name__})")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=DERIVED_RTOL, abs_tol=1e-12)


def _shape_key(row: dict) -> tuple:
    return tuple(row.get(f) for f in ("m", "n", "k"))


def _is_cublas(row: dict) -> bool:
    return str(row.get("kernel", "")).startswith("cublas") or row.get("impl") == "cublas"


def _check_derived(rows: list, source: str) -> None:
    cublas: dict[tuple, list[dict]] = {}
    for r in rows:
        if _is_cublas(r) and is_number(r.get("tflops")):
            cublas.setdefault(_shape_key(r), []).append(r)
    for i, r in enumerate(rows):
        at = f"rows[{i}]"
        times = [r.get(f) for f in ("min_ms", "median_ms", "max_ms")]
        if all(is_number(t) for t in times) and not times[0] <= times[1] <= times[2]:
            fail(source, f"{at}.median_ms", f"is {times[1]!r}, outside min_ms {times[0]!r} "
                  f"… max_ms {times[2]!r}")
        ms = r.get("median_ms")
        if all(is_number(r.get(f)) for f in "mnk") and is_number(ms) and ms > 0:
            flops = 2.0 * r["m"] * r["n"] * r["k"]
            for field, scale in (("tflops", 1e12), ("gflops", 1e9)):
                v = r.get(field)
                if is_number(v) and not _close(v, flops / (ms * 1e-3) / scale):
                    fail(source, f"{at}.{field}", f"is {v!r}, but 2·m·n·k / median_ms gives "
                          f"{flops / (ms * 1e-3) / scale!r} (m={r['m']}, n={r['n']}, "
                          f"k={r['k']}, median_ms={ms!r})")
        pct = r.get("pct_cublas")
        if not (is_number(pct) and is_number(r.get("tflops")) and pct > 0):
            continue
        implied = 100.0 * r["tflops"] / pct           # the cuBLAS TFLOP/s pct was taken against
        own = r.get("cublas_tflops")
        if is_number(own) and not _close(implied, own):
            fail(source, f"{at}.pct_cublas", f"is {pct!r}, but 100·tflops / cublas_tflops "
                  f"gives {100.0 * r['tflops'] / own!r}")
        same = [c for c in cublas.get(_shape_key(r), [])
                if r.get("dtype") is None or c.get("dtype") in (None, r.get("dtype"))]
        if same:
            lo = min(c["tflops"] for c in same)
            hi = max(c["tflops"] for c in same)
            if not (lo * (1 - DERIVED_RTOL) <= implied <= hi * (1 + DERIVED_RTOL)):
                rows_named = ", ".join(f"rows[{rows.index(c)}] ({c['tflops']!r})" for c in same)
                fail(source, f"{at}.pct_cublas", f"is {pct!r}, taken against {implied!r} "
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
            fail(source, f"rows[{i}]", f"summarises {s.get('kernel')!r}, but no row of another "
                  f"part of that kernel carries {' or '.join(e[0] for e in claims)}")


def _check_summary(i: int, s: dict, entry: tuple, them: list, source: str) -> bool:
    """One :data:`SUMMARISED` entry of the summary ``rows[i]``; False where none of the rows
    it summarises carries the field."""
    field, median, lowest, highest, count = entry
    found = [(j, r[field]) for j, r in them if is_number(r.get(field))]
    if not found:
        return False
    values = sorted(v for _, v in found)
    named = f"the {len(found)} {field} of rows " + ", ".join(str(j) for j, _ in found)
    for f, want in ((median, statistics.median(values)), (lowest, values[0]),
                    (highest, values[-1])):
        if not (is_number(s[f]) and _close(s[f], want)):
            fail(source, f"rows[{i}].{f}", f"is {s[f]!r}, but {named} give {want!r}")
    if count in s and s[count] != len(found):
        fail(source, f"rows[{i}].{count}", f"is {s[count]!r}, but it summarises {named}")
    return True


def validate(data: object, source: str = "<results>") -> dict:
    """Check ``data`` against the schema (module docstring); return it, or raise ResultsError
    naming the source, the field (``rows[3].tflops``) and what is wrong with it."""
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: top level must be a JSON object, got "
                           f"{type(data).__name__}")
    for key, kind in TOP_LEVEL.items():
        if key not in data:
            fail(source, key, "is missing")
        _check(kind, data[key], source, key)
    for key, kind in OPTIONAL_TOP.items():
        if key in data:
            _check(kind, data[key], source, key)
    if data["schema_version"] != SCHEMA_VERSION:
        fail(source, "schema_version", f"is {data['schema_version']}, this code reads "
              f"{SCHEMA_VERSION}")
    if not data["experiment"]:
        fail(source, "experiment", "is empty")
    _finite_everywhere(data, source, "")
    prov = data["provenance"]
    for key in PROVENANCE:
        if key not in prov:
            fail(source, f"provenance.{key}", "is missing")
    for key, value in prov.items():
        if key in PROVENANCE_TYPES:
            _check(PROVENANCE_TYPES[key], value, source, f"provenance.{key}")
    if not data["rows"]:
        fail(source, "rows", "is empty")
    required = data.get("row_fields", TIMED_ROW)
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            fail(source, f"rows[{i}]", f"must be an object, got {type(row).__name__}")
        for f in required:
            if f not in row:
                fail(source, f"rows[{i}].{f}", "is missing")
            if row[f] is None:
                fail(source, f"rows[{i}].{f}", "is null, but the file requires it")
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
    return float(value) if is_number(value) else None


def _check_clocks(data: dict, source: str) -> None:
    """Every SM clock within the GPU's range (module docstring)."""
    prov = data["provenance"]
    known = GPU_CLOCKS.get(slug(prov.get("gpu")))
    top = _mhz(prov.get("max_sm_clock_mhz"))
    if known:
        lo, hi = known["sm_mhz"]
        if top is not None and top != hi:
            fail(source, "provenance.max_sm_clock_mhz", f"is {prov['max_sm_clock_mhz']!r}, "
                  f"but the {prov['gpu']}'s maximum SM clock is {hi} MHz")
        mem = _mhz(prov.get("mem_clock_mhz"))
        if mem is not None and mem != known["mem_mhz"]:
            fail(source, "provenance.mem_clock_mhz", f"is {prov['mem_clock_mhz']!r}, but the "
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
            fail(source, at, f"is {value!r} MHz, outside the {prov['gpu']}'s SM clock range "
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
            fail(source, at, f"is {value!r} MHz, but the {data['provenance']['gpu']}'s maximum "
                  f"SM clock is {top:g} MHz: measured under a clock cap, not at full clock")


def _is_timed(row: dict) -> bool:
    return any(is_number(v) and re.search(r"_(ms|us|s)$", k) for k, v in row.items())


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


def slug(name) -> str:
    from lab.device import gpu_slug

    return gpu_slug(str(name))
