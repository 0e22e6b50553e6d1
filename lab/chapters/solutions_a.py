"""The appendix of worked solutions to chapters 0-4: the exercises' answers live in each
chapter's ``solutions`` module (``lab.chapters.chN.solutions``), which the page glues section by
section; this module glues what the answers share, the name of the measuring GPU."""
from __future__ import annotations

from lab import page
from lab.chapters.common import gpu


def values() -> dict:
    """The names the solutions quote beside their own ``exNN_`` values, as text."""
    return {"the_gpu": gpu()}


def glue():
    """Glue :func:`values` for the page's prose and return them as one checked text block."""
    return page.glue(values())
