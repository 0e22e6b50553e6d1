"""Every registered kernel against float64, on shapes derived from its own block tile.

:func:`lab.bench.shapes_for` gives, for a tile (BM, BN, BK): 1×1×1; (BM+1, BN+1, BK+1) — a second
block row and column, a tail in every dimension, a partial second k-step; a round shape of two
block rows and two k-steps (the unchecked fast path where a kernel has one). On a GPU it adds
shapes past two tiles and two large ones. Under the simulator the kernels built on inline PTX
cannot run; ``tests/test_tensor_cores.py`` runs their logic on emulated intrinsics instead.

Each check draws fresh inputs; a failure prints the seed that replays it
(``bench.check(name, m, n, k, seed=...)``).
"""
from __future__ import annotations

import pytest

import lab
from lab import bench, device

CASES = [(name, shape) for name, spec in lab.REGISTRY.items()
         if device.GPU or spec.simulator
         for shape in bench.shapes_for(spec, gpu=device.GPU)]


@pytest.mark.parametrize("name, shape", CASES,
                         ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_matches_float64(name, shape):
    ok, why = lab.kernels.runnable(name)
    if not ok:
        pytest.skip(why)
    verdict = bench.check(name, *shape)
    assert verdict.passed, verdict.line()


def _tail(x: int, tile: int) -> bool:
    return tile == 1 or x % tile != 0


def test_every_kernel_is_checked_past_its_tiles():
    """The shapes reach a second block row, a second block column and a tail in M, N and K of
    every kernel's own tile, and include 1×1×1 and a round shape."""
    for name, spec in lab.REGISTRY.items():
        bm, bn, bk = spec.tile
        for gpu in (False, True):
            shapes = bench.shapes_for(spec, gpu=gpu)
            assert (1, 1, 1) in shapes, name
            assert any(m > bm and n > bn and k > bk and _tail(m, bm) and _tail(n, bn)
                       and _tail(k, bk) for m, n, k in shapes), (name, shapes)
            assert any(m % bm == n % bn == k % bk == 0 and m > bm and k > bk
                       for m, n, k in shapes), (name, shapes)
            assert all(m >= 1 and n >= 1 and k >= 1 for m, n, k in shapes), name
        past_two = bench.shapes_for(spec, gpu=True)
        assert any(m > 2 * bm for m, _, _ in past_two) and any(n > 2 * bn for _, n, _ in past_two)
        assert any(k > 2 * bk and _tail(k, bk) for _, _, k in past_two), name


def test_simulator_shapes_stay_small():
    """Under the simulator a check must stay within a few block-steps of work."""
    for spec in lab.REGISTRY.values():
        bm, bn, bk = spec.tile
        for m, n, k in bench.shapes_for(spec, gpu=False):
            steps = -(-m // bm) * -(-n // bn) * -(-k // bk)
            assert steps <= 8, (spec.name, (m, n, k), steps)
