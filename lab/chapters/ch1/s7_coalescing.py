"""Chapter 1, section 7: coalescing measured, the swapped mapping against the sources' one, by size
and against the L2.
"""
from __future__ import annotations

from lab import page, plots, results, roofline, seeds
from lab.chapters.common import SIZES, gpu, measured, results_file
from lab.chapters.ch1.s2_warp import sectors, touched


def load_sectors(mapping: str, steps: int = 1) -> int:
    """Sectors one warp's two loads touch over the first ``steps`` values of k."""
    return sum(len(set().union(*(sectors(touched(mapping, a, k)) for k in range(steps))))
               for a in ("A", "B"))


def swap_rows() -> list[dict]:
    """The sources' mapping against the swapped one: our Numba kernels and the T4 study's twins on
    the selected GPU, and the T4 study's T4."""
    size = measured()
    rows = []
    for n in SIZES:
        for impl, fast, slow in (("Numba", "naive", "naive_swapped"),
                                 ("CUDA C (NVRTC), the T4 study twins", "s004_naive", "s004_naive_swapped")):
            f, s = size.get((fast, n)), size.get((slow, n))
            if f and s:
                rows.append({"gpu": gpu(), "kernels": impl, "n": n, "fast": f["median_ms"],
                             "slow": s["median_ms"], "ratio": s["median_ms"] / f["median_ms"]})
    t4n, t4s = seeds.NAIVE_T4
    rows.append({"gpu": t4n["gpu"], "kernels": "the T4 study", "n": t4n["n"], "fast": t4n["ms"],
                 "slow": t4s["ms"], "ratio": seeds.SWAPPED_SLOWDOWN_T4})
    return rows


def swap_table():
    """Slowdown of the swapped mapping."""
    return page.table(swap_rows(), ["gpu", "kernels", "n", "fast", "slow", "ratio"],
                      {"gpu": "GPU", "fast": "sources' mapping (ms)", "slow": "swapped (ms)",
                       "ratio": "slowdown"}, source=results.source_line("naive_tiled"))


def sweep_rows() -> list[dict]:
    """Both mappings across sizes (the ``l2_sweep`` part), with the operands' footprint
    against the L2 capacity recorded for the GPU."""
    data = results_file("naive_tiled")
    sweep = [r for r in data["rows"] if r["part"] == "l2_sweep"]
    naive_at = {r["n"]: r for r in sweep if r["kernel"] == "naive"}
    l2_mb = l2_bytes() / 1e6
    rows = []
    for r in sorted((r for r in sweep if r["kernel"] == "naive_swapped"), key=lambda r: r["n"]):
        base = naive_at[r["n"]]
        rows.append({"n": r["n"], "footprint": r["footprint_mb"],
                     "fits": r["footprint_mb"] <= l2_mb, "naive_ms": base["median_ms"],
                     "swapped_ms": r["median_ms"], "tflops": base["tflops"],
                     "ratio": r["ratio_swapped"]})
    return rows


def l2_bytes() -> int:
    """The L2 capacity the results file records (the roofline file's where it does not)."""
    return (results_file("naive_tiled")["provenance"].get("l2_bytes")
            or roofline.measured()["l2_bytes"])


def sweep_table():
    """The size sweep of the two mappings."""
    return page.table(sweep_rows(), ["n", "footprint", "fits", "naive_ms", "swapped_ms",
                                     "tflops", "ratio"],
                      {"footprint": "A+B+C (MB)", "fits": "fits L2", "naive_ms": "naive (ms)",
                       "swapped_ms": "swapped (ms)", "tflops": "naive TFLOP/s",
                       "ratio": "slowdown"}, source=results.source_line("naive_tiled"))


def sweep_figure():
    """The swapped mapping's slowdown against the operands' footprint, the L2 capacities of
    the selected GPU and of the T4 study's T4, and the request model's ratio."""
    rows = sweep_rows()
    l2_mb = l2_bytes() / 1e6
    from matplotlib.ticker import FuncFormatter

    fig, ax = plots.axes("", "A + B + C footprint (MB)", "swapped time / naive time")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.plot([r["footprint"] for r in rows], [r["ratio"] for r in rows],
            label=f"{gpu()}, measured (Numba kernels)", **plots.OURS)
    ax.axvline(l2_mb, color="C0", linestyle=":", linewidth=1,
               label=f"{gpu()} L2 ({l2_bytes() / 2**20:.0f} MiB)")
    t4_footprint = 3 * 4 * seeds.NAIVE_T4[0]["n"] ** 2 / 1e6
    ax.plot([t4_footprint], [seeds.SWAPPED_SLOWDOWN_T4], label="Tesla T4 at 1024³, the T4 study",
            linestyle="none", marker="s", markerfacecolor="none", markersize=7, color="C3")
    ax.axvline(seeds.L2_T4_BYTES / 1e6, color="C3", linestyle=":", linewidth=1,
               label=f"Tesla T4 L2 ({seeds.L2_T4_BYTES / 2**20:.0f} MiB), the T4 study")
    req = load_sectors("naive_swapped") / load_sectors("naive")
    ax.axhline(req, color="0.4", linestyle="--", linewidth=1,
               label=f"request model: {load_sectors('naive_swapped')} / "
                     f"{load_sectors('naive')} sectors per k-step")
    ax.set_ylim(0, max(max(r["ratio"] for r in rows), seeds.SWAPPED_SLOWDOWN_T4, req) * 1.15)
    return plots.finish_below(fig, ax)
