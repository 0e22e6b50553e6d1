"""The results store: ``lab/results/<gpu-slug>/<experiment>.json``, one file per experiment.

A file holds ``experiment``, ``parameters``, ``rows`` (one dict per measurement), ``provenance``
(GPU, CC, SMs, driver, CUDA, numba, numba-cuda, numpy, CuPy, clocks, date, host) and the
``command`` that made it. :func:`load` validates a file and raises :class:`ResultsError` naming
the file, the row and the field when anything is wrong; :func:`save` validates before writing,
so a bad file is never written. A file that does not exist raises :class:`ResultsMissing` (a
ResultsError): the one case a chapter may report as "not measured yet".

What a file must hold, and every check, is :mod:`lab.schema`'s (:func:`validate`).

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
import functools
import hashlib
import json
import os
import re
from pathlib import Path

from lab.schema import (KNOWN_REPEATS, SCHEMA_VERSION, ResultsError,  # noqa: F401 (re-exported)
                        ResultsMissing, fail as _fail, identity, is_number as _number, parse,
                        slug as _slug, validate)

#: The committed store; ``LAB_RESULTS_DIR`` points elsewhere (e.g. a scratch copy for drafts).
RESULTS_DIR = Path(os.environ.get("LAB_RESULTS_DIR") or Path(__file__).resolve().parent / "results")
REFERENCE_GPU = "h200"


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
    known = [f"driver {p['driver']}" if p.get("driver") else "",
             f"numba-cuda {p['numba_cuda']}"
             if p.get("numba_cuda") and not p["numba_cuda"].startswith("not recorded") else ""]
    versions = ", ".join(k for k in known if k) or "versions not recorded"
    line = f"Source: {rel} — {p['gpu']}, {versions}, measured {p['date'][:10]}."
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

