"""Section 5's last part, stream-K traced (``streamk_trace``): every consumer warpgroup's steps
on the GPU's global timer — the figure of the last wave, block by block, and the numbers the
prose quotes."""
from __future__ import annotations

import numpy as np

from lab import results

FINISHER = "stream-K, finisher fix-up"
ATOMIC = "stream-K, atomic fix-up"
#: colour and label of each step, by the event that ends it (lab.kernels.wgmma.streamk)
STEPS = {2: ("#9ecae1", "whole tile multiplied"), 3: ("#08519c", "tile stored"),
         4: ("#fdae6b", "share of k-slices multiplied"), 5: ("#d62728", "partial sums published"),
         6: ("#bbbbbb", "staging freed"), 7: ("#ffffff", "waiting for partial sums"),
         8: ("#2ca02c", "partial sums added"), 9: ("#08519c", "tile stored")}


def _row(part: str, kernel: str, shape: tuple) -> dict:
    for r in results.load("streamk_trace")["rows"]:
        if r["part"] == part and r["kernel"] == kernel and (r["m"], r["n"], r["k"]) == shape:
            return r
    raise KeyError(f"streamk_trace has no {part} row of {kernel!r} at {shape}")


def _trace(kernel: str, shape: tuple) -> list[dict]:
    return [r for r in results.load("streamk_trace")["rows"] if r["part"] == "trace" and r["kernel"] == kernel
            and (r["m"], r["n"], r["k"]) == shape and r["warpgroup"] == 0]


