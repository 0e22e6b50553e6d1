"""The book's execution cache is keyed on the results a chapter reads, not on its code alone.

A one-page book (the project's own ``book_fixes`` extension, the project's execution settings)
whose notebook prints the provenance of a results file: a cached build must not survive a
changed results file or another ``LAB_GPU``, and the outputs the root ``conftest.py`` stores
after ``pytest`` must be the ones the build then finds (the two key notebooks alike)."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lab import results

ROOT = Path(__file__).resolve().parents[1]
CELL = ('from lab import results\n'
        'p = results.load("roofline")["provenance"]\n'
        'print("page shows:", p["gpu"], "driver", p["driver"])')

pytest.importorskip("jupyter_book")


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "book"
    book.mkdir()
    (book / "_config.yml").write_text(
        "title: cache test\n"
        "execute:\n  execute_notebooks: cache\n  timeout: 300\n  raise_on_error: true\n"
        "sphinx:\n  local_extensions:\n"
        f"    book_fixes: {ROOT / 'book' / '_ext'}\n"
        "  config:\n    nb_execution_raise_on_error: true\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# A page"), nbformat.v4.new_code_cell(CELL)]
    nbformat.write(nb, str(book / "page.ipynb"))
    return book


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(results.RESULTS_DIR / "h200", root / "h200")
    mine = root / "test-gpu"
    mine.mkdir()
    data = json.loads((root / "h200" / "roofline.json").read_text())
    data["provenance"].update(gpu="Test GPU", driver="1.0-test", max_sm_clock_mhz=None)
    (mine / "roofline.json").write_text(json.dumps(data))
    return root


def _env(tree: Path, gpu: str | None) -> dict:
    env = dict(os.environ, LAB_RESULTS_DIR=str(tree), LAB_DEVICE="simulator")
    env.pop("LAB_GPU", None)
    if gpu:
        env["LAB_GPU"] = gpu
    return env


def _build(book: Path, env: dict) -> str:
    run = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build",
                          str(book), "-W"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    html = (book / "_build" / "html" / "page.html").read_text()
    return re.search(r"page shows: ([^<\n]*)", html)[1]


def _store_as_pytest_would(book: Path, env: dict, monkeypatch) -> None:
    """The root conftest's end of session, for this book's notebook, after nbval ran it and
    every cell passed (its outputs made up so that the build's use of them shows)."""
    spec = importlib.util.spec_from_file_location("_root_conftest", ROOT / "conftest.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    plugin.ROOT, plugin.CACHE = book.parent, book / "_build" / ".jupyter_cache"
    for name in ("LAB_RESULTS_DIR", "LAB_GPU"):
        monkeypatch.delenv(name, raising=False)
        if name in env:
            monkeypatch.setenv(name, env[name])
    plugin.pytest_sessionstart(None)
    out = {"output_type": "stream", "name": "stdout", "text": "page shows: FROM PYTEST\n"}
    plugin._RUNS[(book / "page.ipynb").resolve()] = {0: (True, [out])}
    plugin.pytest_sessionfinish(None, 0)


def test_a_build_follows_the_results_tree_and_the_selected_gpu(tmp_path, monkeypatch):
    book, tree = _book(tmp_path), _tree(tmp_path)
    reference = json.loads((tree / "h200" / "roofline.json").read_text())["provenance"]

    # pytest stored what nbval checked: the build that follows renders it, unexecuted
    _store_as_pytest_would(book, _env(tree, None), monkeypatch)
    assert _build(book, _env(tree, None)) == "FROM PYTEST"

    # a re-measured file: the cached page is stale, the build executes again
    path = tree / "h200" / "roofline.json"
    data = json.loads(path.read_text())
    data["provenance"]["driver"] = "999.1-remeasured"
    path.write_text(json.dumps(data))
    assert _build(book, _env(tree, None)) == f"{reference['gpu']} driver 999.1-remeasured"

    # the reader's GPU: its own values, not the H200's cached ones
    assert _build(book, _env(tree, "test-gpu")) == "Test GPU driver 1.0-test"
