"""Four layers, four contracts: the providers of the chapter, one face, and our Triton kernel."""
from __future__ import annotations

import numpy as np

from lab import libraries, page, providers
from lab.chapters.ch9.common import FP16, FP32

def layer_rows() -> list[dict]:
    """Every provider of the chapter: its layer, what it is, what it takes and writes."""
    out = []
    for name in FP16 + FP32:
        p = providers.get(name)
        out.append({"provider": name, "layer": p.layer, "what": p.title,
                     "in": p.dtype_name, "out": np.dtype(p.out_dtype).name})
    return out


def layer_table():
    """The chapter's providers, one face: the names ``bench.check`` and ``bench.time`` take."""
    return page.table(layer_rows(), ["provider", "layer", "what", "in", "out"],
                      {"in": "A, B", "out": "C"})


def triton_source():
    """Our Triton kernel, from lab/triton_gemm.py (read, not imported: it needs Triton)."""
    from pathlib import Path

    return page.source(Path(libraries.__file__).with_name("triton_gemm.py"), "kernel")
