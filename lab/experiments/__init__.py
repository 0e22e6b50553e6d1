"""Measurement experiments: ``python -m lab measure NAME`` runs ``lab.experiments.NAME.run``.

Each experiment module has ``run(progress) -> dict`` returning ``rows`` and ``parameters``
(and optionally ``row_fields`` and ``notes``); :mod:`lab.__main__` adds provenance and the
command, then saves through :mod:`lab.results`. ``progress`` wraps an iterable in a tqdm bar.
"""
from __future__ import annotations

import importlib
import pkgutil


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def get(name: str):
    if name not in names():
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")
