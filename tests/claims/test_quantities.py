"""One quantity, one value across the book.

Reads the values every chapter glues into its prose (the committed notebooks' glue records) and
fails when a name glued on two pages carries two values, or when the glue names that state one
quantity of the book on different pages (:data:`SAME_QUANTITY`) disagree. Where two runs measured
the same thing differently, each page glues it under a name of its own and says which run.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"

#: One quantity stated on several pages -> the glue names that state it (page by page).
SAME_QUANTITY = {
    "the H200's dense FP16 tensor-core peak (datasheet)": ("ex00_3_tensor_tflops", "peak_tflops"),
    "the H200's tensor ridge (datasheet peak over measured read bandwidth)":
        ("ex00_3_ridge", "tensor_ridge"),
    "the H200's measured streaming-read bandwidth": ("read_tbps",),
    "tc_fp16 at 4096³ in chapter 5's run": ("tc_fp16_tflops", "ex61_1_rate_4096",
                                             "ch5_tc_fp16_small_tflops"),
}


def glued() -> dict[str, dict[str, str]]:
    """name -> {notebook: value as glued} for every glue record of every chapter."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if record:
                    value = output["data"]["application/papermill.record/text/plain"]
                    out[record["name"]][path.stem] = "".join(value)
    return out


def conflicts(values: dict[str, dict[str, str]]) -> list[str]:
    found = [f"{name!r} is glued as {pages}" for name, pages in values.items()
             if len(set(pages.values())) > 1]
    for what, names in SAME_QUANTITY.items():
        seen = {f"{name} ({page})": v for name in names for page, v in values.get(name, {}).items()}
        if len(set(seen.values())) > 1:
            found.append(f"{what}: {seen}")
    return found


def test_every_quantity_has_one_value():
    values = glued()
    assert values, "no glue records found in the committed notebooks"
    assert not conflicts(values), "\n".join(conflicts(values))


def test_the_check_catches_a_quantity_with_two_values():
    planted = {"peak_tflops": {"05_tensor_cores": "'990'"},
               "ex00_3_tensor_tflops": {"00_machine": "'989'"},
               "gpu": {"00_machine": "'H200'", "01_naive": "'H100'"}}
    found = conflicts(planted)
    assert len(found) == 2
    assert any("dense FP16" in f for f in found) and any("'gpu'" in f for f in found)


@pytest.mark.parametrize("what", sorted(SAME_QUANTITY))
def test_each_listed_quantity_is_glued_somewhere(what):
    values = glued()
    assert any(name in values for name in SAME_QUANTITY[what]), what


#: One quantity that two runs measured differently: (glue names, one per run; the words that
#: label the runs where a page quotes more than one of them).
RUN_SPECIFIC = {
    "Hopper rung 15 at 4096³ FP16 (runs of rungs 9-17 and of the tile table)":
        (("uni_4096_fp16", "tab15_4096_fp16"), "two runs"),
    "fast.cu's kernel 12 at 8192³ BF16 (runs of rungs 9-17 and of the tile table)":
        (("past_fastcu_8192", "tab_fastcu_8192"), "in this run"),
    "the FP8 kernel without clusters at 8192³, BF16 C (chapter 7b's run and chapter 7.2's)":
        (("ratio_bf16_8192", "nocl_ratio_big"), "one-process run"),
}


