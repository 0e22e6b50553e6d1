"""Section 'Beside the sources' numbers': the T4 study's tensor-core rates, labelled as its own.
"""
from __future__ import annotations

from lab import page, seeds


def seed_table():
    """The T4 study's tensor-core numbers on its Tesla T4, labelled as the seed's."""
    rows = [{**r, "gpu_source": f"{r['gpu']}, {r['source']}"} for r in seeds.TENSOR_CORES_T4]
    return page.table(rows, ["what", "tflops", "flop_per_byte", "gpu_source"],
                      {"what": "kernel (the T4 study)", "tflops": "TFLOP/s",
                       "flop_per_byte": "FLOP/B", "gpu_source": "GPU, source"})


def values() -> dict:
    """The T4 study's numbers the prose quotes: its hand-written WMMA kernel's rate, its share
    of cuBLAS there, and the HBM line at 8 FLOP/B on the T4."""
    t4 = {r["what"]: r["tflops"] for r in seeds.TENSOR_CORES_T4}
    hand = t4["hand-written WMMA, FP16 in -> FP32 out"]
    return {"t4_hand_pct": f"{hand / t4['cuBLAS FP16 in -> FP32 out']:.0%}",
            "t4_hbm_line": f"{8 * seeds.READ_ROOF_T4_GBPS / 1e3:.1f}"}
