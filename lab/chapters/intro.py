"""The introduction's result: the whole ladder against cuBLAS at 4096³, and the map of the book.

Every rung is read from the results file of the chapter that measured it, and is put against the
cuBLAS kernel timed in the same run of the same experiment (FP32 rungs against cuBLAS FP32; the
tensor-core rungs against cuBLAS FP16 in, FP32 out), so each fraction compares like with like.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from lab import page, plots, results

BOOK = Path(__file__).resolve().parents[2] / "book"
SIZE = 4096
#: Words a minute for the reading times of the chapter map (prose with numbers and tables).
WORDS_PER_MINUTE = 200

#: The FP32 track: (kernel in fp32_profile, what the rung adds).
FP32_RUNGS = [
    ("naive", "one thread per output"),
    ("tiled32", "shared-memory tiles"),
    ("patch8", "8×8 outputs per thread in registers"),
    ("vectorized", "16-byte loads"),
    ("pipelined", "double-buffered tiles"),
    ("warptile", "warp tiles"),
    ("warptile_tuned", "warp tiles, tuned"),
]
#: The tensor-core track before Hopper: (kernel, what the rung adds), all from chapter 5's run
#: (tensor_cores), so that each rung reads here as it does there.
TC_RUNGS = [
    ("tc_naive_fp16", "mma.sync, fragments from global"),
    ("tc_smem", "shared-memory tiles"),
    ("tc_warp64", "64×64 per warp"),
    ("tc_pipeline", "cp.async pipeline"),
    ("tc_swizzle", "swizzled shared memory, ldmatrix"),
    ("tc_fp16", "tuned tile"),
]
TC_TRACK = "FP16 in, FP32 out (tensor cores)"
#: The Hopper rungs (kernel in hopper_profile, FP16 inputs): what the rung adds.
HOPPER_RUNGS = [
    ("wgmma_cpasync_fp16", "wgmma from cp.async stages"),
    ("wgmma_tma_fp16", "TMA and mbarriers"),
    ("wgmma_2wg_fp16", "two warpgroups, 128×256"),
    ("wgmma_ws_fp16", "a producer warpgroup"),
    ("wgmma_persistent_fp16", "persistent blocks"),
    ("wgmma_pingpong_fp16", "ping-pong consumers"),
    ("wgmma_tmastore_fp16", "TMA-store epilogue"),
    ("wgmma_cluster_fp16", "clusters of two, B multicast"),
]


def _at_size(experiment: str, **match) -> dict[str, dict]:
    return results.by(experiment, m=SIZE, n=SIZE, k=SIZE, **match)


def ladder() -> list[dict]:
    """Every rung at 4096³: chapter, track, TFLOP/s, and its fraction of cuBLAS timed in the same
    process. Where an experiment ran the rung in several processes (``fp32_profile``,
    ``hopper_profile``), the median over them and the lowest and highest (``lo``, ``hi``)."""
    rows = []

    def add(track, chapter, name, change, row, experiment, fraction=None, lo=None, hi=None):
        rows.append({"track": track, "chapter": chapter, "rung": name, "adds": change,
                     "tflops": row["tflops"], "fraction": fraction, "lo": lo, "hi": hi,
                     "experiment": experiment})

    chapter_of = {r["kernel"]: r["chapter"] for r in results.rows("fp32_ladder", part="ladder")}
    fp32 = _at_size("fp32_profile", part="summary")
    for name, change in FP32_RUNGS:
        r = fp32[name]
        add("FP32 (CUDA cores)", chapter_of[name], name, change, r, "fp32_profile",
            r["ratio_to_cublas"], r["ratio_min"], r["ratio_max"])
    tc = _at_size("tensor_cores", part="ladder")
    hopper = _at_size("hopper_profile", part="summary", dtype="float16")
    for name, change in TC_RUNGS:
        add(TC_TRACK, "5", name, change, tc[name], "tensor_cores",
            tc[name]["tflops"] / tc["cublas_fp16"]["tflops"])
    for name, change in HOPPER_RUNGS:
        r = hopper[name]
        add(TC_TRACK, "7.1", name.removesuffix("_fp16"), change, r, "hopper_profile",
            r["ratio_to_cublas"], r["ratio_min"], r["ratio_max"])
    for experiment, label, name, change in PAST_RUNGS:
        r = _past(experiment, label)
        add(PAST_TRACK, "7b" if "fp8" in name else "7.2", name, change, r, experiment,
            r["ratio"], r["ratio_min"], r["ratio_max"])
    return rows


#: The rungs past cuBLAS, GPU-only timing against the yardstick with the same output type:
#: (experiment, row label there, name, what the rung adds).
PAST_TRACK = "past rung 8: against torch.mm or cuBLAS(Lt) with the same output, GPU-only"
PAST_RUNGS = [
    ("hopper_table", "tmastore 16-bit out whole-tile grid 128 slot counters descriptor steps "
                     "uniform index tile table", "wgmma_table", "16-bit C, tile order from a table"),
    ("hopper_table", "tmastore 3 stages grid 128 slot counters descriptor steps ring 4 uniform "
                     "index store threads tile table", "wgmma_handoff_table",
     "FP32 C, store threads, tile table"),
    ("hopper_past", "fp8 bf16 out whole-tile grid 128", "fp8_e4m3_tile",
     "FP8 (e4m3) with rungs 10 and 11"),
]


def _past(experiment: str, label: str) -> dict:
    """The summary row of ``label`` at 4096³ in ``experiment`` (its first input type: FP16, or
    e4m3 for FP8)."""
    for r in results.load(experiment)["rows"]:
        if (r["part"] == "summary" and r["kernel"] == label and r["m"] == SIZE
                and r["dtype"] in ("float16", "e4m3")):
            return r
    raise LookupError(f"{experiment}: no summary row for {label} at {SIZE}³")


def values() -> dict:
    """The numbers the introduction's prose quotes."""
    rows = ladder()
    fp32 = [r for r in rows if r["track"].startswith("FP32")]
    tc = [r for r in rows if r["track"] == TC_TRACK]
    past = {r["rung"]: r for r in rows if r["track"] == PAST_TRACK}
    best_tc = max(tc, key=lambda r: r["fraction"])
    cublas32 = _at_size("fp32_profile", part="summary")["cublas_fp32"]["tflops"]
    return {
        "the_gpu": page.gpu_label(results.load("fp32_profile")["provenance"]["gpu"]),
        "intro_naive_fraction": f"{fp32[0]['fraction']:.2f}",
        "intro_fp32_best_fraction": f"{fp32[-1]['fraction']:.2f}",
        "intro_fp32_best_tflops": f"{fp32[-1]['tflops']:.1f}",
        "intro_fp32_speedup": f"{fp32[-1]['tflops'] / fp32[0]['tflops']:.1f}",
        "intro_tc_best_rung": best_tc["rung"],
        "intro_tc_best_fraction": f"{best_tc['fraction']:.2f}",
        "intro_tc_best_tflops": f"{best_tc['tflops']:.0f}",
        "intro_tc_over_fp32_cublas": f"{best_tc['tflops'] / cublas32:.0f}",
        "intro_processes": str(_at_size("fp32_profile", part="summary")["naive"]["processes"]),
        "intro_r18_fraction": f"{past['wgmma_table']['fraction']:.3f}",
        "intro_r19_fraction": f"{past['wgmma_handoff_table']['fraction']:.3f}",
        "intro_fp8_fraction": f"{past['fp8_e4m3_tile']['fraction']:.3f}",
    }


