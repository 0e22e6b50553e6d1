"""What a chapter puts on the page: tables, kernel source, figures — each in two forms.

Every helper here displays one output carrying two representations of the same thing:

* a **rich** one the book shows (an HTML table, highlighted source, a PNG figure), and
* a **plain-text** one that nbval compares (the fixed-width table, the source, a digest of every
  number a figure plots).

nbval compares ``text/plain`` and ``text/html`` and skips ``image/png``, so a table, a kernel or a
figure whose data changes makes its ``# NBVAL_CHECK_OUTPUT`` cell fail, while the reader sees the
rendered form. The book picks the richest representation (HTML, then PNG, then Markdown).

Kernel source comes from *named regions* of the kernel modules, marked in the code as::

    # region: tile_loads
    ...
    # endregion: tile_loads

so a chapter never cuts source out of a module with string slices.
"""
from __future__ import annotations

import hashlib
import html
import inspect
import io
import math
import re
import textwrap
from pathlib import Path
from typing import Callable, Sequence

from lab import tables
from lab.lru import LRU


class _Output:
    """An object IPython displays through its mime bundle (``_repr_mimebundle_``)."""

    def __init__(self, bundle: dict, metadata: dict | None = None):
        self._bundle = bundle
        self._metadata = metadata

    def _repr_mimebundle_(self, include=None, exclude=None):
        return (self._bundle, self._metadata) if self._metadata else self._bundle

    def __repr__(self) -> str:  # what a terminal (or print) shows
        return self._bundle.get("text/plain", "")


def text(s: str) -> _Output:
    """Plain text a checked cell shows (a verdict, a list of lines)."""
    return _Output({"text/plain": s})


# ----------------------------------------------------------------------------- tables

def _cell_html(value, digits: int) -> tuple[str, bool]:
    text = tables.fmt(value, digits)
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return html.escape(text), numeric or tables._numeric(text)


#: A table of more rows than this shows only the rows its text discusses; all rows go below a fold.
OPEN_ROWS = 15


def gpu_label(name: str) -> str:
    """A GPU's short name for tables and prose: ``"NVIDIA H200"`` → ``"H200"``."""
    return name.replace("NVIDIA ", "").strip()


def table(rows: Sequence[dict], columns: Sequence[str] | None = None,
          headers: dict | None = None, *, digits: int = 3, source: str | None = None,
          title: str | None = None, whole_words: Sequence[str] = (),
          show: Sequence[int] | Callable[[dict], bool] | None = None) -> _Output:
    """A table of ``rows`` (dicts): HTML for the book, fixed-width text for nbval.

    ``columns`` picks and orders the fields, ``headers`` renames them (put units in the header:
    ``{"median_ms": "median (ms)"}``), ``source`` is a citation line printed under the table
    (e.g. :func:`lab.results.source_line`), ``title`` a line above it. Words never break inside
    a cell; a table wider than the column scrolls in its own box. ``whole_words`` is accepted for
    older callers and changes nothing.

    A table of more than :data:`OPEN_ROWS` rows shows open only the rows ``show`` picks (row
    indices, or a predicate on the row) -- the ones the text discusses -- and puts every row
    below a fold. ``show`` must pick at most :data:`OPEN_ROWS` rows.
    """
    rows = list(rows)
    text = tables.render(rows, columns, headers, digits)
    if title:
        text = f"{title}\n{text}"
    if source:
        text = f"{text}\n{source}"
    if not rows:
        return _Output({"text/plain": text, "text/html": "<p><em>(no rows)</em></p>"})
    columns = list(columns or rows[0].keys())
    headers = headers or {}
    if show is None:
        shown = rows if len(rows) <= OPEN_ROWS else []
    elif callable(show):
        shown = [r for r in rows if show(r)]
    else:
        shown = [rows[i] for i in show]
    if len(shown) > OPEN_ROWS:
        raise ValueError(f"table {title or columns}: show picks {len(shown)} rows, more than "
                         f"the {OPEN_ROWS} a table shows open; pick the rows the text discusses")
    out = ['<div class="lab-table-wrap">']
    if shown:
        out.append(_table_html(shown, columns, headers, digits, title))
    if len(shown) < len(rows):
        what = f"All {len(rows)} rows" + (f" of {title}" if title and shown else "")
        out.append(f'<details class="lab-fold"><summary>{html.escape(what)}</summary>'
                   + _table_html(rows, columns, headers, digits, None if shown else title)
                   + "</details>")
    if source:
        out.append(f'<p class="lab-source">{html.escape(source)}</p>')
    out.append("</div>")
    return _Output({"text/plain": text, "text/html": "".join(out)})


