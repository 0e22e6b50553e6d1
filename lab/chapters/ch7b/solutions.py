"""Chapter 7b's exercises, worked: one function per exercise, ``ex7b_N``, returning what its
solution in the book shows."""
from __future__ import annotations

import numpy as np

from lab import fp8, results
from lab.chapters.ch7b.common import EXPERIMENT, speed


def ex7b_1(code: int = 0x5B, fmt: str = "e4m3") -> dict:
    """Decode one code by hand: its fields, the formula, and ``lab.fp8.decode``'s answer."""
    f = fp8.get_format(fmt)
    e = (code >> f.mantissa_bits) & (2 ** f.exponent_bits - 1)
    man = code & (2 ** f.mantissa_bits - 1)
    by_hand = (-1) ** (code >> 7) * 2.0 ** (e - f.bias) * (1 + man / 2 ** f.mantissa_bits)
    return {"code": f"0x{code:02X}", "exponent": e, "mantissa": man,
            "formula": f"2^({e} − {f.bias}) · (1 + {man}/{2 ** f.mantissa_bits})",
            "by hand": by_hand,
            "decode": float(fp8.decode(np.array([code], np.uint8), fmt)[0])}


def ex7b_2(k: int = 4096, mn: int = 32, seed: int = 5) -> dict:
    """How much error does promotion every 512 k leave against every 128 k, in the model?
    (Each promotion interval is a tensor-core sum of its own; its error grows with its
    length, so 4× the interval should give about 2× the error if the truncations add like a
    random walk, 4× if they add up.)"""
    rng = np.random.default_rng(seed)
    a, bt = rng.standard_normal((mn, k)), rng.standard_normal((mn, k))
    qa, sa = fp8.quantize(a)
    qb, sb = fp8.quantize(bt)
    ref = fp8.reference(qa, qb, sa, sb)
    err = {p: float(np.linalg.norm(fp8.emulate(qa, qb, sa, sb, promote=p) - ref)
                    / np.linalg.norm(ref)) for p in (128, 512)}
    return {"promote 128": f"{err[128]:.2e}", "promote 512": f"{err[512]:.2e}",
            "ratio": f"{err[512] / err[128]:.1f}"}


def ex7b_3(n: int = 8192) -> dict:
    """At n³ and our measured FP8 rate, how long does the product take, and how long would
    reading A and B once and writing C once (FP32 or BF16) take at the copy bandwidth
    chapter 0 measured (``roofline``: the ``copy`` row, read + write)? FP8 halves the input
    bytes and doubles the rate: is 8192³ still bound by arithmetic?"""
    tflops = speed(results.load(EXPERIMENT))[("fp8_e4m3", n)]["tflops"]
    copy = [r for r in results.load("roofline")["rows"] if r["kernel"] == "copy"][0]
    hbm_tbps = copy["gbps"] / 1e3
    flops = 2.0 * n ** 3
    t_math = flops / (tflops * 1e12) * 1e3
    rows = {}
    for out, size in (("f32", 4), ("bf16", 2)):
        nbytes = 2 * n * n * 1 + n * n * size
        rows[f"memory ms ({out} out)"] = nbytes / (hbm_tbps * 1e12) * 1e3
    out = {"TFLOP/s": tflops, "copy TB/s": hbm_tbps, "math ms": t_math, **rows,
           "flop per byte (bf16 out)": flops / (2 * n * n + 2 * n * n)}
    return {key: f"{value:.3g}" for key, value in out.items()}
