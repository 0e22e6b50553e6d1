"""Section 'WMMA: a tile per warp, its layout hidden': the WMMA kernel, its measured rows beside
``mma.sync`` rung 1, the tuned ``mma.sync`` kernel and cuBLAS FP16 (one run of the ``wmma``
experiment), and what the probe found inside the opaque fragments, set against the documented
``mma.sync`` map (:mod:`lab.fragments`).
"""
from __future__ import annotations

import numpy as np

from lab import fragments, page, results
from lab.kernels import k07_wmma
from lab.wmma import SHAPES

#: The kernels of the section's table, in the order shown.
SHOWN = ("wmma_m16n16k16_f32", "wmma_m16n16k16_f16", "wmma_m32n8k16_f32", "wmma_m32n8k16_f16",
         "wmma_m8n32k16_f32", "wmma_m8n32k16_f16", "tc_naive_fp16", "tc_fp16", "cublas_fp16")


def wmma_listing():
    """The WMMA kernel, its store folded to one line."""
    return page.source(k07_wmma, "wmma_kernel",
                       fold={"wmma_store": "store the tile: straight to C when it lies inside "
                                           "and is aligned, else through shared memory"})


def timing() -> dict:
    """The ``wmma`` experiment's timing rows, by kernel."""
    return results.by("wmma", part="timing")


def wmma_rows() -> list[dict]:
    """The WMMA kernels, ``tc_naive_fp16``, ``tc_fp16`` and cuBLAS FP16 at the run's size."""
    rows = []
    for name, r in timing().items():
        rows.append({"kernel": name, "us": r["median_ms"] * 1e3,
                     "spread": f"{r['min_ms'] * 1e3:.0f}–{r['max_ms'] * 1e3:.0f}",
                     "tflops": r["tflops"], "vs_naive": r["ratio_to_tc_naive_fp16"],
                     "pct": 100 * r["ratio_to_cublas_fp16"]})
    order = {k: i for i, k in enumerate(SHOWN)}
    return sorted(rows, key=lambda r: order.get(r["kernel"], len(order)))


def wmma_table():
    """WMMA beside mma.sync and cuBLAS FP16, one run, cache-hot inputs."""
    return page.table(wmma_rows(), ["kernel", "us", "spread", "tflops", "vs_naive", "pct"],
                      {"us": "median (µs)", "spread": "min–max (µs)", "tflops": "TFLOP/s",
                       "vs_naive": "× tc_naive_fp16", "pct": "% cuBLAS FP16"},
                      source=results.source_line("wmma"))


# ----------------------------------------------------------------------------- the probe

def probe_maps() -> dict:
    """``{(shape, operand): (32, values per lane) array of flat indices}`` from the probe."""
    return {(r["shape"], r["operand"]): np.array(r["map"])
            for r in results.rows("wmma", part="probe")}


