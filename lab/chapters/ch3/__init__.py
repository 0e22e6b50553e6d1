"""Chapter 3, registers: each thread keeps a P × P patch of C in registers.

What the notebook shows, one function per table, figure or set of glued values: the per-thread
model of the patch (:mod:`lab.model`), the kernels checked against float64 (:mod:`lab.bench`),
the register bill and the hottest loop from the compiler (:mod:`lab.compiler`, sm_90, the
pinned ``ptxas``), the selected GPU's ``patch_sweep`` results beside the signed-index build,
the CUDA C twin of the T4 study's register kernel, and the T4 study's T4 numbers (:mod:`lab.seeds`).

Compiler facts come from :mod:`lab.compiler`'s committed store, so they are the same on every
machine; :func:`report` names the function a table reads.
"""
from __future__ import annotations

from lab import bench, model, page, results, seeds, twins
from lab.chapters import common
from lab.chapters.common import example_inputs, verdict  # noqa: F401  (the notebook's run cell)
from lab.chapters.common import loop_counts, report
from lab.kernels import k03_registers

#: The chapter's kernels: the sweep (16 × 16 threads, BK 16) and the 128 × 128 block tile.
KERNELS = ("patch1", "patch2", "patch4", "patch8", "block128")
#: Patch size of each kernel.
PATCH = {"patch1": 1, "patch2": 2, "patch4": 4, "patch8": 8, "block128": 8}
#: The first, signed-index build of each kernel (unregistered; compiled offline only).
SIGNED = {name: f"lab.kernels.k03_registers:int32_{name}" for name in KERNELS}
#: The CUDA C twin of seed 004's register kernel, and the Numba kernel it twins.
TWIN, TWIN_OF = "s004_regs4", "patch4"
#: Threads per block in every kernel of the chapter.
BLOCK_THREADS = k03_registers.THREADS ** 2
#: Shared-memory banks per SM and bytes per bank per clock (sm_90).
BANKS, BANK_BYTES = 32, 4

#: Correctness checks: shapes just past a block tile (every edge path) and one round shape.
CHECKS = (("patch1", (17, 9, 20)), ("patch2", (33, 10, 17)), ("patch4", (65, 20, 17)),
          ("patch4", (64, 64, 32)), ("block128", (129, 20, 9)))

#: Predictions written before the unsigned build was measured: (from, to, low, high) for the
#: speed-up of each step of the sweep.
PREDICTIONS = (("patch1", "patch2", 1.3, 2.0), ("patch2", "patch4", 1.3, 2.0),
               ("patch4", "patch8", 1.0, 1.4), ("patch8", "block128", 0.9, 1.1))

#: The pairs of chapters 1-2 (Numba kernel, CUDA C twin) timed in ``naive_tiled``: every twin
#: in :mod:`lab.twins` but the register kernel's, in the order the twins are listed there.
EARLIER_TWINS = tuple((t.twin_of, t.name) for t in twins.TWINS.values() if t.name != TWIN)


# ----------------------------------------------------------------------------- compiler facts

def compile_targets() -> list[str]:
    """Everything the chapter compiles: the five kernels, their signed builds, and the twin."""
    return list(KERNELS) + list(SIGNED.values()) + [f"twin:{TWIN}"]


def prefetch(targets=None) -> None:
    """Make sure the compiler facts of ``targets`` (default :func:`compile_targets`) are at hand
    (:func:`lab.chapters.common.prefetch`)."""
    common.prefetch(targets or compile_targets())


def compiler_rows(signed: bool = False) -> list[dict]:
    """One row per kernel: registers, spills, stack, shared memory, occupancy, hottest loop."""
    rows = []
    for name in KERNELS:
        r = report(SIGNED[name] if signed else name)
        occ = model.occupancy(BLOCK_THREADS, r.registers, r.shared_bytes)
        rows.append({"kernel": name, "registers": r.registers, "spills": r.spill_stores,
                     "stack": r.stack_bytes, "shared": r.shared_bytes,
                     "blocks": occ["blocks_per_sm"], "warps": occ["warps_per_sm"],
                     **loop_counts(r)})
    return rows


# ----------------------------------------------------------------------------- model and checks

