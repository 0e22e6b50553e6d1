"""The suite's plan offline: its shapes and their reasons, the interleaving of the two sides,
the merge of processes (median process, failures kept)."""
from __future__ import annotations

import pytest

from lab.experiments import suite


def test_the_suite_has_at_least_120_shapes_each_with_a_reason():
    got = suite.shapes()
    keys = [(s["group"], s["m"], s["n"], s["k"]) for s in got]
    assert len(got) >= 120 and len(set(keys)) == len(keys)
    assert {s["group"] for s in got} == {"decode", "prefill", "square", "odd"}
    assert all(s["reason"] for s in got)
    decode = {s["m"] for s in got if s["group"] == "decode"}
    assert decode == {1, 2, 4, 8, 16, 32, 64, 128, 256}
    squares = {s["m"] for s in got if s["group"] == "square"}
    assert {256, 3072, 16384} <= squares and any(s & (s - 1) for s in squares)
    assert (1, 1, 1) in {(s["m"], s["n"], s["k"]) for s in got}


@pytest.mark.parametrize("ms, calls", [(100.0, 2), (1.0, 2), (0.1, 20), (0.001, 50)])
def test_a_burst_aims_at_a_few_milliseconds(ms, calls):
    assert suite.burst_calls(ms) == calls


def test_the_sides_alternate_burst_by_burst(monkeypatch):
    order = []
    monkeypatch.setattr(suite, "_timed", lambda fn, calls: fn() or 1.0)
    got = suite.interleaved(lambda: order.append("ours"), lambda: order.append("cublas"), 5, 3)
    assert order == ["ours", "cublas"] * 3
    assert got == {"lab.gemm": [1.0] * 3, "cublas": [1.0] * 3}


def _row(process, ratio, **kw):
    return dict(group="square", impl="lab.gemm", method="gpu_only", m=8, n=8, k=8,
                dtype="float16", kernel=f"k{process}", ratio_to_cublas=ratio,
                process=process, **kw)


def test_merge_keeps_the_median_process_and_every_ratio():
    rows = suite.merge([_row(0, 1.2), _row(1, 0.8), _row(2, 1.0)], 3)
    assert len(rows) == 1
    r = rows[0]
    assert r["ratio_to_cublas"] == 1.0 and r["ratios"] == [1.2, 0.8, 1.0]
    assert (r["ratio_min"], r["ratio_max"]) == (0.8, 1.2) and r["kernels"] == ["k0", "k1", "k2"]


def test_a_failure_in_any_process_replaces_the_shapes_rows():
    bad = dict(_row(1, 0.0), method="check", error="error 0.5")
    rows = suite.merge([_row(0, 1.0), bad, _row(2, 1.0)], 3)
    assert rows == [dict(bad, processes=3)]


def test_a_row_missing_from_a_process_is_refused():
    with pytest.raises(RuntimeError, match="measured in 2 of 3"):
        suite.merge([_row(0, 1.0), _row(1, 1.0)], 3)
