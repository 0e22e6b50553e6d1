"""Section 5, what falls short: the decode shapes (M ≤ 128) where the kernels, not the host,
are behind cuBLAS, and what the small-M kernel's first-call timing found."""
from __future__ import annotations

import re

from lab import page, results
from lab.kernels import small_m
from lab.chapters.ch9b.s1_result import (DECODE_READ_M, SUITE, geomean, read_roof,
                                         read_share, rows)

#: Decode rows the section reads: M at most this.
DECODE_M = 128


def decode_rows() -> list[dict]:
    """The decode shapes (M ≤ 128), FP16: kernel, GPU µs each side, both ratios, and the
    share of the measured HBM read bandwidth at which each side read B."""
    rs = [r for r in results.rows(SUITE) if r.get("group") == "decode" and r["m"] <= DECODE_M
          and r.get("dtype") == "float16" and "median_ms" in r]
    by = {(r["impl"], r["method"], r["m"], r["n"], r["k"]): r for r in rs}
    out = []
    for r in rs:
        if r["impl"] != "lab.gemm" or r["method"] != "gpu_only":
            continue
        key = (r["m"], r["n"], r["k"])
        theirs = by[("cublas", "gpu_only", *key)]
        out.append({"M": r["m"], "N×K": f"{r['n']}×{r['k']}",
                    "kernel": r["kernel"] + (f" /{r['splits']}" if r["splits"] > 1 else "")
                    + (f" ({r['tile_n']} wide)" if r.get("tile_n") else ""),
                    "ours_us": 1e3 * r["median_ms"], "cublas_us": 1e3 * theirs["median_ms"],
                    "gpu": r["ratio_to_cublas"],
                    "loop": by[("lab.gemm", "loop", *key)]["ratio_to_cublas"],
                    "ours_read": read_share(r), "cublas_read": read_share(theirs)})
    return out


def decode_grid() -> list[dict]:
    """The decode ratios as a grid: a row per N×K (one linear layer), a column per M, each cell
    the GPU-only FP16 ratio to cuBLAS of :func:`decode_rows`, to two places."""
    out: dict[str, dict] = {}
    for r in decode_rows():
        out.setdefault(r["N×K"], {"N×K": r["N×K"]})[f"M = {r['M']}"] = f"{r['gpu']:.2f}"
    return list(out.values())


def decode_table():
    grid = decode_grid()
    return page.table(grid, None, None,
                      title="Decode, FP16: × cuBLAS on the GPU alone, by N×K and M",
                      source=results.source_line(SUITE))


def first_call(m: int, n: int, k: int) -> dict[str, float]:
    """What ``lab.gemm``'s first call at M×N×K timed (µs per call of each candidate: kernel /
    tile rows x columns / slices), from the ``tuned`` text of its sweep row."""
    row = next(r for r in results.rows(SUITE) if r.get("impl") == "lab.gemm"
               and (r["m"], r["n"], r["k"]) == (m, n, k) and r.get("dtype") == "float16"
               and r.get("tuned"))
    text = row.get("tuned", "").removesuffix(" (kept on disk)").removeprefix(
        "first call timed: ")
    out = {}
    for part in text.split(", ") if text else ():
        name, us, _ = part.rsplit(" ", 2)
        out[name] = float(us)
    return out


def variant(name: str, m: int) -> str:
    """A first-call candidate's name (``tc_small_m_fp16/Mx64/3``) in words, for M rows."""
    parts = name.split("/")
    if len(parts) < 2:
        return name
    rows, cols = parts[1].split("x")
    rows = small_m.config_for(m).bm if rows == "M" else int(rows)
    slices = int(parts[2]) if len(parts) > 2 else 1
    return f"{rows}×{cols} tiles, {slices} slice{'s' if slices > 1 else ''}"


def _words(name: str) -> str:
    """A Hopper first-call candidate (``wgmma_table_fp16/64x128/32 blocks``,
    ``wgmma_streamk_fp16/128x128/atomic``: kernel, then any of rows × columns of its tiles, a
    block count, a fix-up; no tile for the kernel's own 128×256) in words."""
    kernel, *parts = name.split("/")
    tile = next((p.split("x") for p in parts if re.fullmatch(r"(\d+|M)x\d+", p)), None)
    tiles = (f"{128 if tile[0] == 'M' else int(tile[0])}×{tile[1]} tiles" if tile
             else "128×256 tiles")
    blocks = next((p for p in parts if p.endswith("blocks")), "every SM")
    fixup = next((p for p in parts if p == "atomic"), "finisher")
    if kernel.startswith("wgmma_streamk"):
        return f"stream-K ({fixup} fix-up) on {tiles}, {blocks}"
    return f"{kernel} on {tiles}"


def _odd(m: int, n: int, k: int, method: str = "loop", impl: str = "lab.gemm") -> dict:
    return next(r for r in results.rows(SUITE) if r.get("impl") == impl
                and r.get("method") == method and r.get("dtype") == "float16"
                and (r["m"], r["n"], r["k"]) == (m, n, k))


