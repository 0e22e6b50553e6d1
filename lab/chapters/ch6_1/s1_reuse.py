"""Section "How much reuse a shape allows": the best intensity of a few shapes, square and
decode-time, against the ridge of the units that run them."""
from __future__ import annotations

from lab import model, page
from lab.chapters.ch6_1.roofs import WEIGHTS, floor_us, roofs


def regime_rows() -> list[dict]:
    """Square products and the decode-time shape: best intensity, the ridge of the units that
    run them, the regime it implies, and the least time."""
    r = roofs()
    n, k = WEIGHTS
    cases = [("square 1024³", 1024, 1024, 1024, "FP32"),
             ("square 4096³", 4096, 4096, 4096, "FP32"),
             ("square 4096³", 4096, 4096, 4096, "FP16")]
    cases += [(f"M = {m} × 4096²", m, n, k, "FP16") for m in (1, 16, 64, 256, 1024)]
    rows = []
    for label, m, nn, kk, fmt in cases:
        e = 4 if fmt == "FP32" else 2
        intensity = model.ideal_intensity(m, nn, kk, e)
        rows.append({"shape": label, "format": fmt, "intensity": intensity,
                     "ridge": r["ridge"][fmt],
                     "bound": "memory" if intensity < r["ridge"][fmt] else "compute",
                     "floor": floor_us(m, nn, kk, fmt, r)})
    return rows


def regime_table():
    """The regime table (the model and the measured roofs)."""
    return page.table(regime_rows(), ["shape", "format", "intensity", "ridge", "bound", "floor"],
                      {"shape": "shape (M × N × K)", "intensity": "best FLOP/B",
                       "ridge": "ridge (FLOP/B)", "bound": "at best",
                       "floor": "least time (µs)"})


def m_cross() -> float:
    """Rows M at which (M × 4096)·(4096 × 4096) in FP16 reaches the FP16 ridge."""
    ridge = roofs()["ridge"]["FP16"]
    n, k = WEIGHTS
    return ridge * k * n / (k * n - ridge * (k + n))


def values() -> dict:
    """The section's numbers, and the GPU's name and SM count the whole page quotes."""
    r = roofs()
    return {"the_gpu": page.gpu_label(r["gpu_name"]), "sms": str(r["sm_count"]),
            "m1_intensity": f"{model.ideal_intensity(1, *WEIGHTS, 2):.2f}",
            "fp16_ridge": f"{r['ridge']['FP16']:.0f}",
            "m_cross": f"{m_cross():.0f}",
            "weights_mib": f"{2 * WEIGHTS[0] * WEIGHTS[1] / 2**20:.0f}",
            "l2_mib": f"{r['l2_bytes'] / 2**20:.0f}"}
