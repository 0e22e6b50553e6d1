"""Which cells nbval checks, pinned: a check removed, a skip added or a glued name gone fails.

nbval (``pytest --nbval-lax``) compares a cell's outputs with the committed ones only where the
cell says ``# NBVAL_CHECK_OUTPUT`` (or carries the ``nbval-check-output`` tag), and runs nothing
of a cell marked ``# NBVAL_SKIP``. Deleting the marker, adding a skip or deleting a checked cell
(its table gone from the page) would pass both pytest and the strict build. This test reads every
notebook as nbval reads it (nbval's own marker parsers) and compares, cell by cell (by cell id),
what nbval does with it and the glue names its committed outputs hold against
``tests/nbval_pins.json``. Prose cells are pinned too, by their paragraphs and the glued names
they quote: a deleted prose cell or paragraph, or a glued number replaced by a typed one, fails.

After an intended change (a new chapter, a re-cut one, a new checked cell), record the pins
again and commit the file with the notebooks:

    python tests/test_nbval_pins.py --record
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = Path(__file__).with_name("nbval_pins.json")
RECORD = "python tests/test_nbval_pins.py --record"


def nbval_mode(cell) -> str:
    """What ``pytest --nbval-lax`` does with a code cell: "skip", "check" (outputs compared)
    or "run" (run, outputs not compared) — decided by nbval's own parsers, comments over tags."""
    from nbval.plugin import find_comment_markers, find_metadata_tags

    options = dict(find_metadata_tags(cell.metadata) or ())
    options.update(dict(find_comment_markers(cell.source)))
    if options.get("skip"):
        return "skip"
    return "check" if options.get("check") else "run"


def glue_names(cell) -> list[str]:
    """The names a cell's committed outputs glue (myst-nb's ``scrapbook`` metadata)."""
    return [o["metadata"]["scrapbook"]["name"] for o in cell.get("outputs", [])
            if "scrapbook" in o.get("metadata", {})]


def _first_line(source: str) -> str:
    """The cell's first line that is not a comment (to recognise the cell by)."""
    return next((ln.strip() for ln in source.splitlines()
                 if ln.strip() and not ln.strip().startswith("#")), "")


