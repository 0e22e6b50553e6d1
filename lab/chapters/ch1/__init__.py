"""Chapter 1, the naive kernel: one thread per output, what a warp asks memory for under two
thread mappings, the Numba kernel beside nvcc's build of the sources' CUDA C, and the
measurements of the selected GPU beside the sources' T4 and RTX 3090.

Measurements come from the ``naive_tiled`` results file (and ``ncu_dram`` for the bytes that
really cross the DRAM interface), read for the selected GPU; compiler facts from
:mod:`lab.compiler` (Numba) and :func:`lab.twins.compile_report` (nvcc); the sources' numbers from
:mod:`lab.seeds`.
"""
from __future__ import annotations

import numpy as np

from lab import bench, compiler, model, page, plots, results, roofline, seeds, twins
from lab.chapters import common
from lab.chapters.common import (SIZES, gpu, measured, model_reads, ncu_ok, ncu_rows,
                                 ratio_rows, results_file)
from lab.chapters.common import example_inputs, verdict  # noqa: F401  (the notebook's run cell)
from lab.kernels import k01_naive

#: Shapes the check runs at: one element, one just past a 16 × 16 block, and a round one.
CHECK_SHAPES = ((1, 1, 1), (17, 33, 19), (32, 32, 32))
#: Lanes per warp and bytes per memory sector.
LANES = 32
SECTOR_BYTES = 32
#: Row length (elements) used to turn the warp's coordinates into addresses; any n ≥ 32 that is
#: a multiple of 8 gives the same sector counts.
ROW = 1024
#: The two thread mappings: which coordinate of C each thread index runs along.
MAPPINGS = ("naive", "naive_swapped")
#: Numba kernels and their nvcc-built twins for the SASS comparison.
SASS_NUMBA = ("naive_literal", "naive")
SASS_TWINS = ("s003_naive", "s004_naive")
#: (Numba kernel, CUDA C twin) pairs of the timing comparison.
PAIRS = (("naive_literal", "s003_naive"), ("naive", "s003_naive"), ("naive", "s004_naive"),
         ("naive_swapped", "s004_naive_swapped"))


# ----------------------------------------------------------------------------- launch

