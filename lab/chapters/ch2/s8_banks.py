"""Chapter 2, section 8: shared-memory banks, the conflicts of every shared access counted from a
simulated run.
"""
from __future__ import annotations

from lab import bench, device, page
from lab.chapters.common import example_inputs
from lab.counting import count_accesses, in_simulator
from lab.kernels import k02_tiled


#: Shared memory's banks on every GPU since compute capability 5.0: 32 banks, 4 bytes wide;
#: consecutive 4-byte words sit in consecutive banks.
BANKS, BANK_BYTES = 32, 4


WARP = 32


#: The counted run: one 32 × 32 block of C, one step along k (a few seconds in the simulator).
BANK_TILE, BANK_SHAPE = 32, (32, 32, 32)


#: The four access kinds of the tiled kernel: (shared array, op, label). The simulator names
#: shared arrays by the order in which the kernel creates them: the A tile first, then B.
BANK_KINDS = (("shared0", "store", "A tile store"), ("shared1", "store", "B tile store"),
              ("shared0", "load", "A read in the k-loop"),
              ("shared1", "load", "B read in the k-loop"))


def conflict_degree(words) -> int:
    """The bank conflict degree of one warp-wide access to 4-byte ``words`` (one per active
    lane): the most distinct words any one bank must serve. Lanes reading the same word share
    one transfer (a broadcast), so 1 is conflict-free and 32 is fully serialised."""
    per_bank: dict[int, set] = {}
    for w in words:
        per_bank.setdefault(w % BANKS, set()).add(w)
    return max(len(s) for s in per_bank.values())


def warp_accesses(events, block_dim: tuple[int, int], width: int) -> dict:
    """Group the shared accesses of a counted run (:func:`lab.counting.count_accesses`)
    into warp-wide accesses: key (array, op, block, barriers passed, warp, n-th access of this
    array and op by each thread since its last barrier), value the 4-byte words the warp's lanes
    touch, with a shared array of row width ``width`` words. Threads are numbered
    ``x + y·block_dim[0]``, 32 to a warp, as the hardware numbers them."""
    ordinal: dict = {}
    grouped: dict = {}
    for space, op, array, idx, blk, thr, barriers in events:
        if space != "shared":
            continue
        phase = (array, op, blk, thr, barriers)
        n = ordinal.get(phase, 0)
        ordinal[phase] = n + 1
        warp = (thr[0] + thr[1] * block_dim[0]) // WARP
        row, col = idx
        grouped.setdefault((array, op, blk, barriers, warp, n), []).append(row * width + col)
    return grouped


def bank_degrees(events, block_dim: tuple[int, int], width: int) -> dict:
    """Per access kind (:data:`BANK_KINDS`): the number of warp-wide accesses, the largest and
    the mean conflict degree over them, and whether every warp-wide access had all 32 lanes."""
    grouped = warp_accesses(events, block_dim, width)
    out = {}
    for array, op, label in BANK_KINDS:
        groups = [w for (a, o, *_), w in grouped.items() if a == array and o == op]
        degrees = [conflict_degree(w) for w in groups]
        out[label] = {"accesses": len(groups), "max": max(degrees),
                      "mean": sum(degrees) / len(degrees),
                      "full": all(len(w) == WARP for w in groups)}
    return out


def bank_runs() -> dict:
    """Lab's ``tiled32`` and :func:`lab.kernels.k02_tiled.make_tiled_study` (32 × 33) counted on one
    :data:`BANK_SHAPE` product in the simulator: per kind the conflict degrees of each, whether
    the two record the very same accesses (thread, block, element, barrier count: only the
    address differs), and each output's verdict against float64. On a GPU the counting runs in
    a child Python on the simulator."""
    if not device.SIMULATOR:
        return in_simulator("bank_runs", "lab.chapters.ch2")
    m, n, k = BANK_SHAPE
    A, B = example_inputs(m=m, k=k, n=n)
    t = BANK_TILE
    C_lab, lab_events = _counted(k02_tiled.make_launch(t), A, B)
    C_pad, pad_events = _counted(k02_tiled.make_tiled_study(t, pad=1), A, B)
    return {"unpadded": bank_degrees(lab_events, (t, t), t),
            "padded": bank_degrees(pad_events, (t, t), t + 1),
            "same_accesses": sorted(lab_events) == sorted(pad_events),
            "unpadded_check": bench.compare(C_lab, A, B).passed,
            "padded_check": bench.compare(C_pad, A, B).passed}