def model_rows() -> list[dict]:
    """The step-by-step model/004's per-thread model for each patch size of the sweep."""
    rows = []
    for p in k03_registers.PATCHES:
        r = k03_registers.patch_facts(p)
        tile = k03_registers.THREADS * p
        rows.append(dict(r, patch=f"{p}×{p}", block_tile=f"{tile}×{tile}"))
    return rows


def model_table():
    """Patch size, block tile, accumulators, shared reads per FMA and shared intensity."""
    return page.table(model_rows(), ["patch", "block_tile", "accumulators",
                                     "smem_reads_per_fma", "smem_intensity"],
                      {"block_tile": "block tile", "smem_reads_per_fma": "shared reads / FMA",
                       "smem_intensity": "shared FLOP/B"})


def check_rows() -> list[dict]:
    """Each check of :data:`CHECKS` on fresh random inputs against float64."""
    rows = []
    for name, (m, n, k) in CHECKS:
        v = bench.check(name, m, n, k)
        rows.append({"kernel": name, "shape": f"{m}×{n}×{k}",
                     "tile": "{0}×{0}".format(16 * PATCH[name]) if name != "block128"
                     else "128×128",
                     "verdict": "PASS" if v.passed else f"FAIL ({v.reason})"})
    return rows


def check_table():
    """The verdicts of :func:`check_rows` (M×N×K, block tile, PASS/FAIL)."""
    return page.table(check_rows(), ["kernel", "shape", "tile", "verdict"],
                      {"shape": "M×N×K", "tile": "block tile"})


def bill_table():
    """The register bill: registers, spills, stack, shared memory and the occupancy they allow."""
    return page.table(compiler_rows(), ["kernel", "registers", "spills", "stack", "shared",
                                        "blocks", "warps"],
                      {"spills": "spills (B)", "stack": "stack (B)", "shared": "shared (B)",
                       "blocks": "blocks/SM", "warps": "warps/SM"},
                      source="Source: lab/facts/compiler.json (ptxas -v, sm_90, pinned "
                             "wheels); occupancy from the sm_90 limits for 256-thread blocks.")


def loop_table():
    """The hottest loop of each kernel: instructions, FFMA, FFMA share, shared loads."""
    return page.table(compiler_rows(), ["kernel", "loop", "ffma", "share", "lds"],
                      {"loop": "instructions", "ffma": "FFMA", "share": "FFMA share",
                       "lds": "shared loads"},
                      source="Source: lab/facts/compiler.json (nvdisasm of the sm_90 binary); "
                             "the loop is the backward branch with the most FFMA.")


def signed_table():
    """Signed against unsigned indices, from the compiler: registers, warps, FFMA share."""
    rows = []
    for s, u in zip(compiler_rows(signed=True), compiler_rows()):
        rows.append({"kernel": s["kernel"], "regs_s": s["registers"], "regs_u": u["registers"],
                     "warps_s": s["warps"], "warps_u": u["warps"], "share_s": s["share"],
                     "share_u": u["share"]})
    return page.table(rows, ["kernel", "regs_s", "regs_u", "warps_s", "warps_u", "share_s",
                             "share_u"],
                      {"regs_s": "regs int32", "regs_u": "regs uint32",
                       "warps_s": "warps int32", "warps_u": "warps uint32",
                       "share_s": "FFMA share int32", "share_u": "FFMA share uint32"})


def loop_mix_table(name: str = "patch1"):
    """The hottest loop of ``name``, signed and unsigned, instruction by instruction."""
    signed, unsigned = report(SIGNED[name]).loop_mix, report(name).loop_mix
    ops = sorted(set(signed) | set(unsigned), key=lambda op: (-max(signed.get(op, 0),
                                                                  unsigned.get(op, 0)), op))
    rows = [{"op": op, "s": signed.get(op, 0), "u": unsigned.get(op, 0)} for op in ops
            if max(signed.get(op, 0), unsigned.get(op, 0)) >= 3]
    shown = {r["op"] for r in rows}
    rows.append({"op": "other", "s": sum(c for op, c in signed.items() if op not in shown),
                 "u": sum(c for op, c in unsigned.items() if op not in shown)})
    rows.append({"op": "total", "s": sum(signed.values()), "u": sum(unsigned.values())})
    return page.table(rows, ["op", "s", "u"], {"op": "instruction", "s": f"{name} int32",
                                                "u": f"{name} uint32"})


