"""A row a chapter needs and its results file lacks: the error names the file and the row;
results files are read once per version and shared read-only."""
import copy
import json
import os
import pickle
import shutil

import pytest

from lab import results


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
