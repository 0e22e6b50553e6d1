"""The stream-K trace's layout and its reading (experiment ``streamk_trace``), without a GPU:
events packed as the kernel packs them (``code << 56 | ns`` after the flags, from an 8-byte
boundary) come back per block and warpgroup, in order, and the steps are measured between
them."""
import numpy as np
import pytest

from lab.experiments import streamk_trace
from lab.experiments import _hopper_study as sk


def _flags(blocks, consumers, events):
    words = sk.flag_words(blocks, consumers, True)
    flags = np.zeros(words, np.int32)
    slots = blocks * consumers
    start = slots + slots % 2
    view = flags[start:].view(np.uint64).reshape(slots, sk.TRACE_SLOTS)
    for slot, ev in events.items():
        for i, (code, ns) in enumerate(ev):
            view[slot, i] = (np.uint64(code) << np.uint64(56)) | np.uint64(ns)
    return flags


@pytest.mark.parametrize("blocks", [3, 4])            # an odd slot count pads to 8 bytes
def test_events_come_back_per_warpgroup_in_order(blocks):
    events = {0: [(1, 1000), (2, 5000), (3, 5500), (10, 9000)],
              blocks * 2 - 1: [(1, 1200), (4, 4200), (5, 4300), (10, 4400)]}
    got = sk.trace_rows(_flags(blocks, 2, events), blocks, 2)
    assert len(got) == blocks * 2
    assert got[0] == events[0] and got[-1] == events[blocks * 2 - 1]
    assert all(not got[i] for i in range(1, blocks * 2 - 1))
    assert sk.flag_words(blocks, 2, False) == blocks * 2


def test_steps_are_measured_between_events():
    events = [[(1, 0), (2, 40_000), (3, 41_000), (4, 70_000), (6, 70_500), (7, 80_500),
               (8, 82_500), (9, 83_500), (10, 84_000)],
              [(1, 1_000), (4, 20_000), (5, 21_000), (10, 21_500)]]
    rows, steps = streamk_trace.timeline(events, consumers=2)
    assert rows[1]["block"] == 0 and rows[1]["warpgroup"] == 1
    assert rows[0]["events"][1] == [2, 40.0]
    assert steps["tile_median_us"] == 40.0
    assert steps["wait_median_us"] == 10.0 and steps["add_median_us"] == 2.0
    assert steps["publish_median_us"] == 1.0
    assert steps["share_max_us"] == 29.0                  # 41 -> 70 and 1 -> 20
    assert steps["end_max_us"] == 84.0
    assert steps["last_wave_max_us"] == 43.0              # from the last whole tile's store