#: What the shown patch kernel folds away: what chapter 2's tiled kernel already did.
FOLDED = {"patch_indices": "sizes, thread and block indices, as chapter 2 (uint32)",
          "patch_load": "load phase as chapter 2: A and B tiles to shared memory, zero-filled"}


def source(region: str):
    """A named region of ``lab/kernels/k03_registers.py``, highlighted; the patch kernel with
    what chapter 2 already did folded to one line each."""
    return page.source(k03_registers, region, fold=FOLDED if region == "patch_kernel" else None)


# ----------------------------------------------------------------------------- measurements

def _impl(r: dict) -> str:
    """Who computed a results row: "numba", "twin" or "cublas" (older rows carry no ``impl``)."""
    return r.get("impl") or ("cublas" if r["kernel"].startswith("cublas") else "numba")


def sweep() -> dict:
    """The selected GPU's ``patch_sweep`` rows: ``ours`` by kernel, ``cublas``, ``twin``."""
    rows = results.rows("patch_sweep")
    return {"ours": {r["kernel"]: r for r in rows if _impl(r) == "numba"},
            "cublas": next((r for r in rows if _impl(r) == "cublas"), None),
            "twin": next((r for r in rows if _impl(r) == "twin" and r["kernel"] == TWIN
                          and "median_ms" in r), None)}


def signed_sweep() -> dict:
    """The signed-index build's rows (``patch_sweep_int32``) by kernel."""
    return {r["kernel"]: r for r in results.rows("patch_sweep_int32") if _impl(r) == "numba"}


def gpu_name() -> str:
    """The measured GPU's short name (``"H200"``), from the results file's provenance."""
    return page.gpu_label(results.load("patch_sweep")["provenance"]["gpu"])


def same_build() -> bool:
    """Whether the measured rows' ptxas register counts equal today's compile."""
    ours = sweep()["ours"]
    return all(ours.get(n, {}).get("regs_ptxas") == report(n).registers for n in KERNELS)


def measured_table():
    """The sweep as measured: median/min/max, TFLOP/s, % of cuBLAS, warps per SM."""
    s = sweep()
    rows = [s["ours"][n] for n in KERNELS if n in s["ours"]] + [s["cublas"]]
    rows = [dict(r, kernel="cuBLAS FP32" if _impl(r) == "cublas" else r["kernel"],
                 warps_per_sm=r.get("warps_per_sm")) for r in rows if r]
    return page.table(rows, ["kernel", "median_ms", "min_ms", "max_ms", "tflops", "pct_cublas",
                             "warps_per_sm"],
                      {"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)",
                       "tflops": "TFLOP/s", "pct_cublas": "% cuBLAS",
                       "warps_per_sm": "warps/SM"},
                      source=results.source_line("patch_sweep"))


def signed_measured_table():
    """The signed and the unsigned build side by side, TFLOP/s."""
    before = signed_sweep()
    ours = sweep()["ours"]
    rows = [{"kernel": n, "signed": before[n]["tflops"], "unsigned": ours[n]["tflops"],
             "gain": ours[n]["tflops"] / before[n]["tflops"]}
            for n in KERNELS if n in before and n in ours]
    return page.table(rows, ["kernel", "signed", "unsigned", "gain"],
                      {"signed": "int32 TFLOP/s", "unsigned": "uint32 TFLOP/s",
                       "gain": "speed-up"},
                      source=results.source_line("patch_sweep_int32") + " "
                      + results.source_line("patch_sweep"))


def fp32_roof() -> float:
    """The measured FP32 roof of the selected GPU (``roofline``, FMA chains), TFLOP/s."""
    return next(r["tflops"] for r in results.rows("roofline") if r["kernel"] == "fma_chains")


