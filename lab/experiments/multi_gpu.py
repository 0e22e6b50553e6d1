"""Experiment ``multi_gpu``: one GEMM spread over two GPUs with NCCL, against one GPU in the same run.

The launcher (:mod:`lab.multi.launch`) starts one process per GPU; each runs our own kernels
(``tc_fp16`` for FP16 inputs, ``warptile_tuned`` for FP32) on its shard, and the ranks talk
through NCCL (``torch.distributed``). Rows, by ``part``:

* ``check`` — every scheme at odd shapes (N odd, so the shards differ; tile tails on each
  shard), the assembled C of every rank against float64, outputs poisoned with NaN first;
* ``bandwidth`` — all-gather, all-reduce, reduce-scatter and broadcast between the GPUs over a
  range of sizes: time, algorithm and bus bandwidth (the nccl-tests convention);
* ``one_gpu`` — rank 0 running the whole product alone, per size and input type;
* ``add`` — the ``C += T`` SUMMA pays per panel, on one GPU;
* ``scheme`` — every scheme per size: time (the slowest rank), TFLOP/s in all and per GPU,
  speedup and efficiency against the ``one_gpu`` row, and the same call with communication
  switched off (``compute_ms``) and with arithmetic switched off (``comm_ms``), whose share of
  the whole is ``comm_share``.

Results go to ``lab/results/<gpu>-x2/multi_gpu.json`` (e.g. ``h200-x2``). Inputs are cache-hot;
at these sizes the operands are far larger than L2 anyway.
"""
from __future__ import annotations

CHAPTER = "10"
NEEDS = ("torch-nccl-2gpu",)
H200_SECONDS = 140  # measured: 138 s on 2×H200 (compiles in each process, checks, the 32768 products)

WORLD = 2
SIZES = (4096, 8192, 16384, 32768)
KERNELS = {"float16": "tc_fp16", "float32": "warptile_tuned"}
#: Above this size (per input type) only ``BIG_SCHEMES`` run: FP32 at 32768 is 1.6 s a call.
MAX_SIZE_ALL = {"float16": 32768, "float32": 16384}
BIG_SCHEMES = ("column", "column_overlap")
#: Odd check shapes: N odd (unequal column shards), K odd (unequal K shards), M odd (padded
#: row blocks), none a multiple of any tile.
CHECK_SHAPES = ((1001, 1031, 999), (133, 67, 45))
BANDWIDTH_BYTES = (2**20, 2**22, 2**24, 2**26, 2**28, 2**30)
REPEATS = 10
WARMUP = 2
SUMMARY = ("column-parallel, row-parallel, SUMMA and overlapped all-gather on two GPUs over "
           "NCCL, against one GPU; NCCL bandwidth")


def plan(sizes=SIZES, kernels=None) -> dict:
    """What the workers run (see :mod:`lab.multi.worker`)."""
    from lab.multi import schemes

    return {"kernels": dict(kernels or KERNELS), "sizes": list(sizes),
            "schemes": list(schemes.SCHEMES), "big_schemes": list(BIG_SCHEMES),
            "max_size_all": dict(MAX_SIZE_ALL), "few_repeats_from": 32768,
            "check_shapes": [list(s) for s in CHECK_SHAPES],
            "bandwidth_bytes": list(BANDWIDTH_BYTES), "repeats": REPEATS, "warmup": WARMUP,
            "chunks": schemes.CHUNKS, "panels_per_rank": schemes.PANELS_PER_RANK,
            "seed": 2026, "nccl_timeout_s": 600}


def run(progress) -> dict:
    from lab import kernels
    from lab.multi import launch

    chosen = dict(KERNELS)
    notes = []
    for dtype, kernel in KERNELS.items():
        ok, line = kernels.runnable(kernel)
        if not ok:
            chosen.pop(dtype)
            notes.append(f"{dtype} left out: {line}")
    if not chosen:
        raise RuntimeError("no kernel can run here: " + "; ".join(notes))
    work = plan(kernels=chosen)
    for _ in progress([WORLD], desc=f"{WORLD} ranks (progress lines from rank 0)"):
        out = launch.launch(work, world=WORLD, timeout_s=1500)
    parameters = {k: v for k, v in work.items() if k != "nccl_timeout_s"}
    parameters.update(world=WORLD, torch=out["torch"], nccl=out["nccl"],
                      timing="CUDA events per call on every rank after a barrier and a "
                             "synchronisation; a repetition counts the slowest rank; median "
                             "of the repetitions",
                      inputs="cache-hot, one buffer set; A and B made on each GPU from one seed",
                      one_gpu="rank 0 runs the whole product alone in the same run",
                      nvls="off (NCCL_NVLS_ENABLE=0)")
    return {"rows": out["rows"], "parameters": parameters, "row_fields": ("part",),
            "notes": " ".join(notes) or None}
