"""Chapters 1–2: naive and tiled kernels — registry order, twins, compiler facts.

(Their checks against float64 are in ``tests/kernels/test_kernels.py``, on shapes from each tile.)
"""
from __future__ import annotations

import pytest

import lab
from lab import twins

KERNELS = ("naive", "naive_swapped", "naive_literal", "tiled8", "tiled16", "tiled32")


def test_registered_in_ladder_order():
    names = list(lab.REGISTRY)
    assert [n for n in names if n in KERNELS] == list(KERNELS)


def test_every_twin_names_a_registered_kernel():
    for twin in twins.TWINS.values():
        assert twin.twin_of in lab.REGISTRY
    assert not twins.supports("s004_tiled32", 37, 45, 29)
    assert twins.supports("s003_tiled16", 37, 45, 29)


@pytest.fixture(scope="module")
def compiled():
    from lab import compiler
    try:
        return {row["kernel"]: row for row in compiler.table(KERNELS)}
    except FileNotFoundError as exc:  # no ptxas/nvdisasm wheels
        pytest.skip(str(exc))


def test_no_spills_no_stack(compiled):
    for name, row in compiled.items():
        assert row["spill_stores"] == row["spill_loads"] == 0, name
        assert row["stack_bytes"] == 0, name


def test_int32_naive_beats_literal_translation(compiled):
    """The typed/unrolled naive loop carries a far higher share of FFMA than the literal one."""
    fast, literal = compiled["naive"], compiled["naive_literal"]
    assert fast["loop_ffma_share"] > 4 * literal["loop_ffma_share"]
    assert compiled["naive_swapped"]["loop_instructions"] == fast["loop_instructions"]


def test_tiles_use_shared_memory(compiled):
    for tile in (8, 16, 32):
        assert compiled[f"tiled{tile}"]["shared_bytes"] == 2 * tile * tile * 4
        assert compiled[f"tiled{tile}"]["loop_lds"] != "-"
