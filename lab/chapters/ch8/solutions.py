"""Chapter 8's exercises, worked: one function per exercise, ``ex08_N``, returning the
numbers and verdicts its solution in the book states (from :mod:`lab.model`, the committed
results and compiler facts, or a run of the registered kernels); :func:`glue` puts them in the
prose as ``ex08_N_key``.
"""
from __future__ import annotations

import numpy as np

from lab import model, page, results
from lab.chapters import ch8, common
from lab.counting import count_accesses, in_simulator


def ex08_1(n: int = 4096, tiles=(64, 128, 256, 512, 1024)) -> dict:
    """The smallest square block tile (dividing n) that takes the step-by-step model's BF16 tensor-core kernel
    off the HBM roof on the H200's datasheet, the roof it lands on, and what its accumulators
    would need."""
    h200 = model.DATASHEET["H200"]
    runs = {b: model.rung_model("tensor", h200, n, bm=b, bn=b) for b in tiles}
    first = next(b for b in tiles if runs[b]["bound"] != "HBM")
    tensor = next(b for b in tiles if runs[b]["bound"] == "tensor cores")
    r = runs[first]
    register_file = 64 * 1024 * 4                       # bytes of registers per SM (sm_80/90)
    return {"ex08_1_tile": first, "ex08_1_bound": r["bound"],
            "ex08_1_hbm_us": r["times_s"]["HBM"] * 1e6,
            "ex08_1_smem_us": r["times_s"]["shared memory"] * 1e6,
            "ex08_1_tensor_us": r["times_s"]["tensor cores"] * 1e6,
            "ex08_1_intensity": r["flop_per_byte"], "ex08_1_ridge": h200["tensor_tflops"] / h200["hbm_gbps"]
            * 1e3, "ex08_1_prev_tile": tiles[tiles.index(first) - 1],
            "ex08_1_prev_intensity": runs[tiles[tiles.index(first) - 1]]["flop_per_byte"],
            "ex08_1_tensor_tile": tensor,
            "ex08_1_acc_kb": 4 * first * first / 1024, "ex08_1_regfile_kb": register_file / 1024,
            "ex08_1_acc_over_regfile": 4 * first * first / register_file}


def ex08_2(n: int = 4096) -> dict:
    """The step-by-step model's register kernel with 4 × 4 instead of 8 × 8 patches: the A100's bound moves
    from the ALUs to shared memory; beside it, chapter 3's measured patch4 and patch8."""
    a100, h200 = model.DATASHEET["A100"], model.DATASHEET["H200"]
    r8 = model.rung_model("register", a100, n)
    r4 = model.rung_model("register", a100, n, tm=4, tn=4)
    h8 = model.rung_model("register", h200, n)
    # chapter 3's patch4 is 16 × 16 threads of 4 × 4: a 64 × 64 block tile
    h4 = model.rung_model("register", h200, n, bm=64, bn=64, tm=4, tn=4)
    data = results.load("patch_sweep")
    p4, p8 = common.row_where(data, kernel="patch4"), common.row_where(data, kernel="patch8")
    return {"ex08_2_bound_8": r8["bound"], "ex08_2_bound_4": r4["bound"],
            "ex08_2_a100_smem_ms_8": r8["times_s"]["shared memory"] * 1e3,
            "ex08_2_a100_smem_ms_4": r4["times_s"]["shared memory"] * 1e3,
            "ex08_2_a100_alu_ms": r4["times_s"]["FP32 ALUs"] * 1e3,
            "ex08_2_a100_tflops_8": r8["tflops"], "ex08_2_a100_tflops_4": r4["tflops"],
            "ex08_2_h200_model_tflops_8": h8["tflops"], "ex08_2_h200_model_tflops_4": h4["tflops"],
            "ex08_2_h200_bound_4": h4["bound"],
            "ex08_2_h200_model_ratio": h4["tflops"] / h8["tflops"],
            "ex08_2_gpu": page.gpu_label(data["provenance"]["gpu"]),
            "ex08_2_patch4_tflops": p4["tflops"], "ex08_2_patch8_tflops": p8["tflops"],
            "ex08_2_patch4_model_share": p4["tflops"] / h4["tflops"],
            "ex08_2_patch8_model_share": p8["tflops"] / h8["tflops"],
            "ex08_2_measured_ratio": p4["tflops"] / p8["tflops"]}


def ex08_3(size: int = 16) -> dict:
    """Chapter 3's ``patch1`` kernel (``make_patch(1, 16)``: a 16 × 16 block tile, k-slices of
    16) on a ``size``³ product, its accesses counted under the simulator, beside
    ``model.slice_traffic`` (bytes, 4 per element). On a GPU the count runs in a child process
    on the simulator."""
    from lab import device
    if not device.SIMULATOR:
        return in_simulator("ex08_3", "lab.chapters.ch8.solutions")
    from lab.kernels.k03_registers import make_patch

    rng = np.random.default_rng(8)
    A = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    B = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    C, events = count_accesses(make_patch(1, 16)[1], A, B)
    count = {kind: sum(steps.values()) for kind, steps in ch8.tiled_step_loads(events).items()}
    blocks = (size // 16) ** 2
    model_bytes = model.slice_traffic(16, 16, size)
    model_global = blocks * model_bytes["global"] / 4
    model_loads = blocks * (model_bytes["shared"] - model_bytes["global"]) / 4
    ref = A.astype(np.float64) @ B.astype(np.float64)
    return {"ex08_3_global_counted": count["global"], "ex08_3_global_model": int(model_global),
            "ex08_3_stores_counted": count["shared_store"], "ex08_3_stores_model": int(model_global),
            "ex08_3_loads_counted": count["shared_load"], "ex08_3_loads_model": int(model_loads),
            "ex08_3_fma": size ** 3, "ex08_3_loads_per_fma": count["shared_load"] / size ** 3,
            "ex08_3_agree": (count["global"] == model_global and count["shared_store"] == model_global
                      and count["shared_load"] == model_loads),
            "ex08_3_correct": bool(np.abs(C - ref).max() <= 1e-5 * np.abs(ref).max())}


# ----------------------------------------------------------------------------- the page

def values() -> dict:
    """Every scalar every solution returns, named ``ex08_N_key``, as text."""
    return common.solution_values(globals(), "ex08_")


def glue():
    """Glue :func:`values` for the chapter's prose and return them as one checked text block."""
    return page.glue(values())