def glue():
    """Glue :func:`values` into the prose; returns them as one checked text block."""
    return page.glue(values())


def ladder_figure():
    """Each rung as a bar: its fraction of cuBLAS at 4096³, the two tracks in two colours."""
    rows = ladder()
    colours = {"FP32 (CUDA cores)": "C0", TC_TRACK: "C3", PAST_TRACK: "C2"}
    fig, ax = plots.axes("", "fraction of cuBLAS at 4096³ (same run, same input type)", "",
                         size=(7.4, 6.4))
    seen = set()
    for y, r in enumerate(rows):
        err = ([[r["fraction"] - r["lo"]], [r["hi"] - r["fraction"]]]
               if r["lo"] is not None else None)
        ax.barh(y, r["fraction"], color=colours[r["track"]], height=0.72, xerr=err,
                error_kw={"elinewidth": 0.8, "capsize": 2},
                label=None if r["track"] in seen else r["track"])
        seen.add(r["track"])
        ax.text(max(r["fraction"], r["hi"] or 0) + 0.012, y, f"{r['tflops']:.0f} TFLOP/s",
                va="center", fontsize=8)
    ax.axvline(1.0, color="0.3", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(rows)), [f"{r['rung']}  (ch. {r['chapter']})" for r in rows],
                  fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 1.15)
    ax.grid(True, axis="y", alpha=0)
    return page.figure(plots.finish_below(fig, ax))


