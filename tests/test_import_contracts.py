"""The layers of ``lab``, enforced by import-linter: ``lint-imports`` keeps the contracts in
pyproject.toml (every import points down, no cycles, no chapter imports another chapter or an
experiment module), and breaks them, naming the contract, on faults planted in a copy of the
package. The registry imports every rung it lists, so the import graph sees those edges too.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from lab import kernels

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` run on the package under ``root`` with the contracts of its
    pyproject.toml (lint-imports puts its working directory first on the import path)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_package_keeps_its_contracts():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout, run.stdout


def planted_copy(tmp_path: Path, plants: dict[str, str]) -> Path:
    """A copy of lab's modules and of pyproject.toml, with a function holding ``import`` appended
    to each module named in ``plants`` (``{relative path: import statement}``): an import inside a
    function counts like one at the top."""
    for path in (ROOT / "lab").rglob("*.py"):
        to = tmp_path / path.relative_to(ROOT)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, to)
    shutil.copyfile(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for rel, statement in plants.items():
        with open(tmp_path / rel, "a") as f:
            f.write(f"\n\ndef _planted():\n    {statement}\n")
    return tmp_path


def rung_path(index: int) -> str:
    return "lab/kernels/" + kernels.RUNGS[index].replace(".", "/") + ".py"


#: A fault each, the contracts it must break, and lines the report must hold (a tuple: one of
#: them; which import of a cycle lint-imports names for removal is its choice).
FAULTS = {
    "a base module imports a chapter": (
        {"lab/tables.py": "from lab.chapters import ch1"},
        ["lab imports only downward"],
        ["lab.tables is not allowed to import lab.chapters", "lab.tables -> lab.chapters.ch1"]),
    "a rung imports lab.api, a cycle through the registry": (
        {rung_path(0): "from lab import api"},
        ["no import cycles", "lab imports only downward"],
        ["- .kernels -> .api", "lab.kernels is not allowed to import lab.api"]),
    "a rung imports lab.gemm, a cycle through the registry": (
        {rung_path(-1): "import lab.gemm"},
        ["no import cycles", "lab imports only downward"],
        ["- .kernels -> .gemm", "lab.kernels is not allowed to import lab.gemm"]),
    "two base modules import each other (one layer: only the cycle contract sees it)": (
        {"lab/tables.py": "from lab import page"},
        ["no import cycles"],
        [("- .tables -> .page", "- .page -> .tables"), "lab imports only downward KEPT"]),
    "a chapter imports another chapter and an experiment module": (
        {"lab/chapters/ch1/__init__.py": "from lab.chapters import ch2\n    "
                                         "from lab.experiments import suite"},
        ["no chapter imports another chapter", "chapters import no experiment module"],
        ["lab.chapters.ch1 is not allowed to import lab.chapters.ch2",
         "lab.chapters.ch1 -> lab.experiments.suite"]),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_planted_fault_breaks_its_contract(tmp_path, fault):
    plants, contracts, lines = FAULTS[fault]
    run = lint_imports(planted_copy(tmp_path, plants))
    assert run.returncode == 1, run.stdout + run.stderr
    for contract in contracts:
        assert f"{contract} BROKEN" in run.stdout, run.stdout
    for line in lines:
        assert any(one in run.stdout for one in ((line,) if isinstance(line, str) else line)), \
            run.stdout


def test_the_registry_imports_every_rung_it_lists():
    """Each rung of RUNGS is imported by the registry itself (so the import graph holds the
    edge), and no other module of lab.kernels is."""
    graph = grimp.build_graph("lab", cache_dir=None)
    imported = {m for m in graph.find_modules_directly_imported_by("lab.kernels")
                if m.startswith("lab.kernels.")}
    rungs = {f"lab.kernels.{rung}" for rung in kernels.RUNGS}
    assert not rungs - imported, f"rungs the registry does not import: {sorted(rungs - imported)}"
    assert not imported - rungs, f"modules the registry imports outside RUNGS: " \
                                 f"{sorted(imported - rungs)}"
