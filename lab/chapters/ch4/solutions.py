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
    return {"ffma": loop.get("FFMA", 0), "lds128": loop.get("LDS.128", 0),
            "rest": sum(rest.values()), "rest_mix": ", ".join(f"{op} ×{n}" for op, n in rest.items())}


def ex04_2() -> dict:
    """PAD = 0 against the default, measured on the H200 (the ladder's variants)."""
    rows = results.load("fp32_ladder")["rows"]
    pad = next(r for r in rows if r["kernel"] == "warptile" and r.get("m") == 4096)
    nopad = next(r for r in rows if r["kernel"] == "warptile_nopad" and r.get("m") == 4096)
    return {"tflops_pad": pad["tflops"], "tflops_nopad": nopad["tflops"],
            "ratio": nopad["tflops"] / pad["tflops"]}


def ex04_3(k_steps: int = 2) -> dict:
    """multiply_tile with ``k_steps`` k-steps per trip: the FFMA share of the loop."""
    from lab import compiler

    loop = compiler.report("warptile")[0].loop_mix
    ffma, lds = loop.get("FFMA", 0), loop.get("LDS.128", 0)
    other = sum(loop.values()) - ffma - lds
    now = ffma // 64                                  # 8 × 8 patch: 64 FFMA per k-step
    new_ffma, new_lds = ffma * k_steps // now, lds * k_steps // now
    return {"steps_now": now, "share_now": ffma / sum(loop.values()),
            "share": new_ffma / (new_ffma + new_lds + other), "ffma": new_ffma, "lds": new_lds,
            "other": other}


def ex04_4(ks=(4096, 4097, 4098, 4099, 4100)) -> dict:
    """16-byte loads of A's rows: the share of rows whose start is 16-byte aligned, by K."""
    out = {}
    for k in ks:
        aligned = sum(1 for r in range(4) if (r * k * 4) % 16 == 0) / 4
        out[f"aligned_{k}"] = aligned
        out[f"full_words_{k}"] = k // 4
        out[f"tail_{k}"] = k % 4
    return out


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex04_N_key``, as text."""
    return common.solution_values(globals(), "ex04_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
