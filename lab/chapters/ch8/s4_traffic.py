"""Chapter 8, section 4: the traffic, step by step: the seed's 16 × 16 × 16 animation, drawn
from the model's counters.
"""
from __future__ import annotations

from lab import model, page


#: The animation's problem: SIZE³, worked one BLOCK × BLOCK tile of C at a time, k in slices
#: of SLICE.
SIZE, BLOCK, SLICE = 16, 8, 4


#: Colours of the animation: the slice of A and B being worked on, the C tile, finished C.
_SLICE, _TILE, _DONE = "#4c72b0", "#dd8452", "#f3d9c6"


def _intensity(fma: int, loads: int) -> float:
    """FLOP per byte of FP32 loads: 2 FLOPs per multiply-add over 4 bytes per element."""
    return 2 * fma / (4 * loads) if loads else 0.0


def _draw_step(fig, step: int, steps: list[dict]) -> None:
    """Draw the animation's state after ``step`` steps (0: before the first) into ``fig``."""
    from matplotlib.patches import Rectangle

    fig.clear()
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1.55]})
    cur = steps[step - 1] if step else None
    titles = ("A (16 × 16)", "B (16 × 16)", "C = A·B")
    for ax, title in zip(axes[:3], titles):
        ax.add_patch(Rectangle((0, 0), SIZE, SIZE, facecolor="white", edgecolor="0.4",
                               linewidth=0.8))
        for i in range(SIZE + 1):
            shade = "0.7" if i % SLICE == 0 else "0.9"
            ax.plot([i, i], [0, SIZE], color=shade, linewidth=0.4)
            ax.plot([0, SIZE], [i, i], color=shade, linewidth=0.4)
        ax.set_xlim(-0.5, SIZE + 0.5)
        ax.set_ylim(SIZE + 0.5, -0.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=9)
    a_ax, b_ax, c_ax = axes[:3]
    for r in steps[:step]:                           # finished slices of finished tiles shade C
        if r["slice"] == SIZE // SLICE - 1:
            ti, tj = r["tile"]
            c_ax.add_patch(Rectangle((tj * BLOCK, ti * BLOCK), BLOCK, BLOCK,
                                     facecolor=_DONE, edgecolor="none"))
    if cur:
        ti, tj = cur["tile"]
        k0 = cur["slice"] * SLICE
        a_ax.add_patch(Rectangle((k0, ti * BLOCK), SLICE, BLOCK, facecolor=_SLICE,
                                 edgecolor="none", alpha=0.8))
        b_ax.add_patch(Rectangle((tj * BLOCK, k0), BLOCK, SLICE, facecolor=_SLICE,
                                 edgecolor="none", alpha=0.8))
        c_ax.add_patch(Rectangle((tj * BLOCK, ti * BLOCK), BLOCK, BLOCK, facecolor=_TILE,
                                 edgecolor="none", alpha=0.35 + 0.65 * (cur["slice"] + 1)
                                 / (SIZE // SLICE)))
    txt = axes[3]
    txt.axis("off")
    r = cur or {"step": 0, "naive_global": 0, "tiled_global": 0, "tiled_shared_loads": 0,
                "fma": 0}
    where = (f"step {r['step']} of {len(steps)}: "
             f"C[{cur['tile'][0] * BLOCK}:{cur['tile'][0] * BLOCK + BLOCK}, "
             f"{cur['tile'][1] * BLOCK}:{cur['tile'][1] * BLOCK + BLOCK}], "
             f"k {cur['slice'] * SLICE}–{cur['slice'] * SLICE + SLICE - 1}" if cur
             else f"{len(steps)} steps: 4 tiles of C × 4 slices of k")
    lines = [where, f"multiply-adds: {r['fma']}", "",
             "naive (every operand from global)",
             f"  global loads {r['naive_global']}  "
             f"({_intensity(r['fma'], r['naive_global']):.2f} FLOP/B)",
             "tiled (8 × 8 tile, slices of 4)",
             f"  global loads {r['tiled_global']}  "
             f"({_intensity(r['fma'], r['tiled_global']):.2f} FLOP/B)",
             f"  shared loads {r['tiled_shared_loads']}"]
    txt.text(0.0, 0.95, "\n".join(lines), va="top", ha="left", fontsize=9,
             family="monospace", transform=txt.transAxes)


def step_figure(step: int = 6):
    """One frame of the animation as a static figure: the tile of C, the slices of A and B,
    and the running counters after ``step`` steps."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8.6, 2.5), dpi=110)
    _draw_step(fig, step, model.step_counters(SIZE, BLOCK, SLICE))
    return fig


#: The player's button icons (matplotlib asks a web font for them) as plain characters.
_ICONS = {"fa-minus": "−", "fa-fast-backward": "«", "fa-step-backward": "|◀",
          "fa-play fa-flip-horizontal": "◀", "fa-pause": "❚❚", "fa-play": "▶",
          "fa-step-forward": "▶|", "fa-fast-forward": "»", "fa-plus": "+"}


def _offline_player(html: str) -> str:
    """matplotlib's player without its one outside request: the icon font's stylesheet link
    is dropped and each icon becomes a character, so the page needs no network."""
    import re

    html = re.sub(r'<link rel="stylesheet"\s*href="https?://[^"]*font-awesome[^"]*">', "", html)
    for name, char in _ICONS.items():
        html = html.replace(f'<i class="fa {name}"></i>', char)
    return html


def animation(dpi: int = 72):
    """The step-by-step model's animation in our drawing: the SIZE³ product step by step (one frame before
    the first step, one per step), as an interactive player (HTML, frames embedded as PNG).
    The plain-text form names the frames and the size of the HTML."""
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    steps = model.step_counters(SIZE, BLOCK, SLICE)
    fig = plt.figure(figsize=(8.6, 2.5), dpi=dpi)
    anim = FuncAnimation(fig, lambda i: _draw_step(fig, i, steps), frames=len(steps) + 1,
                         interval=700, repeat=False)
    html = _offline_player(anim.to_jshtml(fps=1.5, default_mode="once"))
    plt.close(fig)
    return page._Output({"text/html": html,
                         "text/plain": f"[animation: {len(steps) + 1} frames, "
                                       f"{len(html) // 1024} KiB of HTML]"})


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    last = model.step_counters(SIZE, BLOCK, SLICE)[-1]
    v.update({"anim_naive": str(last["naive_global"]), "anim_tiled": str(last["tiled_global"]),
              "anim_shared": str(last["tiled_shared_loads"]), "anim_fma": str(last["fma"]),
              "anim_naive_fpb": f"{_intensity(last['fma'], last['naive_global']):.2f}",
              "anim_tiled_fpb": f"{_intensity(last['fma'], last['tiled_global']):.2f}",
              "anim_steps": str(last["step"])})
    return v
