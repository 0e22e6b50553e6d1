"""The "Running this course on your GPU" page: every experiment ``measure all`` runs, what it
needs, its H200 estimate, and what it took in the committed H200 run of ``measure all``
(``lab/results/h200/measure_all.json``): seconds, and the seconds its process held the GPU."""
from __future__ import annotations

import re

from lab import experiments, page, results, tables

TOOL_NAMES = {"cupy": "CuPy", "ncu": "ncu", "compute-sanitizer": "compute-sanitizer",
              "sgemm-cuda": "SGEMM_CUDA (LAB_SGEMM_CUDA)"}


def summary(name: str) -> str:
    """What experiment ``name`` measures: its ``SUMMARY``, else the first sentence of its
    docstring after the colon (a chapter named there, "(chapter 6.1)", ends no sentence)."""
    module = experiments.get(name)
    if getattr(module, "SUMMARY", None):
        return module.SUMMARY
    doc = " ".join((module.__doc__ or "").split())
    head, colon, rest = doc.partition(":")
    text = rest if colon and not re.search(r"\.\s", head) else doc
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


def run_record() -> dict:
    """The committed H200 run of ``measure all`` (:data:`lab.experiments.RUN_RECORD`)."""
    return results.load(experiments.RUN_RECORD, gpu=results.REFERENCE_GPU)


def rows() -> list[dict]:
    ran = {r["experiment"]: r for r in run_record()["rows"]}
    out = []
    for name in experiments.book_order():
        exp = experiments.info(name)
        run = ran.get(name, {})
        out.append({"experiment": name, "chapter": exp.chapter, "measures": summary(name),
                    "needs": needs(name), "estimate_s": exp.estimate(),
                    "quick_s": exp.estimate(quick=True) if exp.quick else None,
                    "run_s": run.get("seconds"), "held_s": run.get("gpu_held_s")})
    return out


def table():
    columns = ["experiment", "chapter", "measures", "needs", "estimate_s", "quick_s", "run_s",
               "held_s"]
    every = rows()
    slowest = sorted(range(len(every)), key=lambda i: -every[i]["estimate_s"])[:5]
    return page.table(every, columns,
                      {"chapter": "ch.", "estimate_s": "estimate (s)", "quick_s": "quick (s)",
                       "run_s": "run (s)", "held_s": "on GPU (s)"},
                      digits=3, show=sorted(slowest),
                      source="estimate: H200 seconds one at a time, each experiment module's "
                             "H200_SECONDS (quick: with --quick); run: seconds in one whole "
                             "measure all on the H200, four at a time, and on GPU: the seconds "
                             "its process held the GPU in that run "
                             "(lab/results/h200/measure_all.json)")


def totals() -> dict:
    r = rows()
    full = sum(x["estimate_s"] or 0 for x in r)
    quick = sum((x["quick_s"] if x["quick_s"] is not None else x["estimate_s"]) or 0 for x in r)
    run = run_record()
    wall = run["provenance"]["wall_seconds"]
    held = sum(x["held_s"] or 0 for x in r)
    wrote = [x for x in run["rows"] if x["status"] == "wrote"]
    return {"experiments": len(r), "total_min": tables.fmt(full / 60, 2),
            "quick_min": tables.fmt(quick / 60, 2),
            "run_min": tables.fmt(wall / 60, 3), "run_jobs": run["parameters"]["jobs"],
            "run_serial_min": tables.fmt(sum(x["estimate_s"] or 0 for x in wrote) / 60, 3),
            "run_wrote": len(wrote),
            "run_skipped": ", ".join(x["experiment"] for x in run["rows"]
                                     if x["status"] == "skipped") or "none",
            "run_not_in": ", ".join(x["experiment"] for x in r
                                    if x["experiment"] not in {y["experiment"] for y in run["rows"]})
                          or "none",
            "run_held_min": tables.fmt(held / 60, 2),
            "run_held_share": f"{held / wall:.0%}",
            "run_speedup": tables.fmt(sum(x["estimate_s"] or 0 for x in wrote) / wall, 2)}


def glue():
    """Glue :func:`totals` for the prose and return them as one checked text block."""
    return page.glue(totals())
