"""The Hopper ladder's table (lab.kernels.wgmma.rungs): the one source of the registry's Hopper
rungs, chapter 7's lists and ``python -m lab show``; and what adding a rung takes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lab.kernels import REGISTRY
from lab.kernels.wgmma import rungs

LAB = Path(__file__).resolve().parents[2] / "lab"


def test_the_table_numbers_the_rungs_and_each_is_its_parent_with_one_change():
    ladder = list(rungs.LADDER.values())
    assert [r.number for r in ladder] == list(range(1, len(ladder) + 1))
    seen = set()
    for r in ladder:
        if r.parent:
            assert r.parent in seen, f"rung {r.number}'s parent comes later"
            assert r.config == replace(rungs.LADDER[r.parent].config, **r.change)
            assert r.change and all(getattr(r.config, k) == v for k, v in r.change.items())
        seen.add(r.name)
    with pytest.raises(ValueError, match="twice"):
        rungs.rung(5, "wgmma_again", "wgmma_ws", "a second rung 5")
    with pytest.raises(ValueError, match="not a rung"):
        rungs.rung(99, "wgmma_orphan", "wgmma_nope", "a rung whose parent is missing")
    with pytest.raises(ValueError, match="changes nothing"):
        rungs.rung(98, "wgmma_same", "wgmma_ws", "a rung without a change")
    assert not {"wgmma_again", "wgmma_orphan", "wgmma_same"} & set(rungs.LADDER)


def test_the_registry_and_chapter_7_read_the_table():
    from lab.chapters.ch7 import common

    for r in rungs.LADDER.values():
        for kind, suffix in (("f16", "_fp16"), ("bf16", "_bf16")):
            spec = REGISTRY[r.name + suffix]
            assert spec.config == rungs.for_kind(r.config, kind)
            assert r.title in spec.title
        assert common.PARENT[r.name] == (r.parent or "tc")
    assert common.NUMBER == {n: rungs.LADDER[n].number for n in common.RUNGS}
    assert set(common.PAST) | set(common.RUNGS) == set(rungs.LADDER)
    assert rungs.parent_of("wgmma_table_bf16") == "wgmma_uniform_bf16"
    assert rungs.parent_of("wgmma_cpasync_fp16") is None and rungs.parent_of("naive") is None


#: A new rung as a reader would add it: a knob (config.py), the slot it changes (order.py) and
#: one line of the table (rungs.py) — three files, nothing else.
PLANT = {
    "kernels/wgmma/config.py": (
        "    table: bool = False\n",
        "    table: bool = False\n"
        "    # planted: tiles in plain row order (no L2 groups)\n"
        "    rows: bool = False\n"),
    "kernels/wgmma/order.py": (
        "    if cfg.table:\n",
        "    if cfg.rows:\n"
        "        @cuda.jit(device=True, inline=\"always\")\n"
        "        def row_tile(unit, table, units_m, tiles_n, tiles_m, rank):\n"
        "            return unit // tiles_n, unit % tiles_n * BN\n"
        "        return row_tile, row_tile\n\n"
        "    if cfg.table:\n"),
    "kernels/wgmma/rungs.py": (
        "\n#: name → configuration (FP16), in ladder order.\n",
        "rung(20, \"wgmma_rows\", \"wgmma_uniform\", \"rung 15 + tiles in row order\", rows=True)\n"
        "\n#: name → configuration (FP16), in ladder order.\n"),
}

CHECK = r"""
import lab
from lab.kernels import REGISTRY
from lab.chapters.ch7 import common
from lab.__main__ import main
assert {"wgmma_rows_fp16", "wgmma_rows_bf16"} <= set(REGISTRY), "not registered"
assert REGISTRY["wgmma_rows_fp16"].config.rows
assert common.PARENT["wgmma_rows"] == "wgmma_uniform" and "wgmma_rows" in common.PAST
main(["show", "wgmma_rows", "--parent"])
"""


def test_a_planted_rung_touches_three_files(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(LAB, root / "lab", ignore=shutil.ignore_patterns("__pycache__", "results",
                                                                      "facts"))
    (root / "lab" / "results").mkdir()
    touched = []
    for rel, (old, new) in PLANT.items():
        path = root / "lab" / rel
        text = path.read_text()
        assert text.count(old) == 1, f"{rel}: the planting point moved"
        path.write_text(text.replace(old, new))
        touched.append(rel)
    assert len(touched) <= 3
    env = dict(os.environ, PYTHONPATH=str(root), LAB_CACHE_DIR="off")
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=root, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    diff = run.stdout
    assert "+def row_tile(" in diff and "-def tile_coords(" in diff, diff[-2000:]
    assert "unit // tiles_n, unit % tiles_n * BN" in diff
