"""Chapter 5, tensor cores: the fragment layout of ``mma.sync.m16n8k16``, the rung that only
issues the instruction, the rungs that feed it (shared-memory tiles, warp tiles, a ``cp.async``
pipeline, a swizzled layout), predictions against measurements, the tuning sweep, sizes,
padding, what the instruction itself costs, and the accuracy of 16-bit inputs.

Everything comes from the selected GPU's results files (:func:`lab.results.load` with its
default GPU), the analytic model (:mod:`lab.model`), the NumPy fragment model
(:mod:`lab.fragments`), the offline compiler (:mod:`lab.compiler`) and the sources' quoted numbers
(:mod:`lab.seeds`). The notebook calls one function per table, figure or set of glued values.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from lab import bench, compiler, device, fragments, model, page, plots, results, seeds
from lab.kernels import k08_tc_pipeline, runnable

#: The fed rungs in ladder order (FP16), and the tuned kernel.
FED = ("tc_smem", "tc_warp64", "tc_pipeline", "tc_swizzle", "tc_fp16")
LADDER = ("tc_naive_fp16",) + FED
#: Kernels whose compile facts the chapter shows (the BF16 twins compile to the same code).
COMPILED = ("tc_naive_fp16", "tc_smem", "tc_pipeline", "tc_fp16")
#: Shapes for a check on a GPU: odd sizes just past a tile, and a round one.
CHECK_SHAPES = ((257, 129, 67), (256, 256, 256))
ORDINALS = ("largest", "second largest", "third largest", "fourth largest", "fifth largest",
            "sixth largest")


# ----------------------------------------------------------------------------- the machine

def machine() -> dict:
    """SMs, SM clock, measured streaming-read bandwidth and tensor-core peak of the selected
    GPU: the numbers every prediction of the chapter is built from.

    The peak is the datasheet's where :data:`lab.model.DATASHEET` knows the GPU, else cuBLAS
    FP16's measured 4096³ rate (labelled as such in ``peak_source``).
    """
    tc = results.load("tensor_cores")
    prov = tc["provenance"]
    read = next(r for r in results.load("roofline")["rows"] if r["kernel"] == "stream_read")
    sheet = model.DATASHEET.get(page.gpu_label(prov["gpu"]))
    if sheet:
        peak, source = sheet["tensor_tflops"] * 1e12, "datasheet"
    else:
        peak = next(r for r in tc["rows"] if r["kernel"] == "cublas_fp16"
                    and r.get("part") == "ladder")["tflops"] * 1e12
        source = "cuBLAS FP16, measured"
    return {"gpu": prov["gpu"], "sms": prov["sm_count"],
            "clock_hz": float(prov.get("max_sm_clock_mhz") or prov["sm_clock_mhz"]) * 1e6,
            "l2_bytes": prov.get("l2_bytes"), "read_bps": read["gbps"] * 1e9,
            "peak": peak, "peak_source": source}


# ----------------------------------------------------------------------------- fragments

def fragment_figure():
    """Concept figure: the m16n8k16 operand tiles A (16×16), B (16×8) and C (16×8), every
    element labelled with the lane that holds it (:mod:`lab.fragments`), coloured by group of
    four lanes; lane 0's elements outlined."""
    from matplotlib.patches import Rectangle

    fig, axes = plots.plt.subplots(1, 3, figsize=(7.4, 3.5), dpi=110,
                                   gridspec_kw={"width_ratios": [16, 8, 8]})
    colours = plots.plt.get_cmap("tab10")
    titles = {"A": "A (16×16), indexed [m, k]", "B": "B (16×8), indexed [k, n]",
              "C": "C (16×8), indexed [m, n]"}
    for ax, operand in zip(axes, "ABC"):
        owner = fragments.owner_map(operand)
        rows, cols = owner.shape
        for r in range(rows):
            for c in range(cols):
                lane = int(owner[r, c])
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colours(lane // 4), alpha=0.35,
                                       edgecolor="black" if lane == 0 else "white",
                                       linewidth=1.6 if lane == 0 else 0.5))
                ax.text(c + 0.5, r + 0.5, str(lane), ha="center", va="center", fontsize=5.5)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks([0, cols // 2, cols])
        ax.set_yticks([0, 8, 16])
        ax.tick_params(labelsize=7)
        ax.set_title(titles[operand], fontsize=9)
        ax.set_xlabel({"A": "k", "B": "n", "C": "n"}[operand], fontsize=8)
        ax.set_ylabel({"A": "m", "B": "k", "C": "m"}[operand], fontsize=8)
    fig.tight_layout()
    return fig


def random_tiles(seed: int = 0):
    """A 16×16 FP16 A tile, a 16×8 FP16 B tile and a 16×8 FP32 accumulator, uniform in
    [−1, 1)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    c = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    return a, b, c


def compare_with_numpy(a, b, c, d_regs) -> str:
    """The fragment model's result, unpacked from the lanes' registers, against ``a @ b + c``
    in float64; returns a one-line verdict."""
    exact = a.astype(np.float64) @ b.astype(np.float64) + c
    err = float(np.abs(fragments.c_matrix(d_regs) - exact).max())
    return (f"max |model − (A @ B + C)| = {err:.1e} over {exact.size} outputs: "
            f"{'PASS' if err < 1e-5 else 'FAIL'}")


# ----------------------------------------------------------------------------- running here

def check_here(kernels=("tc_naive_fp16", "tc_fp16", "tc_bf16")) -> None:
    """On a GPU: check each kernel against float64 at :data:`CHECK_SHAPES` and print the
    verdicts. Where they cannot run (the simulator): nothing (the introduction says once what
    the simulator skips)."""
    if not all(runnable(name)[0] for name in kernels):
        return
    for name in kernels:
        for shape in CHECK_SHAPES:
            print(bench.check(name, *shape).line())


def measure_here() -> None:
    """On a GPU: time tc_fp16 at 4096³ (10 repeats) beside the reference's row. In the
    simulator: nothing (the introduction says once what the simulator skips)."""
    ok, _ = runnable("tc_fp16")
    if not ok:
        return
    here = bench.time("tc_fp16", 4096, 4096, 4096, repeats=10)
    ref = _ladder(results.REFERENCE_GPU)["tc_fp16"]
    name = page.gpu_label(device.provenance()["gpu"] or "this GPU")
    print(f"{name} (now): tc_fp16 at 4096³ {here['tflops']:.0f} TFLOP/s "
          f"({here['median_ms'] * 1e3:.0f} µs, median of 10); "
          f"H200 (reference): {ref['tflops']:.0f} TFLOP/s")


# ----------------------------------------------------------------------------- rung 1

def _ladder(gpu: str | None = None) -> dict:
    return results.by("tensor_cores", gpu=gpu, part="ladder")


def intensity_rows() -> list[dict]:
    """The model's FLOP/byte of a tile loaded from global memory, and the ceiling it sets if
    every load came from HBM, for rung 1, block tiles of growing size, and the ideal."""
    m = machine()
    cases = (("rung 1: 16×16 per warp, own loads", model.tile_intensity(16, 16, 2)),
             ("64×64 block tile", model.tile_intensity(64, 64, 2)),
             ("128×128 block tile", model.tile_intensity(128, 128, 2)),
             ("128×256 block tile", model.tile_intensity(128, 256, 2)),
             ("ideal, 4096³ (each byte once)", model.ideal_intensity(4096, 4096, 4096, 2, 4)))
    return [{"what": label, "intensity": i,
             "ceiling": min(m["peak"], i * m["read_bps"]) / 1e12} for label, i in cases]


def intensity_table():
    """Intensity and HBM ceiling per tiling (FP16 inputs)."""
    return page.table(intensity_rows(), ["what", "intensity", "ceiling"],
                      {"what": "tiling (FP16 inputs)", "intensity": "FLOP/B",
                       "ceiling": "HBM ceiling (TFLOP/s)"})


def rung1_table():
    """Rung 1 and cuBLAS FP16 at 4096³, measured in the same run."""
    lad = _ladder()
    rows = [lad["tc_naive_fp16"], lad["cublas_fp16"]]
    for r in rows:
        r["us"] = r["median_ms"] * 1e3
        r["pct"] = 100 * r["ratio_to_cublas_fp16"]
    return page.table(rows, ["kernel", "intensity", "us", "tflops", "pct"],
                      {"intensity": "FLOP/B", "us": "median (µs)", "tflops": "TFLOP/s",
                       "pct": "% cuBLAS FP16"}, source=results.source_line("tensor_cores"))


def l1_lines(k: int = 4096, n: int = 4096) -> dict:
    """Rung 1's loads per warp and 16-deep k-step, and the 128-byte lines they touch.

    A lane loads its own 2-byte elements: A rows ``group`` and ``group + 8``, columns
    ``2·pair`` (+1, +8, +9); B rows ``2·pair`` (+1, +8, +9), columns ``group`` (+8). Each
    16-bit load instruction of the warp touches one line per distinct row.
    """
    lanes = np.arange(32)
    group, pair = lanes // 4, lanes % 4
    lines = 0
    for dr in (0, 8):
        for dk in (0, 1, 8, 9):
            lines += len(set((((group + dr) * k + 2 * pair + dk) * 2) // 128))
    for dc in (0, 8):
        for dk in (0, 1, 8, 9):
            lines += len(set((((2 * pair + dk) * n + group + dc) * 2) // 128))
    return {"loads": 16, "lines": lines, "flop": 2 * 2 * 16 * 8 * 16}


def rung1_ceilings() -> dict:
    """Rung 1's two ceilings: HBM at its 8 FLOP/byte, and the L1 at one line per clock per SM."""
    m = machine()
    naive = _ladder()["tc_naive_fp16"]
    lines = l1_lines()
    l1 = lines["flop"] / lines["lines"] * m["sms"] * m["clock_hz"]
    hbm = naive["intensity"] * m["read_bps"]
    return {**lines, "l1": l1, "hbm": hbm, "measured": naive["tflops"] * 1e12}


def rung1_ceiling_text() -> str:
    """The line count and the two ceilings of rung 1, as text."""
    c = rung1_ceilings()
    text = (f"per warp and 16-deep k-step: {c['loads']} loads touching {c['lines']} lines of "
            f"128 bytes for {c['flop']:,} FLOP\n"
            f"HBM ceiling at 8 FLOP/B: {c['hbm'] / 1e12:.1f} TFLOP/s "
            f"(measured: {c['measured'] / c['hbm']:.0%} of it)\n"
            f"L1 ceiling at one line per clock per SM: {c['l1'] / 1e12:.1f} TFLOP/s "
            f"(measured: {c['measured'] / c['l1']:.0%} of it)")
    return text


def seed_table():
    """The T4 study's tensor-core numbers on its Tesla T4, labelled as the seed's."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.TENSOR_CORES_T4]
    return page.table(rows, ["what", "tflops", "flop_per_byte", "gpu_source"],
                      {"what": "kernel (the T4 study)", "tflops": "TFLOP/s",
                       "flop_per_byte": "FLOP/B", "gpu_source": "GPU, source"})


# ----------------------------------------------------------------------------- the fed rungs

def rung_rows() -> list[dict]:
    """One row per registered tensor-core rung: its tiles, stages, swizzle and block order."""
    rows = []
    for name, cfg in k08_tc_pipeline.RUNG_CONFIGS.items():
        if cfg.kind != "f16":
            continue
        rows.append({"kernel": name, "block": f"{cfg.bm}×{cfg.bn}×{cfg.bk}",
                     "warp": f"{cfg.wm}×{cfg.wn}", "stages": cfg.stages,
                     "swizzle": cfg.swizzle, "group": cfg.group_m,
                     "smem_kb": cfg.shared_bytes / 1024})
    return rows


def rung_table():
    """The fed rungs' configurations, from :data:`lab.kernels.k08_tc_pipeline.RUNG_CONFIGS`."""
    return page.table(rung_rows(), ["kernel", "block", "warp", "stages", "swizzle", "group",
                                    "smem_kb"],
                      {"block": "block tile", "warp": "warp tile", "group": "block-rows/group",
                       "smem_kb": "smem (KB)"})


def conflict_rows() -> list[dict]:
    """Shared-memory wavefronts of one 8-row ldmatrix phase, plain and swizzled."""
    rows = []
    for tile, cpr in (("A 128×32 (64-byte rows)", 4), ("A 128×64 (128-byte rows)", 8),
                      ("B 32×128 (256-byte rows)", 16)):
        plain = [r * 16 * cpr for r in range(8)]
        swz = [r * 16 * cpr + 16 * k08_tc_pipeline.swizzle(r, 0, cpr) for r in range(8)]
        rows.append({"tile": tile, "plain": fragments.wavefronts(plain),
                     "swizzled": fragments.wavefronts(swz)})
    return rows


def conflict_table():
    """Bank conflicts of ldmatrix with and without the swizzle (the model, no GPU)."""
    return page.table(conflict_rows(), ["tile", "plain", "swizzled"],
                      {"tile": "tile in shared memory", "plain": "wavefronts, plain",
                       "swizzled": "wavefronts, swizzled"})


def _phase_wavefronts(row_bytes: int, chunk: int, swizzled: bool, first_row: int) -> int:
    cpr = row_bytes // 16
    return fragments.wavefronts(
        [r * row_bytes + 16 * (k08_tc_pipeline.swizzle(r, chunk, cpr) if swizzled else chunk)
         for r in range(first_row, first_row + 8)])


def smem_ceiling(cfg) -> tuple[float, int]:
    """FLOP/s if shared memory (one 128-byte wavefront per clock per SM) were the only limit,
    and the wavefronts one block needs per k-slice (ldmatrix reads plus cp.async writes)."""
    m = machine()
    a_row, b_row = 2 * cfg.bk, 2 * cfg.bn
    steps = cfg.bk // 16
    a_wf = sum(_phase_wavefronts(a_row, 2 * ks + h, cfg.swizzle, 8 * q)
               for ks in range(steps) for h in (0, 1) for q in (0, 1)) // steps
    b_wf = sum(_phase_wavefronts(b_row, 2 * p + h, cfg.swizzle, 8 * q)
               for p in range(cfg.bn // 16) for h in (0, 1) for q in (0, 1)) // (cfg.bn // 16)
    reads = cfg.warps * steps * ((cfg.wm // 16) * a_wf + (cfg.wn // 16) * b_wf)
    writes = cfg.stage_bytes // 128
    flop = 2 * cfg.bm * cfg.bn * cfg.bk
    return flop / (reads + writes) * m["sms"] * m["clock_hz"], reads + writes


def prediction_rows() -> list[dict]:
    """Each rung's ceilings before it ran: HBM (tile intensity × measured read bandwidth),
    shared memory (wavefronts), and the prediction, the lowest of those and the peak."""
    m = machine()
    c1 = rung1_ceilings()
    rows = [{"kernel": "tc_naive_fp16", "wavefronts": None, "hbm": c1["hbm"] / 1e12,
             "smem": None, "l1": c1["l1"] / 1e12, "predicted": c1["l1"] / 1e12}]
    for name in FED:
        cfg = k08_tc_pipeline.RUNG_CONFIGS[name]
        hbm = model.tile_intensity(cfg.bm, cfg.bn, 2) * m["read_bps"]
        smem, wavefronts = smem_ceiling(cfg)
        rows.append({"kernel": name, "wavefronts": wavefronts, "hbm": hbm / 1e12,
                     "smem": smem / 1e12, "l1": None,
                     "predicted": min(hbm, smem, m["peak"]) / 1e12})
    return rows


def prediction_table():
    """The predictions, rung by rung (the model, before the measurements)."""
    return page.table(prediction_rows(), ["kernel", "wavefronts", "l1", "hbm", "smem",
                                          "predicted"],
                      {"wavefronts": "wavefronts/slice", "l1": "L1 (TFLOP/s)",
                       "hbm": "HBM (TFLOP/s)", "smem": "smem (TFLOP/s)",
                       "predicted": "predicted (TFLOP/s)"})


def ladder_rows() -> list[dict]:
    """The ladder at 4096³ with the prediction beside each measured rung."""
    pred = {r["kernel"]: r["predicted"] for r in prediction_rows()}
    rows = []
    for name, r in _ladder().items():
        p = pred.get(name)
        rows.append({"kernel": name, "us": r["median_ms"] * 1e3, "tflops": r["tflops"],
                     "predicted": p, "of_pred": r["tflops"] / p if p else None,
                     "pct": 100 * r["ratio_to_cublas_fp16"]})
    return rows


def ladder_table():
    """The whole ladder and cuBLAS at 4096³, measured against predicted."""
    return page.table(ladder_rows(), ["kernel", "us", "tflops", "predicted", "of_pred", "pct"],
                      {"us": "median (µs)", "tflops": "TFLOP/s",
                       "predicted": "predicted (TFLOP/s)", "of_pred": "measured / predicted",
                       "pct": "% cuBLAS FP16"},
                      source=results.source_line("tensor_cores"))


def ladder_figure():
    """Measured TFLOP/s of each rung beside its prediction, cuBLAS FP16 as a line."""
    rows = [r for r in ladder_rows() if r["kernel"] in LADDER]
    lad = _ladder()
    fig, ax = plots.axes("", "rung", "TFLOP/s (4096³)", size=(7.0, 3.8))
    xs = np.arange(len(rows))
    ax.bar(xs - 0.2, [r["predicted"] for r in rows], width=0.4, label="predicted (model)",
           facecolor="none", edgecolor="C0", hatch="//")
    ax.bar(xs + 0.2, [r["tflops"] for r in rows], width=0.4, label="measured", color="C0")
    ax.axhline(lad["cublas_fp16"]["tflops"], color="C3", linestyle=":", linewidth=1.5,
               label="cuBLAS FP16 (measured)")
    ax.set_xticks(xs, [r["kernel"] for r in rows], rotation=25, ha="right", fontsize=8)
    ax.grid(True, axis="x", alpha=0)
    return plots.finish(fig, ax)


#: The centre of tools/tune_tc.py's sweep; each other row changes one thing from it.
TUNE_CENTRE = {"bm": 128, "bn": 128, "bk": 32, "wm": 64, "wn": 64, "stages": 4, "swizzle": True,
               "group_m": 8}


def tune_change(row: dict) -> str:
    """What a tc_tune row changes from :data:`TUNE_CENTRE`, in a few words."""
    c = TUNE_CENTRE
    parts = []
    if (row["bm"], row["bn"]) != (c["bm"], c["bn"]):
        parts.append(f"block {row['bm']}×{row['bn']}")
    if (row["wm"], row["wn"]) != (c["wm"], c["wn"]):
        parts.append(f"warp {row['wm']}×{row['wn']}")
    if row["bk"] != c["bk"]:
        parts.append(f"k-slice {row['bk']}")
    if row["stages"] != c["stages"]:
        parts.append(f"{row['stages']} stages")
    if row["swizzle"] != c["swizzle"]:
        parts.append("swizzle " + ("on" if row["swizzle"] else "off"))
    if row["group_m"] != c["group_m"]:
        parts.append(f"groups of {row['group_m']}")
    return ", ".join(parts) or "none (the centre)"


def tune_table():
    """tools/tune_tc.py's sweep: one change at a time around :data:`TUNE_CENTRE`."""
    rows = sorted(results.rows("tc_tune"), key=lambda r: (r["varies"] != "reference",
                                                          r["varies"], -r["tflops"]))
    for r in rows:
        r["pct"] = 100 * r["vs_cublas"]
        r["change"] = "cuBLAS FP16" if r["varies"] == "reference" else tune_change(r)
    c = TUNE_CENTRE
    return page.table(rows, ["varies", "change", "regs", "blocks_per_sm", "tflops", "pct"],
                      {"varies": "what varies", "change": "change from the centre",
                       "regs": "registers", "blocks_per_sm": "blocks/SM", "tflops": "TFLOP/s",
                       "pct": "% cuBLAS FP16"},
                      title=(f"centre: {c['bm']}×{c['bn']}×{c['bk']} block tiles, "
                             f"{c['wm']}×{c['wn']} warp tiles, {c['stages']} stages, swizzle on, "
                             f"groups of {c['group_m']} block-rows"),
                      source=results.source_line("tc_tune"))


def _sizes() -> dict:
    out: dict = {}
    for r in results.rows("tensor_cores", part="size"):
        out.setdefault(r["m"], {})[r["kernel"]] = r
    return out


def size_table():
    """tc_fp16 against cuBLAS FP16 over square sizes."""
    rows = [{"n": n, "ours": by["tc_fp16"]["tflops"], "cublas": by["cublas_fp16"]["tflops"],
             "pct": 100 * by["tc_fp16"]["tflops"] / by["cublas_fp16"]["tflops"]}
            for n, by in sorted(_sizes().items())]
    return page.table(rows, ["n", "ours", "cublas", "pct"],
                      {"n": "n", "ours": "tc_fp16 (TFLOP/s)",
                       "cublas": "cuBLAS FP16 (TFLOP/s)", "pct": "% cuBLAS FP16"},
                      source=results.source_line("tensor_cores"))


def size_figure():
    """TFLOP/s over n for tc_fp16 and cuBLAS FP16."""
    sizes = _sizes()
    ns = sorted(sizes)
    fig, ax = plots.axes("", "n (M = N = K)", "TFLOP/s", logx=True, logy=True)
    ax.plot(ns, [sizes[n]["tc_fp16"]["tflops"] for n in ns], label="ours (tc_fp16)", **plots.OURS)
    ax.plot(ns, [sizes[n]["cublas_fp16"]["tflops"] for n in ns], label="cuBLAS FP16",
            **plots.LIBRARY)
    return plots.finish(fig, ax)


def padding_table():
    """tc_fp16 at 4097³: the whole call, the padding copy alone, the kernel alone, cuBLAS."""
    rows = results.rows("tensor_cores", part="padding")
    for r in rows:
        r["padded"] = "×".join(map(str, r["padded_to"])) if r.get("padded_to") else "-"
        r["us"] = r["median_ms"] * 1e3
    return page.table(rows, ["kernel", "what", "padded", "us", "tflops"],
                      {"padded": "padded to", "us": "median (µs)",
                       "tflops": "TFLOP/s (4097³ FLOPs)"},
                      source=results.source_line("tensor_cores"))


# ----------------------------------------------------------------------------- the instruction

def compile_reports() -> dict:
    """Offline compile reports (sm_90) of :data:`COMPILED`; under the simulator each compiles in
    its own process, two at a time."""
    with ThreadPoolExecutor(max_workers=2 if device.SIMULATOR else 1) as pool:
        reports = dict(zip(COMPILED, pool.map(lambda k: compiler.report(k)[0], COMPILED)))
    return reports


def compile_rows(reports: dict) -> list[dict]:
    """Registers, resident warps and the hottest loop's instruction mix per kernel."""
    rows = []
    for name, rep in reports.items():
        cfg = k08_tc_pipeline.RUNG_CONFIGS.get(name)
        threads = cfg.threads if cfg else 128
        smem = cfg.shared_bytes if cfg else 0
        blocks = model.blocks_per_sm(threads, rep.registers, smem)
        loop = rep.loop_mix
        total = sum(loop.values())
        rows.append({"kernel": name, "registers": rep.registers,
                     "spills": rep.spill_stores + rep.spill_loads,
                     "warps": blocks * threads // 32, "hmma": loop.get("HMMA", 0),
                     "loads": sum(v for op, v in loop.items()
                                  if op.startswith(("LDG", "LDSM", "LDGSTS"))),
                     "total": total, "share": loop.get("HMMA", 0) / total})
    return rows


def compile_table(reports: dict):
    """The compile facts table (not a measurement: the compiler's output for sm_90)."""
    return page.table(compile_rows(reports), ["kernel", "registers", "warps", "hmma", "loads",
                                              "total", "share"],
                      {"warps": "warps/SM", "hmma": "loop HMMA",
                       "loads": "loop loads", "total": "loop total", "share": "HMMA share"})


def compile_values(reports: dict) -> dict:
    """The compile facts the prose quotes."""
    rows = {r["kernel"]: r for r in compile_rows(reports)}
    fp16, naive = rows["tc_fp16"], rows["tc_naive_fp16"]
    rep = reports["tc_fp16"]
    ops = sorted(set(re.findall(r"\b(?:HMMA|LDSM|LDGSTS)\.[\w.]+", rep.sass)))
    target = next(ln for ln in rep.sass.splitlines() if ln.strip().startswith(".target"))
    return {"fp16_regs": str(fp16["registers"]), "fp16_warps": str(fp16["warps"]),
            "fp16_hmma_share": f"{fp16['share']:.0%}", "fp16_spills": str(fp16["spills"]),
            "naive_loop_loads": str(naive["loads"]), "naive_loop_hmma": str(naive["hmma"]),
            "fp16_opcodes": ", ".join(ops), "ptx_target": target.split()[-1],
            "ptxas_version": ptxas_version()}


def ptxas_version() -> str:
    """The release of the ``ptxas`` behind the compiler facts the chapter prints (e.g. ``"13.5"``):
    the pinned wheel that recorded ``lab/facts/compiler.json``."""
    version = compiler.facts_toolchain().get("nvidia-cuda-nvcc") or "?"
    return ".".join(version.split(".")[:2])


def wgmma_probe() -> list[str]:
    """``wgmma.fence`` assembled by ptxas for sm_90 and for sm_90a (the committed facts where a
    machine lacks the pinned ptxas); one verdict each."""
    lines = []
    for target, (ok, messages) in compiler.wgmma_probe().items():
        verdict = ("assembles" if ok else
                   "refused: " + re.sub(r"^.*error\s*:\s*", "", messages.splitlines()[0]))
        lines.append(f"wgmma.fence for {target:<7} {verdict}")
    return lines


def sanitizer_table():
    """compute-sanitizer over the tensor-core kernels, one row per kernel."""
    by: dict = {}
    for r in results.rows("sanitizer"):
        if r["kernel"].startswith("tc_"):
            by.setdefault(r["kernel"], []).append(r)
    rows = []
    for name, rs in by.items():
        shapes = sorted({(r["m"], r["n"], r["k"]) for r in rs}, reverse=True)
        rows.append({"kernel": name, "tools": ", ".join(sorted({r["tool"] for r in rs})),
                     "shapes": ", ".join("×".join(map(str, s)) for s in shapes),
                     "errors": sum(r["errors"] for r in rs),
                     "check": "PASS" if all(r["check"] == "PASS" for r in rs) else "FAIL"})
    return page.table(rows, ["kernel", "tools", "shapes", "errors", "check"],
                      {"shapes": "shapes (M×N×K)"}, source=results.source_line("sanitizer"))


# ----------------------------------------------------------------------------- precision

def _precision() -> dict:
    return results.by("precision")


def precision_table():
    """Speed and error of each format at 2048³ against the float64 product."""
    rows = list(_precision().values())
    return page.table(rows, ["title", "tflops", "max_err_over_max_entry", "rel_frobenius",
                             "rel_frobenius_vs_rounded_inputs"],
                      {"title": "format (implementation)", "tflops": "TFLOP/s",
                       "max_err_over_max_entry": "max |err| / max |C|",
                       "rel_frobenius": "rel. Frobenius",
                       "rel_frobenius_vs_rounded_inputs": "rel. Frob. vs rounded inputs"},
                      source=results.source_line("precision"))


def precision_seed_table():
    """The T4 study's precision table on its Tesla T4, labelled as the seed's."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.PRECISION_T4]
    return page.table(rows, ["format", "tflops", "max_err_over_max_entry", "rel_frobenius",
                             "gpu_source"],
                      {"format": "format (the T4 study)", "tflops": "TFLOP/s",
                       "max_err_over_max_entry": "max |err| / max |C|",
                       "rel_frobenius": "rel. Frobenius", "gpu_source": "GPU, source"})


def out16_rows() -> list[dict]:
    """cuBLAS FP16 with FP32 against FP16 output, at 4096³ and at 2048³."""
    lad, p = _ladder(), _precision()
    rows = [{"where": "4096³ (tensor_cores)", "fp32": lad["cublas_fp16"]["tflops"],
             "fp16": lad["cublas_fp16_out16"]["tflops"]},
            {"where": "2048³ (precision)", "fp32": p["cublas_fp16"]["tflops"],
             "fp16": p["cublas_fp16_out16"]["tflops"]}]
    for r in rows:
        r["gain"] = 100 * (r["fp16"] / r["fp32"] - 1)
    return rows


def out16_table():
    """The width of C: FP32 against FP16 output through cuBLAS."""
    return page.table(out16_rows(), ["where", "fp32", "fp16", "gain"],
                      {"where": "size (results file)", "fp32": "FP32 out (TFLOP/s)",
                       "fp16": "FP16 out (TFLOP/s)", "gain": "gain (%)"},
                      source=results.source_line("tensor_cores"))


# ----------------------------------------------------------------------------- glued values

def _ordinal(value: float, values) -> str:
    return ORDINALS[sorted(values, reverse=True).index(value)]


def values() -> dict:
    """Every number the chapter's prose quotes (except the compiler's, :func:`compile_values`),
    as strings, from the selected GPU's results, the model and the seeds."""
    m = machine()
    lad = _ladder()
    pred = {r["kernel"]: r for r in prediction_rows()}
    c1 = rung1_ceilings()
    steps = {b: lad[b]["tflops"] / lad[a]["tflops"] for a, b in zip(LADDER, LADDER[1:])}
    of_pred = {k: lad[k]["tflops"] / pred[k]["predicted"] for k in LADDER}
    under = {k: v for k, v in of_pred.items() if v <= 1}
    closest = max(under, key=under.get)
    tune = results.rows("tc_tune")
    two = [r["tflops"] for r in tune if r["varies"] == "depth, stages" and r["blocks_per_sm"] == 2]
    one = [r for r in tune if r["varies"] == "depth, stages" and r["blocks_per_sm"] == 1]
    order = [r["tflops"] for r in tune if r["varies"] == "block order"]
    no_swz = next(r for r in tune if r["varies"] == "swizzle")
    sizes = _sizes()
    ratios = [by["tc_fp16"]["tflops"] / by["cublas_fp16"]["tflops"] for by in sizes.values()]
    pad = {r["what"]: r for r in results.rows("tensor_cores", part="padding")}
    whole = next(r for w, r in pad.items() if w.startswith("whole"))
    copy = next(r for w, r in pad.items() if w.startswith("padding"))
    theirs = next(r for r in pad.values() if r["kernel"] == "cublas_fp16")
    p = _precision()
    t4 = {r["what"]: r["tflops"] for r in seeds.TENSOR_CORES_T4}
    t4_hand = t4["hand-written WMMA, FP16 in -> FP32 out"]
    fp16_err = p["tc_fp16"]["rel_frobenius"]
    fp16_err_rounded = p["tc_fp16"]["rel_frobenius_vs_rounded_inputs"]
    out16_err = p["cublas_fp16_out16"]["rel_frobenius"]
    t4_fp32out, t4_fp16out = t4["cuBLAS FP16 in -> FP32 out"], t4["cuBLAS FP16 in -> FP16 out"]
    t4p = {r["format"]: r["tflops"] for r in seeds.PRECISION_T4}
    pairs = [("warptile_tuned", "cublas_fp32"), ("tc_fp16", "cublas_fp16"),
             ("tc_bf16", "cublas_bf16")]
    same = [a for a, b in pairs if p[a]["rel_frobenius"] == p[b]["rel_frobenius"]
            and p[a]["max_err_over_max_entry"] == p[b]["max_err_over_max_entry"]]
    goal = lad["tc_fp16"]["ratio_to_cublas_fp16"]
    operands = 2 * 4096 * 4096 * 2
    out16 = out16_rows()
    v = {
        "gpu": page.gpu_label(m["gpu"]), "sms": str(m["sms"]),
        "clock_ghz": f"{m['clock_hz'] / 1e9:.2f}", "read_tbps": f"{m['read_bps'] / 1e12:.2f}",
        "peak_tflops": f"{m['peak'] / 1e12:.0f}", "peak_source": m["peak_source"],
        "tensor_ridge": f"{model.ridge(m['peak'], m['read_bps']):.0f}",
        "naive_tflops": f"{lad['tc_naive_fp16']['tflops']:.1f}",
        "naive_pct": f"{100 * lad['tc_naive_fp16']['ratio_to_cublas_fp16']:.1f}%",
        "cublas_fp16_tflops": f"{lad['cublas_fp16']['tflops']:.0f}",
        "naive_hbm": f"{c1['hbm'] / 1e12:.1f}",
        "naive_of_hbm": f"{c1['measured'] / c1['hbm']:.0%}",
        "naive_loads": str(c1["loads"]), "naive_lines": str(c1["lines"]),
        "naive_l1": f"{c1['l1'] / 1e12:.1f}",
        "naive_of_l1": f"{c1['measured'] / c1['l1']:.0%}",
        "t4_hand_pct": f"{t4_hand / t4_fp32out:.0%}",
        "smem_gain": f"{steps['tc_smem']:.1f}",
        "warp64_gain": f"{steps['tc_warp64']:.1f}",
        "pipeline_gain": f"{steps['tc_pipeline'] - 1:.0%}",
        "swizzle_gain": f"{steps['tc_swizzle']:.1f}",
        "swizzle_rank": _ordinal(steps["tc_swizzle"], steps.values()),
        "largest_step": max(steps, key=steps.get),
        "fp16_gain": f"{steps['tc_fp16'] - 1:.0%}",
        "closest_rung": closest, "closest_of_pred": f"{of_pred[closest]:.0%}",
        "fp16_hbm_over": f"{lad['tc_fp16']['tflops'] / pred['tc_fp16']['hbm']:.2f}",
        "swizzle_hbm_over": f"{lad['tc_swizzle']['tflops'] / pred['tc_swizzle']['hbm']:.2f}",
        "operands_mib": f"{operands / 2**20:.0f}",
        "l2_mib": f"{m['l2_bytes'] / 2**20:.0f}" if m["l2_bytes"] else "-",
        "tune_two_low": f"{min(two):.0f}", "tune_two_high": f"{max(two):.0f}",
        "tune_one": ", ".join(f"{r['tflops']:.0f}" for r in one),
        "tune_order_low": f"{min(order):.0f}", "tune_order_high": f"{max(order):.0f}",
        "tune_noswz": f"{no_swz['tflops']:.0f}",
        "size_pct_low": f"{min(ratios):.0%}", "size_pct_high": f"{max(ratios):.0%}",
        "size_checked_max": str(max(n for n, by in sizes.items()
                                    if by["tc_fp16"].get("rel_frobenius") is not None)),
        "pad_ms": f"{copy['median_ms'] * 1e3:.0f}",
        "pad_share": f"{copy['median_ms'] / whole['median_ms']:.0%}",
        "pad_vs_cublas": f"{theirs['median_ms'] / whole['median_ms']:.1f}",
        "goal_pct": f"{goal:.1%}",
        "bf16_pct": f"{lad['tc_bf16']['tflops'] / lad['cublas_bf16']['tflops']:.1%}",
        "ladder_gain": f"{lad['tc_fp16']['tflops'] / lad['tc_naive_fp16']['tflops']:.0f}",
        "fp16_tflops": f"{lad['tc_fp16']['tflops']:.0f}",
        "fp16_err_ratio": f"{fp16_err / fp16_err_rounded:.0f}",
        "bf16_over_fp16": f"{p['tc_bf16']['rel_frobenius'] / p['tc_fp16']['rel_frobenius']:.1f}",
        "cublas_fp16_over_fp32": f"{p['cublas_fp16']['tflops'] / p['cublas_fp32']['tflops']:.1f}",
        "t4_fp16_over_fp32": f"{t4p['FP16, tensor cores'] / t4p['FP32, CUDA cores']:.1f}",
        "same_error_pairs": f"{len(same)} of {len(pairs)}",
        "out16_gain_4096": f"{out16[0]['gain']:+.1f}%",
        "out16_gain_2048": f"{out16[1]['gain']:+.1f}%",
        "t4_out16_gain": f"{t4_fp16out / t4_fp32out - 1:+.0%}",
        "out16_err": f"{out16_err / p['cublas_fp16']['rel_frobenius']:.1f}",
    }
    warp64 = k08_tc_pipeline.RUNG_CONFIGS["tc_warp64"]
    fp16 = k08_tc_pipeline.RUNG_CONFIGS["tc_fp16"]
    params = results.load("precision")["parameters"]
    v.update({
        "largest_gain": f"{steps[v['largest_step']]:.1f}",
        "t4_hand_tflops": f"{t4_hand:.1f}",
        "t4_hbm_line": f"{8 * seeds.READ_ROOF_T4_GBPS / 1e3:.1f}",
        "warp64_ldsm": str(warp64.wm // 16 + warp64.wn // 16),
        "warp64_mma": str((warp64.wm // 16) * (warp64.wn // 8)),
        "acc_regs": str(fp16.wm * fp16.wn // 32),
        "prec_n": str(params["size"]), "prec_kernel": params["fp32_kernel"],
    })
    for name in FED:
        v[f"{name}_tflops"] = f"{lad[name]['tflops']:.0f}"
        v[f"{name}_of_pred"] = f"{of_pred[name]:.0%}"
    v.update(profile_values())
    return v


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def profile_values() -> dict:
    """What Nsight Compute counted for ``tc_fp16`` at 4096³ (``hopper_profile``), and its ratio
    to cuBLAS FP16 as the median of that experiment's separate processes."""
    prof = results.by("hopper_profile", part="profile")["tc_fp16"]
    head = results.by("hopper_profile", part="summary", m=4096)
    tc = head["tc_fp16"]
    n = prof["m"]
    model_bytes = 2.0 * n ** 3 / _ladder()["tc_fp16"]["intensity"]   # the tile loads, as counted
    return {"prof_model_gb": f"{model_bytes / 1e9:.2f}",
            "prof_l2_to_sm_gb": f"{prof['l2_to_sm_bytes'] / 1e9:.2f}",
            "prof_dram_gb": f"{prof['dram_read_bytes'] / 1e9:.2f}",
            "prof_dram_share": f"{prof['dram_read_bytes'] / prof['l2_to_sm_bytes']:.0%}",
            "prof_l2_hit": f"{prof['l2_hit_pct']:.0f}%",
            "prof_tensor_active": f"{prof['tensor_active_pct']:.0f}%",
            "prof_top_stall": next(iter(prof["stalls"])),
            "prof_regs": f"{prof['registers']:.0f}",
            "tc_head_ratio": f"{tc['ratio_to_cublas']:.3f}",
            "tc_head_lo": f"{tc['ratio_min']:.3f}", "tc_head_hi": f"{tc['ratio_max']:.3f}",
            "tc_head_processes": str(tc["processes"])}
