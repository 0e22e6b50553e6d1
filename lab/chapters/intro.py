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

#: The FP32 track: (kernel in fp32_ladder, what the rung adds).
FP32_RUNGS = [
    ("naive", "one thread per output"),
    ("tiled32", "shared-memory tiles"),
    ("patch8", "8×8 outputs per thread in registers"),
    ("vectorized", "16-byte loads"),
    ("pipelined", "double-buffered tiles"),
    ("warptile", "warp tiles"),
    ("warptile_tuned", "warp tiles, tuned"),
]
#: The tensor-core track before Hopper: (kernel in tensor_cores, what the rung adds).
TC_RUNGS = [
    ("tc_naive_fp16", "mma.sync, fragments from global"),
    ("tc_smem", "shared-memory tiles"),
    ("tc_warp64", "64×64 per warp"),
    ("tc_pipeline", "cp.async pipeline"),
    ("tc_swizzle", "swizzled shared memory, ldmatrix"),
    ("tc_fp16", "tuned tile"),
]
#: The Hopper rungs (kernel in hopper, FP16 inputs): what the rung adds.
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
    return {r["kernel"]: r for r in results.rows(experiment, m=SIZE, n=SIZE, k=SIZE, **match)}


def ladder() -> list[dict]:
    """Every rung at 4096³: chapter, track, TFLOP/s, and the fraction of its yardstick."""
    rows = []

    def add(track, chapter, name, change, row, yardstick, experiment):
        rows.append({"track": track, "chapter": chapter, "rung": name, "adds": change,
                     "tflops": row["tflops"], "fraction": row["tflops"] / yardstick["tflops"],
                     "yardstick": yardstick["tflops"], "experiment": experiment})

    fp32 = _at_size("fp32_ladder", part="ladder")
    cublas32 = fp32["cublas_fp32"]
    for name, change in FP32_RUNGS:
        add("FP32 (CUDA cores)", fp32[name]["chapter"], name, change, fp32[name], cublas32,
            "fp32_ladder")
    tc = _at_size("tensor_cores", part="ladder")
    for name, change in TC_RUNGS:
        add("FP16 in, FP32 out (tensor cores)", 5, name, change, tc[name], tc["cublas_fp16"],
            "tensor_cores")
    hopper = {k: r for k, r in _at_size("hopper", dtype="float16").items() if "rung" in r}
    for name, change in HOPPER_RUNGS:
        add("FP16 in, FP32 out (tensor cores)", 7, name.removesuffix("_fp16"), change,
            hopper[name], hopper["cublas_fp16"], "hopper")
    return rows


def yardsticks() -> dict:
    """The cuBLAS rates each track is measured against, by results file."""
    return {"cublas_fp32_tflops": _at_size("fp32_ladder", part="ladder")["cublas_fp32"]["tflops"],
            "cublas_fp16_tc_tflops":
                _at_size("tensor_cores", part="ladder")["cublas_fp16"]["tflops"],
            "cublas_fp16_hopper_tflops":
                _at_size("hopper", dtype="float16")["cublas_fp16"]["tflops"]}


def values() -> dict:
    """The numbers the introduction's prose quotes."""
    rows = ladder()
    fp32 = [r for r in rows if r["track"].startswith("FP32")]
    tc = [r for r in rows if not r["track"].startswith("FP32")]
    best_tc = max(tc, key=lambda r: r["fraction"])
    y = yardsticks()
    return {
        "intro_naive_fraction": fp32[0]["fraction"],
        "intro_fp32_best_fraction": fp32[-1]["fraction"],
        "intro_fp32_best_tflops": fp32[-1]["tflops"],
        "intro_fp32_speedup": fp32[-1]["tflops"] / fp32[0]["tflops"],
        "intro_tc_best_rung": best_tc["rung"],
        "intro_tc_best_fraction": best_tc["fraction"],
        "intro_tc_best_tflops": best_tc["tflops"],
        "intro_tc_over_fp32_cublas": best_tc["tflops"] / y["cublas_fp32_tflops"],
        "intro_cublas_fp32_tflops": y["cublas_fp32_tflops"],
        "intro_cublas_fp16_tflops": y["cublas_fp16_hopper_tflops"],
    }


def ladder_figure():
    """Each rung as a bar: its fraction of cuBLAS at 4096³, the two tracks in two colours."""
    rows = ladder()
    colours = {"FP32 (CUDA cores)": "C0", "FP16 in, FP32 out (tensor cores)": "C3"}
    fig, ax = plots.axes("", "fraction of cuBLAS at 4096³ (same run, same input type)", "",
                         size=(7.4, 6.4))
    seen = set()
    for y, r in enumerate(rows):
        ax.barh(y, r["fraction"], color=colours[r["track"]], height=0.72,
                label=None if r["track"] in seen else r["track"])
        seen.add(r["track"])
        ax.text(r["fraction"] + 0.01, y, f"{r['tflops']:.0f} TFLOP/s", va="center", fontsize=7)
    ax.axvline(1.0, color="0.3", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(rows)), [f"{r['rung']}  (ch. {r['chapter']})" for r in rows],
                  fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 1.15)
    ax.grid(True, axis="y", alpha=0)
    return page.figure(plots.finish_below(fig, ax))


def ladder_table():
    """The same ladder as a table (one screen)."""
    rows = ladder()
    last = {r["chapter"]: i for i, r in enumerate(rows)}           # each chapter's last rung
    best = max(range(len(rows)), key=lambda i: (rows[i]["chapter"] == 7, rows[i]["fraction"]))
    return page.table(rows, ["chapter", "rung", "adds", "tflops", "fraction"],
                      show=sorted(set(last.values()) - {last[7]} | {best}),
                      headers={"chapter": "ch.", "adds": "what the rung adds", "tflops": "TFLOP/s",
                       "fraction": "of cuBLAS"},
                      digits=3,
                      source="Sources: lab/results/h200/fp32_ladder.json (FP32 rungs, against "
                             "cuBLAS FP32), tensor_cores.json (chapter 5, against cuBLAS FP16 "
                             "in the same run), hopper.json (chapter 7, likewise)")


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
    return page.table(chapter_rows(), ["chapter", "minutes"],
                      {"minutes": "reading (min)"},
                      source="Reading time: the chapter's prose at "
                             f"{WORDS_PER_MINUTE} words a minute, rounded to 5 minutes; "
                             "running the cells takes longer")