def ladder_table():
    """Each chapter's last rung (chapter 7.1's best) and the rungs past cuBLAS, as a table; the
    figure draws every rung."""
    rows = ladder()
    last = {r["chapter"]: i for i, r in enumerate(rows)}           # each chapter's last rung
    best = max(range(len(rows)), key=lambda i: (rows[i]["chapter"] == "7.1",
                                                 rows[i]["fraction"]))
    shown = sorted(set(last.values()) - {last["7.1"]} | {best}
                   | {i for i, r in enumerate(rows) if r["track"] == PAST_TRACK})
    return page.table([rows[i] for i in shown], ["chapter", "rung", "adds", "tflops", "fraction"],
                      headers={"chapter": "ch.", "adds": "what the rung adds", "tflops": "TFLOP/s",
                       "fraction": "of the yardstick"},
                      digits=3,
                      source="Each rung against the yardstick of its own process: cuBLAS FP32 "
                             "for the FP32 rungs; cuBLAS FP16 in, FP32 out for the tensor-core "
                             "rungs of chapters 5 and 7.1; past rung 8, torch.mm with the same "
                             "16-bit output (rung 18), cuBLAS with FP32 output (rung 19) and "
                             "cuBLASLt FP8 with BF16 output (FP8), GPU-only. Medians of three "
                             "processes (fp32_profile, hopper_profile, hopper_table, hopper_past); "
                             "chapter 5's rungs from its one run (tensor_cores)")


def _markdown(path: Path) -> tuple[str, str, int]:
    """A notebook's title, its first paragraph and its count of prose words."""
    nb = json.loads(path.read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    text = "\n\n".join(cells)
    title = next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))
    paragraphs = [p.strip() for p in text.split("\n\n")
                  if p.strip() and not p.lstrip().startswith(("#", "(", ":::", "```", "|", "!"))]
    words = len(re.findall(r"\S+", text))
    return title, paragraphs[0] if paragraphs else "", words


def chapter_rows() -> list[dict]:
    """The chapters in book order with their reading time (prose words / words a minute)."""
    toc = (BOOK.parent / "_toc.yml").read_text()
    rows = []
    for name in re.findall(r"file:\s*book/(\d\S*)", toc):
        path = BOOK / f"{name}.ipynb"
        if not path.exists():
            continue
        title, _, words = _markdown(path)
        rows.append({"chapter": title, "minutes": max(5, round(words / WORDS_PER_MINUTE / 5) * 5),
                     "file": name})
    return rows


def chapter_table():
    return page.table(chapter_rows(), ["chapter", "minutes"], {"minutes": "reading (min)"})