def _counted(launch, A, B):
    """:func:`lab.counting.count_accesses`, checked to be whole: every thread worked on the
    same two shared arrays, ``shared0`` and ``shared1`` (the A and B tiles); RuntimeError if not."""
    C, events = count_accesses(launch, A, B)
    arrays: dict = {}
    for space, _op, array, _idx, blk, thr, _bar in events:
        if space == "shared":
            arrays.setdefault((blk, thr), set()).add(array)
    if {frozenset(a) for a in arrays.values()} != {frozenset({"shared0", "shared1"})}:
        raise RuntimeError("a counted run did not share one pair of tiles among its threads")
    return C, events


def bank_rows(runs: dict | None = None) -> list[dict]:
    """Per access kind: warp-wide accesses counted, and the worst and mean conflict degree with
    the 32 × 32 tiles of ``tiled32`` and with 32 × 33 tiles."""
    runs = runs or bank_runs()
    return [{"access": label, "warps": runs["unpadded"][label]["accesses"],
             "plain_max": runs["unpadded"][label]["max"],
             "plain_mean": runs["unpadded"][label]["mean"],
             "padded_max": runs["padded"][label]["max"],
             "padded_mean": runs["padded"][label]["mean"]} for _, _, label in BANK_KINDS]


def bank_table(runs: dict | None = None):
    """:func:`bank_rows` as a table, with the checks of the counted runs under it."""
    runs = runs or bank_runs()
    m, n, k = BANK_SHAPE
    word = {True: "PASS", False: "FAIL"}
    return page.table(
        bank_rows(runs), ["access", "warps", "plain_max", "plain_mean", "padded_max",
                          "padded_mean"],
        {"warps": "warp-wide accesses", "plain_max": "[32][32] worst",
         "plain_mean": "[32][32] mean", "padded_max": "[32][33] worst",
         "padded_mean": "[32][33] mean"},
        source=f"Counted: lab.counting.count_accesses on tiled32 and on the same kernel "
               f"with 32 × 33 tiles (k02_tiled.make_tiled_study with pad=1), {m}×{n}×{k}, CUDA simulator; "
               f"32 banks of 4 bytes. Same accesses apart from the addresses: "
               f"{'yes' if runs['same_accesses'] else 'NO'}. Against float64: "
               f"{word[runs['unpadded_check']]} (32 × 32), "
               f"{word[runs['padded_check']]} (32 × 33).")


def bank_values(runs: dict | None = None) -> dict:
    """The numbers the banks section quotes: the worst degree of the kernel's accesses with and
    without padding, and a warp reading down one column of a 32-wide and a 33-wide tile."""
    runs = runs or bank_runs()
    lanes = range(WARP)
    return {"bank_worst_plain": str(max(r["max"] for r in runs["unpadded"].values())),
            "bank_worst_padded": str(max(r["max"] for r in runs["padded"].values())),
            "bank_column_32": str(conflict_degree([lane * 32 for lane in lanes])),
            "bank_column_33": str(conflict_degree([lane * 33 for lane in lanes])),
            "bank_banks": str(BANKS), "bank_bytes": str(BANK_BYTES)}


def glue_banks(runs: dict | None = None):
    """Glue :func:`bank_values` for the prose; returns them as one checked text block."""
    return page.glue(bank_values(runs))
