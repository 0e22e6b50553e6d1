"""Tables are data: rows of dicts rendered by one helper (plain text in a terminal or a
notebook's text output, so nbval can compare it; Markdown for the book's prose)."""
from __future__ import annotations

import math
from typing import Sequence


def fmt(value, digits: int = 3) -> str:
    """Round for print: significant digits for floats, thousands untouched, '-' for None."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        mag = math.floor(math.log10(abs(value)))
        if mag >= digits - 1:
            return f"{value:,.0f}"
        if mag < -3:
            return f"{value:.{max(digits - 1, 0)}e}"
        return f"{value:.{digits - 1 - mag}f}"
    return str(value)


def render(rows: Sequence[dict], columns: Sequence[str] | None = None,
           headers: dict | None = None, digits: int = 3) -> str:
    """Fixed-width text table of ``rows`` (the same text every run for the same data)."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    headers = headers or {}
    cells = [[headers.get(c, c) for c in columns]]
    cells += [[fmt(r.get(c), digits) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = []
    for j, row in enumerate(cells):
        lines.append("  ".join(cell.rjust(w) if j and _numeric(cell) else cell.ljust(w)
                               for cell, w in zip(row, widths)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _numeric(cell: str) -> bool:
    return cell.replace(",", "").replace(".", "").replace("-", "").replace("e", "").replace(
        "+", "").replace("×", "").replace("%", "").isdigit()


def markdown(rows: Sequence[dict], columns: Sequence[str] | None = None,
             headers: dict | None = None, digits: int = 3) -> str:
    """The same table as Markdown (for ``IPython.display.Markdown``)."""
    columns = list(columns or rows[0].keys())
    headers = headers or {}
    out = ["| " + " | ".join(headers.get(c, c) for c in columns) + " |",
           "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(fmt(r.get(c), digits) for c in columns) + " |" for r in rows]
    return "\n".join(out)


def kernel_name(name: str, width: int = 60) -> str:
    """A library kernel's name as a profiler reports it, without its C++ wrapper (``void``,
    ``Kernel2<…>``, ``(Params)``) and cut at an underscore to at most ``width`` characters."""
    for prefix in ("void ", "Kernel2<", "cutlass::Kernel2<"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    name = name.removesuffix("(Params)").removesuffix(">")
    if len(name) <= width:
        return name
    cut = name.rfind("_", 0, width)
    return name[:cut if cut > 0 else width] + "_…"
