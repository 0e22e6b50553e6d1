"""Section 4, how steady the numbers are: the ladder in three processes, the cluster rung's
drop chased to the host's launch time, and the clock and power the timings ran at."""
from __future__ import annotations

import numpy as np

from lab import plots, results
from lab.chapters.ch7 import common


def host_figure():
    """At 4096³, every stability row's event time per call against the host's time to enqueue
    one call, and its launch-hidden time: above the diagonal the GPU sets the pace, on it the
    host does."""
    fig, ax = plots.axes("Who sets the pace at 4096³: the host's enqueue time or the GPU",
                         "host time to enqueue one call (µs)", "time per call (µs)",
                         size=(7.5, 4.2))
    rows = [r for r in results.load("hopper_profile")["rows"] if r["part"] == "stability"
            and r["m"] == 4096]
    for label, pick, color in (("rung 8 (cluster)", lambda k: "cluster" in k, "C3"),
                               ("rung 7 (TMA store)", lambda k: "tmastore" in k, "C1"),
                               ("cuBLAS", lambda k: k.startswith("cublas"), "C2"),
                               ("other rungs and tc", lambda k: not any(
                                   w in k for w in ("cluster", "tmastore", "cublas")), "C0")):
        mine = [r for r in rows if pick(r["kernel"])]
        ax.scatter([r["host_us_per_call"] for r in mine], [1e3 * r["median_ms"] for r in mine],
                   s=16, color=color, label=f"{label}: events")
        if "cluster" in label:
            ax.scatter([r["host_us_per_call"] for r in mine],
                       [1e3 * r["queued_ms"] for r in mine], s=22, marker="x", color=color,
                       label=f"{label}: launch hidden")
    top = 1.1 * max(max(r["host_us_per_call"], 1e3 * r["median_ms"]) for r in rows)
    ax.plot([0, top], [0, top], color="0.4", linestyle=":", linewidth=1,
            label="time per call = host time")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    return plots.finish(fig, ax)


def values() -> dict:
    """The numbers of the stability paragraphs."""
    first = common.ladder_row("wgmma_cluster_fp16", 4096)
    second = common.ladder_row("sweep: cluster", 4096, sweep=True)
    c8 = [r for r in common.timings("wgmma_cluster_fp16", 4096)]
    t7 = [r for r in common.timings("wgmma_tmastore_fp16", 4096)]
    cu = [r for r in common.timings("cublas_fp16", 4096)]
    tma = [r for r in common.timings("wgmma_tma_fp16", 4096)]
    c8_big = common.summary("wgmma_cluster_fp16", 8192)
    c8_big_rows = common.timings("wgmma_cluster_fp16", 8192)
    ladder_cublas = common.ladder_row("cublas_fp16", 4096)
    power_max = max(r["power_w_max"] for r in results.load("hopper_profile")["rows"]
                    if r["part"] == "stability")
    gpu8 = common.profile("wgmma_cluster_fp16")["duration_us"]
    rung2 = common.summary("wgmma_tma_fp16", 4096)
    # who set rung 8's pace in this run: its host, where every call took longer to enqueue
    # than the kernel runs (a run before the launch plans of lab.launch), else the GPU
    paced = min(r["host_us_per_call"] for r in c8) > gpu8
    return {
        "cluster_4096_pace": (
            "at 4096³ its timings fall far below rung 7 because the host's launch path, not "
            "the kernel, sets the pace" if paced else
            "at 4096³ it times level with rung 7, its host keeping well ahead of the kernel"),
        "cluster_launch_how": (
            "this run's launcher marshalled a cluster launch's arguments in Python for "
            "cuLaunchKernelEx on every call; lab's launch plans now marshal them once"
            if paced else "a launch plan marshals a cluster launch's arguments once and "
            "replays them"),
        "cluster_host_vs": "more than" if paced else "far less than",
        "cluster_pace_so": ("So the GPU waits, and the events time the host" if paced else
                            "So the GPU never waits for the host, and the events time the GPU"),
        "clock_lead": ("A GPU that waits for its host stays cool" if paced else
                       "Rungs 7 and 8 never wait for their host, so their clock falls under "
                       "load as cuBLAS's does"),
        "tma_queued_drop": f"{rung2['ratio_to_cublas'] - rung2['queued_ratio_to_cublas']:.3f}",
        "drop_first_tflops": f"{first['tflops']:.0f}",
        "drop_second_tflops": f"{second['tflops']:.0f}",
        "cluster_host_lo": f"{min(r['host_us_per_call'] for r in c8):.0f}",
        "cluster_host_hi": f"{max(r['host_us_per_call'] for r in c8):.0f}",
        "cluster_event_lo": f"{1e3 * min(r['median_ms'] for r in c8):.0f}",
        "cluster_event_hi": f"{1e3 * max(r['median_ms'] for r in c8):.0f}",
        "cluster_gpu_us": f"{common.profile('wgmma_cluster_fp16')['duration_us']:.0f}",
        "tmastore_gpu_us": f"{common.profile('wgmma_tmastore_fp16')['duration_us']:.0f}",
        "tmastore_host_hi": f"{max(r['host_us_per_call'] for r in t7):.0f}",
        "cublas_host_hi": f"{max(r['host_us_per_call'] for r in cu):.0f}",
        "cluster_mhz": f"{np.median([r['sm_mhz_median'] for r in c8]):.0f}",
        "tmastore_mhz": f"{np.median([r['sm_mhz_median'] for r in t7]):.0f}",
        "tma_mhz": f"{np.median([r['sm_mhz_median'] for r in tma]):.0f}",
        "cluster_tflops_lo": f"{min(r['tflops'] for r in c8):.0f}",
        "cluster_tflops_hi": f"{max(r['tflops'] for r in c8):.0f}",
        "cluster_8192_host_hi": f"{max(r['host_us_per_call'] for r in c8_big_rows):.0f}",
        "cluster_8192_event_lo": f"{1e3 * min(r['median_ms'] for r in c8_big_rows):.0f}",
        "cluster_8192_ratio": f"{c8_big['ratio_to_cublas']:.3f}",
        "cluster_queued_lo": f"{min(r['queued_tflops'] for r in c8):.0f}",
        "cluster_queued_hi": f"{max(r['queued_tflops'] for r in c8):.0f}",
        "tmastore_queued_lo": f"{min(r['queued_tflops'] for r in t7):.0f}",
        "tmastore_queued_hi": f"{max(r['queued_tflops'] for r in t7):.0f}",
        "cublas_queued_tflops": f"{np.median([r['queued_tflops'] for r in cu]):.0f}",
        "cublas_sustained_tflops": f"{common.summary('cublas_fp16', 4096)['tflops']:.0f}",
        "cublas_sustained_mhz": f"{np.median([r['sm_mhz_median'] for r in cu]):.0f}",
        "cublas_short_tflops": f"{ladder_cublas['tflops']:.0f}",
        "cublas_short_repeats": str(ladder_cublas["repeats"]),
        "row_seconds": f"{results.load('hopper_profile')['parameters']['row_s']:.1f}",
        "power_max_w": f"{power_max:.0f}",
    }
