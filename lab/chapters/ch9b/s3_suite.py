"""Section 3, the whole suite: ``lab.gemm`` over cuBLAS at every shape, GPU-only and in a tight
loop; the shapes below 0.9 with their reason; what one decoder layer's GEMMs cost."""
from __future__ import annotations

from lab import page, plots, results
from lab.chapters.ch9b.s1_result import (DECODE_READ_M, SUITE, read_share, rows, shape)

GROUPS = (("decode", "decode (M ≤ 256)"), ("prefill", "prefill (M ≥ 512)"),
          ("square", "squares"), ("odd", "skinny and odd"))
DTYPE_LABEL = {"float16": "FP16", "bfloat16": "BF16"}
#: A call this short (µs of GPU time) is mostly fixed cost: launch, prologue, one tile's
#: latency.
SHORT_US = 15.0
#: The decoder layer whose GEMMs the section adds up, and the token counts.
LAYER_MODEL, LAYER_M = "Llama-3 8B", (1, 16, 128)


def _key(r: dict) -> tuple:
    return r["group"], r["m"], r["n"], r["k"], r["dtype"]


def suite_figure():
    """Ratio to cuBLAS (its time / ours; above 1: ours faster) at every shape of the suite,
    FP16 (BF16 GPU-only as crosses), GPU-only and in a tight loop, one panel per group."""
    import matplotlib.pyplot as plt

    loop = {_key(r): r["ratio_to_cublas"] for r in rows("loop")}
    bf16 = {_key(r)[:4]: r["ratio_to_cublas"] for r in rows("gpu_only", "bfloat16")}
    fig, axes = plt.subplots(4, 1, figsize=(6.9, 9.0), dpi=100,
                             gridspec_kw={"height_ratios": [1.4, 1, 0.8, 0.8]})
    for ax, (group, title) in zip(axes, GROUPS):
        rs = [r for r in rows("gpu_only", "float16") if r["group"] == group]
        xs = range(len(rs))
        ax.plot(xs, [r["ratio_to_cublas"] for r in rs], color="C1", label="GPU only",
                **plots.LIBRARY)
        ax.plot(xs, [loop[_key(r)] for r in rs], color="C0", label="tight loop", **plots.OURS)
        ax.plot(xs, [bf16[_key(r)[:4]] for r in rs], "x", color="C2", markersize=4,
                label="GPU only, BF16")
        ax.axhline(1.0, color="0.3", linestyle=":", linewidth=1.2)
        ax.axhline(0.9, color="C3", linestyle=":", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=min(0.5, ax.get_ylim()[0]))
        ax.grid(True, alpha=0.25)
        ax.set_ylabel("× cuBLAS", fontsize=9)
        if group == "decode":
            ticks = [i for i, r in enumerate(rs) if r["m"] == 1]
            ax.set_xticks(ticks, [f"{r['n']}×{r['k']}" for r in rs if r["m"] == 1],
                          fontsize=8, rotation=45, ha="right")
            ax.set_xlabel("each N×K, then M = 1 … 256", fontsize=8)
        else:
            step = 1 if len(rs) <= 16 else 4
            ax.set_xticks(list(xs)[::step], [shape(r) for r in rs][::step], fontsize=8,
                          rotation=45, ha="right")
    axes[0].legend(fontsize=8, loc="upper right", frameon=False, ncol=3)
    fig.tight_layout()
    return fig