def documented(role: str, rows: int, cols: int, transposed: bool = False) -> dict:
    """Every position the ``mma.sync.m16n8k16`` fragment of ``role`` ('A': 16×16 blocks, 'B' and
    'C': 16×8 blocks) gives a lane in a ``rows × cols`` tile: ``{(block, value): (32,) flat
    indices}``, −1 outside the tile. With ``transposed`` the tile is read as its transpose
    (element (i, j) of the fragment's matrix is element (j, i) of the tile)."""
    fn, bh, bw = {"A": (fragments.a_coords, 16, 16), "B": (fragments.b_coords, 16, 8),
                  "C": (fragments.c_coords, 16, 8)}[role]
    frows, fcols = (cols, rows) if transposed else (rows, cols)
    per_row = max(fcols // bw, 1)
    out = {}
    for block in range(max(frows // bh, 1) * per_row):
        r0, c0 = bh * (block // per_row), bw * (block % per_row)
        for value in range(len(fn(0))):
            flat = []
            for lane in range(32):
                r, c = fn(lane)[value]
                r, c = r0 + r, c0 + c
                if r >= frows or c >= fcols:
                    flat.append(-1)
                else:
                    flat.append(c * cols + r if transposed else r * cols + c)
            out[(block, value)] = np.array(flat)
    return out


#: How each operand can sit in ``mma.sync``: straight, or transposed into the other role
#: (D = A·B is also Dᵀ = Bᵀ·Aᵀ).
ROLES = {"A": (("A", False), ("B", True)), "B": (("B", False), ("A", True)),
         "C": (("C", False), ("C", True))}


def probe_row(shape: str, operand: str, held: np.ndarray) -> dict:
    """What one operand's fragment holds, against the documented map: values per lane, how
    many copies of each element the warp holds, and how many of a lane's values sit where ``mma.sync`` puts
    them (the same element at the same value position, for all 32 lanes, in some block) — the
    operand read straight or transposed, whichever matches more."""
    m, n, k = SHAPES[shape]
    rows, cols = {"A": (m, k), "B": (k, n), "C": (m, n)}[operand]
    best = None
    for role, transposed in ROLES[operand]:
        cands = documented(role, rows, cols, transposed)
        matched = sum(any(np.array_equal(flat, held[:, i]) for flat in cands.values())
                      for i in range(held.shape[1]))
        if best is None or matched > best[0]:
            best = (matched, role, transposed)
    matched, role, transposed = best
    copies = np.bincount(held.ravel(), minlength=rows * cols)
    return {"shape": shape, "operand": f"{operand} ({rows}×{cols})",
            "per_lane": held.shape[1], "elements": rows * cols,
            "copies": (f"{copies.min()}" if copies.min() == copies.max()
                       else f"{copies.min()}–{copies.max()}"),
            "matched": matched,
            "as": f"{role} of {operand}ᵀ" if transposed else role}


def probe_rows() -> list[dict]:
    """One row per shape and operand of the probe."""
    return [probe_row(shape, operand, held) for (shape, operand), held in probe_maps().items()]


def probe_text() -> str:
    """The probe's findings, one line per shape and operand: values a lane holds, copies of
    each element in the warp, and which ``mma.sync`` fragment they match, value for value."""
    lines = ["shape      operand    values/lane  copies/element  matches mma.sync's"]
    for r in probe_rows():
        lines.append(f"{r['shape']:<10} {r['operand']:<10} {r['per_lane']:>11}  "
                     f"{r['copies']:>14}  {r['as']} fragment, {r['matched']} of "
                     f"{r['per_lane']} values")
    return "\n".join(lines) + "\n" + results.source_line("wmma")


def values() -> dict:
    """The numbers the section's prose quotes."""
    t = timing()
    w, naive, best = t["wmma_m16n16k16_f32"], t["tc_naive_fp16"], t["tc_fp16"]
    shapes = [k for k in t if k.startswith("wmma_")]
    slowest = min(shapes, key=lambda k: t[k]["tflops"])
    half = t["wmma_m16n16k16_f16"]
    probe = probe_rows()
    straight = [r["shape"] for r in probe if r["operand"].startswith("C")
                and r["as"] == "C" and r["matched"] == r["per_lane"]]
    turned = [r["shape"] for r in probe if r["operand"].startswith("C")
              and r["as"] != "C" and r["matched"] == r["per_lane"]]
    a16 = next(r for r in probe if r["shape"] == "m16n16k16" and r["operand"].startswith("A"))
    checks = results.rows("wmma", part="check")
    return {
        "wmma_tflops": f"{w['tflops']:.1f}",
        "wmma_vs_naive": f"{w['ratio_to_tc_naive_fp16']:.2f}",
        "wmma_pct": f"{100 * w['ratio_to_cublas_fp16']:.1f}%",
        "wmma_naive_tflops": f"{naive['tflops']:.1f}",
        "wmma_best_over": f"{best['tflops'] / w['tflops']:.0f}",
        "wmma_half_vs_float": f"{half['tflops'] / w['tflops']:.2f}",
        "wmma_slowest": slowest, "wmma_slowest_tflops": f"{t[slowest]['tflops']:.1f}",
        "wmma_checks": str(len(checks)),
        "wmma_checks_failed": str(sum(not r["passed"] for r in checks)),
        "wmma_a_per_lane": str(a16["per_lane"]), "wmma_a_copies": a16["copies"],
        "wmma_c_straight": " and ".join(straight) or "none",
        "wmma_c_turned": " and ".join(turned) or "none",
    }
