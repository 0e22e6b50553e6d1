"""No function of ``lab/kernels`` (its subpackages included) is longer than :data:`LIMIT` lines.

A kernel factory that grows past a screen or four is split into builders of device functions
a reader can name (the loads, the main loop, the epilogue), inlined into the same kernel. Every
``def`` counts, a nested one too, measured over its own span: from its ``def`` line to its last
line (decorators left out), so a factory's span includes the device functions it defines.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "lab" / "kernels"
LIMIT = 200
#: Functions allowed past :data:`LIMIT`, with the most lines each may have (none today).
ALLOWED: dict[str, int] = {}


def function_spans(source: str) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, lines)`` of every function in ``source``, nested ones
    included, each measured from its ``def`` line to its last line."""
    spans = []

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                spans.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return spans


def test_spans_count_nested_functions_on_their_own():
    source = ("def outer():\n"
              "    x = 1\n"
              "    @decorator\n"
              "    def inner():\n"
              "        return 2\n"
              "    return inner\n"
              "class K:\n"
              "    def method(self):\n"
              "        if True:\n"
              "            async def deep():\n"
              "                pass\n")
    assert function_spans(source) == [("outer", 1, 6), ("outer.inner", 4, 2),
                                      ("K.method", 8, 4), ("K.method.deep", 10, 2)]


def test_every_def_of_every_kernel_module_is_measured():
    files = sorted(KERNELS.rglob("*.py"))
    assert {"__init__.py", "k04_vectorized.py", "small_m.py"} <= {p.name for p in files}
    for path in files:
        source = path.read_text()
        defs = len(re.findall(r"^[ \t]*(?:async[ \t]+)?def[ \t]", source, re.MULTILINE))
        assert len(function_spans(source)) == defs, path


def test_no_kernel_function_is_longer_than_the_limit():
    too_long = [f"{path.relative_to(KERNELS.parents[1]).as_posix()}:{line} {name}: {lines} lines"
                for path in sorted(KERNELS.rglob("*.py"))
                for name, line, lines in function_spans(path.read_text())
                if lines > ALLOWED.get(f"{path.relative_to(KERNELS.parents[1]).as_posix()} "
                                       f"{name}", LIMIT)]
    assert not too_long, (f"functions in lab/kernels longer than {LIMIT} lines (split them into "
                          "named builders of device functions):\n" + "\n".join(too_long))


def test_every_allowance_is_still_needed():
    """An allowance whose function has shrunk back under the limit (or gone) is removed."""
    spans = {f"{path.relative_to(KERNELS.parents[1]).as_posix()} {name}": lines
             for path in sorted(KERNELS.rglob("*.py"))
             for name, _, lines in function_spans(path.read_text())}
    stale = [key for key in ALLOWED if spans.get(key, 0) <= LIMIT]
    assert not stale, f"allowances no longer needed: {stale}"
