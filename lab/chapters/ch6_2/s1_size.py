"""Section "The size curve": cuBLAS and our two best kernels over square sizes, per call
(``shapes``), the launch floor that per-call timing hits at small sizes, and the same small
sizes timed queued behind a busy kernel — the GPU's own time."""
from __future__ import annotations

from matplotlib.ticker import LogLocator, ScalarFormatter

from lab import page, plots, results, seeds, tables

#: The kernels of the size curve, with their labels, in the table's order.
SIZE_KERNELS = {"cublas_fp32": "cuBLAS FP32", "warptile_tuned": "warptile_tuned",
                "cublas_fp16": "cuBLAS FP16", "tc_fp16": "tc_fp16"}


def size_rows() -> list[dict]:
    """TFLOP/s of cuBLAS and our two best kernels over square sizes (per-call timing)."""
    by = {(r["kernel"], r["n"]): r for r in results.rows("shapes", part="size")}
    ns = sorted({n for _, n in by})
    return [{"n": n, **{k: by[(k, n)]["tflops"] for k in SIZE_KERNELS}} for n in ns]


def size_table():
    """The size curve as a table."""
    return page.table(size_rows(), ["n", *SIZE_KERNELS], {"n": "n", **SIZE_KERNELS},
                      title="TFLOP/s, per-call timing, cache-hot",
                      source=results.source_line("shapes"))


def size_figure():
    """The size curve: TFLOP/s over n, log-log, libraries dotted, ours solid."""
    rows = size_rows()
    ns = [r["n"] for r in rows]
    fig, ax = plots.axes("", "n (M = N = K)", "TFLOP/s (per-call timing)", logx=True, logy=True)
    for kernel, label, style, colour in (
            ("cublas_fp16", "cuBLAS FP16", plots.LIBRARY, "C3"),
            ("tc_fp16", "ours, tc_fp16", plots.OURS, "C3"),
            ("cublas_fp32", "cuBLAS FP32", plots.LIBRARY, "C0"),
            ("warptile_tuned", "ours, warptile_tuned", plots.OURS, "C0")):
        ax.plot(ns, [r[kernel] for r in rows], label=label, color=colour, **style)
    return page.figure(plots.finish(fig, ax))


def seed_size_table():
    """The T4 study's size curve on its Tesla T4, in words and numbers as the study gives them."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.SIZE_T4]
    return page.table(rows, ["n", "tflops", "gpu_source"],
                      {"n": "n", "tflops": "TFLOP/s (FP16)",
                       "gpu_source": "GPU, source"})


def queued_rows() -> list[dict]:
    """Per small size: each kernel's per-call time and its queued (GPU) time, µs, and the
    lowest share of batches the busy kernel covered."""
    percall = {(r["kernel"], r["n"]): r for r in results.rows("shapes", part="size")}
    q = {(r["kernel"], r["n"]): r for r in results.rows("shapes", part="size_queued")}
    rows = []
    for n in sorted({n for _, n in q}):
        row = {"n": n}
        for kern in SIZE_KERNELS:
            row[f"{kern}_call"] = percall[(kern, n)]["median_ms"] * 1e3
            row[f"{kern}_gpu"] = q[(kern, n)]["median_ms"] * 1e3
        row["covered"] = min(q[(kern, n)]["spin_covered"] for kern in SIZE_KERNELS)
        rows.append(row)
    return rows


def queued_table():
    """Per-call against queued timing of the small sizes: each cell is per call / GPU (µs)."""
    rows = [{"n": r["n"], "covered": r["covered"],
             **{k: f"{tables.fmt(r[f'{k}_call'])} / {tables.fmt(r[f'{k}_gpu'])}"
                for k in SIZE_KERNELS}} for r in queued_rows()]
    return page.table(rows, ["n", *SIZE_KERNELS, "covered"],
                      {"n": "n", **SIZE_KERNELS, "covered": "spin covered (min)"},
                      title="µs per call: per-call timing / GPU time (queued)",
                      source=results.source_line("shapes"))


def queued_figure():
    """Per-call against queued GPU time over n for cuBLAS FP16 and tc_fp16."""
    rows = queued_rows()
    ns = [r["n"] for r in rows]
    fig, ax = plots.axes("", "n (M = N = K)", "time per call (µs)", logx=True, logy=True)
    for kernel, label, colour in (("cublas_fp16", "cuBLAS FP16", "C3"),
                                  ("tc_fp16", "ours, tc_fp16", "C0")):
        ax.plot(ns, [r[f"{kernel}_gpu"] for r in rows], label=f"{label}: GPU time (queued)",
                color=colour, **plots.OURS)
        ax.plot(ns, [r[f"{kernel}_call"] for r in rows], label=f"{label}: per-call timing",
                color=colour, **plots.LIBRARY)
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    return page.figure(plots.finish(fig, ax))


def values() -> dict:
    """The section's numbers: cuBLAS FP16's best and where it reaches 90% of it, the shortest
    per-call times of the library and of our kernels, and the queued timing's parameters."""
    params = results.load("shapes")["parameters"]
    size = size_rows()
    best16 = max(x["cublas_fp16"] for x in size)
    per = results.rows("shapes", part="size")
    return {"fp16_best": f"{best16:.0f}",
            "fp16_n90": str(min(x["n"] for x in size if x["cublas_fp16"] >= 0.9 * best16)),
            "floor_cublas": f"{min(r['median_ms'] for r in per if r['impl'] == 'cublas') * 1e3:.0f}",
            "floor_numba": f"{min(r['median_ms'] for r in per if r['impl'] != 'cublas') * 1e3:.0f}",
            "spin_covered_min": f"{min(x['covered'] for x in queued_rows()):.2f}",
            "queue_batch": str(params["queue_batch"]),
            "spin_min_ms": f"{params['spin_min_ms']:g}"}
