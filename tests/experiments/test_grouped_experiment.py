"""The ``grouped`` experiment's host side: the routing it draws and how it merges processes."""
from __future__ import annotations

import numpy as np
import pytest

from lab.experiments import grouped


@pytest.mark.parametrize("experts, top_k, tokens", [(8, 2, 1), (8, 2, 4096), (256, 8, 16),
                                                    (256, 8, 128)])
def test_routing_sends_each_token_to_top_k_distinct_experts(experts, top_k, tokens):
    counts = grouped.routing(experts, top_k, tokens, seed=3)
    assert counts.shape == (experts,) and counts.dtype == np.int64
    assert counts.sum() == tokens * top_k
    assert counts.max() <= tokens                   # distinct experts: at most one row a token
    assert (grouped.routing(experts, top_k, tokens, seed=3) == counts).all()


def test_routing_is_skewed_as_a_router_is():
    counts = grouped.routing(256, 8, 128, seed=1)
    assert (counts == 0).any()                      # decode: some experts get no rows …
    assert counts.max() >= 3 * counts.mean()        # … and some several times the mean
    big = grouped.routing(8, 2, 4096, seed=1)
    assert big.max() > 1.5 * big.min()


def test_every_layer_and_token_count_is_timed_against_the_loop():
    assert {layer[0] for layer in grouped.LAYERS} == {"Mixtral 8x7B", "DeepSeek-V3-like"}
    assert {phase for phase, _ in grouped.TOKENS} == {"decode", "prefill"}
    assert grouped.IMPLS[0] == "torch.mm loop"
    assert grouped.flops([3, 0, 2], 10, 7) == 2 * 5 * 10 * 7


def _speed(process, impl, ms, tokens=16, layout="contiguous"):
    return {"part": "speed", "model": "M", "layer": "down", "phase": "decode", "n": 4, "k": 8,
            "experts": 8, "tokens": tokens, "impl": impl, "layout": layout, "median_ms": ms,
            "ratio_to_loop": 1.0 / ms, "process": process}


def test_merge_keeps_the_median_process_and_every_ratio():
    raw = [_speed(p, "torch._grouped_mm", ms) for p, ms in enumerate((3.0, 1.0, 2.0))]
    (row,) = grouped.merge(raw, 3)
    assert row["median_ms"] == 2.0 and row["processes"] == 3
    assert row["ratios"] == [1 / 3.0, 1.0, 1 / 2.0]
    assert row["ratio_min"] == pytest.approx(1 / 3) and row["ratio_max"] == 1.0
    assert "process" not in row


def test_a_failed_check_in_one_process_cannot_hide_behind_a_median():
    raw = [_speed(p, "lab.grouped_gemm", 1.0) for p in (0, 2)]
    raw.append(dict(_speed(1, "lab.grouped_gemm", 1.0), part="check", error="error 0.5"))
    rows = grouped.merge(raw, 3)
    assert [r["part"] for r in rows] == ["check"]


def test_a_row_timed_in_some_processes_only_is_reported_not_averaged():
    raw = [_speed(0, "lab.grouped_gemm", 50.0), _speed(1, "lab.grouped_gemm", 61.0)]
    (row,) = grouped.merge(raw, 3)
    assert row["part"] == "skipped" and "2 of 3" in row["reason"]


def test_a_process_that_fails_is_raised_with_its_stderr(tmp_path, monkeypatch):
    """The processes' runner (shared with the suite) names the process and shows its error."""
    from lab import experiments

    monkeypatch.setenv("LAB_SUITE_WORK", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"no_such_experiment process 0 failed: .*No module"):
        experiments.in_processes("no_such_experiment", 2, lambda it, desc: it)


def test_a_run_cut_short_goes_on_where_it_stopped(tmp_path, monkeypatch):
    """With LAB_SUITE_WORK, processes that finished on this GPU are kept; the one that failed,
    and one that finished on another GPU, run again."""
    import json
    import subprocess
    from types import SimpleNamespace

    from lab import experiments

    ran, fail_at = [], {2}

    def fake_run(argv, **kw):
        path, index = argv[-2], int(argv[-1])
        ran.append(index)
        with open(path, "a") as f:
            f.write(json.dumps({"process": index}) + "\n")
        return SimpleNamespace(returncode=1 if index in fail_at else 0, stderr="cut short")

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv("LAB_SUITE_WORK", str(tmp_path))
    with pytest.raises(RuntimeError, match="process 2 failed: cut short"):
        experiments.in_processes("suite", 3, lambda it, desc: it)
    assert ran == [0, 1, 2]
    (tmp_path / "suite" / "process1.done").write_text(json.dumps({"gpu": "another GPU"}))
    fail_at.clear()
    raw = experiments.in_processes("suite", 3, lambda it, desc: it)
    assert ran == [0, 1, 2, 1, 2]
    assert raw == [{"process": 0}, {"process": 1}, {"process": 2}]
