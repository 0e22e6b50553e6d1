"""``measure --jobs N``: processes that compile side by side and take turns on the GPU."""
from __future__ import annotations

import fcntl
from lab import gpulock


def _lock_is_free(path) -> bool:
    """Whether another open file description could take the lock now."""
    with open(path, "a") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(other, fcntl.LOCK_UN)
        return True


def test_the_lock_is_let_go_only_while_a_new_signature_compiles(tmp_path):
    from numba import float32

    path = tmp_path / "gpu.lock"
    synced = []
    lock = gpulock.GpuLock(str(path), synchronize=lambda: synced.append(True))
    sig = (float32[:, ::1], float32[:, ::1])
    seen = []

    class Dispatcher:
        specialized = False

        def __init__(self):
            self.overloads = {}

        def compile(self, sig):
            seen.append(_lock_is_free(path))
            self.overloads[tuple(sig)] = "kernel"
            return "kernel"

    gpulock.release_while_compiling(Dispatcher, lock)
    lock.acquire()
    d = Dispatcher()
    assert not _lock_is_free(path)
    assert d.compile(sig) == "kernel"          # new: compiled with the lock let go
    assert d.compile(sig) == "kernel"          # known: looked up with the lock held
    assert seen == [True, False]
    assert synced == [True]                    # queued GPU work waited for before letting go
    assert lock.held and not _lock_is_free(path)
    gpulock.release_while_compiling(Dispatcher, lock)      # wrapping twice wraps once
    Dispatcher().compile(sig)
    assert seen[-1] is True and synced == [True, True]


def test_off_gpu_lets_go_for_host_work_and_takes_the_turn_back(tmp_path, monkeypatch):
    path = tmp_path / "gpu.lock"
    synced = []
    lock = gpulock.GpuLock(str(path), synchronize=lambda: synced.append(True))
    with gpulock.off_gpu():                    # no lock in this process: nothing happens
        assert synced == []
    monkeypatch.setattr(gpulock, "CURRENT", lock)
    lock.acquire()
    with gpulock.off_gpu():
        assert _lock_is_free(path) and synced == [True]
        with gpulock.off_gpu():                # nested: already let go
            assert _lock_is_free(path)
    assert lock.held and not _lock_is_free(path)
    assert "held" in lock.summary() and lock.held_seconds() >= 0