def quoted(source: str) -> list[str]:
    """The glued names a prose cell quotes, in order of first use."""
    return list(dict.fromkeys(re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", source)))


def paragraphs(source: str) -> int:
    return sum(1 for p in source.split("\n\n") if p.strip())


def pins(book: Path = ROOT / "book", *, every: bool = False) -> dict:
    """Per notebook, per code cell (by id) that nbval checks or skips or that glues a name
    (``every``: every code cell): its mode, its glue names and its first line; per prose cell:
    its paragraphs, the glued names it quotes and its first line."""
    import nbformat

    out = {}
    for path in sorted(book.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        cells = {}
        for i, cell in enumerate(c for c in nb.cells if c.cell_type == "markdown"):
            cells[cell.get("id") or f"prose cell {i}"] = {
                "paragraphs": paragraphs(cell.source), "quotes": quoted(cell.source),
                "first_line": next((ln.strip() for ln in cell.source.splitlines() if ln.strip()),
                                   "")[:60]}
        for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            mode, names = nbval_mode(cell), glue_names(cell)
            if every or mode != "run" or names:
                cells[cell.get("id") or f"code cell {i}"] = {
                    "nbval": mode, "glue": names, "first_line": _first_line(cell.source)}
        out[path.name] = cells
    return out


def differences(pinned: dict, now: dict) -> list[str]:
    """What changed, one line each, in words."""
    lines = []
    for nb in sorted(set(pinned) | set(now)):
        if nb not in now:
            lines.append(f"{nb}: the notebook is gone")
            continue
        if nb not in pinned:
            lines.append(f"{nb}: a notebook without pins")
            continue
        was, cells = pinned[nb], now[nb]
        for cid in was:
            old = was[cid]
            label = f"{nb} cell {cid} ({old['first_line']!r})"
            new = cells.get(cid)
            if "paragraphs" in old:
                if new is None:
                    lines.append(f"{label}: the prose cell is gone ({old['paragraphs']} "
                                 f"paragraph(s) quoting {len(old['quotes'])} glued name(s))")
                    continue
                if new["paragraphs"] < old["paragraphs"]:
                    lines.append(f"{label}: {old['paragraphs'] - new['paragraphs']} paragraph(s) "
                                 f"deleted")
                lost = [n for n in old["quotes"] if n not in new["quotes"]]
                if lost:
                    lines.append(f"{label}: no longer quotes {', '.join(lost)} (a glued number "
                                 f"deleted or typed)")
                continue
            if new is None:
                lines.append(f"{label}: the cell is gone (it was '{old['nbval']}' and glued "
                             f"{len(old['glue'])} name(s))")
                continue
            if new["nbval"] != old["nbval"]:
                lines.append(f"{label}: nbval now does '{new['nbval']}', pinned "
                             f"'{old['nbval']}'")
            lost = [n for n in old["glue"] if n not in new["glue"]]
            if lost:
                lines.append(f"{label}: no longer glues {', '.join(lost)}")
            gained = [n for n in new["glue"] if n not in old["glue"]]
            if gained:
                lines.append(f"{label}: newly glues {', '.join(gained)}")
        for cid in cells:
            if cid not in was and "paragraphs" in cells[cid]:
                lines.append(f"{nb} prose cell {cid} ({cells[cid]['first_line']!r}): new")
            elif cid not in was and (cells[cid]["nbval"] != "run" or cells[cid]["glue"]):
                lines.append(f"{nb} cell {cid} ({cells[cid]['first_line']!r}): new, nbval "
                             f"'{cells[cid]['nbval']}', glues {len(cells[cid]['glue'])} name(s)")
    return lines


def test_no_notebook_cell_lost_its_check_or_gained_a_skip():
    assert PINS.exists(), f"no pins yet: {RECORD}"
    diff = differences(json.loads(PINS.read_text()), pins(every=True))
    assert not diff, ("nbval's checks differ from tests/nbval_pins.json:\n  "
                      + "\n  ".join(diff)
                      + f"\nIf the change is intended, record the pins again: {RECORD}")


def test_a_removed_marker_a_new_skip_and_a_removed_cell_are_caught(tmp_path):
    """The pins catch each way of switching the guard off (on a copy of one chapter)."""
    import nbformat

    src = ROOT / "book" / "01_naive.ipynb"
    pinned = pins()
    cases = {}
    for fault in ("marker", "skip", "cell", "tag"):
        nb = nbformat.read(str(src), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        checked = [c for c in code if nbval_mode(c) == "check"]
        if fault == "marker":
            victim = next(c for c in checked if "# NBVAL_CHECK_OUTPUT" in c.source)
            victim.source = victim.source.replace("# NBVAL_CHECK_OUTPUT", "")
        elif fault == "skip":
            victim = checked[-1]
            victim.source = "# NBVAL_SKIP\n" + victim.source
        elif fault == "cell":
            victim = next(c for c in checked if glue_names(c))
            nb.cells.remove(victim)
        else:
            victim = next(c for c in code if "nbval-check-output" in c.metadata.get("tags", []))
            victim.metadata["tags"].remove("nbval-check-output")
        book = tmp_path / fault
        book.mkdir()
        nbformat.write(nb, str(book / src.name))
        now = pins(book, every=True)
        cases[fault] = differences({src.name: pinned[src.name]}, now)
    assert any("nbval now does 'run', pinned 'check'" in d for d in cases["marker"])
    assert any("nbval now does 'skip', pinned 'check'" in d for d in cases["skip"])
    assert any("the cell is gone (it was 'check'" in d for d in cases["cell"])
    assert any("nbval now does 'run', pinned 'check'" in d for d in cases["tag"])


def test_a_deleted_prose_cell_a_deleted_paragraph_and_a_typed_number_are_caught(tmp_path):
    """The prose pins catch a prose cell deleted, a paragraph cut and a glued value typed."""
    import nbformat

    src = ROOT / "book" / "01_naive.ipynb"
    pinned = {src.name: pins()[src.name]}
    cases = {}
    for fault in ("cell", "paragraph", "typed"):
        nb = nbformat.read(str(src), as_version=4)
        prose = [c for c in nb.cells if c.cell_type == "markdown" and quoted(c.source)
                 and paragraphs(c.source) > 1]
        victim = prose[0]
        if fault == "cell":
            nb.cells.remove(victim)
        elif fault == "paragraph":
            victim.source = "\n\n".join(victim.source.split("\n\n")[:-1])
        else:
            name = quoted(victim.source)[0]
            victim.source = re.sub(r"\{glue(?::\w+)?\}`" + name + "`", "5.24", victim.source)
        book = tmp_path / fault
        book.mkdir()
        nbformat.write(nb, str(book / src.name))
        cases[fault] = differences(pinned, pins(book, every=True))
    assert any("the prose cell is gone" in d for d in cases["cell"])
    assert any("paragraph(s) deleted" in d for d in cases["paragraph"])
    assert any("no longer quotes" in d for d in cases["typed"])


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: {RECORD}")
    recorded = pins()
    PINS.write_text("{\n" + ",\n".join(           # one line per cell: a readable diff
        f" {json.dumps(nb)}: {{\n" + ",\n".join(f"  {json.dumps(cid)}: "
                                                 f"{json.dumps(pin, ensure_ascii=False)}"
                                                 for cid, pin in cells.items()) + "\n }"
        for nb, cells in recorded.items()) + "\n}\n")
    print(f"recorded {sum(len(c) for c in json.loads(PINS.read_text()).values())} cells of "
          f"{len(json.loads(PINS.read_text()))} notebooks in {PINS.relative_to(ROOT)}")
