"""Experiment ``patch_sweep`` (chapter 3): the register-patch sweep and the 128×128 kernel.

``patch1``, ``patch2``, ``patch4``, ``patch8`` (16×16 threads, BK 16, block tile 16·P) and
``block128`` (128×128×8, 8×8 patch), each checked against float64 at 1024³ and at an odd shape
(1000×1030×999, the edge path), then timed at 4096³ (cache-hot) beside cuBLAS FP32 in the same
run. Each row also carries what the GPU's own loader says about the kernel —
``regs_gpu`` (``get_regs_per_thread()``), ``shared_gpu`` (bytes of static shared memory), the
offline ptxas count ``regs_ptxas`` with ``spill_bytes``/``stack_bytes``, and the occupancy those
numbers allow (:func:`occupancy`, the CUDA occupancy rules for an H100/H200-class SM).

Rows: kernel, patch (P or 0 for cuBLAS), m, n, k, median_ms, min_ms, max_ms, tflops,
pct_cublas, regs_gpu, regs_ptxas, spill_bytes, stack_bytes, shared_gpu, blocks_per_sm,
warps_per_sm, occupancy, smem_reads_per_fma, smem_intensity, checked.

Budget: about 20 s of GPU time.
"""
from __future__ import annotations

import numpy as np

from lab import bench, model

KERNELS = ("patch1", "patch2", "patch4", "patch8", "block128")
PATCH = {"patch1": 1, "patch2": 2, "patch4": 4, "patch8": 8, "block128": 8}
SIZE = 4096
CHECK_SHAPES = ((1024, 1024, 1024), (1000, 1030, 999))

#: Per-SM limits of compute capability 9.0 (CUDA programming guide, occupancy tables).
SM90 = {"regs": 65536, "reg_unit": 256, "max_regs_thread": 255, "max_warps": 64,
        "max_blocks": 32, "smem": 228 * 1024, "smem_reserved_per_block": 1024,
        "max_smem_block": 227 * 1024}


def occupancy(regs: int, shared_bytes: int, threads: int, limits: dict = SM90) -> dict:
    """Resident blocks and warps per SM for a kernel using ``regs`` registers per thread and
    ``shared_bytes`` of shared memory per block of ``threads`` threads."""
    warps = -(-threads // 32)
    per_warp = -(-max(regs, 1) * 32 // limits["reg_unit"]) * limits["reg_unit"]
    by_regs = limits["regs"] // (per_warp * warps)
    by_warps = limits["max_warps"] // warps
    smem = shared_bytes + limits["smem_reserved_per_block"]
    by_smem = limits["smem"] // smem if shared_bytes else limits["max_blocks"]
    blocks = min(by_regs, by_warps, by_smem, limits["max_blocks"])
    limiter = min((("registers", by_regs), ("warps", by_warps), ("shared memory", by_smem),
                   ("blocks", limits["max_blocks"])), key=lambda kv: kv[1])[0]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps / limits["max_warps"], "limited_by": limiter}


def gpu_facts(name: str) -> dict:
    """Registers and shared memory of the (first) compiled kernel, as the driver loaded it."""
    from lab.kernels import get_spec

    dispatcher = get_spec(name).compile[0][0]
    regs = dispatcher.get_regs_per_thread()
    smem = dispatcher.get_shared_mem_per_block()
    if isinstance(regs, dict):            # several signatures: take the float32 one
        regs = max(regs.values())
    if isinstance(smem, dict):
        smem = max(smem.values())
    return {"regs_gpu": int(regs), "shared_gpu": int(smem)}


def check_kernel(name: str) -> bool:
    for m, n, k in CHECK_SHAPES:
        verdict = bench.check(name, m, n, k)
        if not verdict.passed:
            raise AssertionError(f"{name} failed its check: {verdict.line()}")
    return True


def run(progress) -> dict:
    from lab import baselines, compiler

    rows = []
    cublas = None
    if "fp32" in baselines.available():
        cublas = baselines.time("fp32", SIZE, SIZE, SIZE, repeats=20, check_first=False)
        cublas.update(patch=0, pct_cublas=100.0, checked=False)
    for name in progress(KERNELS, desc="patch_sweep"):
        checked = check_kernel(name)
        row = bench.time_kernel(name, SIZE, SIZE, SIZE, repeats=20, check_first=False)
        rep = compiler.report(name)[0]
        facts = gpu_facts(name)
        p = PATCH[name]
        threads = 256
        row.update(patch=p, checked=checked, regs_ptxas=rep.registers,
                   spill_bytes=rep.spill_stores + rep.spill_loads, stack_bytes=rep.stack_bytes,
                   **facts, **occupancy(facts["regs_gpu"], facts["shared_gpu"], threads),
                   smem_reads_per_fma=model.smem_reads_per_fma(p),
                   smem_intensity=model.smem_intensity(p),
                   loop_ffma_share=rep.summary()["loop_ffma_share"])
        if cublas:
            row["pct_cublas"] = 100.0 * row["tflops"] / cublas["tflops"]
        rows.append(row)
    if cublas:   # timed again after the sweep: the ratio uses the mean of the two
        again = baselines.time("fp32", SIZE, SIZE, SIZE, repeats=20, check_first=False)
        cublas["tflops_after"] = again["tflops"]
        rows.append(cublas)
    return {"rows": rows,
            "row_fields": ["kernel", "patch", "m", "n", "k", "median_ms", "min_ms", "max_ms",
                           "tflops"],
            "parameters": {"kernels": list(KERNELS), "size": SIZE, "threads": "16x16",
                           "bk": {"patch*": 16, "block128": 8},
                           "check_shapes": [list(s) for s in CHECK_SHAPES],
                           "inputs": "cache-hot (one buffer set)",
                           "occupancy_limits": SM90},
            "notes": "regs_gpu from Dispatcher.get_regs_per_thread() on the GPU; regs_ptxas "
                     "from lab.compiler (ptxas -v, sm_90, offline). cuBLAS: cublasGemmEx "
                     "COMPUTE_32F, TF32 off."}
