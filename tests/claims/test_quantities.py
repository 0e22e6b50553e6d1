"""One quantity, one value across the book.

Reads the values every chapter glues into its prose (the committed notebooks' glue records) and
fails when a name glued on two pages carries two values, or when the glue names that state one
quantity of the book on different pages (:data:`SAME_QUANTITY`) disagree. Where two runs measured
the same thing differently, each page glues it under a name of its own and says which run.
"""
from __future__ import annotations

import json
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
    "tc_fp16 at 4096³ in chapter 5's run": ("tc_fp16_tflops", "fp16_tflops", "ex61_1_rate_4096",
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
