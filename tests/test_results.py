"""lab.results: the committed files validate and name the GPU of their folder; a mistyped,
missing or inconsistent field, a corrupt file and provenance that disagrees with the data are
refused with the file and the field named; a write never loses the previous file; ``LAB_GPU``
must name a folder; a row a chapter needs and its file lacks is named with its file."""
from __future__ import annotations

import copy
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from lab import device, results

ROOT = Path(__file__).resolve().parents[1]


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))

@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of the committed H200 folder under a scratch results root."""
    shutil.copytree(results.RESULTS_DIR / "h200", tmp_path / "h200")
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.delenv("LAB_GPU", raising=False)
    return tmp_path / "h200"

@pytest.fixture
def store(tmp_path):
    """A copy of the committed patch_sweep file (timed rows with m, n, k, a cuBLAS row and
    pct_cublas) to corrupt."""
    src = results.path_for("patch_sweep")
    dst = tmp_path / "h200" / "patch_sweep.json"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    return dst

def _refused(path, pattern):
    with pytest.raises(results.ResultsError, match=pattern) as info:
        results.load_path(path)
    assert not isinstance(info.value, results.ResultsMissing)
    assert "patch_sweep.json" in str(info.value)

def _good_file(tmp_path):
    data = results.thaw(results.load("roofline"))
    path = tmp_path / "h200" / "x.json"
    path.parent.mkdir()
    data["experiment"] = "x"
    return data, path


# ----------------------------------------------------------------------------- the committed files

def test_every_committed_results_file_validates():
    """Every file of every GPU in the committed store passes the full schema (types, no NaN,
    provenance, derived fields, clocks, no copied rows) and names the GPU of its folder."""
    files = sorted(results.RESULTS_DIR.glob("*/*.json"))
    assert files
    for path in files:
        data = results.load_path(path, folder=path.parent.name)
        assert data["experiment"] == path.stem and data["rows"]

def test_every_committed_file_names_the_gpu_of_its_folder():
    for path in sorted(results.RESULTS_DIR.glob("*/*.json")):
        gpu = path.parent.name.removesuffix("-x2")
        assert results.load(path.stem, gpu)["rows"]

def test_the_committed_copy_is_valid(store):
    assert results.load_path(store)["rows"]


# ----------------------------------------------------------------------------- fields

@pytest.mark.parametrize("field, pattern", [
    ("provenance.driver", r"x\.json: field 'provenance\.driver' is missing"),
    ("rows", r"x\.json: field 'rows' is missing"),
    ("rows.0.median_ms", r"x\.json: field 'rows\[0\]\.median_ms' is missing"),
])
def test_missing_field_is_named(tmp_path, field, pattern):
    data, path = _good_file(tmp_path)
    parts = field.split(".")
    target = data
    for p in parts[:-1]:
        target = target[int(p)] if p.isdigit() else target[p]
    del target[parts[-1]]
    path.write_text(json.dumps(data))
    with pytest.raises(results.ResultsError, match=pattern):
        results.load("x", root=tmp_path)

@pytest.mark.parametrize("field, value, pattern", [
    ("tflops", "24.7", r"rows\[0\]\.tflops' must be a finite non-negative number, got '24.7'"),
    ("tflops", True, r"rows\[0\]\.tflops' must be a finite non-negative number, got True"),
    ("median_ms", -1.0, r"rows\[0\]\.median_ms' must be a finite non-negative"),
    ("m", 2.5, r"rows\[0\]\.m' must be a positive integer"),
    ("m", 0, r"rows\[0\]\.m' must be a positive integer"),
    ("regs_ptxas", "32", r"rows\[0\]\.regs_ptxas' must be a non-negative integer"),
    ("checked", 1, r"rows\[0\]\.checked' must be true or false"),
    ("occupancy", 1.5, r"rows\[0\]\.occupancy' must be a number in \[0, 1\]"),
    ("kernel", None, r"rows\[0\]\.kernel' is null, but the file requires it"),
])
def test_a_mistyped_row_field_is_named(store, field, value, pattern):
    _edit(store, lambda d: d["rows"][0].__setitem__(field, value))
    _refused(store, pattern)

@pytest.mark.parametrize("spelling", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_are_refused_while_parsing(store, spelling):
    text = store.read_text()
    data = json.loads(text)
    old = json.dumps(data["rows"][0]["median_ms"])
    store.write_text(text.replace(old, spelling, 1))
    _refused(store, "not valid results JSON")

@pytest.mark.parametrize("field, value, pattern", [
    ("date", 5, r"provenance\.date' must be an ISO 8601 date string, got 5"),
    ("date", "last Tuesday", r"provenance\.date' must be an ISO 8601 date string"),
    ("compute_capability", 9.0, r"provenance\.compute_capability' must be a string like '9\.0'"),
    ("sm_count", "132", r"provenance\.sm_count' must be a positive integer"),
    ("gpu", None, r"provenance\.gpu' must be a string"),
])
def test_a_mistyped_provenance_field_is_named(store, field, value, pattern):
    _edit(store, lambda d: d["provenance"].__setitem__(field, value))
    _refused(store, pattern)

def test_schema_version_must_be_an_int_not_a_bool(store):
    _edit(store, lambda d: d.__setitem__("schema_version", True))
    _refused(store, r"field 'schema_version' must be an integer, got True")

def test_experiment_must_match_the_file_name(store):
    _edit(store, lambda d: d.__setitem__("experiment", "other"))
    _refused(store, r"field 'experiment' is 'other', but the file is named patch_sweep\.json")

def test_tflops_must_agree_with_the_shape_and_the_time(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("tflops", d["rows"][0]["tflops"] * 1.01))
    _refused(store, r"rows\[0\]\.tflops' is .*, but 2·m·n·k / median_ms gives")

def test_median_must_lie_between_min_and_max(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("min_ms", d["rows"][0]["max_ms"] * 2))
    _refused(store, r"rows\[0\]\.median_ms' is .*, outside min_ms")

def test_pct_cublas_must_agree_with_the_cublas_row(store):
    _edit(store, lambda d: d["rows"][0].__setitem__("pct_cublas",
                                                    d["rows"][0]["pct_cublas"] * 1.01))
    _refused(store, r"rows\[0\]\.pct_cublas' is .*, but the cuBLAS row\(s\) of that shape say "
                    r"rows\[6\]")

def test_pct_cublas_must_agree_with_its_own_cublas_tflops(store):
    def change(d):
        row = d["rows"][0]
        row["cublas_tflops"] = 100 * row["tflops"] / row["pct_cublas"] * 1.01
    _edit(store, change)
    _refused(store, r"rows\[0\]\.pct_cublas' is .*, but 100·tflops / cublas_tflops gives")


# ----------------------------------------------------------------------------- provenance

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

def test_two_rows_of_one_measurement_with_different_values_are_named(tree):
    def again(d):
        d["rows"].insert(5, {**d["rows"][2], "max_ms": d["rows"][2]["max_ms"] * 2})
    _edit(tree / "fp32_ladder.json", again)
    with pytest.raises(results.ResultsError, match=r"fp32_ladder\.json: rows\[5\] and rows\[2\] "
                       r"are the same measurement .*with different values \(max_ms "):
        results.load("fp32_ladder")

def test_a_field_that_tells_two_measurements_apart_lets_both_stand():
    data = results.thaw(results.load("fp32_ladder"))
    row = data["rows"][2]
    data["rows"].append({**row, "max_ms": row["max_ms"] * 2, "process": 1})
    assert results.validate(data, "fp32_ladder.json")

@pytest.mark.parametrize("experiment, part", [(e, p) for e, parts in
                                              results.KNOWN_REPEATS.items() for p in parts])
def test_a_known_repeat_is_still_in_its_committed_file_and_nowhere_else(experiment, part):
    """An exemption goes when its file is measured again; it covers its own part only."""
    data = results.thaw(results.load(experiment))
    ids = [json.dumps(results.identity(r), sort_keys=True) for r in data["rows"]
           if r.get("part") == part]
    assert len(set(ids)) < len(ids), f"{experiment}.json no longer repeats a {part!r} row: " \
        "remove it from KNOWN_REPEATS"
    other = next(r for r in data["rows"] if r.get("part") != part and "median_ms" in r)
    data["rows"].append({**other, "max_ms": other["max_ms"] * 2})
    with pytest.raises(results.ResultsError, match="are the same measurement"):
        results.validate(data, f"{experiment}.json")

def _summary_of(d):
    return next(r for r in d["rows"] if r["part"] == "summary")

@pytest.mark.parametrize("experiment, field, change, pattern", [
    ("hopper_table", "tflops", 1.01, r"tflops' is .*, but the 3 tflops of rows \d+, \d+, \d+ give"),
    ("hopper_table", "tflops_max", 1.01, r"tflops_max' is .*, but the 3 tflops of rows"),
    ("hopper_profile", "min_ms", 0.99, r"min_ms' is .*, but the 3 median_ms of rows"),
    ("fp32_profile", "processes", 2, r"processes' is 2, but it summarises the 3 median_ms of "),
    ("clocks", "max_ms", 1.01, r"max_ms' is .*, but the \d+ ms_per_call of rows"),
], ids=["hopper_table-tflops", "hopper_table-tflops_max", "hopper_profile-min_ms",
         "fp32_profile-processes", "clocks-max_ms"])
def test_a_summary_that_disagrees_with_its_rows_is_named(tree, experiment, field, change,
                                                          pattern):
    def edit(d):
        s = _summary_of(d)
        s[field] = change if field == "processes" else s[field] * change
    _edit(tree / f"{experiment}.json", edit)
    with pytest.raises(results.ResultsError, match=rf"{experiment}\.json: field "
                                                   rf"'rows\[\d+\]\.{pattern}"):
        results.load(experiment)

def test_a_summary_of_rows_that_are_gone_is_named(tree):
    def drop(d):
        kernel = _summary_of(d)["kernel"]
        d["rows"] = [r for r in d["rows"] if r["part"] != "time" or r["kernel"] != kernel]
    _edit(tree / "hopper_table.json", drop)
    with pytest.raises(results.ResultsError, match=r"hopper_table\.json: field 'rows\[\d+\]' "
                       r"summarises .*, but no row of another part of that kernel carries "
                       r"tflops"):
        results.load("hopper_table")

@pytest.mark.parametrize("where", ["parameters", "row"])
def test_a_maximum_clock_below_the_gpus_is_named(tree, where):
    """A file that states the maximum SM clock it sampled at states the GPU's: a lower one is a
    run under a clock cap, not at full clock."""
    def capped(d):
        if where == "parameters":
            d["parameters"]["max_sm_mhz"] = 1200.0
        else:
            next(r for r in d["rows"] if "max_sm_mhz" in r)["max_sm_mhz"] = 1200.0
    _edit(tree / "clocks.json", capped)
    at = r"parameters\.max_sm_mhz" if where == "parameters" else r"rows\[\d+\]\.max_sm_mhz"
    with pytest.raises(results.ResultsError, match=rf"clocks\.json: field '{at}' is 1200\.0 MHz, "
                       r"but the NVIDIA H200's maximum SM clock is 1980 MHz: measured under a "
                       r"clock cap"):
        results.load("clocks")

def test_a_repeated_check_verdict_is_not_a_copy():
    """Deterministic rows (a check at one seed) may repeat; only timings may not."""
    data = results.thaw(results.load("splitk"))
    verdicts = [r for r in data["rows"] if "median_ms" not in r]
    data["rows"].append(dict(verdicts[0]))
    assert results.validate(data, "splitk.json")


# ----------------------------------------------------------------------------- corrupt vs missing

def test_a_missing_file_is_missing(tmp_path):
    with pytest.raises(results.ResultsMissing, match="no such results file"):
        results.load("patch_sweep", root=tmp_path)

def test_a_corrupt_file_is_an_error_not_missing(store):
    store.write_text(store.read_text()[:200])
    _refused(store, "not valid JSON")

def test_corrupt_results_file_is_named(tmp_path):
    _, path = _good_file(tmp_path)
    path.write_text("{ not json")
    with pytest.raises(results.ResultsError, match=r"x\.json: not valid JSON"):
        results.load("x", root=tmp_path)


# ----------------------------------------------------------------------------- writes

def test_save_then_load_round_trips(tmp_path):
    row = {"kernel": "k", "m": 2, "n": 3, "k": 4, "median_ms": np.float64(0.5),
           "min_ms": 0.4, "max_ms": 0.6, "tflops": 2 * 2 * 3 * 4 / 0.5e-3 / 1e12}
    prov = {**device.provenance(), "gpu": "Fake GPU"}
    results.save("z", [row], parameters={"n": 3}, command="test", root=tmp_path,
                 provenance=prov, gpu="fake-gpu")
    assert results.load("z", gpu="fake-gpu", root=tmp_path)["rows"][0]["median_ms"] == 0.5

def test_save_refuses_a_bad_file(tmp_path):
    with pytest.raises(results.ResultsError, match="rows"):
        results.save("y", [], parameters={}, command="test", root=tmp_path)
    with pytest.raises(results.ResultsError, match=r"rows\[0\]\.median_ms"):
        results.save("y", [{"kernel": "k", "median_ms": float("nan"), "min_ms": 1.0,
                            "max_ms": 1.0}], parameters={}, command="test", root=tmp_path)
    assert not list(tmp_path.rglob("*.json"))

def test_save_refuses_nan_and_wrong_types_before_writing(tmp_path):
    good = {"kernel": "k", "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}
    for bad in ({"tflops": float("nan")}, {"tflops": "fast"}, {"median_ms": np.float32("inf")}):
        with pytest.raises(results.ResultsError, match=r"rows\[0\]"):
            results.save("y", [{**good, **bad}], parameters={}, command="t", root=tmp_path)
    assert not list(tmp_path.rglob("*.json"))

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
    assert _leftovers(target.parent), "the killed writer left no temporary file to clean up"
    again = _start_writer(tmp_path, 2, "")
    assert again.communicate(timeout=120)[0].strip().endswith("DONE")
    assert not _leftovers(target.parent), ("the next save left the killed writer's temporary "
                                           "file behind")

def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))

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

def _tmpdir(monkeypatch, path: Path) -> Path:
    """This process's temporary directory moved to ``path``."""
    import tempfile

    path.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return path

