"""``lab.inlining``: Numba's inliner copying each inlined function once generates the same code.

Offline (a subprocess with ``LAB_DEVICE=compile``: real numba-cuda, no GPU): the PTX of the
warp-tiled FP32 kernel (eleven inline device functions, 162 blocks once inlined) and of the
tuned tensor-core kernel, compiled with the patched inliner and again with Numba's own, must be
the same text (the worker answers each text's length and sha256, a few bytes to commit instead
of the PTX), and the patch must be in place where ``lab`` compiles.
"""
from __future__ import annotations

import json
import sys


def test_the_patched_inliner_generates_the_same_ptx(offline_worker):
    got = offline_worker(__file__, "--ptx")
    assert got["installed"] is True            # the pinned numba-cuda's inliner was patched
    for name, (patched, original) in got["ptx"].items():
        assert patched["length"] > 10_000, name
        assert patched == original, f"{name}: the PTX differs with the patched inliner"
    assert set(got["ptx"]) == {"warptile", "tc_fp16"}


def _ptx_both_ways() -> dict:
    import re

    from numba import cuda

    from lab import inlining
    from lab.kernels.k04_vectorized import SIGNATURE, build
    from lab.kernels.k06_warptile import DEFAULT
    from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS, kernel_for
    from lab.kernels.k08_tc_pipeline import SIGNATURE as TC_SIGNATURE

    def ptx(kind):   # a new function object each time: nothing is reused from a cache
        if kind == "warptile":
            fn, sig = build(DEFAULT)[0].py_func, SIGNATURE
        else:
            cfg = RUNG_CONFIGS["tc_fp16"]
            fn, sig = kernel_for(cfg).py_func, TC_SIGNATURE[cfg.kind]
        text, _ = cuda.compile_ptx(fn, sig, cc=(9, 0), lineinfo=False)
        # mangled names and shared arrays carry counters of this process
        return re.sub(r"_cudapy_smem_\d+", "_cudapy_smem", re.sub(r"_Z\w+", "_Z", text))

    installed = inlining._ORIGINAL is not None
    patched = {kind: ptx(kind) for kind in ("warptile", "tc_fp16")}
    inlining.uninstall()
    original = {kind: ptx(kind) for kind in patched}
    return {"installed": installed,
            "ptx": {k: [_digest(patched[k]), _digest(original[k])] for k in patched}}


def _digest(text: str) -> dict:
    import hashlib

    return {"length": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()}


if __name__ == "__main__" and "--ptx" in sys.argv:
    import lab  # noqa: F401  (decides the mode, installs the patch)

    print(json.dumps(_ptx_both_ways()))
