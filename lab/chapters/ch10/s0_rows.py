"""Chapter 10's results file (``multi_gpu``) and its rows, which every measured section reads."""
from __future__ import annotations

from lab import results


EXPERIMENT = "multi_gpu"


def load() -> dict:
    """The selected GPU's ``multi_gpu`` results (the two-GPU folder)."""
    return results.load(EXPERIMENT)


def part_rows(part: str, data=None, **match) -> list[dict]:
    """The rows of one ``part`` of the results (``data``, or :func:`load`'s) that match."""
    data = data or load()
    return [r for r in data["rows"] if r.get("part") == part
            and all(r.get(k) == v for k, v in match.items())]