def prose() -> dict[str, list[str]]:
    """Each notebook's markdown paragraphs."""
    out = {}
    for path in sorted(BOOK.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        text = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        out[path.stem] = [p for p in text.split("\n\n") if p.strip()]
    return out


def unlabelled(paragraphs: dict[str, list[str]]) -> list[str]:
    """Pages that quote two runs' values of one quantity without a paragraph that holds both
    and the words naming the runs."""
    found = []
    for what, (names, label) in RUN_SPECIFIC.items():
        for page, paras in paragraphs.items():
            used = [n for n in names if any(f"`{n}`" in p for p in paras)]
            if len(used) < 2:
                continue
            if not any(all(f"`{n}`" in p for n in used) and label in p for p in paras):
                found.append(f"{page}: {what} quoted as {used} without saying which run is which")
    return found


def test_a_quantity_from_two_runs_is_labelled_where_both_appear():
    assert not unlabelled(prose()), "\n".join(unlabelled(prose()))


def test_each_run_specific_quantity_is_quoted_somewhere():
    used = {n for paras in prose().values() for p in paras for n in re.findall(r"`(\w+)`", p)}
    for what, (names, _) in RUN_SPECIFIC.items():
        assert used & set(names), what


def test_the_label_check_catches_two_runs_side_by_side_unlabelled():
    planted = {"07_2_past": ["rung 15 reads {glue:text}`uni_4096_fp16`.",
                             "Later {glue:text}`tab15_4096_fp16`."]}
    assert len(unlabelled(planted)) == 1
    planted["07_2_past"][1] = ("In two runs: {glue:text}`uni_4096_fp16` and "
                               "{glue:text}`tab15_4096_fp16`.")
    assert not unlabelled(planted)


def test_the_h200_l2_is_written_in_mib():
    """The H200's L2 is 60 MiB (62,914,560 bytes); no page calls it 60 MB."""
    pages = sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("*.md"))
    wrong = [p.name for p in pages if re.search(r"\b60 MB\b", p.read_text())]
    assert not wrong, f"L2 written as 60 MB on {wrong}"


#: One quantity that several runs or timing methods measured, each page quoting its own: the
#: glue name -> the words that say which run or method, required in the first paragraph of each
#: page that quotes the name (where the reader first meets that value).
LABELLED = {
    "cuBLAS FP16 at 4096³": {
        "cublas_fp16_tflops": "same run",                # chapter 5's run, beside its rungs
        "cublas16_4096": "this chapter's run",           # chapter 9's run of the libraries
        "cublas_sustained": "back to back",              # chapter 9: four seconds sustained
        "cublas_queued_tflops": "launch",                # chapter 7.1: launch hidden, in bursts
        "cublas_sustained_tflops": "per row",            # chapter 7.1: a third of a second a row
        "cublas_short_tflops": "one-process run",        # chapter 7.1: the one-process run
    },
    "tc_fp16 at 4096³": {
        "tc_4096": "this chapter's run",                 # chapter 9's run (chapter 5's is 404)
        "one16_small_tflops": "one-GPU",                 # chapter 10's one-GPU row
    },
    "the naive kernel at 4096³": {
        "naive_tflops_4096": "this chapter's run",       # chapter 1's run (the intro: 3 processes)
    },
}


def unlabelled_runs(paragraphs: dict[str, list[str]]) -> list[str]:
    """Pages whose first paragraph quoting a run-specific value does not say which run."""
    found = []
    for what, labels in LABELLED.items():
        for name, label in labels.items():
            for page, paras in paragraphs.items():
                first = next((p for p in paras if f"`{name}`" in p), None)
                if first is not None and label.lower() not in first.lower():
                    found.append(f"{page}: {what} quoted as {name} without '{label}' beside it")
    return found


def test_a_run_specific_value_says_its_run_where_a_page_first_quotes_it():
    assert not unlabelled_runs(prose()), "\n".join(unlabelled_runs(prose()))


def test_each_labelled_value_is_quoted_somewhere():
    used = {n for paras in prose().values() for p in paras for n in re.findall(r"`(\w+)`", p)}
    missing = [n for labels in LABELLED.values() for n in labels if n not in used]
    assert not missing, f"labelled glue names no page quotes: {missing}"


def test_the_run_label_check_catches_an_unlabelled_value():
    planted = {"09_libraries": ["cuBLAS FP16 ran at {glue:text}`cublas16_4096` TFLOP/s."]}
    assert len(unlabelled_runs(planted)) == 1
    planted["09_libraries"][0] = "In this chapter's run " + planted["09_libraries"][0]
    assert not unlabelled_runs(planted)


def test_the_intro_ladder_reads_chapter_5s_rungs_as_chapter_5_does():
    """The intro's tensor-core rungs come from chapter 5's run: tc_fp16's TFLOP/s there is the
    value chapter 5 glues (not another run's)."""
    from lab.chapters import intro

    rows = {r["rung"]: r for r in intro.ladder()}
    ch5 = glued()["tc_fp16_tflops"]["05_tensor_cores"].strip("'")
    assert f"{rows['tc_fp16']['tflops']:.0f}" == ch5
    assert rows["tc_fp16"]["experiment"] == "tensor_cores"