def step_rows() -> list[dict]:
    """Each step of the sweep: predicted and measured speed-up, FFMA share and warps."""
    ours, rows = sweep()["ours"], []
    for a, b, lo, hi in PREDICTIONS:
        g = ours[b]["tflops"] / ours[a]["tflops"]
        rows.append({"step": f"{a} → {b}", "predicted": f"{lo}–{hi}", "measured": g,
                     "verdict": "within" if lo <= g <= hi else ("above" if g > hi else "below"),
                     "share": f"{loop_counts(report(a))['share']:.2f} → "
                              f"{loop_counts(report(b))['share']:.2f}",
                     "warps": f"{ours[a]['warps_per_sm']} → {ours[b]['warps_per_sm']}"})
    return rows


def step_table():
    """:func:`step_rows` as a table."""
    return page.table(step_rows(), ["step", "predicted", "measured", "verdict", "share", "warps"],
                      {"predicted": "predicted ×", "measured": "measured ×",
                       "share": "FFMA share", "warps": "warps/SM"},
                      source=results.source_line("patch_sweep"))


def ceiling_rows() -> list[dict]:
    """Issue ceiling (loop FFMA share × FP32 roof) against the measured speed."""
    ours, roof = sweep()["ours"], fp32_roof()
    rows = []
    for n in KERNELS:
        share = loop_counts(report(n))["share"]
        rows.append({"kernel": n, "share": share, "ceiling": share * roof,
                     "tflops": ours[n]["tflops"], "fraction": ours[n]["tflops"] / (share * roof)})
    return rows


def ceiling_table():
    """:func:`ceiling_rows` as a table."""
    return page.table(ceiling_rows(), ["kernel", "share", "ceiling", "tflops", "fraction"],
                      {"share": "loop FFMA share", "ceiling": "ceiling TFLOP/s",
                       "tflops": "measured TFLOP/s", "fraction": "measured / ceiling"},
                      source=results.source_line("roofline") + " "
                      + results.source_line("patch_sweep"))


def twin_compile_table():
    """``patch4`` (Numba) beside its CUDA C twin (nvcc -O3): registers and the hottest loop."""
    rows = []
    for target, who in ((TWIN_OF, "Numba"), (f"twin:{TWIN}", "nvcc -O3")):
        r = report(target)
        rows.append({"kernel": r.kernel, "compiler": who, "registers": r.registers,
                     **loop_counts(r)})
    return page.table(rows, ["kernel", "compiler", "registers", "loop", "ffma", "share", "lds"],
                      {"loop": "loop instr.", "ffma": "FFMA", "share": "FFMA share",
                       "lds": "shared loads"})


def twin_rows() -> list[dict]:
    """Numba against CUDA C at 4096³: chapters 1–2's pairs and the register kernel."""
    size = {(r["kernel"], r["n"]): r for r in results.rows("naive_tiled", part="size")}
    rows = []
    for ours, twin in EARLIER_TWINS:
        mine, theirs = size.get((ours, 4096)), size.get((twin, 4096))
        if mine and theirs:
            rows.append({"ours": ours, "twin": twin, "ours_ms": mine["median_ms"],
                         "twin_ms": theirs["median_ms"],
                         "ratio": theirs["median_ms"] / mine["median_ms"]})
    s = sweep()
    mine, theirs = s["ours"].get(TWIN_OF), s["twin"]
    if mine and theirs:
        rows.append({"ours": TWIN_OF, "twin": TWIN, "ours_ms": mine["median_ms"],
                     "twin_ms": theirs["median_ms"],
                     "ratio": theirs["median_ms"] / mine["median_ms"]})
    return rows


def twin_table():
    """:func:`twin_rows` as a table (twin time ÷ Numba time; ≥ 1: Numba at least as fast)."""
    return page.table(twin_rows(), ["ours", "twin", "ours_ms", "twin_ms", "ratio"],
                      {"ours": "Numba kernel", "twin": "CUDA C twin", "ours_ms": "Numba (ms)",
                       "twin_ms": "twin (ms)", "ratio": "twin ÷ Numba"},
                      source=results.source_line("naive_tiled") + " "
                      + results.source_line("patch_sweep"))


