"""Chapter 10's exercises, worked: one function per exercise, ``ex10_N``.

Exercises 1–3 work from the model (:mod:`lab.model`, chapter 10 section) with the numbers their
statements give; exercise 4 runs the schemes on three simulated ranks. :func:`glue_givens`
glues the numbers the statements give, for the chapter; :func:`glue` glues the solutions'
numbers for the appendix page of solutions (names ``ex10_N_key``).
"""
from __future__ import annotations

import numpy as np

from lab import model, page, tables

#: The rate and bus bandwidth the exercises assume (their statements give them).
RATE_TFLOPS = 400.0
BUS_GBPS = 350.0


def ex10_1(rate: float = RATE_TFLOPS, bus: float = BUS_GBPS) -> dict:
    """The smallest square size (a multiple of 1024) at which ``column_gather`` on two GPUs
    reaches 90% efficiency; the closed form: gather / compute = 2·rate / (N · bus) for FP32 C."""
    sizes = range(1024, 262144 + 1, 1024)
    for n in sizes:
        t = model.scheme_seconds("column_gather", n, n, n, 2, rate_tflops=rate, link=bus)
        one = 2.0 * n ** 3 / (rate * 1e12)
        if one / t["total"] / 2 >= 0.9:
            break
    ratio_closed = 2 * rate * 1e12 / (n * bus * 1e9)
    return {"n": n, "efficiency": one / t["total"] / 2,
            "ratio": t["comm"] / t["compute"], "ratio_closed": ratio_closed,
            "n_closed": 2 * rate * 1e12 / (bus * 1e9) * 9}


def ex10_2(n: int = 16384, p: int = 16) -> dict:
    """Bytes each GPU receives for SUMMA over ``p`` GPUs on the grids 1×16, 2×8, 4×4 (FP16)."""
    out = {}
    for pr in (1, 2, 4):
        grid = (pr, p // pr)
        out[f"{grid[0]}x{grid[1]}"] = model.comm_bytes_per_gpu("summa", n, n, n, p, e=2,
                                                               grid=grid)
    best = min(out, key=out.get)
    return {"bytes": out, "best": best, "saving": out["1x16"] / out[best]}


def ex10_3(n: int = 8192, latency_s: float = 30e-6, rate: float = RATE_TFLOPS,
           bus: float = BUS_GBPS) -> dict:
    """``column_overlap`` on two GPUs with a per-collective latency: the time against the
    number of chunks, and the best count."""
    link = {"all_gather": {"latency_s": latency_s, "bus_gbps": bus}}
    times = {c: model.scheme_seconds("column_overlap", n, n, n, 2, rate_tflops=rate,
                                     link=link, chunks=c)["total"]
             for c in (1, 2, 4, 8, 16, 32, 64, 128)}
    best = min(times, key=times.get)
    return {"times_ms": {c: t * 1e3 for c, t in times.items()}, "best": best,
            "gain": times[1] / times[best]}


def ex10_4(world: int = 3) -> dict:
    """Every scheme on three simulated ranks at 10 × 7 × 5 (nothing divides evenly)."""
    from lab.multi import schemes

    rng = np.random.default_rng(10)
    A = rng.uniform(-1, 1, (10, 5)).astype(np.float32)
    B = rng.uniform(-1, 1, (5, 7)).astype(np.float32)
    verdicts = {s: schemes.simulate(s, A, B, world=world, matmul_fn=schemes.numpy_matmul,
                                    chunks=3)["verdict"] for s in schemes.SCHEMES}
    return {"passed": sum(v.passed for v in verdicts.values()), "schemes": len(verdicts),
            "widths": [b - a for a, b in schemes.split(7, world)],
            "worst": max(v.err_over_bound for v in verdicts.values())}


def givens() -> dict:
    """The numbers the exercises' statements give, as text."""
    return {"ex10_rate": tables.fmt(RATE_TFLOPS), "ex10_bus": tables.fmt(BUS_GBPS)}


def glue_givens():
    """Glue :func:`givens` for the chapter's exercises and return them as one checked block."""
    return page.glue(givens())


def values() -> dict:
    """Every number the solutions state, as text (names ``ex10_N_key``)."""
    one, two, three, four = ex10_1(), ex10_2(), ex10_3(), ex10_4()
    f = tables.fmt
    v = {"ex10_1_n": str(one["n"]), "ex10_1_eff": f"{one['efficiency']:.1%}",
         "ex10_1_n_closed": f"{one['n_closed']:.0f}"}
    v["ex10_2_1x16_mib"] = f(two["bytes"]["1x16"] / 2**20)
    v["ex10_2_2x8_mib"] = f(two["bytes"]["2x8"] / 2**20)
    v["ex10_2_4x4_mib"] = f(two["bytes"]["4x4"] / 2**20)
    v["ex10_2_best"] = two["best"].replace("x", " × ")
    v["ex10_2_saving"] = f(two["saving"])
    v["ex10_3_ms_1"] = f(three["times_ms"][1])
    v["ex10_3_ms_4"] = f(three["times_ms"][4])
    v["ex10_3_ms_16"] = f(three["times_ms"][16])
    v["ex10_3_ms_128"] = f(three["times_ms"][128])
    v["ex10_3_best"] = str(three["best"])
    v["ex10_3_gain"] = f(three["gain"])
    v["ex10_4_passed"] = f"{four['passed']} of {four['schemes']}"
    v["ex10_4_widths"] = ", ".join(map(str, four["widths"]))
    v["ex10_4_worst"] = f"{four['worst']:.2f}"
    return v


def glue():
    """Glue :func:`values` for the solutions' prose and return them as one checked text block."""
    return page.glue(values())
