"""Section "List the shapes first": one 4096-wide decoder layer's products at prefill and at
decode, with the model's columns — best intensity, regime, alignment."""
from __future__ import annotations

from lab import model, page
from lab.chapters.ch6_1.roofs import roofs

#: One 4096-wide decoder layer (hidden 4096, MLP 14336, vocabulary 32,001): name, N, K.
LAYER = (("QKV projection", 3 * 4096, 4096), ("output projection", 4096, 4096),
         ("MLP up", 14336, 4096), ("MLP down", 4096, 14336), ("vocabulary", 32001, 4096))
#: Tokens per product at prefill and at decode.
PHASES = (("prefill", 4096), ("decode", 1))


def manifest_rows() -> list[dict]:
    """The layer's GEMMs at prefill and decode, FP16 inputs: best intensity, regime, and
    whether N and K are multiples of 8."""
    ridge = roofs()["ridge"]["FP16"]
    rows = []
    for phase, tokens in PHASES:
        for name, n, k in LAYER:
            intensity = model.ideal_intensity(tokens, n, k, 2)
            rows.append({"gemm": f"{phase}: {name}", "m": tokens, "n": n, "k": k,
                         "intensity": intensity,
                         "bound": "memory" if intensity < ridge else "compute",
                         "aligned": n % 8 == 0 and k % 8 == 0})
    return rows


def manifest_table():
    """The shape list of one layer."""
    return page.table(manifest_rows(), ["gemm", "m", "n", "k", "intensity", "bound", "aligned"],
                      {"gemm": "GEMM", "m": "M", "n": "N", "k": "K",
                       "intensity": "best FLOP/B", "bound": "at best",
                       "aligned": "N, K ÷ 8"},
                      title="FP16 inputs, FP32 accumulation")


def values() -> dict:
    """The vocabulary's size, padded to a multiple of 64, and the work padding adds."""
    vocab = next(n for name, n, _ in LAYER if name == "vocabulary")
    padded = -(-vocab // 64) * 64
    return {"vocab": f"{vocab:,}", "vocab_padded": f"{padded:,}",
            "vocab_pad_extra": f"{padded / vocab - 1:.1%}"}
