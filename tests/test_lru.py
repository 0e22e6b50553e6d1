"""lab.lru: the one bounded cache — its bound, its eviction order, making once, threads."""
from __future__ import annotations

import threading

import pytest

from lab.lru import LRU


def test_it_keeps_at_most_maxsize_entries_dropping_the_oldest():
    c = LRU(3)
    for k in "abcd":
        c[k] = k.upper()
    assert len(c) == 3
    assert "a" not in c and list(c) == ["b", "c", "d"]


def test_a_lookup_makes_an_entry_the_most_recent():
    c = LRU(3)
    for k in "abc":
        c[k] = k
    assert c.get("a") == "a"          # a is now the newest: b goes first
    c["d"] = "d"
    assert list(c) == ["c", "a", "d"]
    c["c"] = "again"                  # a store refreshes too
    c["e"] = "e"
    assert list(c) == ["d", "c", "e"]


def test_in_does_not_refresh_and_a_miss_is_the_default():
    c = LRU(2)
    c["a"], c["b"] = 1, 2
    assert "a" in c
    c["c"] = 3
    assert "a" not in c
    assert c.get("a") is None and c.get("a", 7) == 7
    with pytest.raises(KeyError):
        c["a"]


def test_get_or_make_makes_once_and_respects_the_bound():
    c = LRU(2)
    made = []
    for k in (1, 2, 1, 3, 2):
        assert c.get_or_make(k, lambda k=k: made.append(k) or k * 10) == k * 10
    assert made == [1, 2, 3, 2]        # 2 was dropped when 3 came (1 had been used)
    assert list(c) == [3, 2]


def test_a_bound_below_one_is_refused():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="at least one entry"):
            LRU(bad)


def test_threads_make_each_entry_once():
    c = LRU(64)
    made = []
    gate = threading.Barrier(8)

    def work():
        gate.wait()
        for k in range(32):
            c.get_or_make(k, lambda k=k: made.append(k) or k)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(made) == list(range(32)) and len(c) == 32
