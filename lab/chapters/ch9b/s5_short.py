"""Section 5, what falls short: the decode shapes (M ≤ 128) where the kernels, not the host,
are behind cuBLAS, and what the small-M kernel's first-call timing found."""
from __future__ import annotations

from lab import page, results
from lab.kernels import small_m
from lab.chapters.ch9b.s1_result import DECODE_M


def decode_rows() -> list[dict]:
    rs = [r for r in results.rows("sweep") if r.get("group") == "llm" and r["m"] <= DECODE_M
          and r.get("out_dtype") == "float16" and "median_ms" in r]
    by = {(r["impl"], r["method"], r["m"], r["n"], r["k"]): r for r in rs}
    out = []
    for r in rs:
        if r["impl"] != "lab.gemm" or r["method"] != "gpu_only":
            continue
        key = (r["m"], r["n"], r["k"])
        theirs = by[("cublas", "gpu_only", *key)]
        out.append({"M": r["m"], "N×K": f"{r['n']}×{r['k']}",
                    "kernel": r["kernel"] + (f" /{r['splits']}" if r["splits"] > 1 else "")
                    + (f" ({r['bn']} wide)" if r.get("bn") else ""),
                    "ours_us": 1e3 * r["median_ms"], "cublas_us": 1e3 * theirs["median_ms"],
                    "gpu": r["ratio_to_cublas"],
                    "called": by[("lab.gemm", "as_called", *key)]["ratio_to_cublas"],
                    "cublas_tbps": 2 * r["n"] * r["k"] / (theirs["median_ms"] * 1e-3) / 1e12})
    return out


def decode_table():
    return page.table(decode_rows(), ["M", "N×K", "kernel", "ours_us", "cublas_us", "gpu",
                                      "called", "cublas_tbps"],
                      {"ours_us": "ours, GPU (µs)", "cublas_us": "cuBLAS, GPU (µs)",
                       "gpu": "× cuBLAS GPU only", "called": "× cuBLAS as called",
                       "cublas_tbps": "cuBLAS reads B at (TB/s)"}, digits=3,
                      source=results.source_line("sweep"),
                      show=lambda r: r["M"] in (1, 64, 128))


def first_call(m: int, n: int, k: int) -> dict[str, float]:
    """What ``lab.gemm``'s first call at M×N×K timed (µs per call of each candidate: kernel /
    tile rows x columns / slices), from the ``tuned`` text of its sweep row."""
    row = next(r for r in results.rows("sweep") if r.get("impl") == "lab.gemm"
               and (r["m"], r["n"], r["k"]) == (m, n, k) and r.get("out_dtype") == "float16")
    text = row.get("tuned", "").removeprefix("first call timed: ")
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
    """A Hopper first-call candidate (``wgmma_streamk_fp16/Mx128/96 blocks/atomic``: kernel,
    then any of 128-row × N-column tiles, a block count, a fix-up) in words."""
    kernel, *parts = name.split("/")
    tiles = next((f"128×{p.split('x')[1]} tiles" for p in parts if p.startswith("Mx")),
                 "128×256 tiles")
    blocks = next((p for p in parts if p.endswith("blocks")), "every SM")
    fixup = next((p for p in parts if p == "atomic"), "finisher")
    if kernel.startswith("wgmma_streamk"):
        return f"stream-K ({fixup} fix-up) on {tiles}, {blocks}"
    return f"{kernel} on {tiles}"


def in_place_source():
    """How the small-M kernel reads a B whose rows are not whole 16-byte vectors."""
    return page.source(small_m, "small_m_in_place")


def _odd(m: int, n: int, k: int, method: str = "as_called", impl: str = "lab.gemm") -> dict:
    return next(r for r in results.rows("sweep") if r.get("impl") == impl
                and r.get("method") == method and r.get("out_dtype") == "float16"
                and (r["m"], r["n"], r["k"]) == (m, n, k))


