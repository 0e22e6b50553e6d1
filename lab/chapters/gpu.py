"""The "Running this course on your GPU" page: every experiment ``measure all`` runs, what it
needs, its H200 estimate and, where the committed H200 file records it, the wall time it took."""
from __future__ import annotations

import re

from lab import experiments, page, results, tables

TOOL_NAMES = {"cupy": "CuPy", "ncu": "ncu", "compute-sanitizer": "compute-sanitizer"}


def summary(name: str) -> str:
    """What experiment ``name`` measures: its ``SUMMARY``, else the first sentence of its
    docstring after the colon."""
    module = experiments.get(name)
    if getattr(module, "SUMMARY", None):
        return module.SUMMARY
    doc = " ".join((module.__doc__ or "").split())
    text = doc.split(":", 1)[1] if ":" in doc.split(".")[0] else doc
    text = re.split(r"(?<=[^.])\.\s", text.strip() + " ", maxsplit=1)[0]
    return text.replace("``", "").strip().rstrip(".")


def needs(name: str) -> str:
    """Tools and the newest compute capability among its kernels, as the reader installs them."""
    from lab.kernels import get_spec

    exp = experiments.info(name)
    parts = [TOOL_NAMES.get(t, t) for t in exp.needs]
    from lab.kernels import TOOLKIT_MIN_CC

    ccs = [get_spec(k) for k in exp.needs_kernels if get_spec(k).min_cc > TOOLKIT_MIN_CC]
    if ccs:
        spec = max(ccs, key=lambda s: s.min_cc)
        cc = f"CC {spec.min_cc[0]}.{spec.min_cc[1]}" + (" only" if spec.max_cc else "")
        parts.append(cc)
    return ", ".join(parts)


def measured_seconds(name: str) -> float | None:
    """Wall seconds of the committed H200 run of ``name`` (None where the file predates the
    record, or does not exist)."""
    try:
        data = results.load(name, gpu=results.REFERENCE_GPU)
    except results.ResultsMissing:
        return None
    return data["provenance"].get("wall_seconds")


def rows() -> list[dict]:
    out = []
    for name in experiments.book_order():
        exp = experiments.info(name)
        out.append({"experiment": name, "chapter": exp.chapter, "measures": summary(name),
                    "needs": needs(name), "estimate_s": exp.estimate(),
                    "quick_s": exp.estimate(quick=True) if exp.quick else None,
                    "measured_s": measured_seconds(name)})
    return out


def table():
    return page.table(rows(), ["experiment", "chapter", "measures", "needs", "estimate_s",
                               "quick_s", "measured_s"],
                      {"estimate_s": "H200 estimate (s)", "quick_s": "with --quick (s)",
                       "measured_s": "H200 run (s)"}, digits=3,
                      source="estimates: each experiment module's H200_SECONDS; runs: "
                             "provenance.wall_seconds of lab/results/h200/<experiment>.json, "
                             "where that run recorded it")


def totals() -> dict:
    r = rows()
    full = sum(x["estimate_s"] or 0 for x in r)
    quick = sum((x["quick_s"] if x["quick_s"] is not None else x["estimate_s"]) or 0 for x in r)
    return {"experiments": len(r), "total_min": tables.fmt(full / 60, 2),
            "quick_min": tables.fmt(quick / 60, 2),
            "measured_count": sum(x["measured_s"] is not None for x in r)}


def glue():
    vals = totals()
    page.glue_values(vals)
    return page.values_text(vals)
