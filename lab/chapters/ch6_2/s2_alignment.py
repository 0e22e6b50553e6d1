"""Section "One element past a round number": each kernel at sizes around 2048 and 4096
(``shapes``), the extra time per FLOP against the round size, the path our kernels took, the
kernel cuBLAS launched at each size (``cublas_kernels``, Nsight Compute), the T4 study's T4 beside
it, and the same sizes again in three rounds of random order (drift or alignment?)."""
from __future__ import annotations

from lab import page, results, seeds, tables

#: Kernels of the alignment tables, and their headers.
ALIGN_KERNELS = {"cublas_fp32": "cuBLAS FP32", "cublas_fp16": "cuBLAS FP16",
                 "tiled32": "tiled32", "warptile_tuned": "warptile_tuned", "tc_fp16": "tc_fp16"}
#: Kernel families, by a part of the kernel's name: nvjet (Hopper), CUTLASS for Turing's
#: tensor-core instruction (cutlass_75) or Ampere's, xmma, the sm80/ampere kernels.
FAMILIES = (("nvjet", "nvjet (sm90)"), ("cutlass_75", "CUTLASS sm75"),
            ("cutlass_80", "CUTLASS sm80"), ("sm90_xmma", "xmma (sm90)"),
            ("sm80_xmma", "xmma (sm80)"), ("sm80", "sm80"), ("ampere", "ampere"))
#: Classes of a side by the largest power of two dividing it, capped at 8 (16 FP16 bytes).
DIVIDES = {8: "divisible by 8", 4: "by 4 but not 8", 2: "by 2 but not 4", 1: "odd"}


def short_name(name: str) -> str:
    """A kernel's name with its middle left out: the first three and the last two parts, where
    its family and the alignment it assumes are spelled."""
    parts = tables.kernel_name(name, 200).split("_")
    return "_".join(parts) if len(parts) <= 6 else f"{'_'.join(parts[:3])}_…_{'_'.join(parts[-2:])}"


def _align() -> dict:
    return {(r["kernel"], r["n"]): r for r in results.rows("shapes", part="alignment")}


def _round(n: int) -> int:
    return 2048 if n < 3000 else 4096


def align_speed_table():
    """TFLOP/s of each kernel at the sizes around 2048 and 4096."""
    by = _align()
    rows = [{"n": n, **{k: by[(k, n)]["tflops"] for k in ALIGN_KERNELS}}
            for n in sorted({n for _, n in by})]
    return page.table(rows, ["n", *ALIGN_KERNELS], {"n": "n", **ALIGN_KERNELS},
                      title="TFLOP/s", source=results.source_line("shapes"))


def align_extra_rows() -> list[dict]:
    """Extra time per FLOP against the round neighbour (4096, or 2048 for 2049), in %."""
    by = _align()
    return [{"n": n, **{k: 100 * (by[(k, _round(n))]["tflops"] / by[(k, n)]["tflops"] - 1)
                        for k in ALIGN_KERNELS}}
            for n in sorted({n for _, n in by}) if n != _round(n)]


def align_extra_table():
    """The alignment cliff: extra time per FLOP against the round size."""
    return page.table(align_extra_rows(), ["n", *ALIGN_KERNELS], {"n": "n", **ALIGN_KERNELS},
                      title="extra time per FLOP against 4096 (2048 for 2049), %",
                      source=results.source_line("shapes"))


def align_path_table():
    """Which path our two tuned kernels took at each alignment size."""
    by = _align()
    rows = [{"n": n, "warptile": by[("warptile_tuned", n)]["path"],
             "tc": by[("tc_fp16", n)]["path"]} for n in sorted({n for _, n in by})]
    return page.table(rows, ["n", "warptile", "tc"],
                      {"n": "n", "warptile": "warptile_tuned path", "tc": "tc_fp16 path"})


def seed_align_table():
    """The T4 study's alignment numbers on its Tesla T4 (its FP16 cuBLAS, with the kernel its
    profiler named, and its tiled control)."""
    rows = [{"n": r["n"], "dtype": r["dtype"], "what": short_name(r["cublas_kernel"]),
             "tflops": r["tflops"],
             "vs": r["vs"], "extra": r["extra_time_pct"]} for r in seeds.ALIGNMENT_T4]
    rows += [{"n": r["n"], "dtype": "FP32", "what": r["kernel"], "tflops": None, "vs": r["vs"],
              "extra": r["extra_time_pct"]} for r in seeds.TILED_EDGE_T4]
    return page.table(rows, ["n", "dtype", "tflops", "vs", "extra", "what"],
                      {"n": "n", "what": "kernel (cuBLAS: as the T4's profiler named it)",
                       "tflops": "TFLOP/s", "vs": "against n", "extra": "extra time (%)"},
                      title="Tesla T4, the T4 study")


def _named() -> dict:
    """The kernels Nsight Compute saw each cuBLAS call launch: (call, n) -> names."""
    return {(r["kernel"], r["n"]): r["launched"] for r in results.rows("cublas_kernels")}


def align_kernel_rows() -> list[dict]:
    """For every size of the alignment table, the kernel cuBLAS FP16 and FP32 launched beside
    its measured TFLOP/s."""
    named = _named()
    by = _align()
    rows = []
    for n in sorted({n for _, n in by}):
        row = {"n": n}
        for kind in ("fp16", "fp32"):
            row[kind] = ", ".join(short_name(x) for x in named[(f"cublas_{kind}", n)])
            row[f"{kind}_tflops"] = by[(f"cublas_{kind}", n)]["tflops"]
        rows.append(row)
    return rows


