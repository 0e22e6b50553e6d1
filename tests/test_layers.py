"""The layers of ``lab``, declared and enforced: every import points down.

Every ``import`` and ``from … import`` statement of every module is read from its syntax tree,
the ones inside functions too, so an import written late to dodge a cycle counts like any other.
A module may import its own layer's modules and any lower layer's, never a higher layer's; the
graph has no cycles; no chapter imports another chapter or an experiment (the experiments'
registry, ``lab.experiments`` itself, is allowed: the GPU page lists it).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[1] / "lab"

#: Bottom to top. A module belongs to the first layer with a pattern it matches: the module's
#: name itself, or a package's name followed by ``.*`` for everything under it.
LAYERS = (
    ("base", ("lab.device", "lab.lru", "lab.inlining", "lab.gpulock", "lab.clocks", "lab.results",
              "lab.model", "lab.seeds", "lab.tables", "lab.plots", "lab.page", "lab.accuracy",
              "lab.roofline", "lab.fragments", "lab.counting", "lab.fp8")),
    ("intrinsics", ("lab.ptx", "lab.vector", "lab.hopper", "lab.wmma", "lab.enqueue", "lab.convert")),
    ("kernels", ("lab.api", "lab.kernels", "lab.kernels.*")),
    ("compiler, timing", ("lab.compiler", "lab.timing")),
    ("gemm", ("lab", "lab.gemm")),
    ("providers", ("lab.providers", "lab.baselines", "lab.twins", "lab.twins.*",
                   "lab.libraries",
                   "lab.triton_gemm")),
    ("bench", ("lab.bench",)),
    ("multi-GPU", ("lab.multi", "lab.multi.*")),
    ("experiments", ("lab.experiments", "lab.experiments.*")),
    ("shared by chapters", ("lab.chapters.common",)),
    ("chapters", ("lab.chapters", "lab.chapters.*")),
    ("command line", ("lab.__main__", "lab.notebooks")),
)


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(LAB.rglob("*.py")):
        parts = list(path.relative_to(LAB.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict) -> dict[str, int]:
    """``{imported lab module: line}`` for every import statement anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module
            targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != name:
                found.setdefault(target, node.lineno)
    return found


def layer_of(name: str) -> int:
    for i, (_, patterns) in enumerate(LAYERS):
        for p in patterns:
            if name == p or (p.endswith(".*") and name.startswith(p[:-1])):
                return i
    raise LookupError(name)


#: Modules of ``lab.chapters`` that are no chapter: what several chapters share.
NOT_CHAPTERS = {"common"}


def chapter_of(name: str) -> str | None:
    """``lab.chapters.ch6_1.s2_waves`` -> ``ch6_1``; None outside a chapter."""
    parts = name.split(".")
    if len(parts) > 2 and parts[1] == "chapters" and parts[2] not in NOT_CHAPTERS:
        return parts[2]
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_every_module_has_a_layer(graph):
    unplaced = []
    for name in graph:
        try:
            layer_of(name)
        except LookupError:
            unplaced.append(name)
    assert not unplaced, f"modules in no layer of LAYERS: {unplaced}"


def test_imports_point_down(graph):
    upward = [f"{name} (layer {LAYERS[layer_of(name)][0]!r}) imports {target} (layer "
              f"{LAYERS[layer_of(target)][0]!r}) at line {line}"
              for name, targets in graph.items() for target, line in targets.items()
              if layer_of(target) > layer_of(name)]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_cycles(graph):
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_a_chapter_imports_no_other_chapter_and_no_experiment(graph):
    bad = []
    for name, targets in graph.items():
        chapter = chapter_of(name)
        if chapter is None:
            continue
        for target, line in targets.items():
            other = chapter_of(target)
            if (other is not None and other != chapter) or target.startswith(
                    "lab.experiments."):
                bad.append(f"{name} imports {target} at line {line}")
    assert not bad, "\n".join(bad)


def test_the_compiler_imports_no_chapter(graph):
    assert not [t for t in graph["lab.compiler"] if t.startswith("lab.chapters")]


def test_the_scanner_sees_imports_inside_functions(tmp_path):
    """A late import inside a function is found like one at the top (the check can fail)."""
    pkg = tmp_path / "lab"
    (pkg / "chapters").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "chapters" / "__init__.py").write_text("")
    (pkg / "bench.py").write_text("def f():\n    from lab.chapters import ch1\n")
    (pkg / "chapters" / "ch1.py").write_text("from .. import bench\n")
    known = {"lab": pkg / "__init__.py", "lab.bench": pkg / "bench.py",
             "lab.chapters": pkg / "chapters" / "__init__.py",
             "lab.chapters.ch1": pkg / "chapters" / "ch1.py"}
    assert imports_of("lab.bench", known["lab.bench"], known) == {"lab.chapters.ch1": 2}
    assert imports_of("lab.chapters.ch1", known["lab.chapters.ch1"], known) == {"lab.bench": 1}
