"""Every glued name is written literally where its value is computed: ``page.glue`` refuses a
composed one, naming it and the rule."""
import importlib.util
import json
import re
import textwrap
from pathlib import Path

import pytest

from lab import page


def _planted(tmp_path, monkeypatch, body: str):
    """A chapter package ``chapters/chx`` under a stand-in ``lab`` root, section module loaded."""
    root = tmp_path / "lab"
    pkg = root / "chapters" / "chx"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A planted chapter."""\n')
    (pkg / "s1_part.py").write_text(textwrap.dedent(body))
    monkeypatch.setattr(page, "_LAB", root)
    spec = importlib.util.spec_from_file_location("lab_planted_chx.s1_part", pkg / "s1_part.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_composed_name_is_refused(tmp_path, monkeypatch):
    module = _planted(tmp_path, monkeypatch, """
        from lab import page

        def glue(n=3):
            return page.glue({f"ex_{n}_ratio": 1.5, "plain_name": 2.0})
    """)
    with pytest.raises(ValueError, match=r"'ex_3_ratio'.*not written literally.*s1_part\.py"):
        module.glue()


def test_a_literal_name_in_the_package_passes(tmp_path, monkeypatch):
    module = _planted(tmp_path, monkeypatch, """
        from lab import page

        NAMES = {"ex_3_ratio": 1.5}

        def glue():
            return page.glue({name: v for name, v in NAMES.items()})
    """)
    assert "ex_3_ratio = 1.5" in repr(module.glue())


def test_a_notebook_glues_through_its_chapter():
    with pytest.raises(ValueError, match="outside lab"):
        page.check_glue_names(["x"], "some_notebook", None)



BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = Path(page.__file__).parent / "chapters"


def _glued(notebook: Path) -> tuple[list[str], set[str]]:
    """The chapter modules a notebook imports to glue (``from lab.chapters import X``; an appendix
    page may import several, ``from lab.chapters import ch8, ch9``, or one module of each chapter,
    ``from lab.chapters.ch0 import solutions``) and the names its prose glues (``{glue:...}`name```
    roles and ``{glue}`` directives)."""
    nb = json.loads(notebook.read_text())
    chapters, names = [], set()
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            for m in re.finditer(r"^from lab\.chapters((?:\.\w+)*) import (\w+(?:\s*,\s*\w+)*)",
                                 text, re.M):
                where = m[1].lstrip(".").replace(".", "/")
                chapters += [f"{where}/{c.strip()}" if where else c.strip()
                             for c in m[2].split(",")]
        elif cell["cell_type"] == "markdown":
            names |= set(re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", text))
            names |= set(re.findall(r"```\{glue(?::\w+)?\}\s+(\S+)", text))
    return chapters, names


@pytest.mark.parametrize("notebook", sorted(BOOK.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_glued_name_is_written_once_in_its_chapter(notebook):
    """grep on a name seen on the page lands in one module of the chapter (of the chapters,
    for an appendix page that imports several): the one whose string literal names the value
    where it is computed."""
    chapters, names = _glued(notebook)
    if not chapters or not names:
        pytest.skip("no chapter glues names on this page")
    files = []
    for chapter in chapters:
        where = CHAPTERS / chapter
        files += sorted(where.glob("*.py")) if where.is_dir() else [where.with_suffix(".py")]
    found = {f.relative_to(CHAPTERS).as_posix(): page._literals(f) for f in files}
    wrong = {n: [f for f, lits in found.items() if n in lits] for n in sorted(names)}
    wrong = {n: fs for n, fs in wrong.items() if len(fs) != 1}
    assert not wrong, f"{notebook.name}: glued names not written in exactly one module: {wrong}"
