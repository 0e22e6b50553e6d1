"""Chapter 2's bank-conflict count: the degree of one warp-wide access, the grouping of recorded
shared accesses into warps, and the counted runs of tiled32 with and without padding."""
import pytest

import lab  # noqa: F401  (decides the simulator before numba is imported)
from lab import device
from lab.chapters import ch2

simulator_only = pytest.mark.skipif(not device.SIMULATOR, reason="counts accesses in the simulator")


def test_conflict_degree():
    lanes = range(32)
    assert ch2.conflict_degree(list(lanes)) == 1                   # one word per bank
    assert ch2.conflict_degree([0] * 32) == 1                      # broadcast
    assert ch2.conflict_degree([32 * l for l in lanes]) == 32      # one column, 32 wide
    assert ch2.conflict_degree([33 * l for l in lanes]) == 1       # one column, 33 wide
    assert ch2.conflict_degree([2 * l for l in lanes]) == 2        # stride 2: two-way
    assert ch2.conflict_degree([0, 32, 0, 32]) == 2                # repeats count once


def test_warp_grouping():
    # Two warps of a 32 × 2 block, one load each of a 2 × 32 shared array at [x, y]: a column
    # walk per warp, so 32 words in one bank at width 32 and none shared at width 33.
    events = [("shared", "load", "shared0", (x, y), (0, 0, 0), (x, y, 0), 0)
              for y in range(2) for x in range(32)]
    events.append(("global", "load", "A", (0, 0), (0, 0, 0), (0, 0, 0), 0))
    grouped = ch2.warp_accesses(events, (32, 2), 32)
    assert sorted(k[4] for k in grouped) == [0, 1]
    assert all(len(words) == 32 for words in grouped.values())
    assert {ch2.conflict_degree(w) for w in grouped.values()} == {32}
    assert {ch2.conflict_degree(w) for w in ch2.warp_accesses(events, (32, 2), 33).values()} == {1}


@simulator_only
def test_tiled32_banks_counted():
    runs = ch2.bank_runs()
    assert runs["same_accesses"] and runs["unpadded_check"] and runs["padded_check"]
    m, n, k = ch2.BANK_SHAPE
    steps = -(-k // ch2.BANK_TILE)
    for variant in ("unpadded", "padded"):
        kinds = runs[variant]
        assert kinds["A tile store"]["accesses"] == kinds["B tile store"]["accesses"] == 32 * steps
        assert kinds["A read in the k-loop"]["accesses"] == 32 * 32 * steps
        assert all(r["full"] for r in kinds.values())
        # The kernel's own pattern: rows for stores and B reads, one word for A reads.
        assert all(r["max"] == 1 for r in kinds.values())
    rows = ch2.bank_rows(runs)
    assert [r["access"] for r in rows] == [label for _, _, label in ch2.BANK_KINDS]