def _table_html(rows: list[dict], columns: list[str], headers: dict, digits: int,
                title: str | None) -> str:
    out = ['<table class="lab-table">']
    if title:
        out.append(f"<caption>{html.escape(title)}</caption>")
    first = [_cell_html(rows[0].get(c), digits) for c in columns]
    num = ' class="num"'
    heads = [f"<th{num if numeric else ''}>{html.escape(str(headers.get(c, c)))}</th>"
             for c, (_, numeric) in zip(columns, first)]
    out.append("<thead><tr>" + "".join(heads) + "</tr></thead><tbody>")
    for r in rows:
        tds = []
        for c in columns:
            cell, numeric = _cell_html(r.get(c), digits)
            tds.append(f"<td{num if numeric else ''}>{cell}</td>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ----------------------------------------------------------------------------- source

_REGION = re.compile(r"^\s*# region: (?P<name>[\w.-]+)\s*$")
_END = re.compile(r"^\s*# endregion: (?P<name>[\w.-]+)\s*$")


def regions(module) -> dict[str, str]:
    """Every named region of ``module`` (a module object or a path): name -> dedented source.

    Region markers are comment lines ``# region: NAME`` and ``# endregion: NAME``; regions may
    nest, the marker lines themselves are left out. A region opened and never closed (or closed
    and never opened) raises ValueError naming it.
    """
    path = Path(module) if isinstance(module, (str, Path)) else Path(inspect.getsourcefile(module))
    lines = path.read_text().splitlines()
    open_at: dict[str, int] = {}
    found: dict[str, str] = {}
    for i, line in enumerate(lines):
        if m := _REGION.match(line):
            if m["name"] in open_at or m["name"] in found:
                raise ValueError(f"{path.name}: region {m['name']!r} opened twice")
            open_at[m["name"]] = i
        elif m := _END.match(line):
            if m["name"] not in open_at:
                raise ValueError(f"{path.name}: region {m['name']!r} closed but never opened")
            start = open_at.pop(m["name"])
            body = [ln for ln in lines[start + 1:i]
                    if not (_REGION.match(ln) or _END.match(ln))]
            found[m["name"]] = textwrap.dedent("\n".join(body)).strip("\n")
    if open_at:
        raise ValueError(f"{path.name}: region(s) never closed: {', '.join(open_at)}")
    return found


def _folded(module, region: str, fold: dict[str, str]) -> str:
    """``region`` with each nested region named in ``fold`` replaced by one comment line."""
    path = Path(module) if isinstance(module, (str, Path)) else Path(inspect.getsourcefile(module))
    lines = path.read_text().splitlines()
    marks = {(m["name"], kind): i for i, line in enumerate(lines)
             for kind, pattern in (("open", _REGION), ("close", _END))
             if (m := pattern.match(line))}
    if (region, "open") not in marks:
        raise ValueError(f"{path.name} has no region {region!r}")
    start, end = marks[region, "open"], marks[region, "close"]
    out, skip_to = [], -1
    for i in range(start + 1, end):
        if i <= skip_to:
            continue
        line = lines[i]
        if (m := _REGION.match(line)) and m["name"] in fold:
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}# … {fold[m['name']]}")
            skip_to = marks[m["name"], "close"]
        elif not (_REGION.match(line) or _END.match(line)):
            out.append(line)
    missing = set(fold) - {name for name, _ in marks}
    if missing:
        raise ValueError(f"{path.name} has no region(s) {sorted(missing)} to fold")
    return textwrap.dedent("\n".join(out)).strip("\n")