def test_a_folders_locks_are_in_its_results_root_whatever_tmpdir(tmp_path, monkeypatch):
    """Processes with different TMPDIRs find one lock per folder and purpose, in the results
    root (git-ignored there in the committed store)."""
    names = set()
    for where in ("tmp-a", "tmp-b"):
        _tmpdir(monkeypatch, tmp_path / where)
        names |= {results.lock_file(tmp_path / "store" / "h200", "write")}
    assert len(names) == 1, f"the write lock moved with TMPDIR: {sorted(names)}"
    assert Path(names.pop()).parent == tmp_path / "store", "the lock is not in the results root"
    committed = results.lock_file(ROOT / "lab" / "results" / "h200", "gpu")
    assert subprocess.run(["git", "check-ignore", "-q", committed], cwd=ROOT).returncode == 0, \
        f"git does not ignore the lock file {committed}"

def test_two_writers_of_one_folder_take_turns(tmp_path, monkeypatch):
    """The write lock of a folder is one per machine: a second process waits for it, even
    with a TMPDIR of its own."""
    _tmpdir(monkeypatch, tmp_path / "mine")
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
        env = dict(os.environ, LAB_DEVICE="simulator",
                   TMPDIR=str(_tmpdir(monkeypatch, tmp_path / "other")))
        other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                 text=True, cwd=ROOT, env=env)
        time.sleep(3.0)
        released = time.time()
    out = other.communicate(timeout=120)[0]
    assert float(out.split()[1]) >= released, "the second writer did not wait for the first"

