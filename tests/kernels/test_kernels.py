"""Every registered kernel against float64, on shapes derived from its own block tile.

:func:`lab.bench.shapes_for` gives, for a tile (BM, BN, BK): 1×1×1; (BM+1, BN+1, BK+1) — a second
block row and column, a tail in every dimension, a partial second k-step; a round shape of two
block rows and two k-steps (the unchecked fast path where a kernel has one). On a GPU it adds
shapes past two tiles and two large ones. Under the simulator the kernels built on inline PTX
cannot run; ``tests/kernels/test_tensor_cores.py`` runs their logic on emulated intrinsics instead.

Each check draws fresh inputs; a failure prints the seed that replays it
(``bench.check(name, m, n, k, seed=...)``).

Every kernel declares the registry's contract, and the shapes catch faults planted in a launcher:
a dropped tail block, a fast path that forgets a dimension, a split-K slice rounded down.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import lab
from lab import bench, device, kernels
from lab.kernels import KernelSpec

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


# ----------------------------------------------------------------------------- chapters

ROOT = Path(__file__).resolve().parents[2]


def test_pages_are_the_books_chapters_in_reading_order():
    """PAGES names the ladder's notebooks of _toc.yml, in its order, as the book numbers them:
    ``06_1_waves`` is "6.1", ``07b_fp8`` is "7b", ``10_multi_gpu`` is "10"."""
    files = re.findall(r"file:\s*book/(\d\S*)", (ROOT / "_toc.yml").read_text())
    numbers = []
    for f in files:
        m = re.fullmatch(r"(\d+)(?:_(\d)_|([a-z])_|_)\w+", f)
        assert m, f
        numbers.append(str(int(m[1])) + (f".{m[2]}" if m[2] else m[3] or ""))
    assert numbers == list(kernels.PAGES)


def test_chapters_sort_in_page_order_not_string_order():
    shuffled = ["10", "9b", "6.1", "9", "7b", "2", "6.3", "0", "7.2", "7.1"]
    assert sorted(shuffled, key=kernels.page_order) == ["0", "2", "6.1", "6.3", "7.1", "7.2",
                                                        "7b", "9", "9b", "10"]
    assert sorted(shuffled) != sorted(shuffled, key=kernels.page_order)   # "10" < "2" as text


def test_every_kernel_names_a_page():
    assert {spec.chapter for spec in lab.REGISTRY.values()} <= set(kernels.PAGES)
    by_name = {name: spec.chapter for name, spec in lab.REGISTRY.items()}
    assert (by_name["tc_fp16_splitk"], by_name["tc_fp16_epilogue"], by_name["fp8_e4m3"],
            by_name["tc_small_m_fp16"], by_name["wgmma_table_fp16"]) == ("6.1", "6.3", "7b",
                                                                        "9b", "7.2")
    assert by_name["wgmma_tma_fp16"] == "7.1"


@pytest.mark.parametrize("chapter", [6, "6", "6.4", "7c", "", None])
def test_a_spec_whose_chapter_is_not_a_page_is_refused_naming_it(chapter):
    with pytest.raises(ValueError) as info:
        kernels.KernelSpec("bad_page", "a kernel on no page", np.float32, lambda *a: None,
                           chapter=chapter, tile=(1, 1, 1))
    message = str(info.value)
    assert "'bad_page'" in message and f"chapter {chapter!r} is not a page of the book" in message
    assert "6.1, 6.2, 6.3" in message                                      # the pages it may be
    with pytest.raises(ValueError, match=re.escape(f"chapter {chapter!r} is not a page")):
        kernels.page_order(chapter)
# ----------------------------------------------------------------------------- the contract, and faults the check shapes catch

def test_every_registered_kernel_declares_the_contract():
    for name, spec in lab.REGISTRY.items():
        assert spec.name == name
        assert np.dtype(spec.dtype) in (np.float32, np.float16, np.uint16, np.uint8)
        if np.dtype(spec.dtype) == np.uint8:        # FP8 codes travel as bytes
            assert spec.dtype_name in ("float8_e4m3fn", "float8_e5m2"), name
        assert isinstance(spec.simulator, bool) and callable(spec.launch)


def _dropped_tail(spec: KernelSpec, axis: str):
    """The k04 launcher with the grid rounded down — ``max(1, m // BM)`` block rows (or
    ``max(1, n // BN)`` columns): the last, partial block row (column) is never launched."""
    from lab.kernels import k04_vectorized as k04

    cfg = spec.config
    fast, edges = k04.vectorized_kernel, k04.vectorized_edges_kernel

    def launch(A, B, C):
        m, n = C.shape
        kernel = fast if k04.tiles_fit(cfg, m, n, A.shape[1]) else edges
        rows = max(1, m // cfg.BM) if axis == "rows" else -(-m // cfg.BM)
        cols = max(1, n // cfg.BN) if axis == "cols" else -(-n // cfg.BN)
        kernel[(cols, rows), cfg.threads](A, B, C)

    return launch


@pytest.mark.parametrize("axis", ["rows", "cols"])
def test_a_dropped_tail_block_fails_the_check(monkeypatch, axis):
    spec = lab.get_spec("vectorized")
    bm, bn, bk = spec.tile
    monkeypatch.setitem(lab.REGISTRY, "vectorized",
                        dataclasses.replace(spec, launch=_dropped_tail(spec, axis)))
    shape = (bm + 1, bn + 1, bk + 1)
    assert shape in bench.shapes_for(spec, gpu=False)
    verdict = bench.check("vectorized", *shape)
    assert not verdict.passed and "never written" in verdict.reason
    assert verdict.nonfinite == (bn + 1 if axis == "rows" else bm + 1)


def _fails(name: str, shape) -> bool:
    """Whether the check of ``name`` at ``shape`` fails — wrong values, or (the simulator
    catches an out-of-bounds access) an IndexError."""
    try:
        return not bench.check(name, *shape).passed
    except IndexError:
        return True


@pytest.mark.parametrize("clause", ["m", "n", "k"])
def test_a_fast_path_that_forgets_a_dimension_fails_the_check(monkeypatch, clause):
    """k04's ``tiles_fit`` without one of its three clauses sends a shape ragged in that
    dimension alone to the unchecked 16-byte kernel; the mixed-edge check shape (round in the
    other two) catches it, and the real ``tiles_fit`` passes there."""
    from lab.kernels import k04_vectorized as k04

    spec = lab.get_spec("vectorized")
    bm, bn, bk = spec.tile
    axis = "mnk".index(clause)
    mixed = [s for s in bench.shapes_for(spec, gpu=False)
             if s[axis] % spec.tile[axis] and all(s[i] % spec.tile[i] == 0 for i in range(3)
                                                   if i != axis)]
    assert mixed, "no check shape is ragged in this dimension alone"
    assert not _fails("vectorized", mixed[0])
    real = k04.tiles_fit
    monkeypatch.setattr(k04, "tiles_fit", lambda cfg, m, n, k: real(
        cfg, *(t if i == axis else x for i, (x, t) in enumerate(zip((m, n, k), spec.tile)))))
    assert _fails("vectorized", mixed[0])


def test_a_split_k_slice_rounded_down_fails_the_check(monkeypatch):
    """``plan`` rounding the slice count down drops the last, partial slice; the check shape
    whose k-steps the slices do not divide catches it at kernel level."""
    from lab.kernels import splitk as sk

    name = "warptile_tuned_splitk"
    spec = lab.get_spec(name)
    bk, splits = spec.tile[2], spec.launch.splits
    partial = [s for s in bench.shapes_for(spec, gpu=False)
               if (-(-s[2] // bk)) % (sk.k_slices(s[2], bk, splits)[0] // bk)]
    assert partial, "no check shape leaves a partial split-K slice"
    real = sk.k_slices

    def rounded_down(k, bk_, splits_):
        chunk, _ = real(k, bk_, splits_)
        return chunk, -(-k // bk_) // (chunk // bk_)

    monkeypatch.setattr(sk, "k_slices", rounded_down)
    assert _fails(name, partial[0])