def source_of(module, region: str | None = None, fold: dict[str, str] | None = None) -> str:
    """The source of a named region of ``module`` (or of a function/kernel object); ``fold``
    names nested regions to show as one comment line each (name -> what the line says)."""
    if region is None:
        obj = getattr(module, "py_func", module)
        return textwrap.dedent(inspect.getsource(obj)).strip("\n")
    if fold:
        return _folded(module, region, fold)
    found = regions(module)
    try:
        return found[region]
    except KeyError:
        name = getattr(module, "__name__", str(module))
        raise ValueError(f"{name} has no region {region!r}; regions: "
                         f"{', '.join(found) or '(none)'}") from None


def source(module, region: str | None = None, *, language: str = "python",
           fold: dict[str, str] | None = None) -> _Output:
    """Show a kernel (or any region of a ``lab`` module) highlighted in the book; ``fold``
    shows nested regions as one line each (what a rung did not change).

    The book renders the Markdown code fence with syntax highlighting; nbval compares the plain
    source, so an edit to the shown code is seen.
    """
    code = source_of(module, region, fold)
    fence = "````" if "```" in code else "```"
    return _Output({"text/plain": code,
                    "text/markdown": f"{fence}{language}\n{code}\n{fence}"})


# ----------------------------------------------------------------------------- figures

def _rounded(values, digits: int = 4) -> list:
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            out.append(str(v))
            continue
        if not math.isfinite(f) or f == 0:
            out.append(repr(f))
        else:
            out.append(f"{f:.{digits}g}")
    return out


def figure_data(fig) -> list[str]:
    """Every number and label a matplotlib figure draws, rounded, as lines of text.

    Lines (x/y data), bars and other patches (position and size), scatter points, text
    annotations, axis labels and limits' scales: what a reader reads off the figure.
    """
    import matplotlib.patches as mpatches

    lines = []
    for a, ax in enumerate(fig.axes):
        lines.append(f"axes {a}: {ax.get_title()!r} x={ax.get_xlabel()!r} "
                     f"({ax.get_xscale()}) y={ax.get_ylabel()!r} ({ax.get_yscale()})")
        for ln in ax.get_lines():
            xy = ln.get_xydata()
            lines.append(f"  line {ln.get_label()!r}: x={_rounded(xy[:, 0])} "
                         f"y={_rounded(xy[:, 1])}")
        for p in ax.patches:
            if isinstance(p, mpatches.Rectangle):
                lines.append(f"  bar {p.get_label()!r}: "
                             f"{_rounded([p.get_x(), p.get_y(), p.get_width(), p.get_height()])}")
        for c in ax.collections:
            offs = c.get_offsets()
            if len(offs):
                lines.append(f"  points {c.get_label()!r}: {_rounded(list(offs.ravel()))}")
        for t in ax.texts:
            lines.append(f"  text {t.get_text()!r} at {_rounded(t.get_position())}")
    return lines


def figure(fig, *, dpi: int = 110) -> _Output:
    """Show a matplotlib figure as a PNG; nbval compares a digest of the data it plots.

    The PNG is drawn at twice ``dpi`` and shown at the size ``dpi`` gives, so it stays sharp on
    high-density screens and when the browser scales it to the column.

    The plain-text form names how many series and points the figure has and a hash of every
    rounded value and label (:func:`figure_data`), so a changed number that appears only in a
    figure fails the cell's check. The figure is closed after rendering.
    """
    import base64

    import matplotlib.pyplot as plt

    data = figure_data(fig)
    digest = hashlib.sha256("\n".join(data).encode()).hexdigest()[:16]
    series = sum(1 for ln in data if not ln.startswith("axes"))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=2 * dpi, bbox_inches="tight")
    plt.close(fig)
    width = int.from_bytes(buf.getvalue()[16:20], "big") // 2   # the PNG header's width
    text = f"[figure: {len(fig.axes)} axes, {series} series/labels, data sha256 {digest}]"
    return _Output({"text/plain": text,
                    "image/png": base64.b64encode(buf.getvalue()).decode()},
                   {"image/png": {"width": f"{width}px"}})


