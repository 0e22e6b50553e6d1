"""Chapter 10, section 3: the schemes as the code one GPU runs, shown from
:mod:`lab.multi.schemes` by named region."""
from __future__ import annotations

from lab import page
from lab.multi import schemes


def source(region: str):
    """A named region of :mod:`lab.multi.schemes` (``column``, ``row``, ``summa``,
    ``column_overlap``), highlighted."""
    return page.source(schemes, region)
