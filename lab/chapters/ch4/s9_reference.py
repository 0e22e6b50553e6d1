"""Chapter 4, section 9: beside a CUDA C ladder (siboehm's SGEMM_CUDA on the same GPU)."""
from __future__ import annotations

from lab import page, results
from lab.chapters.ch4.s4_ladder import at_size


#: SGEMM_CUDA's kernels (its numbers) and the rung of ours that makes the same change, or None.
#: Its kernel 1 maps threads across rows (our chapter 1's swapped mapping, not in fp32_ladder);
#: its 1-D block tiling and autotuned 2-D tiling have no rung of their own here.
REFERENCE_PAIRS = ((1, "naive", None), (2, "global-memory coalescing", "naive"),
                   (3, "shared-memory blocking", "tiled32"), (4, "1-D block tiling", None),
                   (5, "2-D block tiling", "block128"), (6, "vectorised accesses", "vectorized"),
                   (7, "bank conflicts (linearise)", "vectorized_spread"),
                   (8, "bank conflicts (offset)", None), (9, "autotuning", None),
                   (10, "warp tiling", "warptile"), (11, "double buffering", "pipelined"),
                   (12, "double buffering (2)", "pipelined"))


def reference_rows() -> list[dict]:
    """SGEMM_CUDA's kernels at 4096³ (% of the cuBLAS its program timed) beside the rung of
    ours that makes the same change (% of the cuBLAS fp32_ladder timed); a kernel of its that
    printed no timing is listed as such."""
    theirs = {r["peer_kernel"]: r for r in results.rows("sgemm_cuda", m=4096)}
    at = at_size()
    rows = []
    for kernel, name, ours in REFERENCE_PAIRS:
        t = theirs.get(kernel)
        rows.append({"kernel": kernel, "theirs": name,
                     "their_pct": t["pct_cublas"] if t else None,
                     "ours": ours or "—", "our_pct": at[ours]["pct_cublas"] if ours else None})
    return rows


def reference_table():
    return page.table(reference_rows(), ["kernel", "theirs", "their_pct", "ours", "our_pct"],
                      {"kernel": "SGEMM_CUDA #", "theirs": "its rung",
                       "their_pct": "% of its cuBLAS", "ours": "our rung",
                       "our_pct": "% of cuBLAS"},
                      digits=3,
                      source=results.source_line("sgemm_cuda"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    at = at_size()
    v = {}
    peer = [r for r in results.rows("sgemm_cuda", m=4096) if r["peer_kernel"] != 0]
    ref_best = max(peer, key=lambda r: r["tflops"])
    ref_pct = ref_best["pct_cublas"]
    best = max(at.values(), key=lambda r: r["tflops"])
    v["ref_vs_ours"] = "above" if best["pct_cublas"] > ref_pct else "below"
    return v
