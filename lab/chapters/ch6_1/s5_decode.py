"""Section "One row against a weight matrix": the decode-time product (M × 4096)·(4096 × 4096)
in FP16, timed per call and queued, cache-hot and with the weights read from HBM
(``shapes``), against the model's floor; the T4 study's numbers beside it."""
from __future__ import annotations

from lab import model, page, plots, results, seeds
from lab.chapters.ch6_1.roofs import WEIGHTS, floor_us, roofs
from lab.kernels import get_spec


def skinny_rows() -> list[dict]:
    """Per-call times (µs) of the decode shape, cache-hot and rotated through HBM."""
    sk = {(r["kernel"], r["m"], r["rotated"]): r for r in results.rows("shapes", part="skinny")}
    r0 = roofs()
    return [{"m": m, "floor": floor_us(m, *WEIGHTS, "FP16", r0),
             "cublas_hot": sk[("cublas_fp16", m, False)]["median_ms"] * 1e3,
             "cublas_hbm": sk[("cublas_fp16", m, True)]["median_ms"] * 1e3,
             "tc_hot": sk[("tc_fp16", m, False)]["median_ms"] * 1e3,
             "tc_hbm": sk[("tc_fp16", m, True)]["median_ms"] * 1e3}
            for m in sorted({m for _, m, _ in sk})]


HEADERS = {"m": "M", "floor": "model floor (µs)", "cublas_hot": "cuBLAS, hot (µs)",
           "cublas_hbm": "cuBLAS, HBM (µs)", "tc_hot": "tc_fp16, hot (µs)",
           "tc_hbm": "tc_fp16, HBM (µs)", "tflops": "cuBLAS, HBM: TFLOP/s",
           "weight_gbps": "weights (GB/s)", "of_read": "% of read roof"}


def skinny_table():
    """The decode shape, per-call timing (the host's launch path included)."""
    return page.table(skinny_rows(), ["m", "floor", "cublas_hot", "cublas_hbm", "tc_hot",
                                      "tc_hbm"],
                      HEADERS, title="per-call timing (includes the launch path)",
                      source=results.source_line("shapes"))


def skinny_queued_rows() -> list[dict]:
    """Queued (GPU-only) times of the decode shape, and what cuBLAS reached with the weights
    read from HBM."""
    q = {(r["kernel"], r["m"], r["rotated"]): r
         for r in results.rows("shapes", part="skinny_queued")}
    r0 = roofs()
    rows = []
    for m in sorted({m for _, m, _ in q}):
        cold = q[("cublas_fp16", m, True)]
        rows.append({"m": m, "floor": floor_us(m, *WEIGHTS, "FP16", r0),
                     "cublas_hot": q[("cublas_fp16", m, False)]["median_ms"] * 1e3,
                     "cublas_hbm": cold["median_ms"] * 1e3,
                     "tc_hbm": q[("tc_fp16", m, True)]["median_ms"] * 1e3,
                     "tflops": cold["tflops"], "weight_gbps": cold["weight_gbps"],
                     "of_read": 100 * cold["weight_gbps"] / r0["read_gbps"]})
    return rows


def skinny_queued_table():
    """GPU time of the decode shape (queued timing) against the model's floor, and cuBLAS's
    rate and weight bandwidth with the weights from HBM."""
    return page.table(skinny_queued_rows(), ["m", "floor", "cublas_hot", "cublas_hbm", "tc_hbm",
                                             "tflops", "weight_gbps", "of_read"],
                      HEADERS, title="GPU time per call (queued timing)",
                      source=results.source_line("shapes"))


def skinny_figure():
    """Time per call over M: the model floor, the GPU time of cuBLAS and tc_fp16 (queued,
    weights from HBM), and cuBLAS per call with the host's launch path."""
    q = skinny_queued_rows()
    per = skinny_rows()
    fig, ax = plots.axes("", "M (rows of activations)", "time per call (µs)", logx=True,
                         logy=True)
    ms = [r["m"] for r in q]
    ax.plot(ms, [r["floor"] for r in q], label="model floor (read roof, FP16 roof)",
            color="0.5", linewidth=1)
    ax.plot(ms, [r["cublas_hbm"] for r in q], label="cuBLAS FP16, GPU time", color="C3",
            **plots.OURS)
    ax.plot(ms, [r["tc_hbm"] for r in q], label="ours (tc_fp16), GPU time", color="C0",
            **plots.OURS)
    ax.plot([r["m"] for r in per], [r["cublas_hbm"] for r in per],
            label="cuBLAS FP16, per call (launch path included)", color="C3", **plots.LIBRARY)
    return page.figure(plots.finish(fig, ax))


def values() -> dict:
    """The section's numbers: per-call times against the GPU's, the single row's time,
    bandwidth and share of larger M, where the flat start ends, our kernel's blocks, and
    the T4 study's numbers."""
    per = skinny_rows()
    small = [x[c] for x in per if x["m"] <= 256 for c in ("cublas_hot", "cublas_hbm")]
    q = skinny_queued_rows()
    one, top = q[0], q[-1]
    at1024 = next(x for x in q if x["m"] == 1024)
    tile = get_spec("tc_fp16").tile
    t4 = {x["m"]: x for x in seeds.SKINNY_T4}
    return {"sk_call_min": f"{min(small):.0f}", "sk_call_max": f"{max(small):.0f}",
            "sk_floor_m1": f"{one['floor']:.1f}",
            "m1_us": f"{one['cublas_hbm']:.1f}",
            "m1_gbps": f"{one['weight_gbps']:,.0f}",
            "m1_share": f"{one['of_read']:.0f}%",
            "m1_of_top": f"{one['tflops'] / top['tflops']:.1%}",
            "m1_of_1024": f"{one['tflops'] / at1024['tflops']:.1%}",
            "m1_vs_floor": f"{one['cublas_hbm'] / one['floor']:.1f}",
            "m_flat": str(max(x["m"] for x in q if x["cublas_hbm"] <= 1.1 * one["cublas_hbm"])),
            "tc_m1_us": f"{one['tc_hbm']:.0f}",
            "tc_m1_blocks": str(model.tile_grid(1, WEIGHTS[1], tile[0], tile[1])),
            "t4_m1_of_1024": f"{seeds.SKINNY_T4_M1_SHARE_OF_M1024:.0%}",
            "t4_m1_us": f"{t4[1]['ms'] * 1e3:.0f}", "t4_m64_us": f"{t4[64]['ms'] * 1e3:.0f}",
            "t4_skinny_share": f"{t4[1]['weight_gbps'] / seeds.READ_ROOF_T4_GBPS:.0%}"}
