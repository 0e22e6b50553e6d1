"""Experiment ``hopper_table`` (chapter 7): Hopper rungs 18 and 19, the tile order read from a
table, beside Hopper rungs 15 and 17 and fast.cu's kernel 12, against cuBLAS with the same output
type (FP32 out: cuBLAS via CuPy; FP16/BF16 out: ``torch.mm``), FP16 and BF16, at 4096³ and 8192³ —
``hopper_past``'s children, checks and GPU-only timing in its "table" mode (medians of its
processes), with Nsight Compute on the four rungs and both yardsticks (FP16, 4096³)."""
from __future__ import annotations

CHAPTER = "7.2"
SUMMARY = ("Hopper rungs 18 and 19 (a tile table) beside Hopper rungs 15 and 17 and fast.cu's "
           "kernel 12, against cuBLAS with the same output type, FP16 and BF16, at 4096³ and "
           "8192³")
NEEDS = ("cupy", "torch")
NEEDS_KERNELS = ("wgmma_table_fp16",)
H200_SECONDS = 200


def run(progress) -> dict:
    from lab.experiments import hopper_past

    return hopper_past.run(progress, mode="table")