def t4_rows() -> list[dict]:
    """The T4 study's T4 sweep beside the selected GPU's, with the gain of each step."""
    ours = sweep()["ours"]
    name = gpu_name()
    rows, prev_t4, prev_ours = [], None, None
    for s in seeds.PATCH_SWEEP_T4:
        r = ours.get(f"patch{s['patch']}", {})
        t = r.get("tflops")
        rows.append({"patch": f"{s['patch']}×{s['patch']}", "t4_regs": s["regs_estimate"],
                     "t4": s["tflops"], "t4_gain": s["tflops"] / prev_t4 if prev_t4 else None,
                     "regs": report(f"patch{s['patch']}").registers, "ours": t,
                     "gain": t / prev_ours if (t and prev_ours) else None, "gpu": name})
        prev_t4, prev_ours = s["tflops"], t
    return rows


def t4_table():
    """:func:`t4_rows` as a table; the T4 columns are the T4 study's, its registers estimates."""
    name = gpu_name()
    return page.table(t4_rows(), ["patch", "t4_regs", "t4", "t4_gain", "regs", "ours", "gain"],
                      {"t4_regs": "T4 regs (est.)", "t4": "T4 TFLOP/s", "t4_gain": "T4 gain",
                       "regs": "regs (ptxas)", "ours": f"{name} TFLOP/s",
                       "gain": f"{name} gain"},
                      source="T4 columns: the T4 study (Tesla T4, 1024³; registers estimated from "
                             "the kernel's variables). " + results.source_line("patch_sweep"))


def intensity_rows() -> list[dict]:
    """The step-by-step model's two intensities for each kernel, and the shared bandwidth the measured
    speed would need if every operand came from shared memory at that intensity."""
    ours, rows = sweep()["ours"], []
    for name in KERNELS:
        p, t = PATCH[name], ours[name]["tflops"]
        tile = 128 if name == "block128" else k03_registers.THREADS * p
        rows.append({"kernel": name, "l2": model.tile_intensity(tile),
                     "smem": model.smem_intensity(p), "tflops": t,
                     "need": t / model.smem_intensity(p)})
    return rows


def intensity_table():
    """:func:`intensity_rows` as a table."""
    return page.table(intensity_rows(), ["kernel", "l2", "smem", "tflops", "need"],
                      {"l2": "L2 FLOP/B (model)", "smem": "shared FLOP/B (model)",
                       "tflops": "TFLOP/s", "need": "shared TB/s needed"},
                      source=results.source_line("patch_sweep"))


def shared_peak_tbps() -> float:
    """Shared-memory bandwidth of the measured GPU: SMs × banks × 4 B × the maximum clock."""
    p = results.load("patch_sweep")["provenance"]
    return p["sm_count"] * BANKS * BANK_BYTES * float(p["max_sm_clock_mhz"]) * 1e6 / 1e12


# ----------------------------------------------------------------------------- figures

