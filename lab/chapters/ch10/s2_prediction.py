"""Chapter 10, section 2: the prediction, bytes each GPU receives against the FLOPs it does."""
from __future__ import annotations

from lab import model, page
from lab.multi import schemes


WORLD = 2


#: The size the bytes table and the done criteria speak about.
N_REF = 16384


LABELS = {"one_gpu": "one GPU (whole product)", "column": "column-parallel (C in blocks)",
          "column_gather": "column-parallel + all-gather", "column_overlap":
          "column-parallel, overlapped all-gather", "row_allreduce": "row-parallel + all-reduce",
          "row_reduce_scatter": "row-parallel + reduce-scatter", "summa": "SUMMA 1 × 2"}


def bytes_rows(n: int = N_REF, e: int = 2) -> list[dict]:
    """Per scheme at n³ on two GPUs (FP16 inputs, FP32 C): FLOPs per GPU, bytes each GPU
    receives, and FLOPs per byte moved (the model's formulas)."""
    rows = []
    for s in schemes.SCHEMES:
        moved = model.comm_bytes_per_gpu(s, n, n, n, WORLD, e=e)
        flops = model.flops(n, n, n) / WORLD
        rows.append({"scheme": LABELS[s], "gflop": flops / 1e9, "mib": moved / 2**20,
                     "per_byte": flops / moved if moved else None,
                     "formula": FORMULAS[s]})
    return rows


FORMULAS = {"column": "0", "column_gather": "½·M·N·4", "column_overlap": "½·M·N·4",
            "row_allreduce": "2·½·M·N·4", "row_reduce_scatter": "½·M·N·4",
            "summa": "½·M·K·e"}


def bytes_table(n: int = N_REF):
    return page.table(bytes_rows(n), ["scheme", "formula", "gflop", "mib", "per_byte"],
                      {"formula": "bytes in per GPU", "gflop": "GFLOP per GPU",
                       "mib": f"MiB in per GPU at n={n}", "per_byte": "FLOP per byte moved"},
                      title=f"Two GPUs, n = {n}, FP16 inputs (e = 2), FP32 C")


def values() -> dict:
    """The numbers this section's prose quotes (the model alone, no measurement), as strings."""
    n = N_REF
    return {"n_ref": str(n),
            "gather_mib": f"{model.comm_bytes_per_gpu('column_gather', n, n, n, 2) / 2**20:.0f}",
            "allreduce_mib": f"{model.comm_bytes_per_gpu('row_allreduce', n, n, n, 2) / 2**20:.0f}",
            "summa_mib": f"{model.comm_bytes_per_gpu('summa', n, n, n, 2, e=2) / 2**20:.0f}",
            "gflop_per_gpu": f"{model.flops(n, n, n) / 2 / 1e9:.0f}",
            "inter_host_gbps": f"{model.INTER_HOST_GBPS:.0f}"}