def align_kernel_table():
    """The alignment sizes: which kernel cuBLAS ran, and how fast."""
    return page.table(align_kernel_rows(), ["n", "fp16", "fp16_tflops", "fp32", "fp32_tflops"],
                      {"fp16": "cuBLAS FP16 kernel", "fp16_tflops": "TFLOP/s",
                       "fp32": "cuBLAS FP32 kernel", "fp32_tflops": "TFLOP/s"},
                      source=results.source_line("cublas_kernels"))


def kernel_family(name: str) -> str:
    """A library kernel's family from its name (:data:`FAMILIES`), else its first word."""
    short = tables.kernel_name(name, 200)
    return next((label for key, label in FAMILIES if key in short), short.split("_")[0])


def align_kernel_rule(kind: str = "fp16") -> str:
    """The kernel families cuBLAS ``kind`` launched, grouped by what divides the side
    (:data:`DIVIDES`)."""
    named = _named()
    sizes = sorted({n for _, n in _align()})
    groups = {}
    for cls, words in DIVIDES.items():
        ns = [n for n in sizes if min(n & -n, 8) == cls]
        if ns:
            fams = sorted({kernel_family(x) for n in ns for x in named[(f"cublas_{kind}", n)]})
            groups[f"{words} ({', '.join(map(str, ns))})"] = " and ".join(fams)
    if len(set(groups.values())) == 1:
        return f"{next(iter(groups.values()))} at every size"
    return "; ".join(f"{words}: {fams}" for words, fams in groups.items())


def shuffled_rows() -> list[dict]:
    """Per size, cuBLAS FP16 and FP32 in each of three rounds of random order (TFLOP/s), the
    spread between rounds and the fastest call (µs)."""
    sh = results.rows("shapes", part="shuffled")
    rows = []
    for n in sorted({r["n"] for r in sh}):
        row = {"n": n}
        for kind in ("fp16", "fp32"):
            runs = sorted((r for r in sh if r["kernel"] == f"cublas_{kind}" and r["n"] == n),
                          key=lambda r: r["round"])
            vals = [r["tflops"] for r in runs]
            row.update({f"{kind}_r{i + 1}": v for i, v in enumerate(vals)})
            row[f"{kind}_spread"] = 100 * (max(vals) / min(vals) - 1)
            row[f"{kind}_fastest_us"] = min(r["median_ms"] for r in runs) * 1e3
        rows.append(row)
    return rows


def shuffled_table():
    """Drift or alignment: the rounds in random order side by side."""
    headers = {"n": "n"}
    for kind in ("fp16", "fp32"):
        headers.update({f"{kind}_r{i}": f"{kind.upper()} round {i}" for i in (1, 2, 3)})
        headers[f"{kind}_spread"] = f"{kind.upper()} spread (%)"
    return page.table(shuffled_rows(), list(headers), headers,
                      title="cuBLAS, TFLOP/s, three rounds in random order",
                      source=results.source_line("shapes"))


def values() -> dict:
    """The section's numbers: the cliff of cuBLAS FP16 and of the controls, the kernels named
    at 4096 and 4097, the rules by what divides the side, our kernels' padding loss, and the
    spread of the shuffled rounds."""
    extra = {x["n"]: x for x in align_extra_rows()}
    named = _named()
    t4 = next(x for x in seeds.ALIGNMENT_T4 if x["n"] == 4097 and x["dtype"] == "FP16")
    sh = shuffled_rows()
    long_ = [x[f"{kind}_spread"] for x in sh for kind in ("fp16", "fp32")
             if x[f"{kind}_fastest_us"] >= 100]
    short = [f"cuBLAS {kind.upper()} at {x['n']} ({x[f'{kind}_fastest_us']:.0f} µs a call: "
             f"{x[f'{kind}_spread']:.0f}%)" for x in sh for kind in ("fp16", "fp32")
             if x[f"{kind}_fastest_us"] < 100]
    return {"the_gpu": page.gpu_label(results.load("shapes")["provenance"]["gpu"]),
            "t4_4097_extra": f"{t4['extra_time_pct']}%",
            "fp16_4097_extra": f"{extra[4097]['cublas_fp16']:.0f}%",
            "tiled32_4097_extra": f"{extra[4097]['tiled32']:.1f}%",
            "tc_4088_extra": f"{extra[4088]['tc_fp16']:.0f}%",
            "tc_4097_extra": f"{extra[4097]['tc_fp16']:.0f}%",
            "fp16_mult8_extra_max": f"{max(x['cublas_fp16'] for n, x in extra.items() if n % 8 == 0):.0f}%",
            "fp16_other_extra_min": f"{min(x['cublas_fp16'] for n, x in extra.items() if n % 8):.0f}%",
            "fp32_align_extra_max": f"{max(x['cublas_fp32'] for x in extra.values()):.0f}%",
            "fp16_4096_kernel": ", ".join(tables.kernel_name(x) for x in named[("cublas_fp16", 4096)]),
            "fp16_4097_kernel": ", ".join(tables.kernel_name(x) for x in named[("cublas_fp16", 4097)]),
            "align_fp16_rule": align_kernel_rule("fp16"),
            "align_fp32_rule": align_kernel_rule("fp32"),
            "shuffle_spread": f"{max(long_):.1f}%",
            "shuffle_short": "; ".join(short) or "none"}
