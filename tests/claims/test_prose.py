"""The prose holds no number the results did not produce.

Three lints over the notebooks' markdown, each with a planted fault it must catch:

* a number with a unit (TFLOP/s, GB/s, ms, µs, MHz, W, MiB, %, …) typed outside glue, unless
  :data:`LITERAL` allows it on that page with the reason it is not a measurement (a datasheet
  constant, a design constant, a goal or threshold, an exercise's given, an assumption named
  as such, a prediction worked out in the sentence);
* a glued name that none of its chapter's pages quotes (a value computed for prose that no
  longer says it, or a paragraph deleted with its numbers);
* the measuring GPU's name typed ("the H200") where the page should glue it, so that a book
  built from another GPU's results names that GPU (:data:`OTHER_GPUS` allows, per page, the
  sentences that name another GPU on purpose: a datasheet, a source's card).

A deleted paragraph without glue is caught by the pins of ``tests/test_nbval_pins.py``, which
count each prose cell's paragraphs.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"

UNITS = (r"TFLOP/s|GFLOP/s|TB/s|GB/s|Gb/s|MB/s|GiB|MiB|KiB|kB|KB|MB|GB|TB|ms|µs|ns|MHz|GHz|"
         r"W|°C|%")
#: A number (a range a–b included) and a unit, not inside a word, a name or a formula.
TYPED = re.compile(r"(?<![\w.`$/])\d[\d,]*(?:\.\d+)?(?:[–-]\d[\d,]*(?:\.\d+)?)?\s?(?:"
                   + UNITS + r")(?![\w/])")

#: Numbers with units a page may type, each with why it is not a measurement of ours.
LITERAL: dict[str, dict[str, str]] = {
    "00_machine": {"989 TFLOP/s": "the H100 SXM datasheet's dense BF16 peak"},
    "06_1_waves": {"10%": "a threshold the sentence defines",
                   "85%": "the exercise's threshold"},
    "06_2_sizes": {"90%": "the threshold the curve is read at",
                   "100 µs": "a threshold of the rule the sentence states"},
    "07_1_machinery": {"8 KB": "the size of a staging buffer the kernel declares",
                       "20 ms": "the sampling period the experiment sets"},
    "07_2_past": {"8 KB": "the size of a staging buffer the kernel declares",
                  "32 KB": "four staging buffers of 8 KB",
                  "48 KB": "a pipeline stage of the 128×256 tile (design)",
                  "64 KB": "a tile of FP32 C (design)",
                  "227 KB": "the H200 datasheet's shared memory per block",
                  "1 %": "a prediction worked out in the sentence",
                  "3 %": "a prediction worked out in the sentence (512 / 132 tiles)",
                  "128 KB": "one FP32 tile of partial sums (design)",
                  "17 MB": "132 blocks × 128 KB, worked out in the sentence",
                  "2 KB": "one k-step of B (design)"},
    "08_model": {"40 GB": "the A100 model name",
                 "60 MiB": "the H200's L2 (datasheet)",
                 "32 MB": "the operands' size at 4096³ BF16, worked out in the sentence"},
    "09_libraries": {"70 W": "the T4 datasheet's board power",
                     "600–700 MHz": "the T4 study's clocks, named as its",
                     "20 ms": "the sampling period the experiment sets",
                     "989 TFLOP/s": "the datasheet's dense FP16 peak, the exercise's given"},
    "09b_calling": {"33 MB": "the size of B at the shape named in the sentence"},
    "10_multi_gpu": {"15%": "the model's goal",
                     "400 Gb/s": "the network port assumed, named as an assumption",
                     "90%": "the exercise's target",
                     "30 µs": "the exercise's given"},
    "solutions_c": {"989 TFLOP/s": "the datasheet's dense FP16 peak, exercise 9.2's given",
                    "90%": "exercise 10.1's target",
                    "30 µs": "exercise 10.3's given"},
    "gpu": {"80GB": "a GPU's product name",
            "20 GB": "the memory a process needs (a requirement)",
            "16 GB": "the T4's memory (datasheet)"},
    "rejected": {"16 MB": "an operand panel's size, worked out in the sentence",
                 "8 MB": "an operand panel's size, worked out in the sentence",
                 "32 MB": "B's size at 4096³ FP16",
                 "2 KB": "one staging box (design)"},
}

#: Sentences that name a GPU other than the measuring one on purpose: page -> the words
#: around the name that make it so (each allows the GPU names in the paragraph holding them).
OTHER_GPUS: dict[str, tuple[str, ...]] = {
    "00_machine": ("The sources put", "By the datasheets", "H100 SXM's"),   # datasheets, sources
    "08_model": ("A100", "is an H100 with", "model's H200", "whose FP32 roof grew",
                 "on the H100 and H200", "no longer bound by HBM on the H200"),  # the model's GPUs
    "09_libraries": ("data sheet",),                                         # a datasheet clock
    "solutions_c": ("no longer bound by HBM on the H200", "model's H200",
                    "whose FP32 roof grew"),                                  # the model's GPU
    "two_gpus": ("",),   # the page comparing two named GPUs, predicted against measured
    "gpu": ("",),        # the page on measuring your own GPU beside the reference set: every paragraph
}

GPU_NAME = re.compile(r"\b(?:H200|H100|GH200|B200)s?\b")


def _markdown(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "markdown"]


def _prose_only(text: str) -> str:
    """Markdown with glue, code, formulas, cross-references and links' targets removed."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\{glue(?::\w+)?\}`[^`]*`", " ", text)
    text = re.sub(r"\{(?:doc|ref|numref|term)\}`[^`]*`", " ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return text


def typed_numbers(pages: dict[str, list[str]], allowed=LITERAL) -> list[str]:
    """Each number with a unit typed in a page's prose and not allowed there."""
    found = []
    for page, cells in pages.items():
        ok = allowed.get(page, {})
        for cell in cells:
            text = _prose_only(cell)
            for m in TYPED.finditer(text):
                if m[0].replace("\u00a0", " ") not in ok:
                    around = text[max(0, m.start() - 50):m.end() + 20].replace("\n", " ")
                    found.append(f"{page}: typed '{m[0]}' … {around.strip()} …")
    return found


def _chapter(path: Path) -> str:
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            m = re.search(r"^from lab\.chapters import (\w+)", "".join(cell["source"]), re.M)
            if m:
                return m[1]
    return path.stem


def glue_use(book: Path = BOOK) -> tuple[dict[str, set], dict[str, set]]:
    """Per chapter package: the names its notebooks glue, and the names their prose quotes."""
    glued, used = defaultdict(set), defaultdict(set)
    for path in sorted(book.glob("*.ipynb")):
        chapter = _chapter(path)
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if record:
                    glued[chapter].add(record["name"])
        text = "\n".join(_markdown(path))
        used[chapter] |= set(re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", text))
        used[chapter] |= set(re.findall(r"```\{glue(?::\w+)?\}\s+(\S+)", text))
    return glued, used


def unused(glued: dict[str, set], used: dict[str, set]) -> list[str]:
    return [f"{chapter}: glues {sorted(names - used[chapter])} and no page of it quotes them"
            for chapter, names in sorted(glued.items()) if names - used[chapter]]


def typed_gpus(pages: dict[str, list[str]], allowed=OTHER_GPUS) -> list[str]:
    """Each GPU name typed in a page's prose outside the paragraphs allowed to name one."""
    found = []
    for page, cells in pages.items():
        for cell in cells:
            for para in cell.split("\n\n"):
                if any(words in para for words in allowed.get(page, ())):
                    continue
                text = _prose_only(para)
                for m in GPU_NAME.finditer(text):
                    around = text[max(0, m.start() - 50):m.end() + 30].replace("\n", " ")
                    found.append(f"{page}: '{m[0]}' typed … {around.strip()} …")
    return found


def pages() -> dict[str, list[str]]:
    return {p.stem: _markdown(p) for p in sorted(BOOK.glob("*.ipynb"))}


def test_no_number_with_a_unit_is_typed_outside_glue():
    found = typed_numbers(pages())
    assert not found, ("numbers typed in the prose (glue them, or add them to LITERAL with "
                       "why they are not measurements):\n" + "\n".join(found))


def test_every_literal_allowed_is_still_on_its_page():
    """An allowance whose number left the page goes too (the list stays the page's)."""
    stale = []
    for page, literals in LITERAL.items():
        text = " ".join(_prose_only(c) for c in pages()[page])
        stale += [f"{page}: {lit}" for lit in literals
                  if not re.search(r"(?<![\w.])" + re.escape(lit) + r"(?![\w/])", text)]
    assert not stale, f"allowed literals no longer on their page: {stale}"


def test_every_glued_name_is_quoted_by_its_chapter():
    found = unused(*glue_use())
    assert not found, "\n".join(found)


def test_the_measuring_gpu_is_glued_not_typed():
    found = typed_gpus(pages())
    assert not found, ("the measuring GPU's name typed in the prose (glue it, e.g. "
                       "{glue:text}`the_gpu`, or allow the paragraph in OTHER_GPUS):\n"
                       + "\n".join(found))


def test_each_lint_catches_its_planted_fault():
    planted = {"01_naive": ["The naive kernel runs at 5.24 TFLOP/s at 4096³ on the H200."]}
    assert any("5.24 TFLOP/s" in f for f in typed_numbers(planted))
    assert any("'H200'" in f for f in typed_gpus(planted))
    glued_now, used_now = glue_use()
    used_planted = {ch: set(names) for ch, names in used_now.items()}
    name = sorted(used_planted["ch1"])[0]
    used_planted["ch1"].discard(name)                     # the paragraph quoting it deleted
    assert any(name in f for f in unused(glued_now, used_planted))
    clean = {"01_naive": ["It runs at {glue:text}`naive_tflops_4096` TFLOP/s on the "
                          "{glue:text}`the_gpu`, $2mnk$ FLOPs, `BLOCK = 16`."]}
    assert not typed_numbers(clean) and not typed_gpus(clean)


@pytest.mark.parametrize("text, hit", [("at 4096 × 4096 with 16 × 16 blocks", None),
                                        ("40 µs", "40 µs"), ("1,300–1,980 MHz", "1,300–1,980 MHz"),
                                        ("sm_90a", None), ("a 128-byte line", None),
                                        ("3.5% margin", "3.5%")])
def test_what_counts_as_a_typed_number(text, hit):
    found = TYPED.search(_prose_only(text))
    assert (found[0] if found else None) == hit
