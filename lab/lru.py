"""One bounded cache for the whole package: :class:`LRU`, a mapping that keeps at most
``maxsize`` entries and drops the least recently used one first.

Every module-level cache of ``lab`` (built kernels, workspaces and padded copies, launch plans,
tensor maps, tuned choices, recorded calls) is one of these, so each says how much it keeps
and none grows without bound. A look-up (:meth:`LRU.get`, ``in`` does not count) or a store
makes an entry the most recent. :meth:`LRU.get_or_make` builds a missing entry once, under
the cache's lock: the caches are used from several threads (the simulator runs each GPU
thread as a Python thread, the multi-GPU simulation each rank, some chapters a thread pool).
A cache holds references only: what it drops stays alive for as long as anything else (a
recorded launch plan, a caller) holds it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable, Iterator

_MISSING = object()


class LRU:
    """At most ``maxsize`` entries, the least recently used dropped first; thread-safe."""

    __slots__ = ("maxsize", "_data", "_lock")

    def __init__(self, maxsize: int):
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
            raise ValueError(f"an LRU cache keeps at least one entry, got maxsize={maxsize!r}")
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.RLock()

    def get(self, key: Hashable, default=None):
        """The entry for ``key`` (now the most recent), or ``default``. Takes no lock (each
        step is one operation of the dictionary; an entry dropped between them by another
        thread is a miss): the hot paths of ``lab.gemm`` look up here on every call."""
        data = self._data
        try:
            data.move_to_end(key)
            return data[key]
        except KeyError:
            return default

    def __getitem__(self, key: Hashable):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def get_or_make(self, key: Hashable, make: Callable[[], object]):
        """The entry for ``key``, made by ``make()`` and stored first if there is none (one
        thread makes it; ``make`` may use other caches, or this one for another key)."""
        with self._lock:
            value = self.get(key, _MISSING)
            if value is _MISSING:
                value = make()
                self[key] = value
            return value

    def __delitem__(self, key: Hashable) -> None:
        with self._lock:
            del self._data[key]

    def pop(self, key: Hashable, default=None):
        with self._lock:
            return self._data.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator:
        """The keys, least recently used first (a snapshot)."""
        with self._lock:
            return iter(list(self._data))

    def items(self) -> list[tuple]:
        """``(key, value)`` pairs, least recently used first (a snapshot; no entry moves)."""
        with self._lock:
            return list(self._data.items())

    def values(self) -> list:
        with self._lock:
            return list(self._data.values())

    def __repr__(self) -> str:
        return f"LRU({len(self._data)} of {self.maxsize})"
