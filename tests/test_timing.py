"""lab.timing without a GPU: how many input sets a rotated timing cycles through."""
from types import SimpleNamespace

import numpy as np
import pytest

from lab import timing

L2 = 60 * 2**20


def test_rotation_exceeds_twice_the_l2():
    big = 4 * 3 * 4096 * 4096                     # A, B, C of a 4096³ FP32 product: 192 MiB
    assert timing.buffer_sets(big, True, L2) == 2
    mid = 8 * 2**20                               # 8 MiB a set: 15 sets make 120 MiB, and one
    assert timing.buffer_sets(mid, True, L2) == 16
    assert timing.buffer_sets(big, False, L2) == 1


def test_tiny_products_are_capped():
    """A 9×10×7 FP32 product (892 bytes a set) would need 141,066 sets to fill 2 × L2."""
    tiny = 4 * (9 * 7 + 7 * 10 + 9 * 10)
    assert timing.buffer_sets(tiny, True, L2) == timing.MAX_BUFFER_SETS
    assert all(timing.buffer_sets(n, True, L2) <= timing.MAX_BUFFER_SETS
               for n in (1, 100, 10_000, 1_000_000))


def test_the_event_loop_times_batches_on_the_stream_asked_for(monkeypatch):
    """event_samples: warm-up calls first, then one event pair per sample on the given stream,
    around ``batch`` calls; each sample is the pair's time over the batch."""
    from numba import cuda

    log, clock = [], iter(range(100))

    class Event:
        def __init__(self, timing=True):
            self.t = None

        def record(self, stream=0):
            self.t = next(clock) * 3.0                   # 3 ms per recorded event
            log.append(("record", stream))

        def synchronize(self):
            pass

    monkeypatch.setattr(timing, "require_gpu", lambda what="": None)
    monkeypatch.setattr(cuda, "event", Event)
    monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: b.t - a.t, raising=False)
    monkeypatch.setattr(cuda, "external_stream", lambda handle: f"stream {handle}",
                        raising=False)
    got = timing.event_samples(lambda i: log.append(i), warmup=2, repeats=2, batch=3,
                               stream=77)
    assert log == [0, 1, ("record", "stream 77"), 2, 3, 4, ("record", "stream 77"),
                   ("record", "stream 77"), 5, 6, 7, ("record", "stream 77")]
    assert got == [1.0, 1.0]                           # 3 ms between the events, 3 calls
    with pytest.raises(ValueError, match="batch >= 1"):
        timing.event_samples(lambda i: None, batch=0)


def test_the_event_loop_runs_before_ahead_of_each_sample(monkeypatch):
    """event_samples(before=…): the untimed step (an L2 flush) is enqueued ahead of each
    sample's first event, never inside a pair of events."""
    from numba import cuda

    log = []

    class Event:
        def __init__(self, timing=True):
            pass

        def record(self, stream=0):
            log.append("event")

        def synchronize(self):
            pass

    monkeypatch.setattr(timing, "require_gpu", lambda what="": None)
    monkeypatch.setattr(cuda, "event", Event)
    monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: 1.0, raising=False)
    timing.event_samples(lambda i: log.append("call"), warmup=1, repeats=2,
                         before=lambda: log.append("flush"))
    assert log == ["call", "flush", "event", "call", "event", "flush", "event", "call",
                   "event"]


def test_candidates_are_timed_in_turn_one_call_each_per_round(monkeypatch):
    from lab import timing

    order, befores = [], []

    def fake_samples(call, *, warmup, repeats, stream=None, before=None, batch=1):
        for i in range(warmup):
            call(i)
        out = []
        for i in range(warmup, warmup + repeats):
            before()
            call(i)
            out.append(float(len(order)))            # a sample: how many calls so far
        return out

    monkeypatch.setattr(timing, "event_samples", fake_samples)
    launches = [lambda name=name: order.append(name) for name in "abc"]
    medians = timing.interleaved_medians(launches, warmup=2, repeats=5,
                                         before=lambda: befores.append(1))
    assert order == list("abc") * 7                   # 2 warm-up rounds, then 5 timed ones
    assert len(befores) == 15                          # a flush before every timed call
    assert medians == [float(np.median([7 + 3 * r + j for r in range(5)])) for j in range(3)]


def test_the_tuning_flushes_the_l2_by_reading_before_every_timed_call(monkeypatch):
    """lab.gemm's first-call tuning times every candidate in turn with the L2 flushed by a read
    before each call (a decode B fits in the L2; a flush by writing leaves dirty lines that the
    timed call pays to write back), keeps the fastest, and its disk key names that method."""
    import sys
    from dataclasses import replace

    import lab  # noqa: F401
    from lab import compiler, device, enqueue, timing

    G = sys.modules["lab.gemm"]
    flushes, remembered = [], []
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(G, "_from_disk", lambda choice: None)
    monkeypatch.setattr(G, "_disk_key", lambda choice: "key")
    monkeypatch.setattr(G, "run", lambda cand, a, b, c: None)
    monkeypatch.setattr(compiler, "remember", lambda *args: remembered.append(args))
    monkeypatch.setattr(enqueue, "record", lambda fn, arrays: SimpleNamespace(
        launch=lambda handle: None))
    monkeypatch.setattr(timing, "flush_l2", lambda handle, **kw: flushes.append(kw))

    def fake_medians(launches, *, warmup, repeats, stream, before):
        before()
        return [3.0, 1.0, 2.0][:len(launches)]

    monkeypatch.setattr(timing, "interleaved_medians", fake_medians)
    first = G.choose(1, 4096, 4096, "float16", "float16", (9, 0), 132)
    assert len(first.candidates) >= 2
    best = G.tune(replace(first), None, None, None)
    assert flushes == [{"read": True}]
    assert best.kernel == first.candidates[0].kernel and best.tuned.startswith("first call")
    assert remembered and "read" in G.TUNE_METHOD and "in turn" in G.TUNE_METHOD
