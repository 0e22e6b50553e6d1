"""Chapter 9's exercises, worked: one function per exercise, ``ex09_N``, returning what its
solution in the book states; :func:`values` puts them in the prose as ``ex09_N_key``."""
from __future__ import annotations

import numpy as np

from lab import bench, clocks, model, page, providers, results
from lab.chapters.ch9.s6_clocks import datasheet_mhz

# region: host_provider
def host_provider() -> providers.Provider:
    """Exercise 1's provider: NumPy on the host behind the same face (FP32 in and out)."""
    def prepare(A, B, C):
        def call():
            product = A.copy_to_host().astype(np.float64) @ B.copy_to_host()
            C.copy_to_device(product.astype(np.float32))
        return call

    return providers.Provider("numpy_host", "NumPy on the host", "library", "ours",
                              np.float32, np.float32, prepare, available=lambda: None,
                              needs_gpu=False, tensor_cores=False)
# endregion: host_provider


def ex09_1(shape=(33, 17, 9), seed: int = 9) -> dict:
    """Register :func:`host_provider` for the duration of one check and check it by name
    through ``bench.check``, on an odd shape (fixed seed: the printed ratio is reproducible)."""
    with providers.registered(host_provider()):
        verdict = bench.check("numpy_host", *shape, seed=seed)
    return {"verdict": "PASS" if verdict.passed else "FAIL",
            "err_over_bound": f"{verdict.err_over_bound:.2f}",
            "shape": "×".join(map(str, shape))}


def ex09_2() -> dict:
    """The clock the datasheet's dense FP16 figure implies at 4096 FLOP per clock per SM on
    132 SMs, and the roof at the measured median clock of cuBLAS FP16 (when measured)."""
    sheet = model.DATASHEET["H200"]
    out = {"implied_mhz": datasheet_mhz(), "datasheet_tflops": sheet["tensor_tflops"],
           "roof_at_max": clocks.roof_tflops("tensor_fp16", sheet["sms"], sheet["clock_mhz"])}
    s = next(r for r in results.load("clocks")["rows"] if r["part"] == "summary"
             and r["kernel"] == "cublas_fp16")
    out["roof_at_sampled"] = s["roof_sampled_tflops"]
    return out


def ex09_3(sizes=(4096, 4097, 4100, 4104), element_bytes: int = 2) -> list[dict]:
    """Row pitch of an n×n FP16 matrix in bytes and whether it is a multiple of 16 — what
    16-byte vector loads and TMA descriptors need of every row's start."""
    return [{"n": n, "row_bytes": n * element_bytes,
             "aligned_16": (n * element_bytes) % 16 == 0,
             "pad_to": -(-n // (16 // element_bytes)) * (16 // element_bytes)} for n in sizes]


def values() -> dict:
    """The solutions' numbers for the prose, as strings."""
    one = ex09_1()
    two = ex09_2()
    three = {r["n"]: r for r in ex09_3()}
    return {"ex09_1_verdict": one["verdict"], "ex09_1_ratio": one["err_over_bound"],
            "ex09_1_shape": one["shape"],
            "ex09_2_mhz": f"{two['implied_mhz']:.0f}",
            "ex09_2_roof_max": f"{two['roof_at_max']:.0f}",
            "ex09_2_roof_sampled": f"{two['roof_at_sampled']:.0f}",
            "ex09_3_bytes_4097": str(three[4097]["row_bytes"]),
            "ex09_3_pad_4097": str(three[4097]["pad_to"]),
            "ex09_3_aligned": ", ".join(str(n) for n, r in three.items() if r["aligned_16"])}


def solution_table():
    return page.table(ex09_3(), ["n", "row_bytes", "aligned_16", "pad_to"],
                      {"row_bytes": "row (bytes)", "aligned_16": "multiple of 16 B",
                       "pad_to": "pad n to"})


def glue():
    """Glue :func:`values` for the exercises' prose; returns them as one checked text block."""
    return page.glue(values())
