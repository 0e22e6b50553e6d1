"""Section "Tails": the ragged edge — the useful share of the computed outputs along one side,
and how each of our kernels meets the edge (the path the ``shapes`` run recorded)."""
from __future__ import annotations

from lab import model, page, results
from lab.kernels import get_spec

#: The kernels whose edge handling the page compares.
EDGE_KERNELS = ("tiled32", "warptile_tuned", "tc_fp16")


def tail_rows() -> list[dict]:
    """Useful share of the outputs along one side for a few sides and tile edges."""
    return [{"m": m, "tile": t, "tiles": -(-m // t), "useful": model.tile_efficiency(m, t, t, t)}
            for m, t in ((128, 64), (130, 64), (4096, 128), (4097, 128), (4097, 32))]


def tail_table():
    """The ragged edge along one side."""
    return page.table(tail_rows(), ["m", "tile", "tiles", "useful"],
                      {"m": "M", "tile": "tile edge", "tiles": "tiles along M",
                       "useful": "useful share"})


def edge_rows() -> list[dict]:
    """How each kernel meets the edge, and the path it took at 4096³ and 4097³ in the
    ``shapes`` run's alignment part."""
    path = {(r["kernel"], r["n"]): r["path"] for r in results.rows("shapes", part="alignment")}
    return [{"kernel": name, "edges": get_spec(name).edges, "at4096": path[(name, 4096)],
             "at4097": path[(name, 4097)]} for name in EDGE_KERNELS]


def edge_table():
    """Edge handling of tiled32, warptile_tuned and tc_fp16."""
    return page.table(edge_rows(), ["kernel", "edges", "at4096", "at4097"],
                      {"edges": "edge handling", "at4096": "path at 4096",
                       "at4097": "path at 4097"})


def values() -> dict:
    """The useful shares the prose quotes."""
    tails = {(x["m"], x["tile"]): x["useful"] for x in tail_rows()}
    return {"tail_130": f"{tails[(130, 64)]:.0%}",
            "tail_4097_32": f"{1 - tails[(4097, 32)]:.1%}",
            "tail_4097_128": f"{1 - tails[(4097, 128)]:.1%}"}
