"""The book for the reader's GPU: with ``LAB_GPU`` set, chapters read that GPU's results tree,
and a missing experiment falls back to the H200 reference with a visible note."""
from __future__ import annotations

import json
import shutil

import pytest

from lab import results
from lab.chapters import ch0, ch3


@pytest.fixture
def reader_tree(tmp_path, monkeypatch):
    """A results root holding the H200 reference and a copy of it as another GPU, "test-gpu",
    whose patch8 row is made twice as fast and whose roofline file is missing."""
    shutil.copytree(results.RESULTS_DIR / results.REFERENCE_GPU, tmp_path / "h200")
    mine = tmp_path / "test-gpu"
    shutil.copytree(results.RESULTS_DIR / results.REFERENCE_GPU, mine)
    path = mine / "patch_sweep.json"
    data = json.loads(path.read_text())
    row = next(r for r in data["rows"] if r["kernel"] == "patch8")
    for f in ("median_ms", "min_ms", "max_ms"):
        row[f] /= 2
    row["tflops"] *= 2
    row["pct_cublas"] *= 2
    path.write_text(json.dumps(data))
    for other in mine.glob("*.json"):               # every file names the GPU of its folder
        data = json.loads(other.read_text())
        data["provenance"].update(gpu="Test GPU", max_sm_clock_mhz=None)
        other.write_text(json.dumps(data))
    (mine / "roofline.json").unlink()
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setenv("LAB_GPU", "test-gpu")
    return row


def test_the_selected_gpu_reaches_a_chapter_table(reader_tree):
    text = repr(ch3.measured_table())
    assert f"{reader_tree['tflops']:.1f}" in text          # the changed value is on the page
    assert "lab/results/test-gpu/patch_sweep.json" in text or "test-gpu/patch_sweep.json" in text
    assert "Test GPU" in text


def test_a_missing_experiment_falls_back_to_the_reference_with_a_note(reader_tree):
    line = results.source_line("roofline")
    assert "h200/roofline.json" in line
    assert "No roofline results for test-gpu" in line
    assert "No roofline results for test-gpu" in repr(ch0.roof_table())  # built from the H200 file


def test_without_lab_gpu_the_reference_is_read(monkeypatch):
    monkeypatch.delenv("LAB_GPU", raising=False)
    assert results.selected_gpu() == results.REFERENCE_GPU
    assert "h200/patch_sweep.json" in results.source_line("patch_sweep")


def test_an_explicit_gpu_never_falls_back(reader_tree):
    with pytest.raises(results.ResultsMissing):
        results.load("roofline", "test-gpu")
