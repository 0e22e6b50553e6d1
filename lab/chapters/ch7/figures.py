"""Chapter 7's drawings of Hopper's machinery (house style of :mod:`lab.plots`): wgmma reading
shared memory through descriptors, the ring of full and empty mbarriers with their phases, the
TMA-store epilogue against the direct one on a timeline drawn to measured times, and cluster
multicast. Sizes come from the rung configurations and the results files, never typed in."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from lab import results
from lab.chapters.ch7 import common
from lab.kernels import wgmma

COLORS = {"A": "#c6dbef", "B": "#fdd0a2", "acc": "#c7e9c0", "bar": "#dadaeb",
          "tma": "#fdae6b", "mma": "#74c476", "epi": "#9e9ac8", "wait": "#eeeeee"}


def _box(ax, x, y, w, h, text="", color="white", fontsize=8, **kw):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="0.3", linewidth=0.8, **kw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, text="", color="0.25", rad=0.0, fontsize=7.5, offset=(0, 0)):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color,
                                 linewidth=1.0, connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text,
                fontsize=fontsize, ha="center", va="center", color=color)


def descriptors_figure():
    """One stage of rung 3 in shared memory (A box, B boxes, 128B swizzle) and the two 64-bit
    descriptors a warpgroup hands ``wgmma`` for one k-step; only the accumulators are in
    registers."""
    cfg = wgmma.RUNG_CONFIGS["wgmma_2wg"]
    fig, ax = plt.subplots(figsize=(6.25, 5.6), dpi=110)
    ax.set_title(f"wgmma reads one stage ({cfg.stage_bytes // 1024} KB) straight from shared "
                 "memory", fontsize=9)
    # the A box: bm rows of 128 bytes, eight 16-byte chunks per row, swizzled
    rows = 8
    for r in range(rows):
        for c in range(8):
            slot = c ^ (r % 8)
            _box(ax, 0.36 * slot, 4.9 - 0.34 * r, 0.36, 0.34, str(c),
                 COLORS["A"] if c < 2 else "white", fontsize=7)
    ax.text(1.44, 5.45, f"A box: {cfg.bm} rows × 64 k (128 B each);\nrows 0–7: chunk c of "
            "row r sits in slot c XOR r", ha="center", fontsize=7.5)
    # the warpgroup and its registers
    _box(ax, 3.4, 4.2, 1.85, 1.0, "warpgroup (4 warps)\nissues wgmma\nm64n256k16",
         COLORS["bar"], fontsize=7.5)
    _box(ax, 5.55, 4.2, 1.85, 1.0, "registers:\naccumulators only\n(128 per thread)",
         COLORS["acc"], fontsize=7.5)
    _arrow(ax, (5.25, 4.7), (5.55, 4.7))
    # B boxes
    nb = cfg.bn // 64
    width = 4.0 / nb
    for j in range(nb):
        _box(ax, 3.4 + width * j, 1.45, width - 0.1, 2.1, f"B box {j}\n64 k-rows\n× 64 cols",
             COLORS["B"], fontsize=7.5)
    ax.text(3.4 + 2.0, 3.7, f"{nb} B boxes (TMA, 128B swizzle)", ha="center", fontsize=7.5)
    # descriptors
    _box(ax, 0.0, 0.0, 2.9, 1.05, "A descriptor:\nstart (k-step × 32 B),\nSBO 1024 B "
         "(next 8 rows),\nswizzle 128B", "#f7f7f7", fontsize=7.5)
    _box(ax, 3.4, 0.0, 4.0, 1.05, f"B descriptor: start (k-step × 16 rows),\nLBO "
         f"{wgmma.BK * wgmma.ROW} B (next box),\nSBO 1024 B (next 8 k-rows), swizzle 128B",
         "#f7f7f7", fontsize=7.5)
    _arrow(ax, (1.45, 1.05), (1.45, 2.45))
    _arrow(ax, (5.4, 1.05), (5.4, 1.45))
    _arrow(ax, (3.15, 0.5), (3.5, 4.2), "two 64-bit\ndescriptors", rad=-0.35,
           offset=(-1.23, -0.7), fontsize=7.5)
    ax.set_xlim(-0.1, 7.5)
    ax.set_ylim(-0.1, 5.9)
    ax.axis("off")
    fig.tight_layout()
    return fig


def ring_figure(iterations: int = 10):
    """The ring of rung 4: per k-slice ``it``, stage ``it mod S`` and the parity a waiter asks
    of its barriers; the producer waits on *empty*, the consumers on *full*."""
    stages = wgmma.RUNG_CONFIGS["wgmma_ws"].stages
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.25, 6.4), dpi=110,
                                      gridspec_kw={"height_ratios": [1.1, 1]})
    left.set_title(f"{stages} stages, two mbarriers each", fontsize=9)
    for s in range(stages):
        y = stages - 1 - s
        _box(left, 1.0, y, 1.6, 0.8, f"stage {s}", COLORS["B"])
        _box(left, 2.7, y + 0.42, 1.0, 0.36, "full", COLORS["mma"], fontsize=7)
        _box(left, 2.7, y + 0.02, 1.0, 0.36, "empty", COLORS["tma"], fontsize=7)
    _box(left, -0.9, 1.0, 1.4, 1.6, "producer\n(1 thread)\nTMA", COLORS["tma"], fontsize=8)
    _box(left, 4.2, 1.0, 1.5, 1.6, "consumers\n(2 WGs)\nwgmma", COLORS["mma"], fontsize=8)
    _arrow(left, (0.5, 2.4), (1.0, 3.3), "copy +\nbytes", offset=(-0.45, 0.15), fontsize=8)
    _arrow(left, (3.7, 3.6), (4.2, 2.4), "wait\nfull", offset=(0.5, 0.3), fontsize=8)
    _arrow(left, (4.2, 1.2), (3.7, 0.2), "arrive\nempty", offset=(0.55, -0.2), fontsize=8)
    _arrow(left, (2.7, 0.1), (0.5, 1.0), "wait empty", rad=-0.3, offset=(-1.5, -0.3),
           fontsize=8)
    left.set_xlim(-1.0, 5.8)
    left.set_ylim(-0.9, stages + 0.2)
    left.axis("off")
    right.set_title("k-slice → stage and phase parity", fontsize=9)
    for it in range(iterations):
        s, parity = it % stages, (it // stages) % 2
        right.add_patch(Rectangle((it, stages - 1 - s), 0.9, 0.8, facecolor=COLORS["mma"]
                                  if parity == 0 else "#a1d99b", edgecolor="0.3",
                                  linewidth=0.6))
        right.text(it + 0.45, stages - 1 - s + 0.4, f"{it}\np{parity}", ha="center",
                   va="center", fontsize=8)
    right.set_xlim(-0.2, iterations)
    right.set_ylim(-0.9, stages + 0.2)
    right.set_yticks([stages - 1 - s + 0.4 for s in range(stages)],
                     [f"stage {s}" for s in range(stages)], fontsize=8)
    right.set_xticks([])
    right.text(iterations / 2, -0.7, "consumers wait full with parity p = (it ÷ stages) mod 2;\n"
               "the producer waits empty with 1 − p", ha="center", fontsize=8)
    for side in ("top", "right", "bottom"):
        right.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def epilogue_timeline_figure():
    """One SM over two tiles of rung 5 and of rung 7 at 4096³ FP16, drawn to measured times:
    a tile's main loop takes rung 7's GPU time per tile; rung 5's extra time per tile is its
    direct epilogue, during which no wgmma runs. In rung 7 the producer's TMA loads run a ring
    of stages ahead of the consumers, and the copy engine writes C while the next tile's main
    loop runs."""
    tiles = persistent_tiles()
    cfg = wgmma.RUNG_CONFIGS["wgmma_tmastore"]
    per_sm = tiles / results.load("hopper_profile")["provenance"]["sm_count"]
    t5 = common.profile("wgmma_persistent_fp16")["duration_us"] / per_sm
    t7 = common.profile("wgmma_tmastore_fp16")["duration_us"] / per_sm
    epi = t5 - t7
    ahead = cfg.stages * t7 / (4096 // wgmma.BK)     # the ring: stages × time per slice
    fig, ax = plt.subplots(figsize=(6.25, 3.6), dpi=110)
    ax.set_title("One SM, two tiles, 4096³ FP16\n(times per tile from the Nsight Compute "
                 "durations)", fontsize=9)
    lanes = {"rung 5:\nconsumers": 3.3, "rung 7:\nTMA loads": 2.4,
             "rung 7:\nconsumers": 1.7, "rung 7:\ncopy engine": 1.0}
    x = 0.0
    for _ in range(2):
        _box(ax, x, 3.3, t7, 0.5, "main loop (wgmma)", COLORS["mma"], fontsize=7.5)
        _box(ax, x + t7, 3.3, epi, 0.5, "store C", COLORS["epi"], fontsize=7.5)
        x += t7 + epi
    x = 0.0
    small = 0.08 * t7
    for i in range(2):
        # tile i's first slices load as the previous tile's last ones free their stages
        start = max(0.0, x - (small if i else 0.0) - ahead)
        _box(ax, start, 2.4, x + t7 - ahead - start, 0.5, f"loads of tile {i}",
             COLORS["tma"], fontsize=7.5)
        _box(ax, x, 1.7, t7, 0.5, "main loop (wgmma)", COLORS["mma"], fontsize=7.5)
        _box(ax, x + t7, 1.7, small, 0.5, "", COLORS["epi"])
        _box(ax, x + t7 + small, 1.0, 0.45 * t7, 0.5, f"C of tile {i}",
             COLORS["tma"], fontsize=7.5)
        x += t7 + small
    ax.set_yticks([v + 0.25 for v in lanes.values()], list(lanes), fontsize=8)
    ax.set_xlabel("µs on one SM", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylim(0.8, 4.0)
    ax.set_xlim(0, 2 * (t7 + epi) * 1.02)
    ax.grid(True, axis="x", alpha=0.25)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def persistent_tiles(n: int = 4096) -> int:
    """Tiles of the 128×256 rungs at ``n``³."""
    cfg = wgmma.RUNG_CONFIGS["wgmma_tmastore"]
    return (n // cfg.bm) * (n // cfg.bn)


def multicast_figure():
    """Rung 8: two blocks of a cluster on neighbouring SMs take vertically adjacent tiles; each
    asks for its own A box and half of the B boxes, multicast into both blocks' stages."""
    cfg = wgmma.RUNG_CONFIGS["wgmma_cluster"]
    boxes = cfg.bn // 64
    fig, ax = plt.subplots(figsize=(6.25, 3.4), dpi=110)
    ax.set_title("Cluster of 2: each block loads half of B and multicasts it", fontsize=9)
    _box(ax, 3.2, 3.3, 2.6, 0.6, "L2 (A and B panels)", "#f0f0f0")
    for rank, x0 in ((0, 0.0), (1, 5.6)):
        _box(ax, x0, 0.2, 3.4, 2.2, "", "#fafafa")
        ax.text(x0 + 1.7, 0.05, f"block rank {rank} (SM), tile rows {rank}", ha="center",
                va="top", fontsize=7.5)
        _box(ax, x0 + 0.1, 0.35, 0.9, 1.6, f"A box\n(own\nrows)", COLORS["A"], fontsize=7)
        for j in range(boxes):
            mine = j // (boxes // cfg.cluster) == rank
            _box(ax, x0 + 1.1 + 0.55 * j, 0.35, 0.5, 1.6, f"B{j}",
                 COLORS["B"] if mine else "#fee6ce", fontsize=7)
        _arrow(ax, (4.5 - 0.6 + rank * 1.2, 3.3), (x0 + 0.55, 1.95), "A", offset=(0, 0.1))
    for j in range(boxes):
        owner = j // (boxes // cfg.cluster)
        src = (4.0 + owner * 1.0, 3.3)
        for x0 in (0.0, 5.6):
            _arrow(ax, src, (x0 + 1.35 + 0.55 * j, 1.95), color="#e6550d" if owner else
                   "#a63603", rad=0.05)
    ax.text(7.55, 3.6, "each B box: one request,\ndelivered to both blocks", ha="center",
            va="center", fontsize=7.5)
    ax.set_xlim(-0.2, 9.3)
    ax.set_ylim(-0.45, 4.1)
    ax.axis("off")
    fig.tight_layout()
    return fig
