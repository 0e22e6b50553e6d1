"""Chapter 2, section 2: what the tile buys, in the model (intensity and traffic by tile size)."""
from __future__ import annotations

from lab import model, page, results, roofline
from lab.kernels import k01_naive, k02_tiled


#: Tile sizes of the chapter's kernels (``tiled8``, ``tiled16``, ``tiled32``).
TILES = k02_tiled.TILES


def model_rows() -> list[dict]:
    """Per tile size: threads and shared memory per block, global loads for a 1024³ product,
    the model's intensity, and the DRAM ceiling it implies on the selected GPU."""
    n = 1024
    roofs = roofline.measured()

    def ceiling(i):
        return min(i * roofs["read_gbps"] / 1e3, roofs["fma_tflops"])

    rows = [{"tile": "none (naive)", "threads": k01_naive.BLOCK ** 2, "shared_kb": 0.0,
             "loads": 2 * n ** 3 / 1e9, "intensity": model.naive_intensity(4),
             "ceiling": ceiling(model.naive_intensity(4))}]
    for tile in (*TILES, 2 * TILES[-1]):
        rows.append({"tile": f"{tile} × {tile}", "threads": tile * tile,
                     "shared_kb": model.tile_shared_bytes(tile) / 1024,
                     "loads": model.tiled_global_loads(n, tile) / 1e9,
                     "intensity": model.tile_intensity(tile),
                     "ceiling": ceiling(model.tile_intensity(tile))})
    return rows


def model_table():
    """What each tile size buys, by the model, with the DRAM ceiling of chapter 0's roofs."""
    return page.table(model_rows(), ["tile", "threads", "shared_kb", "loads", "intensity",
                                     "ceiling"],
                      {"threads": "threads", "shared_kb": "shared (KB)",
                       "loads": "loads at 1024³ (G)", "intensity": "FLOP/B",
                       "ceiling": "DRAM cap (TFLOP/s)"},
                      source=results.source_line("roofline"))


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    v = {}
    v["threads_64"] = f"{64 * 64:,}"
    mrows = {r["tile"]: r for r in model_rows()}
    v["ceiling_32"] = f"{mrows['32 × 32']['ceiling']:.0f}"
    return v
