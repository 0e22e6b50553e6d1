"""The results store: ``lab/results/<gpu-slug>/<experiment>.json``, one file per experiment.

A file holds ``experiment``, ``parameters``, ``rows`` (one dict per measurement), ``provenance``
(GPU, CC, SMs, driver, CUDA, numba, numba-cuda, numpy, CuPy, clocks, date, host) and the
``command`` that made it. :func:`load` validates a file and raises :class:`ResultsError` naming
the file and the field when anything is wrong or missing; :func:`save` validates before writing,
so a bad file is never written.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

#: The committed store; ``LAB_RESULTS_DIR`` points elsewhere (e.g. a scratch copy for drafts).
RESULTS_DIR = Path(os.environ.get("LAB_RESULTS_DIR") or Path(__file__).resolve().parent / "results")
REFERENCE_GPU = "h200"
SCHEMA_VERSION = 1

TOP_LEVEL = {"schema_version": int, "experiment": str, "parameters": dict, "rows": list,
             "provenance": dict, "command": str}
PROVENANCE = ("gpu", "compute_capability", "sm_count", "driver", "cuda_runtime", "numba",
              "numba_cuda", "numpy", "date", "host")
#: Fields every row must carry unless the file names its own ``row_fields``.
TIMED_ROW = ("kernel", "median_ms", "min_ms", "max_ms")


class ResultsError(ValueError):
    """A results file is unreadable or breaks the schema; the message names file and field."""


def path_for(experiment: str, gpu: str = REFERENCE_GPU, root: Path | None = None) -> Path:
    return (root or RESULTS_DIR) / gpu / f"{experiment}.json"


def validate(data, source: str = "<results>") -> dict:
    """Check ``data`` against the schema; return it, or raise ResultsError naming the field."""
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: top level must be a JSON object, got "
                           f"{type(data).__name__}")
    for key, typ in TOP_LEVEL.items():
        if key not in data:
            raise ResultsError(f"{source}: field '{key}' is missing")
        if not isinstance(data[key], typ):
            raise ResultsError(f"{source}: field '{key}' must be {typ.__name__}, got "
                               f"{type(data[key]).__name__}")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ResultsError(f"{source}: field 'schema_version' is {data['schema_version']}, "
                           f"this code reads {SCHEMA_VERSION}")
    for key in PROVENANCE:
        if key not in data["provenance"]:
            raise ResultsError(f"{source}: field 'provenance.{key}' is missing")
    if not data["rows"]:
        raise ResultsError(f"{source}: field 'rows' is empty")
    row_fields = data.get("row_fields", TIMED_ROW)
    if not isinstance(row_fields, (list, tuple)) or not all(isinstance(f, str) for f in row_fields):
        raise ResultsError(f"{source}: field 'row_fields' must be a list of names")
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise ResultsError(f"{source}: field 'rows[{i}]' must be an object")
        for f in row_fields:
            if f not in row:
                raise ResultsError(f"{source}: field 'rows[{i}].{f}' is missing")
        for f, v in row.items():
            if f.endswith("_ms") and v is not None:
                if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise ResultsError(f"{source}: field 'rows[{i}].{f}' must be a finite "
                                       f"non-negative number, got {v!r}")
    return data


def load(experiment: str, gpu: str = REFERENCE_GPU, root: Path | None = None) -> dict:
    """Read and validate one results file."""
    path = path_for(experiment, gpu, root)
    return load_path(path)


def load_path(path: Path | str) -> dict:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file (run `python -m lab measure "
                           f"{path.stem}` on a GPU)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                           f"column {exc.colno})") from None
    return validate(data, str(path))


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
    validate(data, f"<{experiment} before saving>")
    path = path_for(experiment, gpu or device.gpu_slug(prov["gpu"]), root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=_jsonable) + "\n")
    return path


def _jsonable(x):
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
    except ImportError:
        pass
    raise TypeError(f"cannot store {type(x).__name__} in a results file")


def rows(experiment: str, gpu: str = REFERENCE_GPU, **match) -> list[dict]:
    """The rows of a results file whose fields equal ``match``."""
    data = load(experiment, gpu)
    return [r for r in data["rows"] if all(r.get(k) == v for k, v in match.items())]


def source_line(experiment: str, gpu: str = REFERENCE_GPU) -> str:
    """The citation printed under a table: file, GPU, date."""
    data = load(experiment, gpu)
    p = data["provenance"]
    path = path_for(experiment, gpu)
    try:
        rel = path.relative_to(Path(__file__).resolve().parent.parent)
    except ValueError:
        rel = path
    return (f"Source: {rel} — {p['gpu']}, driver {p['driver']}, numba-cuda {p['numba_cuda']}, "
            f"measured {p['date'][:10]}.")


def available(gpu: str = REFERENCE_GPU) -> list[str]:
    return sorted(p.stem for p in (RESULTS_DIR / gpu).glob("*.json"))
