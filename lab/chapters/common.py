"""What more than one chapter shows, in one place below the chapters (no chapter imports
another): the ``naive_tiled`` and ``ncu_dram`` measurements that chapters 1 and 2 both read, the
run-it-yourself check of a notebook's product (:func:`example_inputs`, :func:`verdict`), this
GPU beside the reference (:func:`measure_here`), and compiler reports of any target
(:func:`report`, :func:`loop_counts`) for chapters 3 and 4.
"""
from __future__ import annotations

import numpy as np

from lab import bench, compiler, device, model, page, results, tables, twins
from lab.api import matmul

#: The square sizes of the ``naive_tiled`` experiment's ``size`` part.
SIZES = (1024, 4096)


def measured() -> dict:
    """(kernel, n) -> row of the ``size`` part of the selected GPU's ``naive_tiled`` file."""
    return {(r["kernel"], r["n"]): r for r in results.load("naive_tiled")["rows"]
            if r["part"] == "size"}


def gpu() -> str:
    """Short name of the GPU the ``naive_tiled`` measurements come from."""
    return page.gpu_label(results.load("naive_tiled")["provenance"]["gpu"])


def ncu_rows() -> list[dict]:
    """The ``ncu_dram`` rows; a row carries ``error`` when Nsight Compute could not read the
    counters."""
    return results.load("ncu_dram")["rows"]


def ncu_ok() -> bool:
    """Nsight Compute counted every kernel of the ``ncu_dram`` file."""
    rows = ncu_rows()
    return bool(rows) and not any(r.get("error") for r in rows)


def model_reads(kernel: str, n: int) -> float:
    """The model's global reads in bytes: 2n³ elements ÷ T (T = 1 for the naive kernels)."""
    tile = int(kernel[5:]) if kernel.startswith("tiled") else 1
    return 4 * model.tiled_global_loads(n, tile)


def ratio_rows(pairs, sizes=SIZES) -> list[dict]:
    """Each Numba kernel beside its CUDA C twin, same GPU, same process: times and the ratio
    twin ÷ Numba (≥ 1: Numba at least as fast)."""
    size = measured()
    rows = []
    for n in sizes:
        for ours, twin in pairs:
            mine, theirs = size.get((ours, n)), size.get((twin, n))
            rows.append({"numba": ours, "twin": twin, "n": n,
                         "numba_ms": mine and mine["median_ms"],
                         "twin_ms": theirs and theirs["median_ms"],
                         "ratio": theirs["median_ms"] / mine["median_ms"]
                         if mine and theirs else None})
    return rows


def ratio_table(pairs):
    """Numba against CUDA C (nvcc), kernel by kernel."""
    return page.table(ratio_rows(pairs), ["numba", "twin", "n", "numba_ms", "twin_ms", "ratio"],
                      {"numba": "Numba kernel", "twin": "CUDA C twin", "numba_ms": "Numba (ms)",
                       "twin_ms": "twin (ms)", "ratio": "twin / Numba"},
                      source=results.source_line("naive_tiled"))


def measure_here(kernels, *, tflops: bool = False):
    """On a GPU: time ``kernels`` at 1024³ (a few seconds) and return them beside the H200
    reference (with TFLOP/s if ``tflops``). Without a GPU: nothing (the introduction says once
    what the simulator skips)."""
    if not device.GPU:
        return None
    ref = {(r["kernel"], r["n"]): r for r in results.load("naive_tiled", results.REFERENCE_GPU)
           ["rows"] if r["part"] == "size"}
    here = page.gpu_label(device.provenance()["gpu"] or "this GPU")
    rows = []
    for kernel in kernels:
        live = bench.time(kernel, 1024, 1024, 1024, repeats=10)
        rows.append({"kernel": kernel, "here": live["median_ms"], "tflops": live["tflops"],
                     "ref": ref[(kernel, 1024)]["median_ms"]})
    columns = ["kernel", "here", "tflops", "ref"] if tflops else ["kernel", "here", "ref"]
    return page.table(rows, columns, {"here": f"{here}, now (ms)", "tflops": "TFLOP/s",
                                      "ref": "H200 reference (ms)"},
                      title="1024³, median of 10 calls")


def example_inputs(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random FP32 inputs A (m × k) and B (k × n), uniform in (-1, 1)."""
    return bench.random_inputs(m, n, k, np.float32, np.random.default_rng(seed))


def verdict(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> str:
    """PASS or FAIL for ``C`` against the float64 product of ``A`` and ``B``, by the error
    bound of :func:`lab.bench.compare`; the line is the same on a GPU and in the simulator."""
    check = bench.compare(C, A, B)
    m, n = C.shape
    word = "PASS" if check.passed else f"FAIL ({check.reason})"
    return f"{word}: every element of the {m} × {n} output within the error bound of float64"


def prefetch(targets) -> None:
    """Make sure the compiler facts of ``targets`` (see :func:`report`) are at hand.

    They come from the committed facts (``lab/facts/compiler.json``, recorded with the pinned
    toolchain), so every machine prints the same numbers; only when the kernel sources changed
    since they were recorded are the kernels compiled again, two processes at a time.
    """
    names = [t.split("#")[0] for t in targets if not t.startswith("twin:")]
    compiler.prefetch(names, jobs=2)


def report(target: str) -> compiler.CompileReport:
    """The compile report (sm_90) of one target: a registered kernel (its first function),
    ``name#edges`` (its second, the bounds-checked kernel), ``module:function`` (an
    unregistered kernel such as the signed builds) or ``twin:name`` (a CUDA C twin, nvcc)."""
    if target.startswith("twin:"):
        return twins.compile_report(target.split(":", 1)[1])
    name, _, which = target.partition("#")
    return compiler.report(name)[1 if which == "edges" else 0]


def loop_counts(r: compiler.CompileReport) -> dict:
    """Instructions, FFMA, FFMA share and shared-memory loads of a report's hottest loop."""
    loop = r.loop_mix
    total = sum(loop.values())
    ffma = loop.get("FFMA", 0)
    lds = {op: c for op, c in sorted(loop.items()) if op.startswith("LDS")}
    return {"loop": total, "ffma": ffma, "share": ffma / total if total else 0.0,
            "lds": ", ".join(f"{op} ×{c}" for op, c in lds.items()) or "-",
            "lds_count": sum(lds.values())}