def launch_rows() -> list[dict]:
    """Blocks and threads one launch asks for, against the threads the GPU keeps resident."""
    roofs = roofline.measured()
    resident = model.SM90_LIMITS["threads"] * roofs["sm_count"]
    block = k01_naive.BLOCK
    rows = []
    for n in SIZES:
        blocks = (-(-n // block)) ** 2
        threads = blocks * block * block
        rows.append({"n": n, "blocks": blocks, "threads": threads,
                     "per_resident": threads / resident, "loads": 2 * n})
    return rows


def launch_table():
    """The launch's size against the GPU's resident-thread capacity."""
    return page.table(launch_rows(), ["n", "blocks", "threads", "per_resident", "loads"],
                      {"per_resident": "threads / resident", "loads": "loads per thread"})


# ----------------------------------------------------------------------------- a warp's accesses

def warp_coordinates(mapping: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the output each of the 32 lanes of the first warp computes.

    In a 16 × 16 block a warp is two rows of 16 threads (thread id = x + 16·y); the sources'
    mapping lays x along a row of C, the swapped one down a column.
    """
    lane = np.arange(LANES)
    tx, ty = lane % k01_naive.BLOCK, lane // k01_naive.BLOCK
    return (ty, tx) if mapping == "naive" else (tx, ty)


def touched(mapping: str, access: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) in the accessed matrix of each lane's element at step ``k``:
    ``access`` is ``"A"`` (A[row, k]), ``"B"`` (B[k, col]) or ``"C"`` (the store)."""
    row, col = warp_coordinates(mapping)
    if access == "A":
        return row, np.full(LANES, k)
    if access == "B":
        return np.full(LANES, k), col
    return row, col


def sectors(cells: tuple[np.ndarray, np.ndarray], row_length: int = ROW) -> set[int]:
    """The 32-byte sectors a set of FP32 elements of a row-major matrix falls in."""
    r, c = cells
    return set(((r * row_length + c) * 4 // SECTOR_BYTES).tolist())


def access_rows() -> list[dict]:
    """For each mapping and access: distinct elements and sectors at one k, the share of the
    moved bytes that are used, and the sectors touched over eight steps of k."""
    rows = []
    for mapping in MAPPINGS:
        for access, label in (("A", "load A[row, k]"), ("B", "load B[k, col]"),
                              ("C", "store C[row, col]")):
            first = touched(mapping, access, 0)
            elements = len(set(zip(*(a.tolist() for a in first))))
            one = len(sectors(first))
            steps = 8 if access != "C" else 1
            over8 = set().union(*(sectors(touched(mapping, access, k)) for k in range(steps)))
            rows.append({"mapping": mapping, "access": label, "elements": elements,
                         "sectors": one, "used": 4 * elements / (SECTOR_BYTES * one),
                         "sectors8": len(over8)})
    return rows


def access_table():
    """Sectors per warp access under the two mappings (geometry, no GPU)."""
    return page.table(access_rows(), ["mapping", "access", "elements", "sectors", "used",
                                      "sectors8"],
                      {"elements": "elements", "sectors": "sectors (1 k)",
                       "used": "used / moved", "sectors8": "sectors (8 k)"})


def load_sectors(mapping: str, steps: int = 1) -> int:
    """Sectors one warp's two loads touch over the first ``steps`` values of k."""
    return sum(len(set().union(*(sectors(touched(mapping, a, k)) for k in range(steps))))
               for a in ("A", "B"))


def warp_figure():
    """Concept figure: the elements the first warp touches at k = 0 in A, B and C, and the
    32-byte sectors they fall in, for the sources' mapping (top) and the swapped one (bottom)."""
    import matplotlib.patches as mpatches
    import matplotlib.pyplot as plt

    window = 16
    fig, axes = plt.subplots(2, 3, figsize=(8.4, 6.0), dpi=110)
    names = {"A": "A[row, k], k = 0", "B": "B[k, col], k = 0", "C": "C[row, col]"}
    for i, mapping in enumerate(MAPPINGS):
        for j, access in enumerate("ABC"):
            ax = axes[i, j]
            cells = touched(mapping, access, 0)
            found = sorted(sectors(cells, window))
            for s in found:
                r, c0 = divmod(s * SECTOR_BYTES // 4, window)
                ax.add_patch(mpatches.Rectangle((c0 + 0.1, r + 0.1), SECTOR_BYTES // 4 - 0.2, 0.8,
                                                facecolor="C1", alpha=0.45, edgecolor="C3",
                                                linewidth=0.9))
            rr, cc = cells
            ax.scatter(cc + 0.5, rr + 0.5, s=14, color="C0", zorder=3)
            ax.set_xlim(0, window)
            ax.set_ylim(window, 0)
            ax.set_aspect("equal")
            ax.set_xticks(range(0, window + 1, 8))
            ax.set_yticks(range(0, window + 1, 4))
            ax.tick_params(labelsize=7, length=2)
            ax.grid(True, color="0.88", linewidth=0.6)
            ax.set_xticks(range(window + 1), minor=True)
            ax.set_yticks(range(window + 1), minor=True)
            ax.grid(True, which="minor", color="0.93", linewidth=0.4)
            ax.set_title(f"{names[access]}: {len(found)} sector{'s' if len(found) > 1 else ''}",
                         fontsize=9)
            ax.set_ylabel((f"{mapping}\n" if j == 0 else "") + ("k" if access == "B" else "row"),
                          fontsize=9 if j == 0 else 8)
            ax.set_xlabel("k" if access == "A" else "column", fontsize=8)
    handles = [mpatches.Patch(facecolor="C1", alpha=0.45, edgecolor="C3",
                              label="32-byte sector fetched (8 FP32 values)"),
               plt.Line2D([], [], linestyle="none", marker="o", markersize=4, color="C0",
                          label="element a lane needs")]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


# ----------------------------------------------------------------------------- the kernel, checked

def check_table(kernels=("naive", "naive_swapped", "naive_literal"), shapes=CHECK_SHAPES):
    """Each kernel at each check shape against float64 (output filled with NaN first)."""
    rows = []
    for name in kernels:
        row = {"kernel": name}
        for i, shape in enumerate(shapes):
            v = bench.check(name, *shape, seed=i)
            row["×".join(map(str, shape))] = "PASS" if v.passed else "FAIL"
        rows.append(row)
    return page.table(rows, title="M×N×K: verdict against float64")


# ----------------------------------------------------------------------------- SASS

def loop_row(report, compiled_by: str) -> dict:
    """Registers and the hottest loop's FFMA / LDG / total counts of one compile report."""
    loop = report.loop_mix
    total = sum(loop.values())
    ffma = loop.get("FFMA", 0)
    ldg = sum(c for op, c in loop.items() if op.startswith("LDG"))
    return {"kernel": report.kernel, "compiler": compiled_by, "registers": report.registers,
            "loop": total, "ffma": ffma, "ldg": ldg, "per_ffma": total / ffma}


def twin_reports() -> list:
    """nvcc -O3 compile reports of the sources' naive kernels ([] where nvcc is not installed)."""
    try:
        return [twins.compile_report(t) for t in SASS_TWINS]
    except FileNotFoundError:
        return []


def sass_rows() -> list[dict]:
    """One row per Numba kernel and nvcc twin: the hottest loop's instruction counts."""
    rows = [loop_row(compiler.report(k)[0], "Numba") for k in SASS_NUMBA]
    return rows + [loop_row(r, "nvcc -O3") for r in twin_reports()]


def sass_table():
    """The hottest loops of the literal and typed Numba kernels and of nvcc's twins."""
    return page.table(sass_rows(), ["kernel", "compiler", "registers", "loop", "ffma", "ldg",
                                    "per_ffma"],
                      {"loop": "loop instructions", "ffma": "FFMA", "ldg": "LDG",
                       "per_ffma": "per FFMA"})


def mix_table():
    """The hottest loop's instructions by opcode: literal and typed Numba kernels, the RTX 3090 tutorial's
    kernel under nvcc."""
    mixes = {k: compiler.report(k)[0].loop_mix for k in SASS_NUMBA}
    for r in twin_reports()[:1]:
        mixes[r.kernel] = r.loop_mix
    opcodes = []
    for mix in mixes.values():
        opcodes += [op for op in mix if op not in opcodes]
    rows = [{"opcode": op, **{k: mix.get(op, 0) for k, mix in mixes.items()}} for op in opcodes]
    busiest = sorted(range(len(rows)), key=lambda i: -max(rows[i][k] for k in mixes))[:10]
    return page.table(rows, ["opcode", *mixes], show=sorted(busiest))


def ratio_table(pairs=PAIRS):
    """Numba against CUDA C, kernel by kernel (:func:`lab.chapters.common.ratio_table`)."""
    return common.ratio_table(pairs)


# ----------------------------------------------------------------------------- beside the seeds

def seed_rows() -> list[dict]:
    """The naive kernel measured here at 1024³ and 4096³, and as the T4 (the T4 study) and the
    RTX 3090 (the RTX 3090 tutorial) ran it; the last column is each time's share of that GPU's FP32 roof."""
    size = measured()
    roof = roofline.measured()["fma_tflops"]
    seed_roof = {m["source"]: m["tflops"] for m in seeds.MACHINES}
    rows = []
    for n in SIZES:
        r = size[("naive", n)]
        rows.append({"gpu": gpu(), "source": "naive_tiled results", "n": n,
                     "ms": r["median_ms"], "tflops": r["tflops"],
                     "roof": 100 * r["tflops"] / roof})
    t4 = seeds.NAIVE_T4[0]
    rows.append({"gpu": t4["gpu"], "source": t4["source"], "n": t4["n"], "ms": t4["ms"],
                 "tflops": t4["tflops"], "roof": 100 * t4["tflops"] / seed_roof["the T4 study"]})
    for s in seeds.NAIVE_TILED_3090:
        if s["n"] in SIZES:
            tf = s["naive_gflops"] / 1e3
            rows.append({"gpu": seeds.GPU_3090, "source": "the RTX 3090 tutorial", "n": s["n"],
                         "ms": s["naive_ms"], "tflops": tf,
                         "roof": 100 * tf / seed_roof["the RTX 3090 tutorial"]})
    return rows


def seed_table():
    """The naive kernel here and on the sources' GPUs."""
    return page.table(seed_rows(), ["gpu", "source", "n", "ms", "tflops", "roof"],
                      {"gpu": "GPU", "ms": "time (ms)", "tflops": "TFLOP/s",
                       "roof": "% FP32 roof"}, source=results.source_line("naive_tiled"))


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


# ----------------------------------------------------------------------------- seed 003's tables

def metrics_rows() -> list[dict]:
    """The RTX 3090 tutorial's "typical naive kernel" ranges beside the selected GPU's numbers at 1024³."""
    n = 1024
    r = measured()[("naive", n)]
    m = seeds.NAIVE_METRICS_003
    return [
        {"metric": "kernel time", "seed": f"{m['ms']} ms", "ours": f"{r['median_ms']:.3f} ms"},
        {"metric": "throughput", "seed": f"{m['gflops']} GFLOP/s",
         "ours": f"{r['tflops']:.2f} TFLOP/s"},
        {"metric": "global loads", "seed": m["global_loads"],
         "ours": f"2n³ = {2 * n ** 3 / 1e9:.2f} billion (model)"},
        {"metric": "arithmetic intensity", "seed": m["intensity"],
         "ours": f"{model.naive_intensity(4):.2f} FLOP/byte (model)"},
        {"metric": "data reuse", "seed": m["reuse"], "ours": "none in the kernel; caches only"},
    ]


def metrics_table():
    """The RTX 3090 tutorial's naive-kernel metrics, recomputed."""
    return page.table(metrics_rows(), ["metric", "seed", "ours"],
                      {"seed": "the RTX 3090 tutorial (any GPU)", "ours": f"{gpu()}, 1024³"},
                      source=results.source_line("naive_tiled"))


def bandwidth_rows() -> list[dict]:
    """Effective bandwidth (the model's global reads ÷ measured time) here and on the RTX 3090 tutorial's
    RTX 3090, once as the seed states it and once from its own bytes and times."""
    n = 1024
    size = measured()
    read = roofline.measured()["read_gbps"]
    rows = []
    for kernel, tile in (("naive", 1), ("tiled16", 16)):
        reads = 4 * model.tiled_global_loads(n, tile)
        ms = size[(kernel, n)]["median_ms"]
        gbps = reads / (ms * 1e-3) / 1e9
        rows.append({"kernel": kernel, "gpu": gpu(), "reads": reads / 1e9, "ms": ms,
                     "gbps": gbps, "roof": 100 * gbps / read})
    by_size = {x["n"]: x for x in seeds.NAIVE_TILED_3090}[n]
    for s in seeds.BANDWIDTH_003:
        ms = by_size["naive_ms"] if s["kernel"] == "naive" else by_size["tiled_ms"]
        rows.append({"kernel": s["kernel"], "gpu": "RTX 3090, as the RTX 3090 tutorial states",
                     "reads": s["global_reads_gb"], "ms": None,
                     "gbps": f"~{s['effective_gbps']}", "roof": f"~{s['pct_of_peak']}"})
        implied = s["global_reads_gb"] / (ms * 1e-3)
        rows.append({"kernel": s["kernel"], "gpu": "RTX 3090, its GB ÷ its ms",
                     "reads": s["global_reads_gb"], "ms": ms, "gbps": implied,
                     "roof": 100 * implied / seeds.PEAK_GBPS_3090})
    return rows


def bandwidth_table():
    """The RTX 3090 tutorial's bandwidth table, recomputed (read roof: chapter 0's streaming read; the RTX
    3090's: its 936 GB/s peak as the RTX 3090 tutorial states it)."""
    return page.table(bandwidth_rows(), ["kernel", "gpu", "reads", "ms", "gbps", "roof"],
                      {"gpu": "GPU", "reads": "reads (GB)", "ms": "time (ms)",
                       "gbps": "GB/s", "roof": "% read roof"},
                      source=results.source_line("naive_tiled"))


# ----------------------------------------------------------------------------- DRAM, counted

def ncu_table(kernels=("naive", "naive_swapped", "naive_literal")):
    """Bytes the model counts, bytes the SMs read from L2 and bytes read from DRAM (ncu)."""
    rows = ncu_rows()
    out = []
    for r in rows:
        if r["kernel"] not in kernels:
            continue
        row = {"kernel": r["kernel"], "model": model_reads(r["kernel"], r["n"]) / 1e6}
        if ncu_ok():
            row.update({"l2": r["l2_read_bytes"] and r["l2_read_bytes"] / 1e6,
                        "dram": r["dram_read_bytes"] / 1e6,
                        "per_l2": (model_reads(r["kernel"], r["n"]) / r["l2_read_bytes"]
                                   if r["l2_read_bytes"] else None),
                        "per_dram": model_reads(r["kernel"], r["n"]) / r["dram_read_bytes"]})
        out.append(row)
    return page.table(out, ["kernel", "model", "l2", "dram", "per_l2", "per_dram"],
                      {"model": "model (MB)", "l2": "from L2 (MB)", "dram": "DRAM read (MB)",
                       "per_l2": "model / L2",
                       "per_dram": "model / DRAM"},
                      source=results.source_line("ncu_dram"))


# ----------------------------------------------------------------------------- this GPU

def measure_here(kernels=MAPPINGS):
    """On a GPU: the naive kernels timed here beside the H200 reference
    (:func:`lab.chapters.common.measure_here`); nothing in the simulator."""
    return common.measure_here(kernels)


# ----------------------------------------------------------------------------- glued values

def values() -> dict:
    """Every number the chapter's prose quotes, as strings."""
    size = measured()
    roofs = roofline.measured()
    v = {"gpu": gpu(), "sm_count": str(roofs["sm_count"]),
         "resident_per_sm": f"{model.SM90_LIMITS['threads']:,}",
         "resident": f"{model.SM90_LIMITS['threads'] * roofs['sm_count']:,}"}
    launch = launch_rows()
    v["oversub_1024"] = f"{launch[0]['per_resident']:.1f}"
    v["oversub_4096"] = f"{launch[1]['per_resident']:.0f}"

    per_k = {m: load_sectors(m) for m in MAPPINGS}
    per_8k = {m: load_sectors(m, 8) for m in MAPPINGS}
    v["sectors_naive"] = str(per_k["naive"])
    v["sectors_swapped"] = str(per_k["naive_swapped"])
    v["sectors8_naive"] = str(per_8k["naive"])
    v["sectors8_swapped"] = str(per_8k["naive_swapped"])
    v["sector_ratio"] = f"{per_k['naive_swapped'] / per_k['naive']:.2f}"

    sass = {r["kernel"]: r for r in sass_rows()}
    lit_mix = compiler.report("naive_literal")[0].loop_mix
    literal, typed, twin = (sass.get(name, {}) for name in ("naive_literal", "naive", "s003_naive"))
    v["loop_literal"] = str(literal.get("loop", "-"))
    v["ffma_literal"] = str(literal.get("ffma", "-"))
    v["ldg_literal"] = str(literal.get("ldg", "-"))
    v["loop_typed"] = str(typed.get("loop", "-"))
    v["ffma_typed"] = str(typed.get("ffma", "-"))
    v["ldg_typed"] = str(typed.get("ldg", "-"))
    v["loop_twin"] = str(twin.get("loop", "-"))
    v["ffma_twin"] = str(twin.get("ffma", "-"))
    v["ldg_twin"] = str(twin.get("ldg", "-"))
    v["sel_literal"] = str(sum(c for op, c in lit_mix.items() if op.endswith("SEL")))

    ratio = {(r["numba"], r["twin"], r["n"]): r["ratio"] for r in ratio_rows(PAIRS)}
    v["ratio_naive_1024"] = f"{ratio[('naive', 's003_naive', 1024)]:.2f}"
    v["ratio_naive_4096"] = f"{ratio[('naive', 's003_naive', 4096)]:.2f}"
    v["slowdown_literal"] = f"{1 / ratio[('naive_literal', 's003_naive', 1024)]:.1f}"
    worst = min(r for (k, _, _), r in ratio.items() if k != "naive_literal" and r)
    v["ratio_worst"] = f"{worst:.2f}"

    h1024, h4096 = size[("naive", 1024)], size[("naive", 4096)]
    t4 = seeds.NAIVE_T4[0]
    rtx = {s["n"]: s for s in seeds.NAIVE_TILED_3090}[1024]
    v["naive_ms_1024"] = f"{h1024['median_ms']:.3f}"
    v["naive_tflops_1024"] = f"{h1024['tflops']:.2f}"
    v["naive_tflops_4096"] = f"{h4096['tflops']:.2f}"
    v["naive_roof_share"] = f"{h4096['tflops'] / roofs['fma_tflops']:.0%}"
    v["naive_vs_t4"] = f"{t4['ms'] / h1024['median_ms']:.0f}"
    v["naive_vs_3090"] = f"{rtx['naive_ms'] / h1024['median_ms']:.0f}"
    v["t4_roof_share"] = f"{t4['tflops'] / seeds.MACHINES[0]['tflops']:.0%}"

    swaps = swap_rows()
    v["swap_1024"] = f"{swaps[0]['ratio']:.2f}"
    v["swap_4096"] = f"{next(r for r in swaps if r['n'] == 4096 and r['kernels'] == 'Numba')['ratio']:.2f}"
    v["swap_t4"] = f"{seeds.SWAPPED_SLOWDOWN_T4:.2f}"
    v["t4_l2_mb"] = f"{seeds.L2_T4_BYTES / 2**20:.0f} MiB"
    v["footprint_1024"] = f"{3 * 4 * 1024 ** 2 / 1e6:.1f}"
    v["l2"] = f"{l2_bytes() / 2**20:.0f} MiB"

    rows = sweep_rows()
    inside = [r for r in rows if r["fits"]]
    outside = [r for r in rows if not r["fits"]]
    v["n_first"] = str(rows[0]["n"])
    v["n_last_fit"] = str(inside[-1]["n"]) if inside else "-"
    v["ratio_in_lo"] = f"{min(r['ratio'] for r in inside):.2f}" if inside else "-"
    v["ratio_in_hi"] = f"{max(r['ratio'] for r in inside):.2f}" if inside else "-"
    v["ratio_out_lo"] = f"{min(r['ratio'] for r in outside):.2f}" if outside else "-"
    v["ratio_out_hi"] = f"{max(r['ratio'] for r in outside):.2f}" if outside else "-"
    v["ratio_largest"] = f"{rows[-1]['ratio']:.2f}"
    v["n_largest"] = str(rows[-1]["n"])
    mean_in = sum(r["ratio"] for r in inside) / max(len(inside), 1)
    mean_out = sum(r["ratio"] for r in outside) / max(len(outside), 1)
    step = mean_out / mean_in if inside and outside else 1.0
    v["sweep_trend"] = ("rises" if step > 1.15 else "falls" if step < 1 / 1.15
                        else "stays about the same")
    lo, hi = min(r["ratio"] for r in rows), max(r["ratio"] for r in rows)
    if step > 1.15:
        v["sweep_reading"] = (
            "The step at the L2 line is the second cost: once the operands no longer fit, "
            "the swapped kernel's evicted sectors come back from HBM, and the L2 is what kept "
            "the penalty smaller below the line.")
        v["swap_takeaway"] = "more once the operands outgrow the L2"
    else:
        v["sweep_reading"] = (
            "There is no step at the L2 line, so the swap does not cost DRAM bytes here: the "
            "sectors it needs again are still in the L1 or the L2 at every size. What it costs "
            f"is requests, {per_k['naive_swapped']} sectors per load step where the sources' "
            f"mapping needs {per_k['naive']}, which the L1 works through one after another "
            f"whatever the L2 holds. The measured slowdown, {lo:.1f} to {hi:.1f} across the "
            f"sizes, is of the order of that request ratio "
            f"({per_k['naive_swapped'] / per_k['naive']:.2f}), and so is the T4's "
            f"{seeds.SWAPPED_SLOWDOWN_T4:.2f}. A large L2 does not rescue an uncoalesced kernel.")
        v["swap_takeaway"] = "about as much on either side of the L2 line"

    bw = bandwidth_rows()
    stated = seeds.BANDWIDTH_003[0]
    v["eff_bw_naive"] = f"{bw[0]['gbps'] / 1e3:.1f}"
    v["eff_bw_share"] = f"{bw[0]['roof']:.0f}%"
    v["read_tbps"] = f"{roofs['read_gbps'] / 1e3:.2f}"
    v["eff_bw_3090"] = f"{bw[3]['gbps']:,.0f}"
    v["eff_bw_3090_share"] = f"{bw[3]['roof']:.0f}%"
    v["seed_naive_ms_at_700"] = f"{stated['global_reads_gb'] / stated['effective_gbps'] * 1e3:.0f}"
    v["seed_bw_stated"] = f"{stated['effective_gbps']}"
    v["seed_reads"] = f"{stated['global_reads_gb']:g}"
    v["seed_naive_ms"] = f"{rtx['naive_ms']:g}"
    v["peak_3090"] = f"{seeds.PEAK_GBPS_3090}"
    v["model_reads_gb"] = f"{model_reads('naive', 1024) / 1e9:.1f}"
    v["naive_intensity"] = f"{model.naive_intensity(4):.2f}"
    v["naive_dram_roof"] = f"{model.naive_intensity(4) * roofs['read_gbps'] / 1e3:.1f}"

    v.update(_ncu_values())
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def _ncu_values() -> dict:
    rows = ncu_rows()
    if not ncu_ok():
        return {"ncu_status": "Nsight Compute could not read this GPU's counters, so only the "
                              "model's column is shown",
                "ncu_sentence": "Without the counters, the effective-bandwidth argument above "
                                "is the evidence that caches absorb most of the model's traffic."}
    by = {r["kernel"]: r for r in rows}
    nv, sw = by["naive"], by["naive_swapped"]
    n = nv["n"]
    one_pass = 4 * 2 * n ** 2
    size = measured()
    passes = nv["dram_read_bytes"] / one_pass
    l1_share = 1 - nv["l2_read_bytes"] / model_reads("naive", n)
    sentence = (
        f"The naive kernel's {model_reads('naive', n) / 1e9:.1f} GB of requests shrink to "
        f"{nv['l2_read_bytes'] / 1e6:,.0f} MB read from L2 (the L1 answered {l1_share:.0%} of "
        f"them) and to {nv['dram_read_bytes'] / 1e6:.1f} MB read from DRAM, "
        f"{passes:.2f} times one pass over A and B"
        + (": at this size the operands stay in the caches, and the model's 2n³ is traffic the "
           "kernel generates, not traffic DRAM sees. " if passes < 1.5 else ". ")
        + f"The swapped kernel reads {sw['l2_read_bytes'] / nv['l2_read_bytes']:.2f} times as "
        f"much from L2 and {sw['dram_read_bytes'] / nv['dram_read_bytes']:.2f} times as much "
        f"from DRAM as the sources' mapping, yet takes "
        f"{size[('naive_swapped', n)]['median_ms'] / size[('naive', n)]['median_ms']:.1f} times "
        "as long: its extra cost is in the L1's handling of requests, as the sweep suggested. "
        f"DRAM writes are almost nil (at most {max(r['dram_write_bytes'] or 0 for r in rows):g} "
        f"bytes) because C ({4 * n ** 2 / 1e6:.1f} MB) is still in the write-back L2 when the "
        "profiled launch ends.")
    return {"ncu_status": "Nsight Compute counted every kernel", "ncu_sentence": sentence,
            "ncu_n": str(n), "one_pass_mb": f"{one_pass / 1e6:.1f}"}
