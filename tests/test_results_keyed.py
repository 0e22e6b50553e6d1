"""A row a chapter needs and its results file lacks: the error names the file and the row."""
import json
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
    results.load.cache_clear() if hasattr(results.load, "cache_clear") else None
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
