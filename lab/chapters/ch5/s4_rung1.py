"""Section 'Rung 1: issuing the instruction': the kernel, and the intensity a tile loaded from
global memory sets.
"""
from __future__ import annotations

from lab import model, page
from lab.chapters.ch5.common import machine
from lab.kernels import k07_tensor_core


def naive_listing():
    """Rung 1's kernel, its store folded to one line."""
    return page.source(k07_tensor_core, "tc_naive_kernel",
                       fold={"tc_naive_store": "store the two 16×8 accumulator tiles, guarded at "
                                               "the edges"})


def intensity_rows() -> list[dict]:
    """The model's FLOP/byte of a tile loaded from global memory, and the ceiling it sets if
    every load came from HBM, for rung 1, block tiles of growing size, and the ideal."""
    m = machine()
    cases = (("rung 1: 16×16 per warp, own loads", model.tile_intensity(16, 16, 2)),
             ("64×64 block tile", model.tile_intensity(64, 64, 2)),
             ("128×128 block tile", model.tile_intensity(128, 128, 2)),
             ("128×256 block tile", model.tile_intensity(128, 256, 2)),
             ("ideal, 4096³ (each byte once)", model.ideal_intensity(4096, 4096, 4096, 2, 4)))
    return [{"what": label, "intensity": i,
             "ceiling": min(m["peak"], i * m["read_bps"]) / 1e12} for label, i in cases]


def intensity_table():
    """Intensity and HBM ceiling per tiling (FP16 inputs)."""
    return page.table(intensity_rows(), ["what", "intensity", "ceiling"],
                      {"what": "tiling (FP16 inputs)", "intensity": "FLOP/B",
                       "ceiling": "HBM ceiling (TFLOP/s)"})


def values() -> dict:
    """The numbers the section's prose quotes: the GPU and its tensor ridge."""
    m = machine()
    return {"the_gpu": page.gpu_label(m["gpu"]),
            "tensor_ridge": f"{model.ridge(m['peak'], m['read_bps']):.0f}"}