def values() -> dict:
    rs = decode_rows()
    one = next(r for r in rs if r["M"] == 1 and r["N×K"] == "4096×4096")
    r64 = next(r for r in rs if r["M"] == 64 and r["N×K"] == "4096×4096")
    r128 = next(r for r in rs if r["M"] == 128 and r["N×K"] == "4096×4096")
    t64 = first_call(64, 4096, 4096)
    small = {name: us for name, us in t64.items() if name.startswith("tc_small_m")}
    slowest, fastest = max(small, key=small.get), min(small, key=small.get)
    t128 = first_call(128, 4096, 4096)
    pick = min(t128, key=t128.get)
    pick64 = min(t64, key=t64.get)
    by_m = {}
    for r in rows("gpu_only"):
        if r["group"] == "decode":
            by_m.setdefault(r["m"], []).append(r["ratio_to_cublas"])
    geo = {m: geomean(v) for m, v in by_m.items()}
    worst, best = min(geo, key=geo.get), max(geo, key=geo.get)
    l2 = results.load(SUITE)["provenance"]["l2_bytes"]
    return {**flush_values(t64[pick64], r64["ours_us"]), **host_values(), **read_values(),
            "decode_geo_worst_m": str(worst), "decode_geo_worst": f"{geo[worst]:.2f}",
            "decode_geo_best_m": str(best), "decode_geo_best": f"{geo[best]:.2f}",
            "decode_64_kernel": _words(pick64) if not pick64.startswith("tc_small_m")
            else "the small-M kernel on " + variant(pick64, 64),
            "decode_64_pick_us": f"{t64[pick64]:.0f}",
            "flush_writeback_mb": f"{l2 / 1e6:.0f}",
            "flush_writeback_us": f"{l2 / read_roof()[0] * 1e6:.0f}",
            "decode_one_ours": f"{one['ours_us']:.1f}",
            "decode_one_cublas": f"{one['cublas_us']:.1f}",
            "decode_one_share": f"{one['ours_read']:.0%}",
            "decode_one_cublas_share": f"{one['cublas_read']:.0%}",
            "decode_64_slowest": variant(slowest, 64),
            "decode_64_slowest_us": f"{small[slowest]:.0f}",
            "decode_64_fastest": variant(fastest, 64),
            "decode_64_fastest_us": f"{small[fastest]:.0f}",
            "decode_64_ratio": f"{r64['gpu']:.2f}",
            "decode_64_us": f"{r64['ours_us']:.0f}", "decode_64_cublas_us": f"{r64['cublas_us']:.0f}",
            "decode_128_kernel": (variant(pick, 128) if pick.startswith("tc_small_m")
                                  else _words(pick)),
            "decode_128_us": f"{r128['ours_us']:.0f}",
            "decode_128_cublas_us": f"{r128['cublas_us']:.0f}",
            "decode_128_ratio": f"{r128['gpu']:.2f}",
            "odd_narrow_gpu": f"{_odd(8192, 64, 8192, 'gpu_only')['ratio_to_cublas']:.2f}",
            "odd_narrow_kernel": _words(min(first_call(8192, 64, 8192).items(),
                                            key=lambda x: x[1])[0]),
            "odd_1000_gpu": f"{_odd(1000, 1030, 999, 'gpu_only')['ratio_to_cublas']:.2f}",
            "odd_1000_loop": f"{_odd(1000, 1030, 999)['ratio_to_cublas']:.2f}",
            "odd_1000_host_us": f"{_odd(1000, 1030, 999, 'host')['host_us']:.0f}",
            "odd_1000_host_torch_us": f"{_odd(1000, 1030, 999, 'host', 'cublas')['host_us']:.0f}",
            "odd_127_gpu": f"{_odd(127, 4099, 4096, 'gpu_only')['ratio_to_cublas']:.2f}",
            "odd_127_us": f"{1e3 * _odd(127, 4099, 4096, 'gpu_only')['median_ms']:.0f}"}


def mispicks() -> list[dict]:
    """Decode rows (M <= 16, FP16, GPU only) where the first call picked the tile-table kernel
    and the row runs below 0.9 of cuBLAS, each with the small-M kernel's row at the same N×K
    and M = 16 when that row ran it: worst first."""
    rs = [r for r in rows("gpu_only", "float16") if r["group"] == "decode"]
    out = []
    for r in sorted(rs, key=lambda r: r["ratio_to_cublas"]):
        if r["m"] > 16 or not r["kernel"].startswith("wgmma") or r["ratio_to_cublas"] >= 0.9:
            continue
        other = next((x for x in rs if (x["m"], x["n"], x["k"]) == (16, r["n"], r["k"])
                      and x["kernel"].startswith("tc_small_m")), None)
        out.append({"row": r, "small_m_16": other})
    return out


