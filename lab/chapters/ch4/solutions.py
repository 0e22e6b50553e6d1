"""Chapter 4's exercises, worked: one function per exercise, ``ex04_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex04_N_key``.
"""
from __future__ import annotations

from lab import page, results
from lab.chapters import common


def ex04_1() -> dict:
    """The warptile kernel's hottest loop: what is neither FFMA nor LDS.128."""
    from lab import compiler

    loop = compiler.report("warptile")[0].loop_mix
    rest = {op: n for op, n in loop.items() if op not in ("FFMA", "LDS.128")}
    return {"ex04_1_ffma": loop.get("FFMA", 0), "ex04_1_lds128": loop.get("LDS.128", 0),
            "ex04_1_rest": sum(rest.values()), "ex04_1_rest_mix": ", ".join(f"{op} ×{n}" for op, n in rest.items())}


def ex04_2() -> dict:
    """PAD = 0 against the default, measured on the H200 (the ladder's variants)."""
    rows = results.load("fp32_ladder")["rows"]
    pad = next(r for r in rows if r["kernel"] == "warptile" and r.get("m") == 4096)
    nopad = next(r for r in rows if r["kernel"] == "warptile_nopad" and r.get("m") == 4096)
    return {"ex04_2_tflops_pad": pad["tflops"], "ex04_2_tflops_nopad": nopad["tflops"],
            "ex04_2_ratio": nopad["tflops"] / pad["tflops"]}


def ex04_3(k_steps: int = 2) -> dict:
    """multiply_tile with ``k_steps`` k-steps per trip: the FFMA share of the loop."""
    from lab import compiler

    loop = compiler.report("warptile")[0].loop_mix
    ffma, lds = loop.get("FFMA", 0), loop.get("LDS.128", 0)
    other = sum(loop.values()) - ffma - lds
    now = ffma // 64                                  # 8 × 8 patch: 64 FFMA per k-step
    new_ffma, new_lds = ffma * k_steps // now, lds * k_steps // now
    return {"ex04_3_steps_now": now, "ex04_3_share_now": ffma / sum(loop.values()),
            "ex04_3_share": new_ffma / (new_ffma + new_lds + other), "ex04_3_ffma": new_ffma, "ex04_3_lds": new_lds,
            "ex04_3_other": other}


def _aligned(k: int) -> float:
    """The share of A's rows (FP32, K wide) whose start is 16-byte aligned."""
    return sum(1 for r in range(4) if (r * k * 4) % 16 == 0) / 4


def ex04_4() -> dict:
    """16-byte loads of A's rows: the share of rows whose start is 16-byte aligned, for the
    four residues of K modulo 4."""
    return {"ex04_4_aligned_4096": _aligned(4096), "ex04_4_aligned_4097": _aligned(4097),
            "ex04_4_aligned_4098": _aligned(4098), "ex04_4_aligned_4099": _aligned(4099)}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex04_N_key``, as text."""
    return common.solution_values(globals(), "ex04_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