# ----------------------------------------------------------------------------- solutions

def row_where(data: dict, **match) -> dict:
    """The first row of a loaded results file whose fields equal ``match``; LookupError if none."""
    for r in data["rows"]:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    raise LookupError(f"{data['experiment']}: no row with {match}")


def check_summary(kernel: str, m: int, n: int, k: int, seed: int = 3) -> dict:
    """Run ``kernel`` through :func:`lab.matmul` on fresh inputs: its shape, relative
    Frobenius error, whether every element is finite and whether the check passed."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    C = matmul(A, B, kernel=kernel)
    verdict = bench.compare(C, A, B, kernel=kernel, seed=seed)
    return {"shape": f"{m}×{k} · {k}×{n}", "rel_frobenius": verdict.rel_frobenius,
            "finite": bool(np.isfinite(C).all()), "ok": bool(verdict.passed)}


def error_class(rel: float) -> str:
    """A relative error as the printed answer states it: the same on a GPU and in the simulator
    (whose float32 arithmetic rounds differently in the last bits)."""
    return "below 10⁻⁶" if rel < 1e-6 else f"{rel:.1e} (above 10⁻⁶)"


#: Keys whose values are shares, printed as percentages.
_PERCENT = ("share", "extra_time", "extra_per_flop", "model_extra", "seed004_edge", "fill_",
            "eff_", "occ_", "aligned_")


def _fmt(key: str, v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and any(p in key for p in _PERCENT):
        return f"{v:.1%}" if abs(v) < 0.1 else f"{v:.0%}"
    if isinstance(v, float):
        return tables.fmt(v, 3)
    return str(v)


def solution_values(namespace: dict, prefix: str) -> dict:
    """Every scalar returned by every solution of ``namespace`` (a module's ``globals()``)
    named ``prefix`` + N, as text. A solution ``exNN_M`` names its values ``exNN_M_<key>``
    itself, written out where it computes them; a key without that prefix (chapter 5's, until
    it writes them out) is prefixed here."""
    out = {}
    for name in sorted(n for n in namespace if n.startswith(prefix)):
        for key, v in namespace[name]().items():
            if isinstance(v, (list, dict)):
                continue
            short = key.removeprefix(f"{name}_")
            out[f"{name}_{short}"] = _fmt(short, v)
    return out


# ----------------------------------------------------------------------------- evidence

def verdict_word(lowest: float, highest: float) -> str:
    """The word a ratio to the yardstick supports, from its range over the processes: "past"
    only when the lowest process is above 1, "behind" when the highest is below 1, "level"
    when the range holds 1."""
    if lowest > 1:
        return "past"
    if highest < 1:
        return "behind"
    return "level"


def evidence_box(rows: list[dict], *, claim: str, method: str, yardstick: str,
                 spread: str = "processes"):
    """The evidence beside a chapter's headline, as a boxed table: per row (``what``,
    ``ours`` and ``theirs`` in TFLOP/s, the median ``ratio`` with its ``lowest`` and
    ``highest`` process, the SM clock ``mhz_ours`` and ``mhz_theirs`` in MHz) both sides'
    rates, the ratio and its range, both clocks and the word the range supports
    (:func:`verdict_word`); ``method`` says how the calls were timed, ``spread`` over what the
    range runs (processes, or repetitions of one process). A clock that was not recorded is
    ``None`` and says so."""
    import html

    def mhz(v):
        return "not recorded" if v is None else f"{v:.0f}"

    table_rows = [{"case": r["what"],
                   "ours / yardstick TFLOP/s": f"{r['ours']:.0f} / {r['theirs']:.0f}",
                   f"ratio ({spread})": f"{r['ratio']:.3f} ({r['lowest']:.3f}–{r['highest']:.3f})",
                   "SM MHz ours / yardstick": f"{mhz(r['mhz_ours'])} / {mhz(r['mhz_theirs'])}",
                   "word": verdict_word(r["lowest"], r["highest"])} for r in rows]
    inner = page.table(table_rows, digits=3)
    head = (f'<p class="lab-evidence-title"><strong>Evidence:</strong> {html.escape(claim)}</p>'
            f'<p class="lab-evidence-method">Yardstick: {html.escape(yardstick)}. '
            f'Timing: {html.escape(method)}. "past" only when the lowest of the {spread} is '
            'above 1, "behind" when the highest is below 1, "level" otherwise.</p>')
    text = (f"Evidence: {claim}\nYardstick: {yardstick}. Timing: {method}.\n"
            + inner._bundle["text/plain"])
    return page._Output({"text/plain": text,
                         "text/html": f'<div class="lab-evidence">{head}'
                                      f'{inner._bundle["text/html"]}</div>'})
