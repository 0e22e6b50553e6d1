"""Chapter 4, section 1: where chapter 3 left us: 16-byte loads from Numba, the kernel factory, and
the warp tile, drawn.
"""
from __future__ import annotations

from lab import page, results
from lab.kernels import get_spec, k04_vectorized, k05_pipelined, k06_warptile
from lab.kernels.k04_vectorized import Config


def config(name: str) -> Config:
    """The :class:`Config` of a registered rung of this chapter."""
    return get_spec(name).config


def thread_pieces(cfg: Config, tid: int) -> list[tuple[int, int]]:
    """(row, column) of the top-left corner of each 4 × 4 piece thread ``tid`` owns in the
    block tile — the placement of ``k04_vectorized.make_body`` (region ``placement``)."""
    warp, lane = divmod(tid, 32)
    rm, rn = cfg.TM // 4, cfg.TN // 4
    tx = cfg.BN // cfg.TN
    if cfg.layout == "warp":
        row0 = (warp // (cfg.BN // cfg.WN)) * cfg.WM + (lane % cfg.LM) * 4
        col0 = (warp % (cfg.BN // cfg.WN)) * cfg.WN + (lane // cfg.LM) * 4
        step_m, step_n = cfg.LM * 4, cfg.LN * 4
    elif cfg.layout == "spread":
        row0, col0 = (tid // tx) * 4, (tid % tx) * 4
        step_m, step_n = cfg.BM // rm, cfg.BN // rn
    else:
        row0, col0 = (tid // tx) * cfg.TM, (tid % tx) * cfg.TN
        step_m, step_n = 4, 4
    return [(row0 + i * step_m, col0 + j * step_n) for i in range(rm) for j in range(rn)]


def warp_footprint(cfg: Config, warp: int = 0) -> dict:
    """The rows of A and columns of B one warp reads from shared memory per k, and its FMAs."""
    rows, cols = set(), set()
    for tid in range(32 * warp, 32 * warp + 32):
        for r, c in thread_pieces(cfg, tid):
            rows.update(range(r, r + 4))
            cols.update(range(c, c + 4))
    return {"rows": rows, "cols": cols, "values": len(rows) + len(cols),
            "fma": 32 * cfg.TM * cfg.TN}


def _runs(values) -> list[tuple[int, int]]:
    """Sorted integers as half-open runs of consecutive values: {0, 1, 2, 5} → [(0, 3), (5, 6)]."""
    runs: list[list[int]] = []
    for x in sorted(values):
        if runs and runs[-1][1] == x:
            runs[-1][1] = x + 1
        else:
            runs.append([x, x + 1])
    return [tuple(r) for r in runs]


def warp_tile_figure():
    """Concept figure: which outputs of the 128 × 128 block tile warp 0 computes, and which
    rows of A and columns of B it must read per k, in ``pipelined`` (a warp is two rows of a
    16 × 16 thread grid) and in ``warptile`` (a warp owns a 64 × 32 warp tile). Geometry from
    the two configurations, no measurement."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(1, 2, figsize=(8.4, 4.6), dpi=110)
    for ax, name in zip(axes, ("pipelined", "warptile")):
        cfg = config(name)
        foot = warp_footprint(cfg)
        bm, bn, strip, gap = cfg.BM, cfg.BN, 6, 3
        ox, oy = strip + gap, strip + gap

        def box(x, y, w, h, **kw):
            ax.add_patch(Rectangle((x, y), w, h, **kw))

        box(ox, oy, bn, bm, facecolor="white", edgecolor="0.3", linewidth=1)
        box(0, oy, strip, bm, facecolor="#f1f1f1", edgecolor="0.6", linewidth=0.6)
        box(ox, 0, bn, strip, facecolor="#f1f1f1", edgecolor="0.6", linewidth=0.6)
        if cfg.layout == "warp":                     # the warp tiles
            for wr in range(0, bm, cfg.WM):
                for wc in range(0, bn, cfg.WN):
                    box(ox + wc, oy + wr, cfg.WN, cfg.WM, facecolor="none", edgecolor="0.45",
                        linewidth=1.2, linestyle="--")
        for r0, r1 in _runs(foot["rows"]):            # warp 0's outputs: rows × columns
            for c0, c1 in _runs(foot["cols"]):
                box(ox + c0, oy + r0, c1 - c0, r1 - r0, facecolor="#f6c99b", edgecolor="none")
            box(0, oy + r0, strip, r1 - r0, facecolor="C0", edgecolor="none")
        for c0, c1 in _runs(foot["cols"]):
            box(ox + c0, 0, c1 - c0, strip, facecolor="C2", edgecolor="none")
        for r, c in thread_pieces(cfg, 0):            # lane 0's four pieces
            box(ox + c, oy + r, 4, 4, facecolor="C3", edgecolor="none")
        ax.set_title(f"{name}: warp 0 reads {len(foot['rows'])} + {len(foot['cols'])} = "
                     f"{foot['values']} values per k", fontsize=9)
        ax.set_xlim(-1, ox + bn + 1)
        ax.set_ylim(oy + bm + 1, -1)
        ax.set_aspect("equal")
        ax.axis("off")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c) for c in ("#f6c99b", "C3", "C0", "C2")]
    fig.legend(handles, ["outputs of warp 0 (32 threads)", "one thread: four 4×4 pieces",
                         "rows of A warp 0 reads per k", "columns of B warp 0 reads per k"],
               loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def source(module: str, region: str):
    """A named region of one of the chapter's modules (``k04``, ``k05``, ``k06``, ``vector``)."""
    from lab import vector

    modules = {"k04": k04_vectorized, "k05": k05_pipelined, "k06": k06_warptile,
               "vector": vector}
    return page.source(modules[module], region)


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    peer = [r for r in results.rows("sgemm_cuda", m=4096) if r["peer_kernel"] != 0]
    ref_best = max(peer, key=lambda r: r["tflops"])
    ref_pct = ref_best["pct_cublas"]
    v["ref_best_pct"] = f"{ref_pct:.1f}%"
    v["ref_best_rung"] = ref_best["rung"]
    v["ref_best_tflops"] = f"{ref_best['tflops']:.1f}"
    pipe, warp = warp_footprint(config("pipelined")), warp_footprint(config("warptile"))
    v["values_pipelined"], v["values_warptile"] = str(pipe["values"]), str(warp["values"])
    v["rows_pipelined"], v["cols_pipelined"] = str(len(pipe["rows"])), str(len(pipe["cols"]))
    v["rows_warptile"], v["cols_warptile"] = str(len(warp["rows"])), str(len(warp["cols"]))
    v["warp_fma"] = str(warp["fma"])
    wcfg = config("warptile")
    v["warp_tile"] = f"{wcfg.WM} × {wcfg.WN}"
    v["warp_lanes"] = f"{wcfg.LM} × {wcfg.LN}"
    return v
