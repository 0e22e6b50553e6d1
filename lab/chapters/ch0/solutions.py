"""Chapter 0's exercises, worked: one function per exercise, ``ex00_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex00_N_key``.
"""
from __future__ import annotations

import math

from lab import model, page, results
from lab.chapters import ch0, common


#: FFMA dependent-issue latency (cycles) on Volta and later GPUs, as microbenchmark studies report
#: it (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018).
FFMA_LATENCY_CYCLES = 4
#: Warp schedulers per SM (compute capability 7.0 and later).
SCHEDULERS_PER_SM = 4


def _fma_loop() -> tuple[int, int]:
    """(FFMA, other instructions) of the FMA roof kernel's hottest loop (committed facts)."""
    from lab import compiler

    loop = compiler.report(ch0.FMA_KERNEL)[0].loop_mix
    ffma = loop.get("FFMA", 0)
    return ffma, sum(loop.values()) - ffma


def _fma_peak() -> float:
    """FP32 peak from the clock the roofline run recorded: SMs × 128 lanes × 2 × clock."""
    prov = results.load("roofline")["provenance"]
    return prov["sm_count"] * 128 * 2 * float(prov["max_sm_clock_mhz"]) * 1e6


def ex00_1(chains: int = 4) -> dict:
    """CHAINS cut to ``chains``: occupancy still hides the FFMA latency; the loop's bookkeeping
    is a larger share, which sets the prediction."""
    from lab import roofline

    ffma, other = _fma_loop()
    per_chain = ffma // roofline.CHAINS              # FFMAs per chain per loop trip (UNROLL)
    new_ffma = chains * per_chain
    share = new_ffma / (new_ffma + other)
    data = results.load("roofline")
    params = data["parameters"]
    warps_per_sm = min(params["fma_block"] * params["fma_blocks_per_sm"],
                       model.SM90_LIMITS["threads"]) // 32
    warps_per_scheduler = warps_per_sm // SCHEDULERS_PER_SM
    needed = math.ceil(FFMA_LATENCY_CYCLES / chains)
    return {"ex00_1_loop_ffma": new_ffma, "ex00_1_loop_other": other, "ex00_1_share": share,
            "ex00_1_predicted_tflops": share * _fma_peak() / 1e12,
            "ex00_1_measured_tflops": common.row_where(data, kernel="fma_chains")["tflops"],
            "ex00_1_warps_per_scheduler": warps_per_scheduler, "ex00_1_in_flight": warps_per_scheduler * chains,
            "ex00_1_latency": FFMA_LATENCY_CYCLES, "ex00_1_warps_needed": needed,
            "ex00_1_latency_hidden": warps_per_scheduler * chains >= FFMA_LATENCY_CYCLES}


def ex00_2() -> dict:
    """UNROLL = 1: one trip is CHAINS FFMAs plus the same bookkeeping."""
    from lab import roofline

    ffma, other = _fma_loop()
    share_now = ffma / (ffma + other)
    share = roofline.CHAINS / (roofline.CHAINS + other)
    return {"ex00_2_loop_ffma": roofline.CHAINS, "ex00_2_loop_other": other, "ex00_2_share": share,
            "ex00_2_share_now": share_now, "ex00_2_predicted_tflops": share * _fma_peak() / 1e12}


def ex00_3(tensor_tflops: float = 989.0) -> dict:
    """Ridge of a tensor-core kernel (the tiling primer's H100 SXM dense BF16 peak over our read roof)."""
    read = common.row_where(results.load("roofline"), kernel="stream_read")["gbps"] * 1e9
    ridge = model.ridge(tensor_tflops * 1e12, read)
    tile = 2 * ridge                 # tile_intensity(T, T, 2) = T / 2
    square_n = 3 * ridge             # ideal_intensity(n, n, n, 2) = n / 3
    return {"ex00_3_tensor_tflops": tensor_tflops, "ex00_3_read_tbps": read / 1e12, "ex00_3_ridge": ridge,
            "ex00_3_tile": tile, "ex00_3_tile_pow2": 2 ** math.ceil(math.log2(tile)), "ex00_3_square_n": square_n,
            "ex00_3_fp32_ridge": model.ridge(common.row_where(results.load("roofline"), kernel="fma_chains")
                                      ["tflops"] * 1e12, read)}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex00_N_key``, as text."""
    return common.solution_values(globals(), "ex00_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
