"""The "Two GPUs, one course" page's numbers (lab.chapters.two_gpus): each prediction set beside
the H100's measurement, read from a results store as the prediction's row says."""
from __future__ import annotations

import json
import math
import shutil
from html import escape

import pytest

from lab import results
from lab.chapters import two_gpus

H100 = two_gpus.TARGET


def _store(tmp_path, scale: float = 1.0, only=None):
    """A results root whose H100 folder holds the H200's files relabelled as the H100's, every
    ``tflops``/``gbps`` and time field scaled by ``scale`` (times by its inverse); ``only``
    limits it to those experiments."""
    (tmp_path / H100).mkdir(parents=True)
    for path in (results.RESULTS_DIR / "h200").glob("*.json"):
        if only is not None and path.stem not in only:
            continue
        data = json.loads(path.read_text())
        data["provenance"]["gpu"] = "NVIDIA H100 80GB HBM3"
        for row in data["rows"]:
            for key, value in list(row.items()):
                if isinstance(value, float) and key in ("gbps", "tflops"):
                    row[key] = value * scale
                elif isinstance(value, float) and key.endswith(("_ms", "_us")):
                    row[key] = value / scale
        (tmp_path / H100 / path.name).write_text(json.dumps(data))
    return tmp_path


def test_before_the_h100_is_measured_nothing_is_compared(tmp_path):
    (tmp_path / H100).mkdir()
    rows = two_gpus.rows(tmp_path)
    v = two_gpus.values(rows)
    assert v["n_compared"] == 0 and v["n_within"] == 0
    waiting = sum(r["status"] == "not measured" for r in rows)
    assert waiting + v["n_model_only"] == v["n_predicted"] == len(rows) >= 70
    assert {r["status"] for r in rows} == {"not measured", "model only"}


def test_a_measurement_the_same_as_the_h200_meets_what_was_predicted_to_stay(tmp_path):
    """On a stand-in H100 made of the H200's own files, every quantity predicted to keep its
    H200 value is within (where the H200's file still reads as it did when the prediction was
    made); every one predicted to move with bandwidth by 3.35 / 4.8 is not."""
    rows = two_gpus.rows(_store(tmp_path))
    done = two_gpus.compared(rows)
    assert len(done) >= 50
    for r in done:
        kept = math.isclose(r["predicted"], r["h200"], rel_tol=1e-9)
        if kept and math.isclose(r["h100"], r["h200"], rel_tol=1e-9):
            assert r["status"] == "within", r["id"]
            assert r["ratio"] == pytest.approx(1.0), r["id"]
    moved = [r for r in done if r["rule"] == "bandwidth" and r["unit"] == "GB/s"]
    assert moved and all(r["status"] == "above" for r in moved)
    assert all(r["ratio"] == pytest.approx(4.8 / 3.35) for r in moved)


def test_rules_and_the_worst_misses_are_counted_from_the_rows(tmp_path):
    rows = two_gpus.rows(_store(tmp_path, scale=0.5, only={"roofline"}))
    per_rule = {r["rule"]: r for r in two_gpus.by_rule(rows)}
    assert sum(r["predicted"] for r in per_rule.values()) == len(rows)
    measurable = [r for r in rows if r["rule"] == "bandwidth" and r["status"] != "model only"]
    assert per_rule["bandwidth"]["compared"] == len(measurable) >= 4
    assert per_rule["compute"]["compared"] >= 1
    worst = two_gpus.worst(rows)
    assert worst and all(r["h100"] is not None for r in worst)
    logs = [abs(math.log(r["ratio"])) for r in worst]
    assert logs == sorted(logs, reverse=True)
    away = [abs(math.log(r["ratio"])) for r in two_gpus.compared(rows) if r not in worst]
    assert all(x <= logs[-1] for x in away)


def test_the_table_opens_on_the_worst_misses_furthest_first():
    rows = two_gpus.rows()
    html = two_gpus.table(rows)._repr_mimebundle_()["text/html"]
    opened = html.split("<details")[0]
    at = [opened.index(escape(r["what"])) for r in two_gpus.worst(rows)]
    assert at == sorted(at)


def test_a_prediction_with_a_range_is_met_inside_it():
    p = {"predicted": 10.0, "low": 5.0, "high": 20.0}
    assert two_gpus.met(p, 19.0) and not two_gpus.met(p, 21.0)
    q = {"predicted": 10.0}
    assert two_gpus.met(q, 10.9) and not two_gpus.met(q, 11.2)


def test_the_yardstick_is_the_library_row_beside_ours_on_both_gpus(tmp_path):
    """For our call, the library's row of the same file (same path and shape) on the stand-in
    H100 and on the H200; None for a quantity that is not one of our calls, or without the
    file."""
    root = _store(tmp_path, scale=2.0, only={"launch_cost"})
    shutil.copytree(results.RESULTS_DIR / "h200", root / "h200")
    by_id = {r["id"]: r for r in two_gpus.predictions()["rows"]}
    ours = by_id["ch9b.decode_lab_gemm_graph_us"]
    h100, h200 = two_gpus.yardstick(ours, root)
    theirs = [r for r in results.load("launch_cost", gpu="h200", root=root)["rows"]
              if r["kernel"] == "cublas (torch.mm)" and r["path"] == "graph" and r["m"] == 1]
    assert len(theirs) == 1
    assert h200 == pytest.approx(theirs[0]["median_ms"] * 1e3)
    assert h100 == pytest.approx(h200 / 2)
    assert two_gpus.yardstick(by_id["ch0.stream_read_gbps"], root) is None
    assert two_gpus.yardstick(ours, tmp_path / "nowhere") is None