def _row(kernel="k"):
    return {"kernel": kernel, "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}

def test_the_temporary_file_lies_beside_its_target(tmp_path, monkeypatch):
    """Not in TMPDIR (another filesystem, a tmpfs): the rename over the target must not cross
    filesystems."""
    _tmpdir(monkeypatch, tmp_path / "elsewhere")
    renamed = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: renamed.append(Path(src)) or
                        real(src, dst))
    path = results.save("exp", [_row()], parameters={}, command="t", root=tmp_path / "store")
    assert [p.parent for p in renamed] == [path.parent], \
        f"the temporary file {renamed} does not lie beside its target {path}"

@pytest.mark.parametrize("umask", [0o022, 0o027], ids=["umask-022", "umask-027"])
def test_a_saved_file_has_the_mode_the_umask_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = results.save("exp", [_row()], parameters={}, command="t", root=tmp_path)
    finally:
        os.umask(old)
    mode = path.stat().st_mode & 0o777
    assert mode == 0o666 & ~umask, f"saved with mode {mode:o}, the umask {umask:03o} gives " \
        f"{0o666 & ~umask:o}"

def test_a_save_removes_a_killed_writers_temporary_files(tmp_path):
    path = results.save("exp", [_row()], parameters={}, command="t", root=tmp_path)
    (path.parent / ".exp.json.k1ll3d.tmp").write_text("x" * 1000)
    (path.parent / ".other.json.4b0rt.tmp").write_text("x")
    (path.parent / "notes.tmp").write_text("not a temporary of ours")
    results.save("exp", [_row(), _row("k2")], parameters={}, command="t", root=tmp_path)
    assert _leftovers(path.parent) == ["notes.tmp"]


