"""Reuse the notebooks nbval executes for the book build.

`pytest` runs every chapter through nbval, which executes each cell and compares its outputs
with the committed ones. The book build (`jupyter-book build .`, ``execute_notebooks: cache``)
would then execute every notebook again. Instead, when every code cell of a notebook ran and
passed under nbval, this plugin stores the executed notebook in the book's execution cache
(``_build/.jupyter_cache``), keyed as the build keys it — the notebook's code and kernelspec,
stamped with the results it read (``book/_ext/book_fixes.py``: the selected GPU, the results
root and a digest of the results files, taken when the session starts and again when it ends;
nothing is stored if they changed in between) — so the build that follows renders exactly the
outputs nbval just checked and executes only notebooks that were not tested or did not pass,
and a build for another GPU or from other results executes again.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / "_build" / ".jupyter_cache"
FIXES = ROOT / "book" / "_ext" / "book_fixes.py"


def _book_fixes():
    """The book's Sphinx extension, whose :func:`stamp` keys the cache for the build too."""
    spec = importlib.util.spec_from_file_location("_book_fixes_for_the_cache", FIXES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_KEY: dict[str, str] = {}


def pytest_sessionstart(session):
    try:
        _KEY["start"] = _book_fixes().execution_key()
    except Exception:  # noqa: BLE001 - a bad LAB_GPU: the tests say so; nothing is cached
        _KEY.pop("start", None)

#: notebook path -> {cell number: (passed, outputs)}
_RUNS: dict[Path, dict[int, tuple[bool, list]]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not hasattr(item, "test_outputs") or not hasattr(item, "cell_num"):
        return
    path = Path(str(item.parent.fspath)).resolve()
    _RUNS.setdefault(path, {})[item.cell_num] = (report.passed, item.test_outputs or [])


def _as_output(out):
    import nbformat

    kind = out["output_type"]
    if kind == "stream":
        return nbformat.v4.new_output("stream", name=out["name"], text=out["text"])
    if kind in ("display_data", "execute_result"):
        extra = {"execution_count": out.get("execution_count")} if kind == "execute_result" else {}
        return nbformat.v4.new_output(kind, data=out["data"], metadata=out.get("metadata", {}),
                                      **extra)
    return None


def pytest_sessionfinish(session, exitstatus):
    if not _RUNS or "start" not in _KEY:
        return
    fixes = _book_fixes()
    key = fixes.execution_key()
    if key != _KEY["start"]:
        return              # the results changed while the notebooks ran: cache nothing
    try:
        import nbformat
        from jupyter_cache import get_cache
        from jupyter_cache.base import CacheBundleIn
    except ImportError:  # the book's tools are not installed: nothing to share
        return
    cache = None
    for path, cells in _RUNS.items():
        if not path.is_relative_to(ROOT / "book"):
            continue
        nb = nbformat.read(str(path), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        if len(cells) != len(code) or not all(ok for ok, _ in cells.values()):
            continue  # not every cell ran and passed: let the build execute it itself
        for i, cell in enumerate(code):
            cell.outputs = [o for o in map(_as_output, cells[i][1]) if o is not None]
            cell.execution_count = i + 1
        fixes.stamp(nb.metadata, key)
        cache = cache or get_cache(str(CACHE))
        record = cache.add_nb_to_project(str(path))
        cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri), check_validity=False,
                                    overwrite=True)
