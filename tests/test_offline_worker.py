"""The offline compile workers (``offline_worker`` in ``tests/conftest.py``, :mod:`lab.workers`):
a worker imports the lab of this tree; an unchanged worker runs once; a changed kernel source,
toolchain or worker code misses the cache; an edited test, comment or docstring does not; a
committed answer is served while its key holds, and recorded with ``LAB_FACTS=record``."""
from __future__ import annotations

import textwrap
from pathlib import Path

import json

import lab
from lab import compiler, workers

WORKER = textwrap.dedent('''
    """A compile worker: counts its runs in the file named by WORKER_RUNS."""
    import json
    import os
    import sys

    import pytest

    marked = pytest.mark.skipif(False, reason="never")


    def helper():
        return 1


    def _worker():
        with open(os.environ["WORKER_RUNS"], "a") as runs:
            runs.write("run\\n")
        return {"value": helper()}


    @marked
    def test_something():
        assert helper() == 1


    if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
        print(json.dumps(_worker()))
''')


def test_a_changed_kernel_source_misses_the_cache(tmp_path, monkeypatch, offline_worker):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    monkeypatch.setenv("WORKER_RUNS", str(runs))
    script = tmp_path / "worker.py"
    script.write_text(WORKER)

    def answer() -> tuple[int, int]:
        value = offline_worker(str(script), "--worker")["value"]
        return value, len(runs.read_text().splitlines())

    assert answer() == (1, 1)                             # compiled
    assert answer() == (1, 1)                             # cached
    sources, tools = compiler.source_digest, compiler.toolchain
    monkeypatch.setattr(compiler, "source_digest", lambda: "a kernel source changed")
    assert answer() == (1, 2)                             # missed, compiled again
    monkeypatch.setattr(compiler, "source_digest", sources)
    assert answer() == (1, 2)                             # the old key still holds
    monkeypatch.setattr(compiler, "toolchain", lambda: {**tools(), "numba-cuda": "another"})
    assert answer() == (1, 3)                             # another compiler misses
    monkeypatch.setattr(compiler, "toolchain", tools)
    script.write_text(WORKER.replace("assert helper() == 1", "assert helper() > 0")
                      .replace("counts its runs", "counts how often it ran")
                      .replace("def helper():", "def helper():  # a comment"))
    assert answer() == (1, 3)                             # a test, a docstring, a comment
    script.write_text(WORKER.replace("return 1", "return 2"))
    assert answer() == (2, 4)                             # the worker's own code misses
    monkeypatch.setenv("LAB_CACHE_DIR", "off")
    assert answer() == (2, 5)                             # no cache: runs every time


def test_a_worker_imports_the_lab_of_this_tree(tmp_path, monkeypatch, offline_worker):
    """Run as a script from its own folder, a worker would find ``lab`` wherever it is
    installed; it must compile this tree's, whose sources key its cache."""
    monkeypatch.setenv("LAB_CACHE_DIR", "off")
    script = tmp_path / "where.py"
    script.write_text(textwrap.dedent('''
        import importlib.util
        import json
        import sys

        if __name__ == "__main__" and sys.argv[1:] == ["--where"]:
            print(json.dumps({"lab": importlib.util.find_spec("lab").origin}))
    '''))
    where = offline_worker(str(script), "--where")["lab"]
    assert Path(where).resolve() == Path(lab.__file__).resolve()


def test_a_committed_answer_is_served_while_its_key_holds(tmp_path, monkeypatch, offline_worker):
    monkeypatch.setattr(workers, "ROOT", tmp_path)          # the worker is in "the repository"
    monkeypatch.setattr(compiler, "CHECKS_FILE", tmp_path / "checks.json")
    monkeypatch.setenv("LAB_CACHE_DIR", "off")
    runs = tmp_path / "runs"
    monkeypatch.setenv("WORKER_RUNS", str(runs))
    script = tmp_path / "tests" / "worker.py"
    script.parent.mkdir()
    script.write_text(WORKER)

    def answer() -> tuple[int, int]:
        value = offline_worker(str(script), "--worker")["value"]
        return value, len(runs.read_text().splitlines())

    monkeypatch.setenv("LAB_FACTS", "record")
    assert answer() == (1, 1)                             # run, recorded
    entries = json.loads(compiler.CHECKS_FILE.read_text())["entries"]
    entry = entries["worker:tests/worker.py --worker"]
    assert entry == {"key": workers.worker_key(script, "--worker"), "answer": {"value": 1}}
    monkeypatch.delenv("LAB_FACTS")
    assert answer() == (1, 1)                             # committed: not run again
    script.write_text(WORKER.replace("return 1", "return 2"))
    assert answer() == (2, 2)                             # the worker's code changed: run
    script.write_text(WORKER)
    assert answer() == (1, 2)                             # the recorded key holds again
    monkeypatch.setattr(compiler, "source_digest", lambda: "a kernel source changed")
    assert answer() == (1, 3)                             # stale: run


def test_a_worker_key_follows_the_lab_modules_it_imports(tmp_path, monkeypatch):
    """A worker may compile a study kept where the code-generating digest does not look
    (``lab.experiments``): the modules it imports key its answer too."""
    lab_dir = tmp_path / "lab" / "experiments"
    lab_dir.mkdir(parents=True)
    study = lab_dir / "_study.py"
    study.write_text("X = 1\n")
    monkeypatch.setattr(workers, "ROOT", tmp_path)
    script = tmp_path / "worker.py"
    script.write_text(WORKER.replace("import pytest", "import pytest\n"
                                     "from lab.experiments._study import X"))
    before = workers.worker_key(script, "--worker")
    study.write_text("X = 2\n")
    assert workers.worker_key(script, "--worker") != before