# ----------------------------------------------------------------------------- the selected GPU

@pytest.mark.parametrize("value", ["../h200", "H200", "h200/", "rtx 4090", "h200--x2", "-h200"])
def test_a_lab_gpu_that_is_not_a_folder_name_is_refused(monkeypatch, value):
    monkeypatch.setenv("LAB_GPU", value)
    with pytest.raises(ValueError, match=rf"LAB_GPU={value!r} is not a GPU folder name.*h200"):
        results.selected_gpu()
    with pytest.raises(ValueError, match="not a GPU folder name"):
        results.load("roofline")

@pytest.mark.parametrize("value", ["h200", "rtx-4090", "a100-sxm4-80gb"])
def test_a_lab_gpu_folder_name_is_accepted(tree, monkeypatch, value):
    (tree.parent / value).mkdir(exist_ok=True)
    monkeypatch.setenv("LAB_GPU", value)
    assert results.selected_gpu() == value

def test_a_lab_gpu_without_a_folder_is_one_error_not_a_fallback_per_table(tree, monkeypatch):
    monkeypatch.setenv("LAB_GPU", "h20")
    for read in (results.selected_gpu, lambda: results.load("roofline"),
                 lambda: results.source_line("patch_sweep")):
        with pytest.raises(ValueError, match=r"LAB_GPU='h20' names no results folder in .*"
                                             r"\(folders there: h200\)"):
            read()

