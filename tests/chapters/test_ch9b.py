"""Chapter 9b (calling a kernel from Python): its glued numbers, tables and figure come from
the results files, every glued name is written where it is computed, and the notebook calls only
the chapter's package. (The claims the prose makes are checked in
``tests/claims/test_ch9b_claims.py``.)"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from lab.chapters import ch9b

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "book" / "09b_calling.ipynb"
PACKAGE = ROOT / "lab" / "chapters" / "ch9b"


def cells(kind: str) -> list[str]:
    nb = json.loads(NOTEBOOK.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def test_every_glued_name_is_computed():
    used = {m for text in cells("markdown") for m in re.findall(r"\{glue:text\}`(\w+)`", text)}
    values = ch9b.values()
    assert used, "the page glues nothing?"
    assert not used - set(values), f"glued but never computed: {sorted(used - set(values))}"


def test_each_glued_name_is_a_literal_where_it_is_computed():
    literals = set()
    for path in PACKAGE.glob("*.py"):
        literals |= {n.value for n in ast.walk(ast.parse(path.read_text()))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    missing = [k for k in ch9b.values() if k not in literals]
    assert not missing, f"glued names not written literally in lab/chapters/ch9b: {missing}"


def test_the_notebook_calls_only_its_chapter():
    for src in cells("code"):
        for line in src.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            assert line == "from lab.chapters import ch9b" or "ch9b." in line, line


def test_the_targets_follow_the_suite():
    from lab.chapters.ch9b import s1_result as S

    targets = {t["target"]: t for t in ch9b.targets()}
    for method, name in S.METHODS.items():
        rs = S.rows(method)
        assert targets[f"every shape, {name}"]["measured"] == min(
            r["ratio_to_cublas"] for r in rs)
        assert targets[f"geomean over the suite, {name}"]["measured"] == pytest.approx(
            S.geomean(r["ratio_to_cublas"] for r in rs))
    for t in targets.values():
        host = t["target"].startswith("host")
        met = t["measured"] <= t["asks"] if host else t["measured"] >= t["asks"]
        assert t["met"] == ("yes" if met else "no"), t


def test_tables_and_figure_render():
    for table in (ch9b.targets_table(), ch9b.host_table(), ch9b.call_table(), ch9b.below_table(),
                  ch9b.layer_table(), ch9b.decode_table(), ch9b.choice_table()):
        assert table is not None
    import matplotlib.pyplot as plt
    fig = ch9b.suite_figure()
    assert len(fig.axes) == 4
    plt.close(fig)


@pytest.mark.parametrize("m, n, k", [(4096, 4096, 4096), (1, 4096, 4096)])
def test_the_choice_table_is_the_dispatcher(m, n, k):
    import lab
    import numpy as np

    row = next(r for r in ch9b.choice_rows() if r["shape"] == f"{m}×{n}×{k}")
    a, b = np.empty((m, k), np.float16), np.empty((k, n), np.float16)
    assert row["9.0"].split()[0] == lab.gemm.explain(a, b, cc=(9, 0)).kernel


def test_a_shape_in_two_groups_keeps_each_groups_row():
    """8192³ is a square and a Llama-3 70B prefill row, 64×8192×8192 a decode and an odd row:
    each group's figure point, below-0.9 entry and evidence row is read from that group's own
    row (a lookup keyed without the group once let the prefill row overwrite the square)."""
    from lab.chapters.ch9b import s1_result as S, s3_suite

    for method in ("gpu_only", "loop"):
        rows = S.rows(method)
        keyed = {s3_suite._key(r): r for r in rows}
        assert len(keyed) == len(rows)
        both = [(r["m"], r["n"], r["k"]) for r in rows if r["group"] == "square"]
        assert (8192, 8192, 8192) in both
        for r in rows:
            assert keyed[s3_suite._key(r)] is r
    square = next(r for r in ch9b.evidence_rows() if r["what"].startswith("8192×8192×8192"))
    want = next(r for r in S.rows("gpu_only", "float16") if r["group"] == "square"
                and r["m"] == 8192)
    assert square["ratio"] == want["ratio_to_cublas"]
