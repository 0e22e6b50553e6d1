"""The test files' offline compile workers: ``python <test file> <flag>``, run with
``LAB_DEVICE=compile`` (real numba-cuda, no GPU), prints the JSON facts its tests assert on
(SASS instruction mixes, registers, spills, PTX properties of kernels compiled for sm_90a).

An answer depends on :func:`worker_key`: the sources that generate device code
(:func:`lab.compiler.source_digest`), the toolchain's versions, the worker's own code
(:func:`worker_code`), the ``lab`` modules it imports and its flag. It is served from the
committed answers (``lab/facts/checks.json``, :data:`lab.compiler.CHECKS_FILE`) when they were
recorded under that key, else from the disk cache (:func:`lab.compiler.recall`), else the worker
runs. With ``LAB_FACTS=record`` the answer is recorded; ``LAB_FACTS=record python -m lab
compile`` records every worker of :data:`WORKERS` with the compiler facts.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab import compiler

#: The repository: the workers are its test files, named relative to it.
ROOT = Path(__file__).resolve().parents[1]
_LAB = ROOT / "lab"

#: Every worker the test suite calls (``offline_worker(__file__, flag)``): test file, flag.
WORKERS = (("tests/kernels/test_hopper.py", "--worker"), ("tests/kernels/test_fp8.py", "--worker"),
           ("tests/test_ptx.py", "--sass"), ("tests/test_inlining.py", "--ptx"))


class WorkerFailed(RuntimeError):
    """A worker exited with an error (its stderr's tail is the message)."""


def _marks(body: list[ast.stmt]) -> set[str]:
    """Top-level names bound to a pytest mark (``gpu = pytest.mark.skipif(...)``)."""
    return {node.targets[0].id for node in body
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and ast.unparse(node.value).startswith("pytest.mark.")}


def _binds(node: ast.stmt, marks: set[str]) -> set[str] | None:
    """The names a top-level definition binds, or None where the statement may do more than
    bind names (a decorator other than pytest's, an assignment to anything but a name)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        inert = all(ast.unparse(d).startswith("pytest.") or
                    ast.unparse(d).split("(")[0].split(".")[0] in marks
                    for d in node.decorator_list)
        return {node.name} if inert else None
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if all(isinstance(t, ast.Name) for t in targets):
            return {t.id for t in targets}
    return None


def worker_code(path: Path) -> str:
    """The code a test file's compile worker runs, without comments: every top-level statement
    but a definition (the ``if __name__ == "__main__"`` block, imports, kernels under
    ``@cuda.jit``), and the definitions those reach by name, transitively. The tests themselves
    (definitions under pytest's decorators at most) are left out unless the worker calls them:
    editing one does not compile the worker's kernels again. A worker reaches a definition by
    its name written in code, not through a string (``globals()["name"]``)."""
    body = ast.parse(Path(path).read_text()).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]                                     # the module docstring
    marks = _marks(body)
    binds = {i: _binds(node, marks) for i, node in enumerate(body)}
    kept = {i for i, names in binds.items() if names is None}
    reached = {n.id for i in kept for n in ast.walk(body[i]) if isinstance(n, ast.Name)}
    grown = True
    while grown:
        grown = False
        for i, names in binds.items():
            if i not in kept and names & reached:
                kept.add(i)
                reached |= {n.id for n in ast.walk(body[i]) if isinstance(n, ast.Name)}
                grown = True
    return "\n".join(ast.unparse(body[i]) for i in sorted(kept))


def _lab_imports(code: str) -> dict[str, str]:
    """sha256 of each ``lab`` source file the code imports by name (``from lab.experiments.x
    import y``, ``from lab import hopper``): a study the worker compiles may live in a module
    that :func:`lab.compiler.source_digest` leaves out."""
    modules = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "lab":
            modules |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.name for a in node.names if a.name.split(".")[0] == "lab"}
    files = {}
    for module in sorted(modules):
        base = ROOT.joinpath(*module.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                files[module] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def worker_key(test_file: str | Path, flag: str) -> str:
    """What a compile worker's answer depends on: the sources that generate device code
    (:func:`lab.compiler.source_digest`, the key of ``lab/facts/compiler.json``), the
    toolchain's versions, the worker's own code (:func:`worker_code`), the ``lab`` modules it
    imports and its flag."""
    code = worker_code(Path(test_file))
    key = {"sources": compiler.source_digest(), "toolchain": compiler.toolchain(),
           "worker": code, "imports": _lab_imports(code), "flag": flag}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def entry(test_file: str | Path, flag: str) -> str | None:
    """The committed answer's name (``tests/test_ptx.py --sass``), None for a file outside the
    repository (whose answers are never committed)."""
    path = Path(test_file).resolve()
    if not path.is_relative_to(ROOT):
        return None
    return f"{path.relative_to(ROOT).as_posix()} {flag}"


def committed(test_file: str | Path, flag: str, key: str | None = None):
    """The committed answer of a worker, or None when none was recorded for its current key."""
    name = entry(test_file, flag)
    kept = compiler.stored("worker", name) if name else None
    if kept is None or kept.get("key") != (key or worker_key(test_file, flag)):
        return None
    return kept["answer"]


def answer(test_file: str | Path, flag: str) -> dict:
    """A worker's JSON answer: committed, else cached, else run now (and then cached). With
    ``LAB_FACTS=record`` it is recorded under its key."""
    path = Path(test_file).resolve()
    key = worker_key(path, flag)
    value = committed(path, flag, key)
    if value is not None:
        return value
    value = compiler.recall("test-worker", key)
    if value is None:
        value = _run(path, flag)
        compiler.remember("test-worker", key, value)
    name = entry(path, flag)
    if name:
        compiler.record("worker", name, {"key": key, "answer": value})
    return value


def _run(path: Path, flag: str) -> dict:
    """Run ``python <path> <flag>`` with ``LAB_DEVICE=compile`` and return the JSON it prints
    last. The worker imports the ``lab`` of this tree (whose sources key its answer), not an
    installed one."""
    env = dict(os.environ, LAB_DEVICE="compile",
               PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("LAB_FACTS", None)              # the answer is recorded here, nothing in the worker
    run = subprocess.run([sys.executable, str(path), flag], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    if run.returncode:
        raise WorkerFailed(f"offline compile worker {path.name} {flag} failed:\n"
                           f"{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def record_all(jobs: int = 2) -> list[str]:
    """Every worker of :data:`WORKERS` (``jobs`` at a time), recorded with ``LAB_FACTS=record``:
    the names of those run."""
    present = [(ROOT / rel, flag) for rel, flag in WORKERS if (ROOT / rel).is_file()]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(lambda w: answer(*w), present))
    return [entry(path, flag) for path, flag in present]
