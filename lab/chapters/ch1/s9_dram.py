"""Chapter 1, section 9: what DRAM actually delivers, counted by Nsight Compute."""
from __future__ import annotations

from lab import page, results
from lab.chapters.common import measured, model_reads, ncu_ok, ncu_rows


def ncu_table(kernels=("naive", "naive_swapped", "naive_literal")):
    """Bytes the model counts, bytes the SMs read from L2 and bytes read from DRAM (ncu)."""
    rows = ncu_rows()
    out = []
    for r in rows:
        if r["kernel"] not in kernels:
            continue
        row = {"kernel": r["kernel"], "model": model_reads(r["kernel"], r["n"]) / 1e6}
        if ncu_ok():
            row.update({"l2": r["l2_read_bytes"] and r["l2_read_bytes"] / 1e6,
                        "dram": r["dram_read_bytes"] / 1e6,
                        "per_l2": (model_reads(r["kernel"], r["n"]) / r["l2_read_bytes"]
                                   if r["l2_read_bytes"] else None),
                        "per_dram": model_reads(r["kernel"], r["n"]) / r["dram_read_bytes"]})
        out.append(row)
    return page.table(out, ["kernel", "model", "l2", "dram", "per_l2", "per_dram"],
                      {"model": "model (MB)", "l2": "from L2 (MB)", "dram": "DRAM read (MB)",
                       "per_l2": "model / L2",
                       "per_dram": "model / DRAM"},
                      source=results.source_line("ncu_dram"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings: what Nsight Compute counted, or why
    it could not."""
    rows = ncu_rows()
    if not ncu_ok():
        return {"ncu_sentence": "Nsight Compute could not read this GPU's counters, so only "
                                "the model's column is shown; the effective-bandwidth argument "
                                "above is the evidence that caches absorb most of the traffic."}
    by = {r["kernel"]: r for r in rows}
    nv, sw = by["naive"], by["naive_swapped"]
    n = nv["n"]
    one_pass = 4 * 2 * n ** 2
    size = measured()
    passes = nv["dram_read_bytes"] / one_pass
    l1_share = 1 - nv["l2_read_bytes"] / model_reads("naive", n)
    sentence = (
        f"The naive kernel's {model_reads('naive', n) / 1e9:.1f} GB of requests shrink to "
        f"{nv['l2_read_bytes'] / 1e6:,.0f} MB read from L2 (the L1 answered {l1_share:.0%} of "
        f"them) and to {nv['dram_read_bytes'] / 1e6:.1f} MB read from DRAM, "
        f"{passes:.2f} times one pass over A and B"
        + (": at this size the operands stay in the caches, and the model's 2n³ is traffic the "
           "kernel generates, not traffic DRAM sees. " if passes < 1.5 else ". ")
        + f"The swapped kernel reads {sw['l2_read_bytes'] / nv['l2_read_bytes']:.2f} times as "
        f"much from L2 and {sw['dram_read_bytes'] / nv['dram_read_bytes']:.2f} times as much "
        f"from DRAM as the sources' mapping, yet takes "
        f"{size[('naive_swapped', n)]['median_ms'] / size[('naive', n)]['median_ms']:.1f} times "
        "as long: its extra cost is in the L1's handling of requests, as the sweep suggested.")
    return {"ncu_sentence": sentence,
            "one_pass_mb": f"{one_pass / 1e6:.1f}"}