def reason(r: dict, sms: int = 132) -> str:
    """Why a row is behind, from its own numbers: reading B (decode), a call of a few µs, or
    tiles that fill less than the SMs' last wave."""
    us = 1e3 * r["median_ms"]
    if r["group"] == "decode" and r["m"] <= DECODE_READ_M:
        return f"reads B at {read_share(r):.0%} of HBM read"
    if us < SHORT_US:
        return f"{us:.0f} µs a call: fixed cost"
    width = r.get("tile_n") or 256
    tiles = -(-r["m"] // 128) * -(-r["n"] // width)
    if r["kernel"].startswith("tc_small_m"):
        return f"small-M kernel, M = {r['m']}: mma.sync, split K"
    if tiles < sms:
        return f"{tiles} tiles of 128×{width} on {sms} SMs"
    return f"{tiles} tiles of 128×{width}: {tiles / sms:.2f} waves"


def below_rows() -> list[dict]:
    """Every shape and type below 0.9 of cuBLAS by either method, with its reason."""
    loop = {_key(r): r for r in rows("loop")}
    out = []
    for r in rows("gpu_only"):
        other = loop[_key(r)]
        if min(r["ratio_to_cublas"], other["ratio_to_cublas"]) >= 0.9:
            continue
        out.append({"shape": shape(r), "group": r["group"], "dtype": DTYPE_LABEL[r["dtype"]],
                    "us": 1e3 * r["median_ms"], "gpu": r["ratio_to_cublas"],
                    "loop": other["ratio_to_cublas"], "why": reason(r)})
    return out


#: The classes of :func:`reason`, in the order the table lists them.
CLASSES = (("reads B", "decode, M ≤ 16: B read below the HBM rate"),
           ("small-M kernel", "decode, M = 32–64: the small-M kernel (mma.sync, split K)"),
           ("µs a call", "under 15 µs a call: fixed cost"),
           ("SMs", "fewer tiles than SMs"),
           ("waves", "a partial last wave"))


def below_classes() -> list[dict]:
    """The rows below 0.9 by class of reason: how many, the lowest (by either method) and the
    median GPU-only ratio of the class."""
    rows_ = below_rows()
    out = []
    for mark, label in CLASSES:
        group = [r for r in rows_ if mark in r["why"]]
        if not group:
            continue
        low = min(group, key=lambda r: min(r["gpu"], r["loop"]))
        gpu = sorted(r["gpu"] for r in group)
        out.append({"why": label, "rows": len(group), "lowest": f"{low['shape']} {low['dtype']}",
                    "low_gpu": low["gpu"], "low_loop": low["loop"],
                    "median_gpu": gpu[len(gpu) // 2]})
    assert sum(r["rows"] for r in out) == len(rows_), "a row below 0.9 in no class"
    return out


def below_table():
    """The rows below 0.9, by class of reason."""
    return page.table(below_classes(), ["why", "rows", "lowest", "low_gpu", "low_loop",
                                        "median_gpu"],
                      {"rows": "rows", "lowest": "lowest row", "low_gpu": "its × cuBLAS GPU only",
                       "low_loop": "loop", "median_gpu": "class median, GPU only"}, digits=3,
                      title="Rows below 0.9 of cuBLAS (either method), by reason",
                      source=results.source_line(SUITE))


def layer_rows(dtype: str = "float16") -> list[dict]:
    """One decoder layer of :data:`LAYER_MODEL` (its QKV, O, gate/up and down GEMMs) at each
    token count of :data:`LAYER_M`: the sum of GPU-only times, ours and cuBLAS's."""
    ours = [r for r in rows("gpu_only", dtype) if r.get("model") == LAYER_MODEL]
    theirs = {_key(r): r for r in rows("gpu_only", dtype, impl="cublas")}
    out = []
    for m in LAYER_M:
        mine = [r for r in ours if r["m"] == m]
        us = sum(1e3 * r["median_ms"] for r in mine)
        cublas = sum(1e3 * theirs[_key(r)]["median_ms"] for r in mine)
        out.append({"tokens": m, "gemms": len(mine), "ours_us": us, "cublas_us": cublas,
                    "ratio": cublas / us})
    return out


def layer_table():
    return page.table(layer_rows(), ["tokens", "gemms", "ours_us", "cublas_us", "ratio"],
                      {"tokens": "M (tokens)", "gemms": "GEMMs", "ours_us": "ours µs",
                       "cublas_us": "cuBLAS µs", "ratio": "× cuBLAS"}, digits=3,
                      title=f"{LAYER_MODEL}, one decoder layer, FP16, GPU only",
                      source=results.source_line(SUITE))


def values() -> dict:
    below = below_rows()
    layer = {r["tokens"]: r for r in layer_rows()}
    return {"suite_below": str(len(below)),
            "suite_below_decode": str(sum(r["group"] == "decode" for r in below)),
            "suite_layer_model": LAYER_MODEL,
            "suite_layer_1": f"{layer[1]['ratio']:.2f}",
            "suite_layer_16": f"{layer[16]['ratio']:.2f}",
            "suite_layer_128": f"{layer[128]['ratio']:.2f}",
            "suite_layer_1_us": f"{layer[1]['ours_us']:.0f}",
            "suite_layer_16_us": f"{layer[16]['ours_us']:.0f}",
            "suite_layer_128_us": f"{layer[128]['ours_us']:.0f}",
            "suite_layer_1_cublas_us": f"{layer[1]['cublas_us']:.0f}",
            "suite_layer_16_cublas_us": f"{layer[16]['cublas_us']:.0f}",
            "suite_layer_128_cublas_us": f"{layer[128]['cublas_us']:.0f}"}
