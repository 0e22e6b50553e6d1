"""What every section of chapter 7 reads: the two results files, their rows by name, and the
rungs in ladder order."""
from __future__ import annotations

from lab import results
from lab.kernels import k09_hopper

#: Rungs past rung 8, measured by ``hopper_past`` (section 5), not by ``hopper_profile``.
PAST = ("wgmma_out16", "wgmma_tile16", "wgmma_grid128", "wgmma_streamk", "wgmma_lean",
        "wgmma_ring", "wgmma_uniform", "wgmma_ring_uniform", "wgmma_handoff", "wgmma_table",
        "wgmma_handoff_table")
#: The rungs in ladder order (FP16 names get ``_fp16``, BF16 ``_bf16``).
RUNGS = tuple(r for r in k09_hopper.RUNG_CONFIGS if r not in PAST)
#: The rung each rung changes (rung 6, ping-pong, is a side branch off rung 5 that later rungs
#: do not take; rungs 7 and 8 build on rung 5 and 7).
PARENT = {"wgmma_cpasync": "tc", "wgmma_tma": "wgmma_cpasync", "wgmma_2wg": "wgmma_tma",
          "wgmma_ws": "wgmma_2wg", "wgmma_persistent": "wgmma_ws",
          "wgmma_pingpong": "wgmma_persistent", "wgmma_tmastore": "wgmma_persistent",
          "wgmma_cluster": "wgmma_tmastore", "wgmma_out16": "wgmma_cluster",
          "wgmma_tile16": "wgmma_tmastore", "wgmma_grid128": "wgmma_tile16",
          "wgmma_streamk": "wgmma_tile16", "wgmma_lean": "wgmma_grid128",
          "wgmma_ring": "wgmma_tmastore", "wgmma_uniform": "wgmma_lean",
          "wgmma_ring_uniform": "wgmma_ring", "wgmma_handoff": "wgmma_ring_uniform",
          "wgmma_table": "wgmma_uniform", "wgmma_handoff_table": "wgmma_handoff"}
NUMBER = {name: i + 1 for i, name in enumerate(RUNGS)}
SIZES = (4096, 8192)
DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def summary(kernel: str, size: int) -> dict:
    """The medians over processes of ``kernel`` (``wgmma_ws_fp16``, ``cublas_bf16``…) at
    ``size``³."""
    kind = kernel.rsplit("_", 1)[1]
    for r in results.load("hopper_profile")["rows"]:
        if (r["part"] == "summary" and r["kernel"] == kernel and r["m"] == size
                and r["dtype"] == DTYPES[kind]):
            return r
    raise LookupError(f"hopper_profile: no summary row for {kernel} at {size}")


def profile(kernel: str) -> dict:
    """The Nsight Compute row of ``kernel`` (FP16, 4096³)."""
    for r in results.load("hopper_profile")["rows"]:
        if r["part"] == "profile" and r["kernel"] == kernel:
            return r
    raise LookupError(f"hopper_profile: no profile row for {kernel}")


def timings(kernel: str, size: int) -> list[dict]:
    """Every stability row of ``kernel`` at ``size``³, in process order."""
    return sorted((r for r in results.load("hopper_profile")["rows"] if r["part"] == "stability"
                   and r["kernel"] == kernel and r["m"] == size),
                  key=lambda r: (r["process"], r["position"]))


def ladder_row(kernel: str, size: int, sweep: bool = False) -> dict:
    """A row of the one-process ``hopper`` run (its sweep when ``sweep``)."""
    for r in results.load("hopper")["rows"]:
        if r["kernel"] == kernel and r["m"] == size and (r["rung"] == "sweep") == sweep:
            return r
    raise LookupError(f"hopper: no row for {kernel} at {size} (sweep={sweep})")


def pct(x: float) -> str:
    return f"{x:.1%}"


def spread(r: dict, prefix: str = "") -> str:
    """A summary row's ratio range over the processes, as text (``prefix`` ``"queued_"``: of
    the launch-hidden ratio)."""
    return f"{r[prefix + 'ratio_min']:.3f}–{r[prefix + 'ratio_max']:.3f}"