def values() -> dict:
    rs = decode_rows()
    one = [r for r in rs if r["M"] == 1 and r["N×K"] == "4096×4096"][0]
    big = max((r for r in rs if r["M"] == 128), key=lambda r: r["ours_us"])
    m, (n, k) = big["M"], map(int, big["N×K"].split("×"))
    flop = 2.0 * m * n * k
    wide = [r for r in rs if r["M"] == 128 and r["kernel"].startswith("wgmma_grid")]
    t64 = first_call(64, 4096, 4096)
    t128 = first_call(m, n, k)
    small = {name: us for name, us in t64.items() if name.startswith("tc_small_m")}
    slowest, fastest = max(small, key=small.get), min(small, key=small.get)
    return {"decode_one_ours": f"{one['ours_us']:.0f}",
            "decode_one_cublas": f"{one['cublas_us']:.0f}",
            "decode_one_tbps": f"{one['cublas_tbps']:.1f}",
            "decode_gpu_highest": f"{max(r['gpu'] for r in rs):.2f}",
            "decode_loads_in_flight": str(2 * small_m.UNROLL),
            "decode_64_slowest": variant(slowest, 64),
            "decode_64_slowest_us": f"{small[slowest]:.0f}",
            "decode_64_fastest": variant(fastest, 64),
            "decode_64_fastest_us": f"{small[fastest]:.0f}",
            "decode_128_shape": f"{m}×{n}×{k}",
            "decode_128_kernel": (variant(min(t128, key=t128.get), m)
                                  if big["kernel"].startswith("tc_small_m")
                                  else _words(min(t128, key=t128.get))),
            "decode_128_small_us": f"{min(us for c, us in t128.items() if c.startswith('tc_small')):.0f}",
            "decode_128_streamk96_us": f"{t128.get('wgmma_streamk_fp16/96 blocks', 0):.0f}",
            "decode_128_us": f"{big['ours_us']:.0f}",
            "decode_128_tflops": f"{flop / (big['ours_us'] * 1e-6) / 1e12:.0f}",
            "decode_128_cublas_tflops": f"{flop / (big['cublas_us'] * 1e-6) / 1e12:.0f}",
            "decode_128_called": f"{big['called']:.2f}",
            "decode_128_streamk_us": f"{t128['wgmma_streamk_fp16']:.0f}",
            "decode_streamk_picked": ", ".join(
                f"{r['m']}×{r['n']}×{r['k']}" for r in results.rows("sweep")
                if r.get("impl") == "lab.gemm" and r.get("method") == "gpu_only"
                and r["kernel"].startswith("wgmma_streamk")) or "no shape",
            "decode_wgmma_at": ", ".join(r["N×K"] for r in wide) or "no pair",
            "decode_wgmma_called": ", ".join(f"{r['called']:.2f}" for r in wide) or "-",
            "decode_wgmma_kernel": ", ".join(_words(min(first_call(128, *map(
                int, r["N×K"].split("×"))).items(), key=lambda x: x[1])[0]) for r in wide)
            or "-",
            "odd_narrow_called": f"{_odd(8192, 64, 8192)['ratio_to_cublas']:.2f}",
            "odd_narrow_kernel": _words(min(first_call(8192, 64, 8192).items(),
                                            key=lambda x: x[1])[0]),
            "odd_1000_gpu": f"{_odd(1000, 1030, 999, 'gpu_only')['ratio_to_cublas']:.2f}",
            "odd_1000_called": f"{_odd(1000, 1030, 999)['ratio_to_cublas']:.2f}",
            "odd_1000_host_us": f"{_odd(1000, 1030, 999)['host_us']:.0f}",
            "odd_1000_host_torch_us": f"{_odd(1000, 1030, 999, impl='cublas')['host_us']:.0f}",
            "odd_127_gpu": f"{_odd(127, 4099, 4096, 'gpu_only')['ratio_to_cublas']:.2f}",
            "odd_127_us": f"{1e3 * _odd(127, 4099, 4096, 'gpu_only')['median_ms']:.0f}",
            "odd_127_aligned_us": f"{1e3 * _odd(128, 4096, 4096, 'gpu_only')['median_ms']:.0f}"}

