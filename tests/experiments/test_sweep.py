"""The sweep's plan, offline: its shapes, and repeats that shrink with a product's size."""
from __future__ import annotations

from lab.experiments import sweep


def test_every_target_shape_is_swept():
    got = {(m, n, k) for _, m, n, k in sweep.shapes()}
    assert {(s, s, s) for s in (1024, 2048, 4096, 8192, 16384)} <= got
    for n, k in sweep.LLM_NK:
        assert {(m, n, k) for m in (1, 64, 128)} <= got
    assert set(sweep.ODD) <= got


def test_repeats_follow_the_guessed_time():
    assert abs(sweep.guess_ms(4096, 4096, 4096) - 0.285) < 0.001       # 500 TFLOP/s + 10 µs
    assert sweep.repeats_for(sweep.guess_ms(256, 256, 256)) == sweep.MAX_REPEATS
    assert sweep.repeats_for(sweep.guess_ms(4096, 4096, 4096)) == sweep.MAX_REPEATS
    assert sweep.repeats_for(sweep.guess_ms(8192, 8192, 8192)) == 36
    assert sweep.repeats_for(sweep.guess_ms(16384, 16384, 16384)) == sweep.MIN_REPEATS
    total_s = sum(sweep.repeats_for(sweep.guess_ms(m, n, k)) * sweep.guess_ms(m, n, k)
                  for _, m, n, k in sweep.shapes()) * 4 / 1e3
    assert total_s < 60, "the timings alone would outgrow one command"


def _row(process, ratio, kernel="k", **extra):
    return {"group": "llm", "impl": "lab.gemm", "method": "as_called", "m": 128, "n": 4096,
            "k": 14336, "out_dtype": "float16", "kernel": kernel, "process": process,
            "ratio_to_cublas": ratio, "median_ms": 1 / ratio, **extra}


def test_merge_keeps_the_median_process_row_and_every_ratio():
    rows = [_row(0, 0.90, "a"), _row(1, 0.70, "b"), _row(2, 0.80, "c"),
            {"part": "board", "process": 0, "power_limit_w": 700.0}]
    (got,) = sweep.merge(rows, 3)
    assert got["ratio_to_cublas"] == 0.80 and got["kernel"] == "c"
    assert got["median_ms"] == 1 / 0.80                 # the same process's timings
    assert got["ratios"] == [0.90, 0.70, 0.80]          # in process order
    assert (got["ratio_min"], got["ratio_max"], got["processes"]) == (0.70, 0.90, 3)
    assert got["kernels"] == ["a", "b", "c"] and "process" not in got


def test_merge_keeps_an_error_and_refuses_a_missing_process():
    failed = {"group": "llm", "impl": "lab.gemm", "m": 128, "n": 4096, "k": 14336,
              "process": 1, "error": "RuntimeError: boom"}
    rows = [_row(0, 0.9), failed, _row(2, 0.8)]
    errs = [r for r in sweep.merge(rows, 3) if "error" in r]
    assert errs and errs[0]["error"] == "RuntimeError: boom"
    import pytest
    with pytest.raises(RuntimeError, match="missing"):
        sweep.merge([_row(0, 0.9), _row(1, 0.8)], 3)