# ----------------------------------------------------------------------------- prose values

_LAB = Path(__file__).resolve().parent
_literals_cache = LRU(256)


def _literals(path: Path) -> frozenset:
    """Every whole string literal in the module at ``path`` (not the pieces of f-strings)."""
    def make():
        import ast

        tree = ast.parse(path.read_text())
        pieces = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                  for v in node.values}
        return frozenset(node.value for node in ast.walk(tree)
                         if isinstance(node, ast.Constant) and isinstance(node.value, str)
                         and id(node) not in pieces)
    return _literals_cache.get_or_make(path, make)


def _glue_caller() -> tuple[str, Path | None]:
    """The module (name, source file) that called :func:`glue_values`, past this module."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    if frame is None:
        return "__main__", None
    file = frame.f_globals.get("__file__")
    return frame.f_globals.get("__name__", "__main__"), Path(file).resolve() if file else None


def check_glue_names(names, caller: str, path: Path | None) -> None:
    """Refuse (ValueError) a glued name that is not a whole string literal in the calling
    module's source, or in a module of its package when the caller is one of a package's
    modules below ``lab`` (``lab/chapters/ch6_1/s2_waves.py`` -> ``lab/chapters/ch6_1/*.py``),
    so grep on a name seen on a page lands where its value is computed."""
    if path is None or _LAB not in path.parents:
        raise ValueError(f"glue called from {caller!r}, outside lab: a chapter glues its names "
                         "from its own module, where each name is written literally")
    files = [path]
    if path.parent not in (_LAB, _LAB / "chapters"):
        files = sorted(path.parent.glob("*.py"))
    known = frozenset().union(*(_literals(f) for f in files))
    missing = [n for n in names if n not in known]
    if missing:
        where = path.name if len(files) == 1 else f"{path.name} (nor in {path.parent.name}/*.py)"
        raise ValueError(
            f"glue name(s) {', '.join(map(repr, missing))} from {caller} are not written "
            f"literally in {where}: every glued name must be a whole string literal in the "
            "module that computes its value, so grep on a name from the page finds it "
            "(compose no names: write 'ex01_1_ratio', not f'ex01_{n}_ratio')")


def glue_values(values: dict, digits: int | None = None) -> None:
    """Glue each ``name: value`` for ``{glue:text}`name``` in the prose (nothing displayed).

    Floats are formatted with :func:`lab.tables.fmt` (``digits`` significant digits, default 3)
    unless already strings. Each name must be written literally in the calling module (or its
    package): :func:`check_glue_names` refuses one that is not.
    """
    from myst_nb import glue

    check_glue_names(list(values), *_glue_caller())
    for name, value in values.items():
        if not isinstance(value, str):
            value = tables.fmt(value, digits or 3)
        glue(name, value, display=False)


def values_text(values: dict) -> _Output:
    """The glued values as one checked text block (so nbval sees every number the prose uses)."""
    text = "\n".join(f"{k} = {v if isinstance(v, str) else tables.fmt(v)}"
                     for k, v in values.items())
    return _Output({"text/plain": text})


def glue(values: dict) -> _Output:
    """Glue ``values`` for the prose (:func:`glue_values`) and return them as one checked text
    block (:func:`values_text`): what a chapter's removed glue cell shows."""
    glue_values(values)
    return values_text(values)