def test_a_results_root_that_is_not_there_is_named_not_missing(tmp_path, monkeypatch):
    """A mistyped LAB_RESULTS_DIR is not "not measured yet, measure on a GPU"."""
    typo = tmp_path / "resluts"
    monkeypatch.setenv("LAB_RESULTS_DIR", str(typo))
    monkeypatch.setattr(results, "RESULTS_DIR", typo)
    monkeypatch.delenv("LAB_GPU", raising=False)
    with pytest.raises(results.ResultsError) as info:
        results.load("roofline")
    assert not isinstance(info.value, results.ResultsMissing), \
        f"a mistyped LAB_RESULTS_DIR reads as a missing file: {info.value}"
    assert f"LAB_RESULTS_DIR={str(typo)!r}: {typo} is not a folder" in str(info.value)
    assert "on a GPU" not in str(info.value)


# ----------------------------------------------------------------------------- keyed rows

@pytest.fixture
def tree_without_row(tmp_path, monkeypatch):
    """A copy of the H200 results with fp32_ladder's warptile_tuned rows deleted."""
    shutil.copytree(results.RESULTS_DIR / "h200", tmp_path / "h200")
    path = tmp_path / "h200" / "fp32_ladder.json"
    data = json.loads(path.read_text())
    data["rows"] = [r for r in data["rows"] if r["kernel"] != "warptile_tuned"]
    path.write_text(json.dumps(data))
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    return tmp_path

