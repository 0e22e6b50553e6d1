"""``measure --jobs N``: processes that compile side by side and take turns on the GPU, through
the one lock of the results folder they measure into (a serial run takes it too)."""
from __future__ import annotations

import fcntl

import pytest

from lab import device, gpulock, results


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
    lock.close()
    assert _lock_is_free(path)


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
    lock.close()


# ----------------------------------------------------------------------------- one lock a results folder

def test_every_measure_process_of_a_folder_shares_one_gpu_lock(tmp_path):
    """Two runs measuring into one results folder (each a ``--jobs`` run, or serial) name the
    same lock file; another folder (another GPU) another."""
    a = gpulock.folder_lock(tmp_path / "h200")
    assert a == gpulock.folder_lock(tmp_path / "sub" / ".." / "h200")
    assert a != gpulock.folder_lock(tmp_path / "l4")
    assert a != results.lock_file(tmp_path / "h200", "write")
    first, second = gpulock.GpuLock(a, synchronize=lambda: None), \
        gpulock.GpuLock(a, synchronize=lambda: None)
    first.acquire()
    import fcntl
    with pytest.raises(BlockingIOError):
        fcntl.flock(second.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    first.release()
    fcntl.flock(second.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    first.close()
    second.close()


def test_a_serial_measure_run_takes_the_folders_gpu_lock(tmp_path, monkeypatch):
    from lab import __main__ as cli
    from lab import bench

    taken = []
    monkeypatch.setattr(bench, "require_gpu", lambda what="timing": None)
    monkeypatch.setattr(gpulock, "share", lambda path: taken.append(path) or
                        gpulock.GpuLock(path, synchronize=lambda: None))
    monkeypatch.setattr(cli, "experiment_names", lambda requested: ["roofline"])
    monkeypatch.setattr(cli, "_plan", lambda names, quick: [
        {"experiment": "roofline", "quick": False, "estimate_s": None, "skip": "planted skip"}])
    cli.main(["measure", "roofline", "--jobs", "1", "--out", str(tmp_path)])
    slug = device.gpu_slug(device.provenance()["gpu"])
    assert taken == [gpulock.folder_lock(tmp_path / slug)]


def test_the_processes_of_a_jobs_run_take_turns_through_the_folders_gpu_lock(tmp_path,
                                                                             monkeypatch):
    """``measure --jobs N`` hands its processes the results folder's lock, not a lock of its
    own: a second run (or a serial one) measuring into that folder takes turns with them."""
    import subprocess as sp

    from lab import __main__ as cli

    started = []

    class Child:
        returncode = 0

        def __init__(self, cmd, **kwargs):
            started.append(cmd)

        def poll(self):
            return 0

    monkeypatch.setattr(sp, "Popen", Child)
    todo = [({"experiment": "roofline", "quick": False, "estimate_s": 1.0},
             {"head": "[1/1] roofline"})]
    cli._measure_side_by_side(todo, 2, root=tmp_path, slug="h200", command="t")
    cmd = started[0]
    assert cmd[cmd.index("--gpu-lock") + 1] == gpulock.folder_lock(tmp_path / "h200")


def test_unshare_lets_go_for_good_and_the_dispatcher_compiles_as_before(tmp_path):
    from numba.cuda.dispatcher import CUDADispatcher

    path = tmp_path / "gpu.lock"
    before = getattr(CUDADispatcher, "compile", None)
    lock = gpulock.share(str(path))
    assert gpulock.CURRENT is lock and not _lock_is_free(path)
    gpulock.unshare(lock)
    assert gpulock.CURRENT is None and _lock_is_free(path) and lock._file.closed
    assert getattr(CUDADispatcher, "compile", None) is before
    lock.close()                                 # closing twice is harmless
