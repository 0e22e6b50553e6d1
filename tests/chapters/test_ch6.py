"""Chapters 6.1, 6.2 and 6.3 (``lab.chapters.ch6_1`` … ``ch6_3``): every results file a page
reads is there, every name the prose glues is computed in one place, the facts the solutions
state hold for the committed results, and the model and rows of the epilogue page. (What the
prose says of the results is checked in ``tests/claims/test_ch6_claims.py``.)"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from lab import model, results
from lab.chapters import ch6_1, ch6_2, ch6_3

ROOT = Path(__file__).resolve().parents[2]
#: Chapter package, its notebook, and the results files its page reads.
PAGES = {"ch6_1": (ch6_1, "06_1_waves", {"roofline", "tensor_cores", "waves", "splitk", "shapes"}),
         "ch6_2": (ch6_2, "06_2_sizes", {"shapes", "cublas_kernels", "precision"}),
         "ch6_3": (ch6_3, "06_3_epilogue", {"roofline", "tensor_cores", "splitk", "epilogue"})}


def _everything(face) -> None:
    """Compute every value and draw every table and figure of a page's face."""
    face.values()
    if hasattr(face, "solutions"):
        face.solutions.values()
    for name in face.__all__:
        if name.endswith(("_table", "_figure")):
            getattr(face, name)()


@pytest.mark.parametrize("chapter", PAGES)
def test_the_files_a_page_reads_exist(chapter, monkeypatch):
    face, _, files = PAGES[chapter]
    read = set()
    load = results.load

    def recording(experiment, *args, **kwargs):
        read.add(experiment)
        return load(experiment, *args, **kwargs)

    monkeypatch.setattr(results, "load", recording)
    _everything(face)
    assert read == files, f"{chapter} reads {sorted(read)}, the test lists {sorted(files)}"
    for experiment in files:
        assert results.path_for(experiment, results.selected_gpu()).exists(), experiment


def _glued_in_prose(notebook: str) -> set[str]:
    nb = nbformat.read(ROOT / "book" / f"{notebook}.ipynb", 4)
    return {name for c in nb.cells if c.cell_type == "markdown"
            for name in re.findall(r"\{glue:text\}`([^`]+)`", c.source)}


#: The appendix page that shows the exercises' worked solutions of chapters 6.1 and 6.2.
SOLUTIONS = "solutions_b"


@pytest.mark.parametrize("chapter", PAGES)
def test_every_glued_name_is_written_once_where_it_is_computed(chapter):
    face, notebook, _ = PAGES[chapter]
    values = dict(face.values())
    prose = _glued_in_prose(notebook)
    assert prose <= set(values), f"glued in the prose, computed nowhere: {prose - set(values)}"
    if hasattr(face, "solutions"):
        solved = face.solutions.values()
        shown = _glued_in_prose(SOLUTIONS)
        assert set(solved) <= shown, f"solutions glued nowhere: {set(solved) - shown}"
        values.update(solved)
        prose |= set(solved)
    assert set(values) <= prose, f"computed, glued nowhere: {set(values) - prose}"
    package = ROOT / "lab" / "chapters" / chapter
    sources = {p: p.read_text() for p in package.glob("*.py")}
    for name in values:
        where = [p.name for p, text in sources.items() for _ in range(text.count(f'"{name}":'))]
        assert len(where) == 1, f"{name!r} is written as a key in {where or 'no module'}"
    assert all(isinstance(v, str) and v for v in values.values())


# ----------------------------------------------------------------------------- chapter 6.1

def test_split_k_matches_the_product():
    from lab.chapters.ch6_1.solutions import split_k_matmul

    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (9, 37)).astype(np.float32)
    B = rng.uniform(-1, 1, (37, 7)).astype(np.float32)
    C = split_k_matmul(A, B, 3, kernel="tiled8")
    ref = A.astype(np.float64) @ B
    assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5


def test_split_k_solution():
    out = ch6_1.solutions.exercise_2()
    assert out["tiles"] == 16 and out["fills"] == 16
    assert out["tiles"] == model.tile_grid(512, 512, 128, 128)
    # the measured FP16 split-K rows sit near two launch floors, far above the model and cuBLAS
    atomic = out["atomic"]
    assert atomic["model_us"] < atomic["us"] and out["cublas_us"] < atomic["us"]
    assert atomic["us"] < out["unsplit_us"]
    assert 1 <= atomic["over_floors"] < 1.5


def test_decode_solution_reads_the_gpu_time_not_the_launch_floor():
    out = ch6_1.solutions.exercise_3()
    per_call = next(r for r in results.rows("shapes", part="skinny", kernel="cublas_fp16")
                    if r["m"] == 1 and r["rotated"])
    assert out["fp16_us"] < 0.75 * per_call["median_ms"] * 1e3
    assert out["fp32_pred_us"] == pytest.approx(2 * out["fp16_pred_us"])


def test_waves_solution():
    out = ch6_1.solutions.exercise_1()
    assert out["blocks_per_sm"] == 2 and out["sizes"] and out["worst"] in out["sizes"]
    assert out["eff_worst"] < 0.85 < out["eff_4096"]


# ----------------------------------------------------------------------------- chapter 6.2

def test_alignment_cliff():
    out = ch6_2.solutions.exercise_1()
    assert out["cliff"] == 8 and out["slow_max"] < out["fast_min"]


# ----------------------------------------------------------------------------- chapter 6.3

def test_fusion_saves_the_products_round_trip_in_the_model():
    from lab.chapters.ch6_3.s2_prediction import epilogue_model_rows

    rows = epilogue_model_rows()
    assert all(r["unfused"] - r["fused"] == pytest.approx(r["saved"]) for r in rows)
    assert rows[0]["saved"] == pytest.approx(2 * 4096 * 4096 * 4 / 2**20)


def test_epilogue_rows_hold_every_variant():
    from lab.chapters.ch6_3.s4_library import epilogue_rows

    rows = epilogue_rows()
    assert len(rows) == 12
    assert all({"unfused", "fused", "elementwise", "cublas_unfused"} <= set(r) for r in rows)
