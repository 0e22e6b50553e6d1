"""Chapter 8, section 2: the step-by-step model's table of its four kernels, reproduced from
:mod:`lab.model` beside the seed's own numbers.
"""
from __future__ import annotations

from lab import model, page, seeds


def seed_rows() -> list[dict]:
    """The step-by-step model's four kernels at 4096³: its quoted numbers beside :func:`lab.model.rung_model`
    on the A100 and the H100 (datasheet roofs), with the course's tile formula for comparison."""
    rows = []
    for s in seeds.LADDER_MODEL_001:
        a100 = model.rung_model(s["kernel"], model.DATASHEET["A100"])
        h100 = model.rung_model(s["kernel"], model.DATASHEET["H100"])
        rows.append({"kernel": s["title"], "seed_fpb": s["flop_per_byte"],
                     "fpb": a100["flop_per_byte"], "course_fpb": model.kernel_model_4096(
                         s["kernel"]), "seed_bound": s["bound_a100"], "bound": a100["bound"],
                     "seed_a100": s["a100_ms"], "a100": a100["seconds"] * 1e3,
                     "seed_h100": s["h100_ms"], "h100": h100["seconds"] * 1e3,
                     "h100_bound": h100["bound"]})
    return rows


def seed_intensity_table():
    """FLOP per byte: the seed's, ours with the store of C counted, the course's tile formula."""
    return page.table(seed_rows(), ["kernel", "seed_fpb", "fpb", "course_fpb"],
                      {"seed_fpb": "the step-by-step model (FLOP/B)", "fpb": "lab.model (FLOP/B)",
                       "course_fpb": "tile formula (FLOP/B)"},
                      source=f"Seed columns: {seeds.LADDER_MODEL_001_SOURCE}. lab.model: "
                             "gemm_traffic (loads and the store of C); tile formula: "
                             "kernel_model_4096 (loads only).")


def seed_time_table():
    """The modelled times on the A100 and the H100, the seed's and ours, with the bounds."""
    return page.table(seed_rows(), ["kernel", "seed_bound", "bound", "seed_a100", "a100",
                                    "seed_h100", "h100", "h100_bound"],
                      {"seed_bound": "seed: bound (A100)", "bound": "bound (A100)",
                       "seed_a100": "seed: A100 (ms)", "a100": "A100 (ms)",
                       "seed_h100": "seed: H100 (ms)", "h100": "H100 (ms)",
                       "h100_bound": "bound (H100)"},
                      source=f"Seed columns: {seeds.LADDER_MODEL_001_SOURCE}. Ours: "
                             "lab.model.rung_model with lab.model.DATASHEET (A100 SXM4 40 GB, "
                             "H100 SXM5).")


def worst_seed_gap() -> float:
    """The largest relative gap between a seed number and ours (intensities and times)."""
    gaps = []
    for r in seed_rows():
        for a, b in (("seed_fpb", "fpb"), ("seed_a100", "a100"), ("seed_h100", "h100")):
            gaps.append(abs(r[b] / r[a] - 1))
    return max(gaps)


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    a100 = model.DATASHEET["A100"]
    tensor_a100 = model.rung_model("tensor", a100)
    v = {}
    v["worst_gap"] = f"{100 * worst_seed_gap():.1f}%"
    v["ridge_a100"] = f"{model.ridge(a100['tensor_tflops'] * 1e12, a100['hbm_gbps'] * 1e9):.0f}"
    v["seed_ridge_a100"] = f"{seeds.TENSOR_RIDGE_A100_001}"
    v["tensor_a100_tflops"] = f"{tensor_a100['tflops']:.1f}"
    v["seed_tensor_a100_tflops"] = f"{seeds.TENSOR_TFLOPS_A100_001:g}"
    return v
