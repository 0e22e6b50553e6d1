"""Figures drawn for the page: every text of a figure at least MIN_PX pixels tall once the figure
is shown in the 688-pixel column (a figure wider than the column is scaled down to it).

Each figure cell of every notebook is run with ``lab.page.figure`` replaced by a probe that
records, for each visible text, its size on the page: points × dpi / 72, times the column over
the figure's width where the figure is wider. The figures listed in SMALL still draw text below
that size (none today); the list may only shrink.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
COLUMN_PX = 688
DPI = 110
MIN_PX = 10.0

#: Figures (notebook, the cell's last line) whose smallest text is still below MIN_PX: none
#: now; a figure added here must be redrawn, not left.
SMALL: set = set()


def smallest_text_px(fig) -> float:
    """The smallest visible text of ``fig`` in pixels, as the page shows the figure."""
    import matplotlib.text

    width_px = fig.get_size_inches()[0] * DPI
    scale = min(1.0, COLUMN_PX / width_px)
    sizes = [t.get_fontsize() * DPI / 72 * scale for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=float("inf"))


def figure_cells():
    for path in sorted(BOOK.glob("*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                 if c["cell_type"] == "code"]
        imports = [m[0] for c in cells for m in [re.search(r"^from lab\.chapters import \w+",
                                                          c, re.M)] if m]
        for cell in cells:
            if "figure(" in cell and "from lab" not in cell:
                yield path.stem, imports[:1], cell.strip().splitlines()[-1].strip()


CELLS = list(figure_cells())


@pytest.mark.parametrize("notebook, imports, call", CELLS,
                         ids=[f"{n}:{c[:40]}" for n, _, c in CELLS])
def test_figure_text_is_readable_in_the_column(notebook, imports, call, monkeypatch):
    import matplotlib.pyplot as plt

    from lab import page

    seen = []

    def probe(fig, *args, **kwargs):
        seen.append(smallest_text_px(fig))
        plt.close(fig)

    namespace: dict = {}
    for line in imports:
        exec(line, namespace)
    for module in list(namespace.values()):
        if getattr(module, "figure", None) is page.figure:
            monkeypatch.setattr(module, "figure", probe)
    monkeypatch.setattr(page, "figure", probe)
    import lab.chapters.common as common
    if getattr(common, "figure", None) is not None:
        monkeypatch.setattr(common, "figure", probe, raising=False)
    exec(call, namespace)
    assert seen, f"{call} drew no figure"
    if (notebook, call) in SMALL:
        pytest.xfail(f"smallest text {seen[0]:.1f} px: listed in SMALL for a redrawing")
    assert seen[0] >= MIN_PX, (f"{notebook}: {call} draws text {seen[0]:.1f} px tall in the "
                               f"{COLUMN_PX}-px column (at least {MIN_PX:.0f})")


def test_the_probe_measures_a_wide_figure_scaled_to_the_column():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(COLUMN_PX * 2 / DPI, 2), dpi=DPI)
    ax.text(0.5, 0.5, "label", fontsize=10)
    ax.axis("off")
    assert abs(smallest_text_px(fig) - 10 * DPI / 72 / 2) < 1e-6
    plt.close(fig)
