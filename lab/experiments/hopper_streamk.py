"""Experiment ``hopper_streamk`` (chapter 7): Hopper rung 12, stream-K for the last wave, beside
Hopper rungs 10 and 11 against ``torch.mm`` with the same output type, FP16 and BF16, at 4096³
and 8192³ — ``hopper_past``'s children, checks and GPU-only timing in its "streamk" mode
(medians of its processes), with Nsight Compute on Hopper rungs 11 and 12 (FP16, 4096³)."""
from __future__ import annotations

CHAPTER = "7.2"
SUMMARY = ("Hopper rung 12, stream-K for the last wave, beside Hopper rungs 10 and 11 against "
           "torch.mm, FP16 and BF16, at 4096³ and 8192³")
NEEDS = ("cupy", "torch")
NEEDS_KERNELS = ("wgmma_streamk_fp16",)
H200_SECONDS = 150


def run(progress) -> dict:
    from lab.experiments import hopper_past

    return hopper_past.run(progress, mode="streamk")