#: How ``lab.gemm``'s first call flushed the L2 cache before timing each candidate, for suite
#: files that do not record it (``parameters.first_call_tuning``, recorded since): no flush
#: before 6 December 07:37 UTC, a flush by writing from then, by reading from 7 December 04:42.
TUNE_FLUSH_SINCE = (("2026-12-06T07:37:12+00:00", "write"), ("2026-12-07T04:41:59+00:00", "read"))


def tune_flush(data: dict | None = None) -> str:
    """``"read"``, ``"write"`` or ``"none"``: how the suite's first calls flushed the L2 cache
    before timing a candidate (its ``first_call_tuning``, else by its date)."""
    data = data or results.load(SUITE)
    said = data["parameters"].get("first_call_tuning")
    if said:
        return "read" if "by a read" in said else "write" if "flush" in said else "none"
    method = "none"
    for since, how in TUNE_FLUSH_SINCE:
        if data["provenance"]["date"] >= since:
            method = how
    return method


def flush_values(pick64: float, g64: float) -> dict:
    """What the suite's first calls were timed after (:func:`tune_flush`), in a sentence
    quoting the first-call time of the pick at M = 64 of 4096×4096 (``pick64`` µs) and its time
    in the graph (``g64``); the sentence naming the worst decode row whose first call picked
    the tile-table kernel (empty where there is none)."""
    found = mispicks()
    how = tune_flush()
    if how == "write":
        run = (f"This suite's first calls were timed after such a flush (a buffer twice the "
               f"cache's size written): {len(found)} decode rows at M ≤ 16 went to the "
               "tile-table kernel and run below 0.9 of cuBLAS.")
    elif how == "none":
        run = ("This GPU's suite was measured before the first call flushed the cache at all: "
               "each candidate was timed over back-to-back calls on the same operands, with "
               "what they left in the cache. At M = 64 the pick's first call took "
               f"{pick64:.0f} µs, and {g64:.0f} µs in the graph.")
    else:
        run = ("This suite's first calls were timed after a flush by reading: at M = 64 the "
               f"pick's first call took {pick64:.0f} µs, and {g64:.0f} µs in the graph.")
    sentence = ""
    if found and how == "write":
        r, other = found[0]["row"], found[0]["small_m_16"]
        sentence = (f"At M = {r['m']} of {r['n']}×{r['k']} it picked the tile-table kernel, "
                    f"which runs {1e3 * r['median_ms']:.1f} µs in the graph "
                    f"({r['ratio_to_cublas']:.2f} of cuBLAS)")
        sentence += (f", where at M = 16 the small-M kernel it passed over runs "
                     f"{1e3 * other['median_ms']:.1f} µs." if other else ".")
    return {"flush_mispick_sentence": sentence, "flush_run": run,
            "flush_since": ("the suite above was measured with it" if how == "read" else
                            "the suite above was measured before that change")}


def host_values() -> dict:
    """The suite's host rows beside ``launch_cost``'s: each side's median µs a call (the upper
    middle, as the target table's), and lab.gemm's at the fewest calls a burst against 48 or
    more."""
    import numpy as np

    def middle(rs):
        return sorted(r["host_us"] for r in rs)[len(rs) // 2]

    ours, theirs = rows("host"), rows("host", impl="cublas")
    fewest = min(r["calls"] for r in ours)
    few = np.median([r["host_us"] for r in ours if r["calls"] == fewest])
    many = np.median([r["host_us"] for r in ours if r["calls"] >= 48])
    return {"host_suite_ours": f"{middle(ours):.1f}", "host_suite_cublas": f"{middle(theirs):.1f}",
            "host_few_calls": str(fewest), "host_few_ours": f"{few:.0f}",
            "host_many_ours": f"{many:.0f}"}


def read_values() -> dict:
    """How fast the decode rows at M <= DECODE_READ_M read B, both input types, GPU only: all
    their bytes over all their time for each side, and the range of ours row by row (with the
    size of the layer read slowest)."""
    def decode(impl):
        return [r for r in rows("gpu_only", impl=impl)
                if r["group"] == "decode" and r["m"] <= DECODE_READ_M]

    def together(rs):
        return sum(2.0 * r["n"] * r["k"] for r in rs) / sum(r["median_ms"] * 1e-3 for r in rs)

    mine, theirs = decode("lab.gemm"), decode("cublas")
    low, high = min(mine, key=read_share), max(mine, key=read_share)
    return {"decode_read_all": f"{together(mine) / 1e12:.2f}",
            "decode_read_all_share": f"{together(mine) / read_roof()[0]:.0%}",
            "decode_read_all_cublas": f"{together(theirs) / 1e12:.2f}",
            "decode_read_row_min": f"{read_share(low):.0%}",
            "decode_read_row_max": f"{read_share(high):.0%}",
            "decode_read_row_min_mb": f"{2 * low['n'] * low['k'] / 1e6:.0f}"}
