"""Faults that once got through: provenance that disagrees with the data, writes that lose the
previous file, two measuring runs on one GPU, a misspelled setting, a product the simulator
cannot finish. Each test plants the fault and asserts the refusal names it."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import lab
from lab import api, device, gpulock, results

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of the committed H200 folder under a scratch results root."""
    shutil.copytree(results.RESULTS_DIR / "h200", tmp_path / "h200")
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.delenv("LAB_GPU", raising=False)
    return tmp_path / "h200"


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# ----------------------------------------------------------------------------- provenance

def test_every_committed_file_names_the_gpu_of_its_folder():
    for path in sorted(results.RESULTS_DIR.glob("*/*.json")):
        gpu = path.parent.name.removesuffix("-x2")
        assert results.load(path.stem, gpu)["rows"]


def test_a_gpu_name_that_disagrees_with_its_folder_is_named(tree):
    _edit(tree / "patch_sweep.json", lambda d: d["provenance"].update(gpu="NVIDIA A100-SXM4"))
    with pytest.raises(results.ResultsError, match=r"patch_sweep\.json: field 'provenance\.gpu' "
                       r"is 'NVIDIA A100-SXM4' \(folder 'a100-sxm4'\).*folder of GPU 'h200'"):
        results.load("patch_sweep")


def test_the_multi_gpu_folder_names_its_gpu_too(tmp_path, monkeypatch):
    shutil.copytree(results.RESULTS_DIR / "h200-x2", tmp_path / "h200-x2")
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    assert results.load("multi_gpu", "h200")["rows"]
    _edit(tmp_path / "h200-x2" / "multi_gpu.json",
          lambda d: d["provenance"].update(gpu="NVIDIA H100"))
    with pytest.raises(results.ResultsError, match="h100-x2"):
        results.load("multi_gpu", "h200")


