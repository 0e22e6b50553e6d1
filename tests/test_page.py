"""lab.page: kernel regions shown with what a rung did not change folded, and long tables folded."""
import pytest

from lab import page

SOURCE = '''\
def kernel(a):
    # region: whole
    x = 1
    # region: setup
    y = 2
    z = 3
    # endregion: setup
    return x + y + z
    # endregion: whole
'''


def test_fold_replaces_a_nested_region_by_one_line(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(SOURCE)
    assert page.source_of(path, "whole") == "x = 1\ny = 2\nz = 3\nreturn x + y + z"
    folded = page.source_of(path, "whole", {"setup": "as before"})
    assert folded == "x = 1\n# … as before\nreturn x + y + z"
    with pytest.raises(ValueError, match="nothere"):
        page.source_of(path, "whole", {"nothere": "?"})


def test_a_long_table_shows_the_chosen_rows_and_folds_all():
    rows = [{"i": i} for i in range(page.OPEN_ROWS + 5)]
    html = page.table(rows, show=[1, 2])._repr_mimebundle_()["text/html"]
    shown, folded = html.split("<details")
    assert shown.count("<tr>") == 1 + 2 and folded.count("<tr>") == 1 + len(rows)
    with pytest.raises(ValueError, match="more than"):
        page.table(rows, show=range(page.OPEN_ROWS + 1))
    short = page.table(rows[:3])._repr_mimebundle_()["text/html"]
    assert "<details" not in short and short.count("<tr>") == 4


def test_every_listing_in_the_book_is_short():
    """A rung shows what it changed: every listing a chapter prints is about 40 lines at most
    (what the rung did not change is folded, ``page.source(fold=...)``)."""
    import json
    from pathlib import Path

    long = []
    for path in sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                markdown = "".join(out.get("data", {}).get("text/markdown", ""))
                if markdown.startswith("```"):
                    lines = len(markdown.splitlines()) - 2
                    if lines > 46:
                        long.append(f"{path.name}: {lines} lines")
    assert not long, long