def trace_figure():
    """The finisher fix-up's blocks on one time axis (warpgroup 0 of each): at 4096³ the last
    whole tile and the shared wave; at 128×4096×14336 (a decode shape: 16 tiles on 132 blocks)
    the whole launch."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    shapes = (((4096, 4096, 4096), "4096³: the third whole tile, then the shared last wave"),
              ((128, 4096, 14336), "128×4096×14336: 16 tiles' k-slices on 132 blocks"))
    fig, axes = plt.subplots(2, 1, figsize=(6.25, 7.4), dpi=110)
    for ax, (shape, title) in zip(axes, shapes):
        rows = _trace(FINISHER + ", traced", shape)
        start = 95.0 if shape[0] == 4096 else 0.0
        for r in rows:
            prev = None
            for code, t in r["events"]:
                if prev is not None and code in STEPS and t > start:
                    x0 = max(prev, start)
                    ax.barh(r["block"], t - x0, left=x0, height=1.0, color=STEPS[code][0],
                            edgecolor="none")
                prev = t
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("µs from the kernel's first step (%globaltimer)", fontsize=8)
        ax.set_ylabel("block", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_ylim(-0.5, len(rows) - 0.5)
        ax.invert_yaxis()
        ax.grid(True, axis="x", alpha=0.25)
    used = [2, 3, 4, 5, 7, 8]
    fig.legend(handles=[Patch(facecolor=STEPS[c][0], edgecolor="0.6", label=STEPS[c][1])
                        for c in used], loc="lower center", ncol=2, fontsize=8,
               frameon=False)
    fig.suptitle("Stream-K's last wave, block by block (finisher fix-up; white: waiting)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 0.97))
    return fig


def _k_slice_us(shape: tuple) -> tuple[float, float]:
    """Median µs per k-slice in the whole tiles (code 2 after 1 or 3) and in the shares (code 4
    after 3, 1 or 5), from warpgroup 0's events and each block's share of k-slices."""
    m, n, k = shape
    tiles = -(-m // 128) * -(-n // 256)
    k_tiles = -(-k // 64)
    whole, shared = [], []
    for r in _trace(FINISHER + ", traced", shape):
        blocks = len(_trace(FINISHER + ", traced", shape))
        dp = tiles // blocks * blocks
        sk = (tiles - dp) * k_tiles
        lo, hi = r["block"] * sk // blocks, (r["block"] + 1) * sk // blocks
        ev = r["events"]
        starts = [t for c, t in ev if c in (1, 3)]
        for c, t in ev:
            if c == 2:
                whole.append((t - max(s for s in starts if s < t)) / k_tiles)
        last = max((t for c, t in ev if c in (1, 3)), default=0.0)
        share_end = [t for c, t in ev if c == 4]
        pause = sum(t1 - t0 for (c0, t0), (c1, t1) in zip(ev, ev[1:]) if c1 == 5)
        if share_end and hi > lo:
            shared.append((max(share_end) - last - pause) / (hi - lo))
    return float(np.median(whole)) if whole else 0.0, float(np.median(shared))


def values() -> dict:
    big, dec = (4096, 4096, 4096), (128, 4096, 14336)
    st = _row("steps", FINISHER + ", traced", big)
    sd = _row("steps", FINISHER + ", traced", dec)

    def us(kernel, shape):
        return _row("time", kernel, shape)["median_ms"] * 1e3

    def ratio(kernel, shape):
        return us("torch.mm", shape) / us(kernel, shape)

    whole, shared = _k_slice_us(big)
    grid = {r["kernel"]: r for r in results.load("streamk_trace")["rows"] if r["part"] == "grid"
            and (r["m"], r["n"], r["k"]) == dec}
    best = min((r for r in grid.values() if r["kernel"].startswith(FINISHER)),
               key=lambda r: r["median_ms"])
    best_at = min((r for r in grid.values() if r["kernel"].startswith(ATOMIC)),
                  key=lambda r: r["median_ms"])
    sa, sad = _row("steps", ATOMIC + ", traced", big), _row("steps", ATOMIC + ", traced", dec)
    return {
        "tr_tile_us": f"{st['tile_median_us']:.1f}",
        "tr_wave_us": f"{st['last_wave_median_us']:.1f}",
        "tr_wave_max_us": f"{st['last_wave_max_us']:.1f}",
        "tr_publish_us": f"{st['publish_median_us']:.1f}",
        "tr_wait_us": f"{st['wait_median_us']:.1f}",
        "tr_add_us": f"{st['add_median_us']:.1f}",
        "tr_store_us": f"{st['tile_store_median_us']:.1f}",
        "tr_slice_whole_us": f"{whole:.2f}",
        "tr_slice_shared_us": f"{shared:.2f}",
        "tr_saving_us": f"{st['tile_median_us'] * (1 - 116 * 64 / 132 / 64):.1f}",
        "tr_4096_r11": f"{ratio('rung 11', big):.3f}",
        "tr_4096_sk": f"{ratio(FINISHER, big):.3f}",
        "tr_4096_sk_us": f"{us(FINISHER, big):.0f}",
        "tr_4096_r11_us": f"{us('rung 11', big):.0f}",
        "tr_4096_torch_us": f"{us('torch.mm', big):.0f}",
        "tr_dec_end_median_us": f"{sd['end_median_us']:.0f}",
        "tr_dec_end_max_us": f"{sd['end_max_us']:.0f}",
        "tr_dec_add_us": f"{sd['add_median_us']:.1f}",
        "tr_dec_torch_us": f"{us('torch.mm', dec):.0f}",
        "tr_dec_best_us": f"{best['median_ms'] * 1e3:.0f}",
        "tr_dec_best_ratio": f"{us('torch.mm', dec) / (best['median_ms'] * 1e3):.2f}",
        "tr_checks": str(sum(1 for r in results.load("streamk_trace")["rows"] if r["part"] == "check")),
        "tr_atomic_dec_us": f"{us(ATOMIC, dec):.0f}",
        "tr_atomic_best_blocks": best_at["kernel"].rsplit(", ", 1)[1].split()[0],
        "tr_atomic_best_us": f"{best_at['median_ms'] * 1e3:.0f}",
        "tr_atomic_best_ratio": f"{us('torch.mm', dec) / (best_at['median_ms'] * 1e3):.2f}",
        "tr_atomic_4096_us": f"{us(ATOMIC, big):.0f}",
        "tr_atomic_publish_us": f"{sa['publish_median_us']:.1f}",
        "tr_atomic_dec_end_max_us": f"{sad['end_max_us']:.0f}",
        "tr_atomic_one": f"{us(ATOMIC, (1, 4096, 4096)):.0f}",
        "tr_finisher_one": f"{us(FINISHER, (1, 4096, 4096)):.0f}",
    }
