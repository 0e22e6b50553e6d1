"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import ast
import hashlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)
from lab import device

#: numba-cuda 0.30.4's ``BlockManager.run`` (sha256 of its source), the loop patched below.
_POLL_LOOP_SHA256 = "54626c6819f55d514a598517b1467ed1cc2e7c3bf1f3b9814e13ef2a4ba3541f"
_POLL_PAUSE_S = 2e-4


def _pause_the_simulator_poll() -> bool:
    """Numba's simulator runs a block's threads as Python threads, watched by a loop that polls
    them without pause; on a two-core machine that loop takes much of the CPU the threads need.
    For the tests it pauses 0.2 ms per round — the same loop otherwise, so kernels run exactly
    as before. Applied only to the loop this was written against (checked by hash)."""
    from numba.cuda.simulator import kernel as sim

    source = inspect.getsource(sim.BlockManager.run)
    if hashlib.sha256(source.encode()).hexdigest() != _POLL_LOOP_SHA256:
        return False
    head = "        while livethreads:\n"
    patched = source.replace(head, head + "            _time.sleep(_POLL_PAUSE_S)\n", 1)
    namespace = dict(vars(sim), _time=time, _POLL_PAUSE_S=_POLL_PAUSE_S)
    exec(compile(textwrap.dedent(patched), sim.__file__, "exec"), namespace)
    sim.BlockManager.run = namespace["run"]
    return True


if device.SIMULATOR:
    _pause_the_simulator_poll()


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
    body = ast.parse(path.read_text()).body
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


def worker_key(test_file: str, flag: str) -> str:
    """What a compile worker's answer depends on: the sources that generate device code
    (:func:`lab.compiler.source_digest`, the key of ``lab/facts/compiler.json``), the
    toolchain's versions, the worker's own code (:func:`worker_code`) and its flag."""
    from lab import compiler

    key = {"sources": compiler.source_digest(), "toolchain": compiler.toolchain(),
           "worker": worker_code(Path(test_file)), "flag": flag}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _offline_worker(test_file: str, flag: str) -> dict:
    """Run ``python <test_file> <flag>`` with ``LAB_DEVICE=compile`` (real numba-cuda, no GPU)
    and return the JSON it prints last. The answer is kept in lab.compiler's disk cache (whose
    files are also keyed by every code-generating ``lab`` source and the toolchain, and written
    by atomic rename, so parallel workers never read half a file) under :func:`worker_key`: an
    unchanged worker compiles its kernels once, and a changed kernel source misses."""
    from lab import compiler

    path = Path(test_file).resolve()
    name = worker_key(str(path), flag)
    cached = compiler._cache_get("test-worker", name)
    if cached is not None:
        return cached
    root = str(Path(__file__).resolve().parents[1])
    # The worker imports the lab of this tree (whose sources key the cache), not an installed one.
    env = dict(os.environ, LAB_DEVICE="compile",
               PYTHONPATH=os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    run = subprocess.run([sys.executable, str(path), flag], capture_output=True, text=True,
                         env=env, cwd=root)
    if run.returncode:
        pytest.fail(f"offline compile worker {path.name} {flag} failed:\n{run.stderr[-3000:]}")
    value = json.loads(run.stdout.strip().splitlines()[-1])
    compiler._cache_put("test-worker", name, value)
    return value


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per CPU core under the simulator, where
    every test is CPU-bound; on a GPU (and with ``LAB_DEVICE=compile``) one process, so that
    no two tests share the GPU and its clocks."""
    return (os.cpu_count() or 1) if device.SIMULATOR else 0


@pytest.fixture(scope="session")
def offline_worker():
    """``offline_worker(__file__, flag)``: the cached JSON of a test file's compile worker."""
    return _offline_worker


class FakeEvent:
    """A CUDA event that records nothing (the simulator's events take no timing flag)."""

    def __init__(self, timing=True):
        pass

    def record(self, stream=0):
        pass

    def synchronize(self):
        pass


@pytest.fixture
def fake_events(monkeypatch):
    """``fake_events(ms)``: Numba's CUDA events replaced by ones that record nothing, with
    ``ms`` between any two, for dry runs of an experiment's timing under the simulator."""
    from numba import cuda

    def install(ms: float) -> None:
        monkeypatch.setattr(cuda, "event", FakeEvent)
        monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: ms, raising=False)
    return install


@pytest.fixture
def rng():
    return np.random.default_rng()