def test_a_deleted_row_is_named_with_its_file(tree_without_row):
    from lab.chapters import ch4

    with pytest.raises(KeyError, match=r"fp32_ladder\.json.*warptile_tuned"):
        ch4.values()

def test_keyed_rows_name_what_they_hold():
    keyed = results.by("fp32_ladder", part="ladder", n=4096)
    assert keyed["naive"]["kernel"] == "naive"
    with pytest.raises(KeyError, match="fp32_ladder.json .*no row with kernel = 'nothere'"):
        keyed["nothere"]

def test_a_saved_command_names_no_directory_of_the_machine_that_ran_it():
    from lab.results import rerunnable

    assert rerunnable("python -m lab measure hopper_past --out /some/dir/res --jobs 1") == \
        "python -m lab measure hopper_past --out DIR --jobs 1"
    assert rerunnable("python -m lab notebooks gpu --out=/x") == "python -m lab notebooks gpu --out=DIR"
    assert rerunnable("python -m lab measure sweep") == "python -m lab measure sweep"


# ----------------------------------------------------------------------------- read once, shared read-only

@pytest.fixture
def own_file(tmp_path, monkeypatch):
    """A copy of the H200's roofline file in a store of its own."""
    (tmp_path / "h200").mkdir()
    path = tmp_path / "h200" / "roofline.json"
    shutil.copy(results.RESULTS_DIR / "h200" / "roofline.json", path)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    return path


def test_a_file_is_read_once_until_it_changes(own_file, monkeypatch):
    reads = []
    real = results.parse
    monkeypatch.setattr(results, "parse", lambda text, source: reads.append(source)
                        or real(text, source))
    results._read.cache_clear()
    first = results.load("roofline")
    assert results.load("roofline") is first and len(reads) == 1       # memoised
    data = json.loads(own_file.read_text())
    data["command"] = "rewritten"
    stat = own_file.stat()
    own_file.write_text(json.dumps(data))                   # a new version, a new mtime
    os.utime(own_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    again = results.load("roofline")
    assert len(reads) == 2 and again["command"] == "rewritten"
    assert first["command"] != "rewritten"                  # the old version is left as it was


def test_a_caller_cannot_change_what_another_caller_reads(own_file):
    one, two = results.load("roofline"), results.load("roofline")
    row = one["rows"][0]
    for change in (lambda: row.__setitem__("kernel", "x"), lambda: row.update(kernel="x"),
                   lambda: row.pop("kernel"), lambda: one["rows"].append({}),
                   lambda: one["rows"].sort(key=str), lambda: one["rows"].__delitem__(0),
                   lambda: one["provenance"].setdefault("gpu2", 1),
                   lambda: one.__setitem__("rows", [])):
        with pytest.raises(TypeError, match="shared by every caller and read-only"):
            change()
    assert two["rows"][0]["kernel"] == json.loads(own_file.read_text())["rows"][0]["kernel"]
    mine = dict(row, kernel="x")                             # a copy changes freely
    thawed = results.thaw(one)
    thawed["rows"][0]["kernel"] = "y"
    thawed["rows"].append({})
    assert mine["kernel"] == "x" and two["rows"][0]["kernel"] != "y"
    assert len(two["rows"]) == len(thawed["rows"]) - 1
    for clone in (pickle.loads(pickle.dumps(one)), copy.deepcopy(one)):
        assert clone == one and isinstance(clone, results.Frozen)
    assert json.loads(json.dumps(one)) == json.loads(own_file.read_text())
