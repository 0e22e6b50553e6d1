"""Chapter 10's results file (``multi_gpu``) and its rows, which every measured section reads."""
from __future__ import annotations

from lab import results


EXPERIMENT = "multi_gpu"


def _load():
    return results.load(EXPERIMENT)


def _rows(part: str, data=None, **match) -> list[dict]:
    data = data or _load()
    return [r for r in data["rows"] if r.get("part") == part
            and all(r.get(k) == v for k, v in match.items())]
