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
