"""lab.compiler: the offline report of a kernel (registers, spills, SASS mix), and its disk
cache shared by parallel processes."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab import compiler

ROOT = Path(__file__).resolve().parents[1]


def test_compiler_report_for_naive():
    rep = compiler.report("naive")[0]
    assert rep.registers > 0
    assert rep.spill_stores == 0 and rep.spill_loads == 0
    assert rep.mix.get("FFMA", 0) > 0 and rep.sass


def test_parallel_writers_of_one_entry_never_leave_half_a_file(tmp_path, monkeypatch):
    """Test workers share the disk cache: three processes write one entry over and over, each
    its own value, while this one reads it; every read finds one whole value."""
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    values = [{"writer": w, "text": str(w) * (200_000 + 50_000 * w)} for w in range(3)]
    script = textwrap.dedent("""
        import sys
        from lab import compiler
        w = int(sys.argv[1])
        for _ in range(40):
            compiler._cache_put("parallel", "entry", {"writer": w,
                                                      "text": str(w) * (200_000 + 50_000 * w)})
    """)
    env = dict(os.environ, LAB_DEVICE="simulator")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(w)], cwd=ROOT, env=env)
               for w in range(3)]
    reads = []
    while any(w.poll() is None for w in writers):
        if compiler._cache_file("parallel", "entry").exists():
            reads.append(compiler._cache_get("parallel", "entry"))
    assert all(w.returncode == 0 for w in writers)
    reads.append(compiler._cache_get("parallel", "entry"))
    assert len(reads) > 1 and all(r in values for r in reads), \
        f"{sum(r not in values for r in reads)} of {len(reads)} reads found a torn entry"
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == \
        [compiler._cache_file("parallel", "entry").name]


# ----------------------------------------------------------------------------- code digest

BASE = '''"""A module."""
import numpy as np


def f(x, y):
    """Add."""
    # a comment
    return x + y * 2.0  # another
'''


@pytest.mark.parametrize("edit", [
    lambda s: s.replace('"""Add."""', '"""Add two numbers, as the book says."""'),
    lambda s: s.replace('"""A module."""', "# no docstring"),
    lambda s: s.replace("# a comment", "# another comment\n\n\n"),
    lambda s: s.replace("(x, y)", "(\n    x,\n    y,\n)"),
    lambda s: s.replace("return x + y * 2.0", "return (x\n            + y * 2.0)"),
])
def test_the_canonical_code_ignores_docstrings_comments_and_layout(edit):
    assert compiler.canonical_code(edit(BASE)) == compiler.canonical_code(BASE)


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("2.0", "2.5"),
    lambda s: s.replace("x + y", "x - y"),
    lambda s: s.replace("(x, y)", "(y, x)"),
    lambda s: s.replace("import numpy as np", "import numpy as npy"),
    lambda s: s.replace("    return", "    x = x\n    return"),
    lambda s: s.replace('"""Add."""', 'print("Add.")'),
    lambda s: s.replace("    # a comment", '    """Add."""'),   # a string after the docstring
])
def test_the_canonical_code_changes_with_any_code(edit):
    assert compiler.canonical_code(edit(BASE)) != compiler.canonical_code(BASE)


def _canonical_in(python: str) -> str:
    """The code digest's text of every code-generating source, written by another Python
    (``canonical_code``'s own source run there, without importing lab)."""
    script = textwrap.dedent(f"""
        import ast, hashlib, sys
        src = open({str(Path(compiler.__file__))!r}).read()
        fn = next(n for n in ast.parse(src).body
                  if isinstance(n, ast.FunctionDef) and n.name == "canonical_code")
        ns = {{}}
        exec(compile(ast.Module(body=[fn], type_ignores=[]), "canonical_code", "exec"), ns)
        h = hashlib.sha256()
        for path in sys.argv[1:]:
            h.update(ns["canonical_code"](open(path).read()).encode())
        print(h.hexdigest())""")
    paths = [str(p) for _, p in compiler._codegen_files() if p.suffix == ".py"]
    return subprocess.run([python, "-c", script, *paths], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_other_pythons_write_the_same_canonical_code():
    """A GPU machine records checks under its own Python (3.12, say); the test that matches the
    record runs here: both must read the same code alike."""
    import hashlib
    import shutil

    here = hashlib.sha256()
    for _, path in compiler._codegen_files():
        if path.suffix == ".py":
            here.update(compiler.canonical_code(path.read_text()).encode())
    found = [shutil.which(f"python{v}") for v in ("3.12", "3.13")]
    if shutil.which("pyenv"):                   # pyenv's interpreters, whichever is active
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        found += [str(p) for p in sorted(Path(root).glob("versions/3.1[123]*/bin/python3"))]
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    others = {}
    for python in filter(None, found):
        run = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True)
        version = run.stdout.strip().strip("()").replace(", ", ".")
        if run.returncode == 0 and version != mine:
            others.setdefault(version, python)
    if not others:
        pytest.skip(f"no Python 3.11-3.13 but this one ({mine}) here")
    for version, python in sorted(others.items()):
        assert _canonical_in(python) == here.hexdigest(), version