def test_save_refuses_a_folder_that_is_not_the_gpus(tmp_path):
    row = {"kernel": "k", "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}
    with pytest.raises(results.ResultsError, match="provenance.gpu"):
        results.save("z", [row], parameters={}, command="t", root=tmp_path, gpu="h200",
                     provenance={**device.provenance(), "gpu": "NVIDIA L4"})
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("field, value, pattern", [
    ("max_sm_clock_mhz", "1200", r"provenance\.max_sm_clock_mhz' is '1200', but the NVIDIA "
                                 r"H200's maximum SM clock is 1980 MHz"),
    ("sm_clock_mhz", "2400", r"provenance\.sm_clock_mhz' is '2400' MHz, outside the NVIDIA "
                             r"H200's SM clock range 345…1980 MHz"),
    ("sm_clock_mhz", "120", r"provenance\.sm_clock_mhz' is '120' MHz, outside"),
    ("mem_clock_mhz", "2619", r"provenance\.mem_clock_mhz' is '2619', but the NVIDIA H200's "
                              r"memory clock is 3201 MHz"),
])
def test_a_clock_outside_the_gpus_range_is_named(tree, field, value, pattern):
    _edit(tree / "patch_sweep.json", lambda d: d["provenance"].update({field: value}))
    with pytest.raises(results.ResultsError, match=r"patch_sweep\.json: field '" + pattern):
        results.load("patch_sweep")


def test_a_sampled_clock_above_the_maximum_is_named_with_its_row(tree):
    def faster(d):
        row = next(i for i, r in enumerate(d["rows"]) if r.get("sm_mhz") is not None)
        d["rows"][row]["sm_mhz"] = 2100.0
    _edit(tree / "clocks.json", faster)
    with pytest.raises(results.ResultsError, match=r"clocks\.json: field 'rows\[\d+\]\.sm_mhz' "
                                                   r"is 2100\.0 MHz, outside"):
        results.load("clocks")


def test_an_unknown_gpu_is_held_to_its_own_maximum(tmp_path):
    data = results.thaw(results.load("roofline"))
    data["provenance"].update(gpu="NVIDIA Made Up", sm_clock_mhz="2100", max_sm_clock_mhz="2000")
    with pytest.raises(results.ResultsError, match=r"'2100' MHz, outside the NVIDIA Made Up's "
                                                   r"SM clock range 1…2000 MHz"):
        results.validate(data, "x.json")


def test_a_copied_timing_row_is_named_with_both_rows(tree):
    _edit(tree / "fp32_ladder.json", lambda d: d["rows"].insert(5, dict(d["rows"][2])))
    with pytest.raises(results.ResultsError, match=r"fp32_ladder\.json: rows\[5\] repeats "
                                                   r"rows\[2\] field for field"):
        results.load("fp32_ladder")


def test_a_repeated_check_verdict_is_not_a_copy():
    """Deterministic rows (a check at one seed) may repeat; only timings may not."""
    data = results.thaw(results.load("splitk"))
    verdicts = [r for r in data["rows"] if "median_ms" not in r]
    data["rows"].append(dict(verdicts[0]))
    assert results.validate(data, "splitk.json")


# ----------------------------------------------------------------------------- writes

def _writer_script(path: Path, rows: int, hold: str) -> str:
    """A process that saves ``rows`` rows over ``path`` and, with ``hold``, stops forever at
    that point of the write (after writing, before the rename) so it can be killed there."""
    return textwrap.dedent(f"""
        import os, sys, time
        import lab
        from lab import results, device
        hold = {hold!r}
        real_replace, real_fsync = os.replace, os.fsync
        def stop(*args):
            print("READY", flush=True)
            time.sleep(600)
        if hold == "before-rename":
            os.replace = stop
        if hold == "before-fsync":
            os.fsync = stop
        row = lambda i: {{"kernel": f"k{{i}}", "median_ms": 1.0 + i, "min_ms": 1.0 + i,
                          "max_ms": 1.0 + i}}
        results.save("exp", [row(i) for i in range({rows})], parameters={{}}, command="t",
                     root=__import__("pathlib").Path({str(path)!r}), gpu="cuda-simulator")
        print("DONE", flush=True)
    """)


def _start_writer(tmp_path, rows, hold):
    return subprocess.Popen([sys.executable, "-c", _writer_script(tmp_path, rows, hold)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, LAB_DEVICE="simulator"))


@pytest.mark.parametrize("hold", ["before-fsync", "before-rename"])
def test_a_writer_killed_mid_write_leaves_the_previous_file(tmp_path, hold):
    first = _start_writer(tmp_path, 3, "")
    assert first.communicate(timeout=120)[0].strip().endswith("DONE")
    target = tmp_path / "cuda-simulator" / "exp.json"
    before = target.read_bytes()
    writer = _start_writer(tmp_path, 5000, hold)
    try:
        said = writer.stdout.readline().strip()
        assert said == "READY", (f"the writer said {said!r}: save wrote without flushing a "
                                 "temporary file to disk and renaming it over the target")
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert target.read_bytes() == before
    assert len(results.load("exp", "cuda-simulator", root=tmp_path)["rows"]) == 3


def test_a_full_disk_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    prov = device.provenance()
    row = {"kernel": "k", "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}
    path = results.save("exp", [row], parameters={}, command="t", root=tmp_path,
                        provenance=prov)
    before = path.read_bytes()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            self.f.write(text[: len(text) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="No space left"):
        results.save("exp", [row, dict(row, kernel="k2")], parameters={}, command="t",
                     root=tmp_path, provenance=prov)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["exp.json"]


def test_two_writers_of_one_folder_take_turns(tmp_path):
    """The write lock of a folder is one per machine: a second process waits for it."""
    folder = tmp_path / "gpu"
    script = textwrap.dedent(f"""
        import time, lab
        from lab import results
        with results.locked(__import__("pathlib").Path({str(folder)!r})):
            print("IN", time.time(), flush=True)
            time.sleep(1.0)
    """)
    folder.mkdir()
    with results.locked(folder):
        other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                 text=True, cwd=ROOT, env=dict(os.environ,
                                                               LAB_DEVICE="simulator"))
        time.sleep(3.0)
        released = time.time()
    out = other.communicate(timeout=120)[0]
    assert float(out.split()[1]) >= released


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


# ----------------------------------------------------------------------------- settings

def test_a_misspelled_lab_device_is_refused():
    run = subprocess.run([sys.executable, "-c", "import lab"], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, LAB_DEVICE="simlator"))
    assert run.returncode != 0
    assert ("LAB_DEVICE='simlator' is not a device mode (did you mean 'simulator'?)"
            in run.stderr)


@pytest.mark.parametrize("value", ["simulator", "compile", " Simulator ", ""])
def test_the_lab_device_values_are_accepted(monkeypatch, value):
    monkeypatch.setenv("LAB_DEVICE", value)
    assert device.requested() == value.strip().lower()


@pytest.mark.parametrize("value", ["../h200", "H200", "h200/", "rtx 4090", "h200--x2", "-h200"])
def test_a_lab_gpu_that_is_not_a_folder_name_is_refused(monkeypatch, value):
    monkeypatch.setenv("LAB_GPU", value)
    with pytest.raises(ValueError, match=rf"LAB_GPU={value!r} is not a GPU folder name.*h200"):
        results.selected_gpu()
    with pytest.raises(ValueError, match="not a GPU folder name"):
        results.load("roofline")


@pytest.mark.parametrize("value", ["h200", "rtx-4090", "a100-sxm4-80gb"])
def test_a_lab_gpu_folder_name_is_accepted(monkeypatch, value):
    monkeypatch.setenv("LAB_GPU", value)
    assert results.selected_gpu() == value


@pytest.mark.skipif(not device.SIMULATOR, reason="the size limit is the simulator's")
def test_a_product_the_simulator_cannot_finish_is_refused_before_launch(monkeypatch):
    from numba import cuda

    monkeypatch.setattr(cuda, "to_device", lambda *a, **k: pytest.fail("copied to the device"))
    a = np.ones((1024, 1024), dtype=np.float32)
    with pytest.raises(ValueError, match=r"1024x1024x1024 is too large for the CUDA simulator: "
                       r"1,073,741,824 multiply-adds.*at most 16,777,216 \(256x256x256\)"):
        lab.matmul(a, a)
    limit = round(api.SIMULATOR_MAX_PRODUCT ** (1 / 3))
    with pytest.raises(ValueError, match="too large"):
        lab.matmul(np.ones((limit + 1, limit), np.float32), np.ones((limit, limit), np.float32))
