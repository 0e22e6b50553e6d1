"""Every results file the chapters' code names exists for the reference GPU (the two-GPU
folder for a multi-GPU experiment), so a chapter needs no "not measured yet" path: a file
missing here fails this test instead of a page printing a placeholder. (With ``LAB_GPU`` set,
:func:`lab.results.load` falls back to the reference GPU's file with a visible note.)"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lab import results

CHAPTERS = Path(__file__).resolve().parents[2] / "lab" / "chapters"
#: The chapters held to it (6, 7 and the intro test theirs in their own files): their sources,
#: and the functions that read one experiment's file.
SOURCES = sorted([*CHAPTERS.glob("ch[0-5]/*.py"), *CHAPTERS.glob("ch8/*.py"),
                  *CHAPTERS.glob("ch10/*.py"), *CHAPTERS.glob("ch9/*.py"), CHAPTERS / "common.py"])
READERS = {"load", "rows", "source_line", "path_for"}


def experiments_named(path: Path) -> set[str]:
    """The experiments whose names ``path`` passes to a results reader: a string literal, or a
    module constant holding one (``LIBRARIES = "libraries"``)."""
    tree = ast.parse(path.read_text())
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}
    names = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        first = node.args[0]
        if name not in READERS:
            continue
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.add(first.value)
        elif isinstance(first, ast.Name) and first.id in constants:
            names.add(constants[first.id])
    return names


@pytest.mark.parametrize("source", SOURCES, ids=[str(p.relative_to(CHAPTERS)) for p in SOURCES])
def test_every_file_a_chapter_reads_exists(source):
    missing = [e for e in sorted(experiments_named(source))
               if not results.path_for(e, results.REFERENCE_GPU).exists()]
    assert not missing, f"{source.name} reads results files that do not exist: {missing}"


def test_the_scan_finds_the_reads():
    """The scan sees every spelling of a read (so the test above can fail)."""
    common = experiments_named(CHAPTERS / "common.py")
    assert {"naive_tiled", "ncu_dram"} <= common
    assert "patch_sweep_int32" in experiments_named(CHAPTERS / "ch3" / "s5_measured.py")
    assert "sanitizer" in experiments_named(CHAPTERS / "ch4" / "s8_races.py")
    assert {"libraries", "clocks"} <= experiments_named(CHAPTERS / "ch9" / "s6_clocks.py")
    assert "multi_gpu" in experiments_named(CHAPTERS / "ch10" / "s0_rows.py")
