"""Chapter 10's results file (``multi_gpu``) and its rows, which every measured section reads."""
from __future__ import annotations

from lab import results


EXPERIMENT = "multi_gpu"


def part_rows(part: str, data=None, **match) -> list[dict]:
    """The rows of one ``part`` of the results (``data``, or the selected GPU's ``multi_gpu``
    file, in the two-GPU folder) that match."""
    data = data or results.load(EXPERIMENT)
    return [r for r in data["rows"] if r.get("part") == part
            and all(r.get(k) == v for k, v in match.items())]
