"""Small fixes to the book's build.

* The Thebe extension is set up twice by the book's toolchain, so its inline configuration
  script (``const THEBE_JS_URL = …``) lands twice in every page and the second copy raises
  "Identifier 'THEBE_JS_URL' has already been declared". Keep the first copy of each script.
* The execution cache (myst-nb's jupyter-cache, ``_build/.jupyter_cache``) keys a notebook on
  the code of its cells and its kernelspec, but a chapter's outputs also depend on the results
  files it reads. Every notebook is stamped, as it is read, with
  :func:`lab.results.execution_key` (the selected GPU, the results root and a digest of the
  results files) inside its kernelspec, which the cache key includes: a build for another GPU
  (``LAB_GPU``), another tree (``LAB_RESULTS_DIR``) or after a re-measurement executes again.
  The root ``conftest.py`` stamps the notebooks nbval executed the same way (:func:`stamp`).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The kernelspec field that carries the key.
STAMP = "lab_results"


def _results():
    """``lab/results.py`` on its own (standard library only): importing the ``lab`` package
    would import Numba and pick the device in the process that builds the book."""
    spec = importlib.util.spec_from_file_location("_lab_results_for_the_book",
                                                  ROOT / "lab" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def execution_key() -> str:
    """:func:`lab.results.execution_key` for this process's ``LAB_GPU`` and
    ``LAB_RESULTS_DIR``."""
    return _results().execution_key()


def stamp(metadata: dict, key: str) -> None:
    """Put ``key`` into a notebook's metadata where the execution cache's hash reads it."""
    metadata.setdefault("kernelspec", {})[STAMP] = key


def _stamp_notebook(app, docname, source):
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    nb = json.loads(source[0])
    stamp(nb.setdefault("metadata", {}), app.config.lab_execution_key)
    source[0] = json.dumps(nb)


def _key(app, config):
    config.lab_execution_key = execution_key()


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.add_config_value("lab_execution_key", "", "env")
    app.connect("config-inited", _key)
    app.connect("source-read", _stamp_notebook)
    app.connect("html-page-context", _dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
