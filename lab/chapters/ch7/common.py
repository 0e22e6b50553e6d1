"""What every section of chapter 7 reads: the two results files, their rows by name, and the
rungs in ladder order."""
from __future__ import annotations

from lab import results
from lab.kernels import wgmma

#: Hopper rungs past rung 8, measured by ``hopper_past`` (section 5), not by ``hopper_profile``.
PAST = tuple(name for name, r in wgmma.LADDER.items() if r.number > 8)
#: The rungs in ladder order (FP16 names get ``_fp16``, BF16 ``_bf16``).
RUNGS = tuple(name for name in wgmma.LADDER if name not in PAST)
#: The rung each rung changes, from the rung table (rung 1 changes chapter 5's ``tc``; rung 6,
#: ping-pong, is a side branch off rung 5 that later rungs do not take).
PARENT = {name: r.parent or "tc" for name, r in wgmma.LADDER.items()}
NUMBER = {name: wgmma.LADDER[name].number for name in RUNGS}
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
