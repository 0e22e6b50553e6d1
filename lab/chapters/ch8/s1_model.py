"""Chapter 8, section 1: the model, shown as the code of :mod:`lab.model` that computes it."""
from __future__ import annotations

from lab import model, page


def source(function: str):
    """The source of one function of :mod:`lab.model` (``slice_traffic``, ``rung_model``)."""
    return page.source(getattr(model, function))
