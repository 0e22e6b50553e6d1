"""Section "Fused against the library": our fused kernels against our unfused pair, cuBLAS
followed by our element-wise kernel, and PyTorch's one call (cuBLASLt's fused epilogue) and
two calls, at 4096 × 4096 with two K (``epilogue``); and the kernels torch's profiler saw."""
from __future__ import annotations

import numpy as np

from lab import page, plots, results, tables
from lab.kernels.fused_epilogue import saved_bytes

#: The epilogues of the run, as the page names them.
EPILOGUE_NAMES = {"bias_relu": "ReLU(AB + bias)", "bias_gelu": "GELU(AB + bias)",
                  "full_gelu": "GELU(αAB + βC + bias)"}
#: The variants of the figure and their labels.
VARIANTS = {"unfused": "ours + kernel", "fused": "ours, fused",
            "cublas_unfused": "cuBLAS + kernel", "torch_unfused": "torch, two calls",
            "torch_fused": "torch, one call"}


def epilogue_rows() -> list[dict]:
    """Per design, shape and epilogue: µs per call of each variant, the time fusion saved and
    what the model predicted it would (the product's round trip at the read bandwidth)."""
    bw = next(r for r in results.rows("roofline") if r["kernel"] == "stream_read")["gbps"] * 1e9
    timed = results.rows("epilogue", part="time")
    gemm = {(r["design"], r["m"], r["n"], r["k"], r["impl"]): r["median_ms"] * 1e3
            for r in timed if r["variant"] == "gemm"}
    by: dict = {}
    for r in timed:
        if r["variant"] == "gemm":
            continue
        shape = (r["design"], r["m"], r["n"], r["k"])
        row = by.setdefault((*shape, r["epilogue"]), {
            "design": r["design"], "shape": f"{r['m']}×{r['n']}×{r['k']}", "k": r["k"],
            "epilogue": EPILOGUE_NAMES[r["epilogue"]], "gemm": gemm[(*shape, "numba")],
            "cublas_gemm": gemm[(*shape, "cublas")],
            "model_saved": saved_bytes(r["m"], r["n"],
                                       c=r["epilogue"] == "full_gelu")["saved"] / bw * 1e6})
        row[r["variant"]] = r["median_ms"] * 1e3
    rows = list(by.values())
    for row in rows:
        row["saved"] = row["unfused"] - row["fused"]
    return rows


def epilogue_table():
    """Epilogue fusion, measured: our kernels fused and unfused, against the model."""
    return page.table(epilogue_rows(), ["design", "k", "epilogue", "gemm", "elementwise",
                                        "unfused", "fused", "saved", "model_saved"],
                      {"k": "K", "gemm": "GEMM alone", "elementwise": "epilogue kernel",
                       "model_saved": "model: saved"},
                      title="µs per call, M = N = 4096", source=results.source_line("epilogue"))


def library_table():
    """The same epilogues as a user calls them: cuBLAS then our element-wise kernel, and
    PyTorch in one call and in two, beside our fused kernel and cuBLAS's bare product."""
    return page.table(epilogue_rows(), ["design", "k", "epilogue", "fused", "cublas_gemm",
                                        "cublas_unfused", "torch_fused", "torch_unfused"],
                      {"k": "K", "fused": "ours, fused", "cublas_gemm": "cuBLAS GEMM alone",
                       "cublas_unfused": "cuBLAS + kernel", "torch_fused": "torch, one call",
                       "torch_unfused": "torch, two calls"},
                      title="µs per call, M = N = 4096", source=results.source_line("epilogue"))


def epilogue_figure():
    """Time per call of each way to get the epilogue, at the shorter K."""
    rows = epilogue_rows()
    k_min = min(r["k"] for r in rows)
    pick = [r for r in rows if r["k"] == k_min]
    fig, ax = plots.axes("", "", f"µs per call, K = {k_min}")
    width = 0.8 / len(VARIANTS)
    xs = np.arange(len(pick))
    for i, (v, label) in enumerate(VARIANTS.items()):
        ax.bar(xs + i * width, [r.get(v, 0.0) for r in pick], width, label=label, color=f"C{i}")
    ax.set_xticks(xs + width * (len(VARIANTS) - 1) / 2)
    ax.set_xticklabels([f"{r['design'].upper()}\n{r['epilogue']}" for r in pick], fontsize=7.5)
    return page.figure(plots.finish(fig, ax, loc="below"))


def torch_launched_rows() -> list[dict]:
    """The kernels torch's profiler saw for each torch call (first row per call)."""
    seen = {}
    for r in results.rows("epilogue", part="launched"):
        seen.setdefault((r["design"], r["epilogue"], r["kernel"]), r["launched"])
    return [{"design": d, "epilogue": EPILOGUE_NAMES[e], "call": c.removeprefix("torch:"),
             "kernels": ", ".join(tables.kernel_name(x, 48) for x in launched),
             "gemm_kernels": [x for x in launched if not x.startswith(("Memset", "Memcpy"))]}
            for (d, e, c), launched in seen.items()]


def torch_launched_table():
    """The kernels torch's profiler saw for each torch call (one call: one kernel = fused)."""
    return page.table(torch_launched_rows(), ["design", "epilogue", "call", "kernels"],
                      {"kernels": "kernels launched (torch profiler)"},
                      source=results.source_line("epilogue"))


def verdict(design: str) -> str:
    """In how many cases the fused kernel of ``design`` was faster, and by how much it won or
    lost."""
    here = [r for r in epilogue_rows() if r["design"] == design]
    won = [r["saved"] for r in here if r["saved"] > 0]
    lost = [-r["saved"] for r in here if r["saved"] <= 0]
    text = f"faster in {len(won)} of {len(here)} cases"
    if won:
        text += f" (by up to {max(won):.0f} µs)"
    if lost:
        text += f" and slower in {len(lost)}, by {min(lost):.0f} to {max(lost):.0f} µs"
    return text


def values() -> dict:
    """The measurement's numbers: the verdict on our fused kernels and the FP32 one's worst
    case; torch's one call against cuBLAS's bare product and against cuBLAS + our element-wise
    kernel; which torch calls ran as one kernel."""
    rows = epilogue_rows()
    worst = min((r for r in rows if r["design"] == "fp32"), key=lambda r: r["saved"])
    lib = [r for r in rows if r["design"] == "fp16" and "torch_fused" in r]
    saved = [r["cublas_unfused"] - r["torch_fused"] for r in lib]
    ratio = [r["torch_fused"] / r["cublas_gemm"] for r in lib]
    fused = [r for r in torch_launched_rows() if r["call"] == "torch_fused"]
    one = [f"{r['design'].upper()} {r['epilogue']}" for r in fused if len(r["gemm_kernels"]) == 1]
    two = [f"{r['design'].upper()} {r['epilogue']}" for r in fused if len(r["gemm_kernels"]) > 1]
    return {"epi_fp16_verdict": verdict("fp16"), "epi_fp32_verdict": verdict("fp32"),
            "epi_fp32_worst_case": f"{worst['epilogue']} at {worst['shape']}",
            "epi_fp32_worst": f"{-worst['saved']:.0f}",
            "epi_lib_saved": f"{min(saved):.0f}–{max(saved):.0f}",
            "epi_lib_vs_gemm": f"{min(ratio):.2f}–{max(ratio):.2f}",
            "torch_fused_kernels": (f"one kernel for {', '.join(one) or 'none'}; a GEMM and a "
                                    f"separate epilogue kernel for {', '.join(two) or 'none'}")}