def patch_figure(p: int = 4, thread=(5, 9), k: int = 6):
    """Concept figure: the A and B tiles in shared memory and the C block tile of a
    ``p`` × ``p`` patch kernel (16 × 16 threads, BK 16), one thread's patch, and the p + p
    values it reads at one ``k``. Geometry only, no measurement."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    threads, bk = k03_registers.THREADS, 16
    tile = threads * p
    ty, tx = thread
    gap = 6
    fig, ax = plt.subplots(figsize=(6.4, 5.4), dpi=110)

    def box(x, y, w, h, label=None, **kw):
        ax.add_patch(Rectangle((x, y), w, h, label=label, **kw))

    cx, cy = bk + gap, bk + gap                      # C block tile's corner
    # A tile (tile × bk) left of C, B tile (bk × tile) above it
    box(0, cy, bk, tile, facecolor="#eef3fb", edgecolor="0.3", linewidth=1)
    box(cx, 0, tile, bk, facecolor="#eef3fb", edgecolor="0.3", linewidth=1)
    box(cx, cy, tile, tile, facecolor="white", edgecolor="0.3", linewidth=1)
    for i in range(1, threads):                       # the 16 × 16 thread grid
        ax.plot([cx, cx + tile], [cy + i * p] * 2, color="0.85", linewidth=0.6)
        ax.plot([cx + i * p] * 2, [cy, cy + tile], color="0.85", linewidth=0.6)
    r0, c0 = ty * p, tx * p
    box(k, cy, 1, tile, facecolor="#c9d8f0", edgecolor="none")
    box(cx, k, tile, 1, facecolor="#c9d8f0", edgecolor="none")
    box(k, cy + r0, 1, p, facecolor="C0", edgecolor="none", label=f"{p} values of A at one k")
    box(cx + c0, k, p, 1, facecolor="C2", edgecolor="none", label=f"{p} values of B at one k")
    box(cx + c0, cy + r0, p, p, facecolor="C1", edgecolor="none",
        label=f"one thread's {p}×{p} patch of C ({p * p} accumulators)")
    ax.text(bk / 2, cy - 1.5, f"A tile\n{tile}×{bk}", ha="center", va="bottom", fontsize=8)
    ax.text(cx - 1.5, bk / 2, f"B tile {bk}×{tile}", ha="right", va="center", fontsize=8)
    ax.text(cx + tile / 2, cy + tile + 2.5,
            f"C block tile {tile}×{tile}: {threads}×{threads} threads, {p}×{p} outputs each",
            ha="center", va="top", fontsize=8)
    ax.set_xlim(-1, cx + tile + 1)
    ax.set_ylim(cy + tile + 8, -1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def sweep_figure():
    """TFLOP/s against patch size on the measured GPU: the unsigned build, the signed build,
    the issue ceiling (loop FFMA share × FP32 roof), block128 and cuBLAS FP32."""
    from lab import plots

    s, before, roof = sweep(), signed_sweep(), fp32_roof()
    sweep_names = [n for n in KERNELS if n != "block128"]
    xs = [PATCH[n] for n in sweep_names]
    fig, ax = plots.axes("", "patch per thread (P × P)", "TFLOP/s", logx=True)
    ax.plot(xs, [s["ours"][n]["tflops"] for n in sweep_names],
            label="uint32 indices (measured)", **plots.OURS)
    ax.plot(xs, [before[n]["tflops"] for n in sweep_names],
            label="int32 indices, first build (measured)",
            **{**plots.OURS, "linestyle": "--", "marker": "v", "alpha": 0.7})
    ax.plot(xs, [loop_counts(report(n))["share"] * roof for n in sweep_names],
            label="issue ceiling: loop FFMA share × FP32 roof", color="0.45", linestyle=":",
            marker="x")
    ax.plot([8], [s["ours"]["block128"]["tflops"]], linestyle="none", marker="D",
            color="C3", label="block128 (8×8, BK 8, measured)")
    if s["cublas"]:
        ax.axhline(s["cublas"]["tflops"], color="0.2", linewidth=1.2, linestyle="-.",
                   label="cuBLAS FP32 (measured)")
    ax.set_xticks(xs, [f"{p}×{p}" for p in xs])
    ax.set_ylim(bottom=0)
    return plots.finish(fig, ax)


# ----------------------------------------------------------------------------- glued values

def _f(x: float, digits: int = 1) -> str:
    """A float with ``digits`` decimals, for glued values."""
    return f"{x:.{digits}f}"


def values() -> dict:
    """Every number the chapter's prose quotes, as strings: model, compiler, the selected
    GPU's results and the T4 study's T4 numbers."""
    rows = {r["kernel"]: r for r in compiler_rows()}
    srows = {r["kernel"]: r for r in compiler_rows(signed=True)}
    s, before = sweep(), signed_sweep()
    ours = s["ours"]
    v = {"gpu": gpu_name(), "smem_p1": f"{model.smem_intensity(1):g}",
         "smem_p8": f"{model.smem_intensity(8):g}"}
    v["regs_patch4"] = str(rows["patch4"]["registers"])
    v["regs_patch8"] = str(rows["patch8"]["registers"])
    v["warps_patch4"] = str(rows["patch4"]["warps"])
    v["warps_patch8"] = str(rows["patch8"]["warps"])
    v["blocks_patch8"] = str(rows["patch8"]["blocks"])
    v["loop_patch1"] = str(rows["patch1"]["loop"])
    v["loop_patch8"] = str(rows["patch8"]["loop"])
    v["ffma_patch1"] = str(rows["patch1"]["ffma"])
    v["ffma_patch8"] = str(rows["patch8"]["ffma"])
    v["share_patch1"] = _f(rows["patch1"]["share"], 2)
    v["share_patch2"] = _f(rows["patch2"]["share"], 2)
    v["share_patch4"] = _f(rows["patch4"]["share"], 2)
    v["share_patch8"] = _f(rows["patch8"]["share"], 2)
    v["regs_int32_patch8"] = str(srows["patch8"]["registers"])
    v["warps_int32_patch8"] = str(srows["patch8"]["warps"])
    v["loop_int32_patch1"] = str(srows["patch1"]["loop"])
    v["ffma_int32_patch1"] = str(srows["patch1"]["ffma"])
    v["share_int32_patch8"] = _f(srows["patch8"]["share"], 2)
    v["tflops_block128"] = _f(ours["block128"]["tflops"])
    v["max_spills"] = str(max(r["spills"] + r["stack"] for r in rows.values()))
    v["t4_regs_p8"] = next(t["regs_estimate"] for t in seeds.PATCH_SWEEP_T4 if t["patch"] == 8)
    t4 = {t["patch"]: t["tflops"] for t in seeds.PATCH_SWEEP_T4}
    v["t4_gain_p4_p8"] = f"{100 * (t4[8] / t4[4] - 1):.0f}%"
    v["t4_gain_p2_p4"] = f"{100 * (t4[4] / t4[2] - 1):.0f}%"
    v["t4_roof"] = f"{next(m['tflops'] for m in seeds.MACHINES if m['machine'].startswith('Tesla T4')):g}"
    pred = {(a, b): f"{lo}–{hi}" for a, b, lo, hi in PREDICTIONS}
    v["pred_patch1_patch2"] = pred["patch1", "patch2"]
    v["pred_patch2_patch4"] = pred["patch2", "patch4"]
    v["pred_patch4_patch8"] = pred["patch4", "patch8"]
    v["pred_patch8_block128"] = pred["patch8", "block128"]
    step = {(a, b): row for row, (a, b, *_rest) in zip(step_rows(), PREDICTIONS)}
    v["step_patch1_patch2"] = f"{step['patch1', 'patch2']['measured']:.2f}"
    v["verdict_patch1_patch2"] = step["patch1", "patch2"]["verdict"]
    v["step_patch2_patch4"] = f"{step['patch2', 'patch4']['measured']:.2f}"
    v["verdict_patch2_patch4"] = step["patch2", "patch4"]["verdict"]
    v["step_patch4_patch8"] = f"{step['patch4', 'patch8']['measured']:.2f}"
    v["verdict_patch4_patch8"] = step["patch4", "patch8"]["verdict"]
    v["step_patch8_block128"] = f"{step['patch8', 'block128']['measured']:.2f}"
    v["verdict_patch8_block128"] = step["patch8", "block128"]["verdict"]
    p4, p8 = ours["patch4"], ours["patch8"]
    v["patch_best_pct"] = f"{max(ours[n]['pct_cublas'] for n in KERNELS):.0f}%"
    v["same_build"] = ("match ptxas's counts for today's build" if same_build()
                       else "differ from ptxas's counts for today's build: the rows come from "
                            "an earlier build (re-run `python -m lab measure patch_sweep`)")
    v["int32_p4"] = _f(before["patch4"]["tflops"])
    v["int32_p8"] = _f(before["patch8"]["tflops"])
    v["int32_p8_vs_p4"] = f"{before['patch8']['tflops'] / before['patch4']['tflops']:.2f}"
    v["int32_gain_p8"] = f"{ours['patch8']['tflops'] / before['patch8']['tflops']:.1f}"
    ceil = ceiling_rows()
    v["roof"] = _f(fp32_roof())
    v["ceil_lo"] = f"{min(r['fraction'] for r in ceil):.0%}"
    v["ceil_hi"] = f"{max(r['fraction'] for r in ceil):.0%}"
    twin = report(f"twin:{TWIN}")
    v["regs_twin"] = str(twin.registers)
    v["share_twin"] = _f(loop_counts(twin)["share"], 2)
    v["lds_twin"] = loop_counts(twin)["lds"]
    v["lds_patch4"] = loop_counts(report(TWIN_OF))["lds"]
    if s["twin"]:
        ratio = s["twin"]["median_ms"] / p4["median_ms"]
        v["twin_ratio"] = f"{ratio:.2f}"
        v["twin_tflops"] = _f(s["twin"]["tflops"])
        v["twin_verdict"] = ("at least as fast as" if ratio >= 1
                             else f"at {ratio:.0%} of the speed of")
    else:
        v["twin_ratio"] = v["twin_tflops"] = "(not measured)"
        v["twin_verdict"] = "not yet measured against"
    earlier = [r["ratio"] for r in twin_rows() if r["ours"] != TWIN_OF]
    v["earlier_lo"] = f"{min(earlier):.2f}" if earlier else "-"
    v["earlier_hi"] = f"{max(earlier):.2f}" if earlier else "-"
    peak = shared_peak_tbps()
    need = ours["patch1"]["tflops"] / model.smem_intensity(1)
    prov = results.load("patch_sweep")["provenance"]
    v["smem_need_p1"] = _f(need)
    v["smem_peak"] = _f(peak)
    v["smem_frac_p1"] = f"{need / peak:.0%}"
    v["sm_count"] = str(prov["sm_count"])
    v["max_clock"] = str(prov["max_sm_clock_mhz"])
    v["l2_model_001"] = f"{seeds.REGISTER_MODEL_001['flop_per_byte_l2']:g}"
    v["l2_ours_128"] = f"{model.tile_intensity(128):g}"
    rk = seeds.REGISTER_KERNEL_T4
    v["t4_rk_tflops"] = f"{rk['tflops']:g}"
    v["t4_rk_roof"] = f"{rk['pct_of_roof']:g}%"
    v["t4_rk_naive"] = f"{rk['x_naive']:.1f}"
    v["t4_rk_cublas_x"] = f"{rk['cublas_fp32_tflops'] / rk['tflops']:.2f}"
    v["tflops_patch4"] = _f(p4["tflops"])
    v["p4_roof"] = f"{p4['tflops'] / fp32_roof():.0%}"
    naive = next((r for r in results.rows("naive_tiled", part="size")
                  if r["kernel"] == "naive" and r["n"] == p4["n"]), None)
    v["p4_naive"] = f"{naive['median_ms'] / p4['median_ms']:.1f}" if naive else "-"
    v["p4_cublas_x"] = f"{s['cublas']['tflops'] / p4['tflops']:.2f}" if s["cublas"] else "-"
    v["other_patch1_pct"] = f"{1 - rows['patch1']['share']:.0%}"
    v["span"] = f"{max(r['ceiling'] for r in ceil) / min(r['ceiling'] for r in ceil):.1f}"
    v["twin_k_per_trip"] = str(loop_counts(twin)["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["patch4_k_per_trip"] = str(rows[TWIN_OF]["ffma"] // (PATCH[TWIN_OF] ** 2))
    v["twin_warps"] = str(s["twin"]["warps_per_sm"]) if s["twin"] else "-"
    params = results.load("patch_sweep")["parameters"]
    v["size"] = str(params["size"])
    v["check_shapes"] = " and ".join(
        f"{m}³" if m == n == k else f"{m} × {n} × {k}" for m, n, k in params["check_shapes"])
    v["sm90_regs"] = f"{model.SM90_LIMITS['registers']:,}"
    v["sm90_warps"] = str(model.SM90_LIMITS["threads"] // 32)
    v["banks"], v["bank_bytes"] = str(BANKS), str(BANK_BYTES)
    if p8["tflops"] >= p4["tflops"]:
        v["p8_story"] = (f"The 8 × 8 patch wins. It keeps {p8['warps_per_sm']} warps per SM "
                         f"against patch4's {p4['warps_per_sm']}, and that is enough: each "
                         f"warp's loop is {rows['patch8']['share']:.2f} FFMA (patch4: "
                         f"{rows['patch4']['share']:.2f}), and its 64 independent accumulators "
                         "cover the shared-load latency inside the warp")
    else:
        v["p8_story"] = (f"The 8 × 8 patch loses. Its registers leave it {p8['warps_per_sm']} "
                         f"warps per SM against patch4's {p4['warps_per_sm']}, too few to "
                         "cover the latency of its shared loads and barriers, whatever its "
                         "loop's FFMA share")
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())
