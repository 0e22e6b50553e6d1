"""Chapter 7b, FP8 on Hopper: the formats, what the tensor cores' FP8 accumulation keeps, and
chapter 7's best kernel on e4m3 and e5m2 beside cuBLASLt FP8.

Tables and figures come from one results file of the selected GPU, ``fp8``
(:mod:`lab.experiments.fp8`), from the formats themselves (:mod:`lab.fp8`), from the NumPy
model of the kernels' arithmetic (:func:`lab.fp8.emulate`) and from the committed compiler
facts (:mod:`lab.compiler`). Every public function is one call of the notebook; the
exercises' worked solutions are the ``ex7b_*`` functions at the end.
"""
from __future__ import annotations

import numpy as np

from lab import bench, compiler, fp8, kernels, model, page, plots, results
from lab.kernels import k09_fp8, k09_hopper, k09_parts

EXPERIMENT = "fp8"
#: A value the run has no row for (a provider that refused the recipe, say).
MISSING = "not in this run"
SIZES = (4096, 8192)
#: The accuracy rows, in the order the tables list them.
MODES = ("tensor cores only", "promote every 512", "promote every 256", "promote every 128",
         "block scales, promote every 128", "cuBLASLt fast accumulation", "cuBLASLt", "BF16")
#: Our timed kernels → what they are compared with (same format, scaling, output type).
PAIRS = (("fp8_e4m3", "cublaslt_e4m3_f32_fast"), ("fp8_e4m3_bf16", "cublaslt_e4m3_bf16_fast"),
         ("fp8_e4m3_promote", "cublaslt_e4m3_f32"), ("fp8_e4m3_block", "cublaslt_e4m3_bf16_block"),
         ("fp8_e5m2", "cublaslt_e5m2_f32_fast"), ("wgmma_tmastore_bf16", "cublas_bf16"))
#: The model's prediction: a small product, three depths (seconds under the simulator).
PREDICT_MN = 32
PREDICT_KS = (512, 2048, 8192)
#: How much larger the outlier columns are (as in the experiment's outlier-heavy data).
OUTLIER_SCALE = 100.0


def _load() -> dict:
    return results.load(EXPERIMENT)


# ----------------------------------------------------------------------------- the formats

def format_rows() -> list[dict]:
    """e4m3, e5m2 and, for scale, BF16 and FP16: fields, bias, range, unit roundoff."""
    import ml_dtypes

    rows = []
    for name, f in fp8.FORMATS.items():
        rows.append({"format": name, "sign/exp/mantissa bits": f"1/{f.exponent_bits}/"
                     f"{f.mantissa_bits}", "bias": f.bias, "largest": f"{f.max:.5g}",
                     "smallest normal": f.min_normal, "smallest subnormal": f.min_subnormal,
                     "unit roundoff": f.unit,
                     "inf": "yes" if f.ieee_specials else "no (NaN only)"})
    for name, t in (("bf16", ml_dtypes.bfloat16), ("fp16", np.float16)):
        info = ml_dtypes.finfo(t)
        rows.append({"format": name, "sign/exp/mantissa bits": f"1/{info.nexp}/{info.nmant}",
                     "bias": 2 ** (info.nexp - 1) - 1, "largest": f"{float(info.max):.5g}",
                     "smallest normal": float(info.smallest_normal),
                     "smallest subnormal": float(info.smallest_subnormal),
                     "unit roundoff": float(info.eps) / 2, "inf": "yes"})
    return rows


def format_table():
    return page.table(format_rows(), digits=4)


def code_rows(codes=(0x01, 0x08, 0x38, 0x39, 0x5B, 0x7E, 0x7F)) -> list[dict]:
    """A few e4m3 codes taken apart: sign, exponent and mantissa fields and the value."""
    f = fp8.FORMATS["e4m3"]
    rows = []
    for c in codes:
        e = (c >> f.mantissa_bits) & (2 ** f.exponent_bits - 1)
        man = c & (2 ** f.mantissa_bits - 1)
        rows.append({"code": f"0x{c:02X}", "bits": f"{c >> 7} {e:04b} {man:03b}",
                     "exponent field": e, "mantissa field": man,
                     "value": float(fp8.decode(np.array([c], np.uint8), "e4m3")[0])})
    return rows


def code_table():
    return page.table(code_rows(), digits=6)


def values_figure():
    """Every finite positive value of e4m3 and e5m2 on a log scale: 2^m values per binade."""
    fig, ax = plots.axes("The positive values of the two FP8 formats", "value", "",
                         size=(7.0, 2.4))
    ax.set_xscale("log", base=2)
    for y, (name, f) in enumerate(fp8.FORMATS.items()):
        v = fp8.decode(np.arange(1, 128, dtype=np.uint8), name)
        v = v[np.isfinite(v)]
        ax.plot(v, np.full(v.shape, y), "|", markersize=14, label=f"{name} ({v.size} values)")
    ax.set_yticks([0, 1], list(fp8.FORMATS))
    ax.set_ylim(-0.7, 1.7)
    return page.figure(fig)


def quantization_rows(seed: int = 7, shape=(256, 1024)) -> list[dict]:
    """What rounding to FP8 costs before any product: the relative error of the quantized
    data, per-tensor against block scaling, on normal data and on data with a few columns
    100× larger (fixed seed)."""
    import ml_dtypes

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    heavy = x.copy()
    heavy[:, rng.choice(shape[1], size=shape[1] // 256, replace=False)] *= OUTLIER_SCALE
    rows = []
    for data, values in (("normal", x), ("outliers", heavy)):
        for name in fp8.FORMATS:
            for scaling, block in (("per tensor", None), ("1×128 blocks", fp8.ACT_BLOCK)):
                q, s = fp8.quantize(values, name, block)
                rows.append(_quantization_row(data, name, scaling, values,
                                              fp8.dequantize(q, s, name, block)))
        rows.append(_quantization_row(data, "bf16", "none", values,
                                      values.astype(ml_dtypes.bfloat16).astype(np.float64)))
    return rows


def _quantization_row(data, name, scaling, values, back) -> dict:
    return {"data": data, "format": name, "scaling": scaling,
            "rel. error (Frobenius)": float(np.linalg.norm(back - values)
                                            / np.linalg.norm(values)),
            "values flushed to 0": int(np.sum((back == 0) & (values != 0)))}


def quantization_table():
    return page.table(quantization_rows(), digits=3)


# ----------------------------------------------------------------------------- the kernel

def kernel_source():
    """The FP8 half of the stage: one TMA box of Bᵀ per stage, four K-major k-steps."""
    return page.source(k09_parts, "tma_stage")


def promotion_source():
    """The promoting main loop; its two helpers (the block scales a thread needs, and
    ``acc += part × scales``) folded to one line."""
    return page.source(k09_hopper, "promotion", fold={
        "promotion_scales": "block_scales(), promote(): the k-block's scales; acc += part × scales"})


def config_rows() -> list[dict]:
    rows = []
    for name, cfg in k09_fp8.CONFIGS.items():
        rows.append({"kernel": name, "tile": f"{cfg.bm}×{cfg.bn}×{cfg.bk}",
                     "stages": cfg.stages, "scales": cfg.scales,
                     "promotion every (k)": cfg.promote or "never", "output": cfg.out,
                     "shared memory (KB)": cfg.shared_bytes / 1024})
    return rows


def config_table():
    return page.table(config_rows())


def sass_rows() -> list[dict]:
    """Registers and instruction counts of each FP8 kernel, from the committed compiler facts
    (compiled offline for sm_90a; no GPU needed)."""
    rows = []
    for name in k09_fp8.CONFIGS:
        try:
            rep = compiler.report(name)[0]
        except Exception as exc:  # noqa: BLE001 - facts not recorded for these sources
            return [{"kernel": name, "facts": f"not available here ({type(exc).__name__})"}]
        mix = rep.mix
        rows.append({"kernel": name, "registers": rep.registers,
                     "spilled bytes": rep.spill_stores,
                     "QGMMA per stage": mix.get("QGMMA", 0),
                     "TMA loads (UTMALDG)": mix.get("UTMALDG", 0),
                     "TMA stores (UTMASTG)": mix.get("UTMASTG", 0),
                     "promotion adds (FADD/FFMA)": mix.get("FADD", 0) + mix.get("FFMA", 0)})
    return rows


def sass_table():
    return page.table(sass_rows())


def check_here() -> str:
    """On a Hopper GPU: each FP8 kernel checked once against float64 at an odd shape (scaled
    operands); elsewhere the one line that says why it cannot run."""
    lines = []
    for name in k09_fp8.CONFIGS:
        ok, why = kernels.runnable(name)
        if not ok:
            lines.append(why)
            continue
        lines.append(bench.check(name, 257, 387, 259).line())
    return _Text("\n".join(lines))


class _Text:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


# ----------------------------------------------------------------------------- accuracy

def predicted_rows(seed: int = 3) -> list[dict]:
    """The model's prediction (:func:`lab.fp8.emulate`, 13 bits kept) of the error against
    the dequantised inputs, before any measurement: tensor cores only against promotion every
    128 k, at a few depths, on normal data."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in PREDICT_KS:
        a = rng.standard_normal((PREDICT_MN, k))
        bt = rng.standard_normal((PREDICT_MN, k))
        qa, sa = fp8.quantize(a)
        qb, sb = fp8.quantize(bt)
        ref = fp8.reference(qa, qb, sa, sb)
        row = {"k": k}
        for label, promote in (("tensor cores only", 0), ("promote every 128", 128)):
            out = fp8.emulate(qa, qb, sa, sb, promote=promote)
            row[label] = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        row["ratio"] = row["tensor cores only"] / row["promote every 128"]
        rows.append(row)
    return rows


def predicted_table():
    return page.table(predicted_rows(), digits=3)


def _accuracy(data: dict, dataset: str) -> dict:
    """(mode, k) → relative Frobenius error for one dataset."""
    return {(r["what"], r["k"]): r.get("rel_frobenius", float("nan"))
            for r in data["rows"] if r["part"] == "accuracy" and r["dataset"] == dataset}


def accuracy_rows(dataset: str = "normal") -> list[dict]:
    table = _accuracy(_load(), dataset)
    ks = sorted({k for _, k in table})
    return [{"accumulation": mode, **{f"K={k}": table.get((mode, k)) for k in ks}}
            for mode in MODES if any((mode, k) in table for k in ks)]


def accuracy_table(dataset: str = "normal"):
    return page.table(accuracy_rows(dataset), digits=2, source=results.source_line(EXPERIMENT),
                      title=f"relative error (Frobenius) against float64 of the dequantised "
                            f"inputs, {dataset} data")


def accuracy_figure():
    import matplotlib.pyplot as plt

    data = _load()
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110, sharey=True)
    for ax, dataset in zip(axs, ("normal", "outliers")):
        table = _accuracy(data, dataset)
        for mode in MODES:
            ks = sorted(k for m, k in table if m == mode)
            if ks:
                ax.loglog(ks, [table[(mode, k)] for k in ks], "o-" if "cuBLAS" not in mode
                          else "x--", label=mode, base=2)
        ax.set_title(f"{dataset} data", fontsize=10)
        ax.set_xlabel("K")
        ax.grid(True, which="both", alpha=0.25)
    axs[0].set_ylabel("relative error (Frobenius)")
    axs[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return page.figure(fig)


# ----------------------------------------------------------------------------- speed

def _speed(data: dict) -> dict:
    return {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "speed"}


def speed_rows() -> list[dict]:
    speed = _speed(_load())
    rows = []
    for n in SIZES:
        for ours, theirs in PAIRS:
            mine, base = speed.get((ours, n)), speed.get((theirs, n))
            if mine is None:
                continue
            rows.append({"size": f"{n}³", "ours": ours, "TFLOP/s": mine["tflops"],
                         "SM MHz": mine["sm_mhz"], "W": mine["power_w"], "vs": theirs,
                         "its TFLOP/s": base.get("tflops") if base else None,
                         "its SM MHz": base.get("sm_mhz") if base else None,
                         "ratio": mine.get("ratio_to_cublas"),
                         "note": (base or {}).get("error", "")[:60]})
    return rows


def speed_table():
    return page.table(speed_rows(), digits=4, source=results.source_line(EXPERIMENT))


def sweep_rows() -> list[dict]:
    rows = []
    for r in _load()["rows"]:
        if r["part"] == "speed" and r["kernel"].startswith("sweep: ") and "tflops" in r:
            rows.append({"size": f"{r['m']}³", "variant": r["kernel"].removeprefix("sweep: "),
                         "TFLOP/s": r["tflops"], "vs": r.get("versus"),
                         "ratio": r.get("ratio_to_cublas"), "SM MHz": r["sm_mhz"]})
    return rows


def sweep_table():
    return page.table(sweep_rows(), digits=4, source=results.source_line(EXPERIMENT))


def speed_figure():
    speed = _speed(_load())
    fig, ax = plots.axes("FP8 and BF16 at 8192³: ours beside cuBLAS(Lt)", "", "TFLOP/s",
                         size=(8.0, 3.8))
    labels, ours, theirs = [], [], []
    for mine, base in PAIRS:
        a, b = speed.get((mine, SIZES[-1])), speed.get((base, SIZES[-1]))
        if a is None:
            continue
        labels.append(mine.replace("wgmma_tmastore_", "").replace("fp8_", ""))
        ours.append(a["tflops"])
        theirs.append(b.get("tflops", 0.0) if b else 0.0)
    x = np.arange(len(labels))
    ax.bar(x - 0.2, ours, 0.4, label="ours")
    ax.bar(x + 0.2, theirs, 0.4, label="cuBLAS(Lt), same format, scaling, output")
    ax.set_xticks(x, labels, fontsize=8)
    ax.legend(fontsize=8, loc="lower left")
    return page.figure(fig)


def tile_rows() -> list[dict]:
    """The count behind the tile choice: tiles, rounds of 132 persistent blocks, the share of
    block slots that hold work (:func:`lab.model.wave_efficiency`) and the share of the
    computed tile area inside C, for the tiles the sweep tried."""
    rows = []
    for n in SIZES:
        for bm, bn in ((128, 256), (128, 192), (128, 128)):
            area = n * n / (-(-n // bm) * bm * -(-n // bn) * bn)
            rows.append({"size": f"{n}³", "tile": f"{bm}×{bn}",
                         "tiles": model.tile_grid(n, n, bm, bn),
                         "rounds": model.waves(n, n, bm, bn),
                         "slots used": model.wave_efficiency(n, n, bm, bn),
                         "area inside C": area,
                         "both": model.wave_efficiency(n, n, bm, bn) * area})
    return rows


def tile_table():
    return page.table(tile_rows(), digits=3)


# ----------------------------------------------------------------------------- values

def ml_dtypes_finfo(name: str):
    import ml_dtypes

    return ml_dtypes.finfo(getattr(ml_dtypes, name))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _fmt(x) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def format_values() -> dict:
    e4, e5 = fp8.FORMATS["e4m3"], fp8.FORMATS["e5m2"]
    return {"e4m3_max": _fmt(e4.max), "e5m2_max": _fmt(e5.max),
            "e4m3_unit": f"2⁻{e4.mantissa_bits + 1}", "e5m2_unit": f"2⁻{e5.mantissa_bits + 1}",
            "e4m3_min_normal": f"2⁻{-int(np.log2(e4.min_normal))}",
            "e4m3_min_sub": f"2⁻{-int(np.log2(e4.min_subnormal))}",
            "keep_bits": f"{-int(np.log2(k09_fp8.TC_FP8_UNIT))}",
            "stage_k": f"{k09_fp8.CONFIGS['fp8_e4m3'].bk}"}


def _size_values(speed: dict, n: int) -> dict:
    """At n³: ours and cuBLASLt for each of the four pairs (FP32 out, BF16 out, promotion,
    block scales), ours against the promoting cuBLASLt, BF16 wgmma, e5m2, and the clock and
    power sampled over the size's rows; keyed by what the prose names, without the size."""
    s = {}
    for mine, base, key in (("fp8_e4m3", "cublaslt_e4m3_f32_fast", "f32"),
                            ("fp8_e4m3_bf16", "cublaslt_e4m3_bf16_fast", "bf16"),
                            ("fp8_e4m3_promote", "cublaslt_e4m3_f32", "promote"),
                            ("fp8_e4m3_block", "cublaslt_e4m3_bf16_block", "block")):
        a, b = speed.get((mine, n), {}), speed.get((base, n), {})
        s["ours", key] = _fmt(a["tflops"]) if "tflops" in a else MISSING
        s["cublas", key] = (_fmt(b["tflops"]) if "tflops" in b
                            else "not run (" + b.get("error", MISSING)[:50] + ")")
        s["ratio", key] = (f"{a['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in a
                           else MISSING)
    a = speed.get(("fp8_e4m3", n), {})
    d = speed.get(("cublaslt_e4m3_f32", n), {})
    s["ours_vs_promoting"] = (f"{d['median_ms'] / a['median_ms']:.3f}"
                              if "median_ms" in a and "median_ms" in d else MISSING)
    bf = speed.get(("wgmma_tmastore_bf16", n), {})
    s["bf16"] = _fmt(bf["tflops"]) if "tflops" in bf else MISSING
    s["fp8_over_bf16"] = (f"{a['tflops'] / bf['tflops']:.2f}"
                          if "tflops" in a and "tflops" in bf else MISSING)
    e5 = speed.get(("fp8_e5m2", n), {})
    s["e5m2"] = _fmt(e5["tflops"]) if "tflops" in e5 else MISSING
    mhz = [r["sm_mhz"] for (k, m), r in speed.items() if m == n and "sm_mhz" in r]
    watts = [r["power_w_max"] for (k, m), r in speed.items() if m == n and "power_w_max" in r]
    s["mhz_min"] = f"{min(mhz):.0f}" if mhz else MISSING
    s["mhz_max"] = f"{max(mhz):.0f}" if mhz else MISSING
    s["watts_max"] = f"{max(watts):.0f}" if watts else MISSING
    return s


def measured_values(data: dict) -> dict:
    speed = _speed(data)
    small, big = _size_values(speed, 4096), _size_values(speed, 8192)
    v = {"ratio_f32_4096": small["ratio", "f32"], "ratio_bf16_4096": small["ratio", "bf16"],
         "ours_f32_8192": big["ours", "f32"], "cublas_f32_8192": big["cublas", "f32"],
         "ratio_f32_8192": big["ratio", "f32"],
         "ours_bf16_8192": big["ours", "bf16"], "cublas_bf16_8192": big["cublas", "bf16"],
         "ratio_bf16_8192": big["ratio", "bf16"],
         "ours_promote_8192": big["ours", "promote"],
         "cublas_promote_8192": big["cublas", "promote"],
         "ratio_promote_8192": big["ratio", "promote"],
         "ours_block_8192": big["ours", "block"], "cublas_block_8192": big["cublas", "block"],
         "ratio_block_8192": big["ratio", "block"],
         "ours_vs_promoting_8192": big["ours_vs_promoting"],
         "fp8_over_bf16_8192": big["fp8_over_bf16"], "e5m2_8192": big["e5m2"],
         "mhz_min_8192": big["mhz_min"], "mhz_max_8192": big["mhz_max"],
         "watts_max_8192": big["watts_max"]}
    n = SIZES[-1]
    v["rounds"] = f"{data.get('parameters', {}).get('rounds', MISSING)}"
    v["accuracy_mn"] = f"{data.get('parameters', {}).get('accuracy_mn', MISSING)}"
    bf = speed.get(("wgmma_tmastore_bf16", n), {})
    v["bf16_ratio_8192"] = (f"{bf['ratio_to_cublas']:.2f}" if "ratio_to_cublas" in bf
                            else MISSING)
    small = speed.get(("sweep: e4m3 128x128, no promotion", n), {})
    wide = speed.get(("fp8_e4m3", n), {})
    v["tile128_cost"] = (_pct(1 - small["tflops"] / wide["tflops"])
                         if "tflops" in small and "tflops" in wide else MISSING)
    v["shortfall_8192"] = (_pct(1 - wide["ratio_to_cublas"]) if "ratio_to_cublas" in wide
                           else MISSING)
    v["sms"] = f"{data.get('provenance', {}).get('sm_count', MISSING)}"
    narrow = speed.get(("sweep: e4m3 128x192", n), {})
    v["ours_192"] = _fmt(narrow["tflops"]) if "tflops" in narrow else MISSING
    v["ratio_192"] = (f"{narrow['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in narrow
                      else MISSING)
    v["measured_192_gain"] = (_pct(narrow["tflops"] / wide["tflops"] - 1)
                              if "tflops" in narrow and "tflops" in wide else MISSING)
    p256 = speed.get(("sweep: e4m3 promote every 256", n), {})
    p512 = speed.get(("sweep: e4m3 promote every 512", n), {})
    v["ours_p256_8192"] = _fmt(p256["tflops"]) if "tflops" in p256 else MISSING
    v["ratio_p256_8192"] = (f"{p256['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p256
                            else MISSING)
    v["ours_p512_8192"] = _fmt(p512["tflops"]) if "tflops" in p512 else MISSING
    v["ratio_p512_8192"] = (f"{p512['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p512
                            else MISSING)
    p192 = speed.get(("sweep: e4m3 128x192, promote every 128", n), {})
    v["ours_192_promote"] = _fmt(p192["tflops"]) if "tflops" in p192 else MISSING
    v["ratio_192_promote"] = (f"{p192['ratio_to_cublas']:.3f}" if "ratio_to_cublas" in p192
                              else MISSING)
    e5 = speed.get(("cublaslt_e5m2_f32_fast", SIZES[0]), {})
    v["cublas_e5m2_error"] = e5.get("error", "none")
    acc = _accuracy(data, "normal")
    out = _accuracy(data, "outliers")
    ks = sorted({k for _, k in acc})
    if not ks:
        return v
    first, last = ks[0], ks[-1]
    v["k_max"], v["k_min"] = f"{last}", f"{first}"
    picks = {"err_tc_kmin": (acc, "tensor cores only", first),
             "err_tc_kmax": (acc, "tensor cores only", last),
             "err_p128_kmax": (acc, "promote every 128", last),
             "err_p512_kmax": (acc, "promote every 512", last),
             "err_bf16_kmax": (acc, "BF16", last),
             "err_tc_kmax_outliers": (out, "tensor cores only", last),
             "err_p128_kmax_outliers": (out, "promote every 128", last),
             "err_block_kmax_outliers": (out, "block scales, promote every 128", last)}
    v.update({name: f"{table[(mode, k)]:.1e}" for name, (table, mode, k) in picks.items()})
    v["tc_over_p128_kmax"] = (
        f"{acc[('tensor cores only', last)] / acc[('promote every 128', last)]:.0f}")
    same = max(abs(acc[("cuBLASLt", k)] - acc[("promote every 128", k)]) for k in ks)
    v["cublas_vs_p128_max_diff"] = f"{same:.1e}"
    fast = {k: acc[("cuBLASLt fast accumulation", k)] / acc[("tensor cores only", k)]
            for k in ks}
    v["fast_over_tc_kmax"] = f"{fast[last]:.2f}"
    v["fast_equal_below"] = f"{max([k for k in ks if fast[k] == 1.0] or [0])}"
    return v


def _past_rows() -> list[dict]:
    """The FP8 rows of ``hopper_past`` (chapter 7's measurement past rung 8): medians over its
    processes, GPU-only timing, each against cuBLASLt fast accumulation with its output type."""
    return [r for r in results.load("hopper_past")["rows"]
            if r["part"] == "summary" and r["dtype"] == "e4m3"]


def cluster_table():
    """FP8 with and without clusters of two blocks (Bᵀ multicast) beside cuBLASLt."""
    rows = [{"kernel": r["kernel"], "size": f"{r['m']}³", "C": r["out"],
             "TFLOP/s": r["tflops"], "ratio": r["ratio"],
             "ratio min–max": f"{r['ratio_min']:.3f}–{r['ratio_max']:.3f}",
             "processes": r["processes"]} for r in _past_rows()]
    return page.table(rows, digits=3, source=results.source_line("hopper_past"))


def cluster_values() -> dict:
    """The numbers of the clusters paragraph."""
    by = {(r["kernel"], r["m"]): r for r in _past_rows()}
    big, small = SIZES[-1], SIZES[0]
    return {
        "cl_ratio_big": f"{by[('fp8 cluster bf16 out', big)]['ratio']:.3f}",
        "cl_tflops_big": f"{by[('fp8 cluster bf16 out', big)]['tflops']:,.0f}",
        "cl_ratio_big_f32": f"{by[('fp8 cluster f32 out', big)]['ratio']:.3f}",
        "cl_ratio_small": f"{by[('fp8 cluster bf16 out', small)]['ratio']:.3f}",
        "nocl_ratio_big": f"{by[('fp8 bf16 out', big)]['ratio']:.3f}",
        "nocl_ratio_small": f"{by[('fp8 bf16 out', small)]['ratio']:.3f}",
        "cl_processes": str(min(r["processes"] for r in _past_rows())),
    }


def glue():
    """Glue :func:`values` for the prose and show them as one checked block."""
    return page.glue(values())


def values() -> dict:
    """Every number the prose quotes, as strings."""
    v = format_values()
    v.update(measured_values(_load()))
    tiles = {(r["size"], r["tile"]): r for r in tile_rows()}
    big = f"{SIZES[-1]}³"
    v["slots_256"] = f"{tiles[(big, '128×256')]['slots used']:.3f}"
    v["rounds_256"] = f"{tiles[(big, '128×256')]['rounds']}"
    v["tiles_256"] = f"{tiles[(big, '128×256')]['tiles']}"
    v["both_192"] = f"{tiles[(big, '128×192')]['both']:.3f}"
    v["predicted_192_gain"] = _pct(tiles[(big, "128×192")]["both"]
                                   / tiles[(big, "128×256")]["both"] - 1)
    pred = predicted_rows()
    v["pred_ratio_kmax"] = f"{pred[-1]['ratio']:.0f}"
    v["rounds_192_4096"] = f"{tiles[(f'{SIZES[0]}³', '128×192')]['rounds']}"
    e4, bf = fp8.FORMATS["e4m3"], ml_dtypes_finfo("bfloat16")
    v["e4m3_span"] = f"2^{np.log2(e4.max / e4.min_subnormal):.1f}"
    v["bf16_span"] = f"2^{np.log2(float(bf.max) / float(bf.smallest_subnormal)):.0f}"
    v["outlier_binades"] = f"{np.log2(OUTLIER_SCALE):.1f}"
    v["pred_k_max"] = f"{pred[-1]['k']}"
    v.update(cluster_values())
    return v


# ----------------------------------------------------------------------------- exercises

def ex7b_1(code: int = 0x5B, fmt: str = "e4m3") -> dict:
    """Decode one code by hand: its fields, the formula, and ``lab.fp8.decode``'s answer."""
    f = fp8.get_format(fmt)
    e = (code >> f.mantissa_bits) & (2 ** f.exponent_bits - 1)
    man = code & (2 ** f.mantissa_bits - 1)
    by_hand = (-1) ** (code >> 7) * 2.0 ** (e - f.bias) * (1 + man / 2 ** f.mantissa_bits)
    return {"code": f"0x{code:02X}", "exponent": e, "mantissa": man,
            "formula": f"2^({e} − {f.bias}) · (1 + {man}/{2 ** f.mantissa_bits})",
            "by hand": by_hand,
            "decode": float(fp8.decode(np.array([code], np.uint8), fmt)[0])}


def ex7b_2(k: int = 4096, mn: int = 32, seed: int = 5) -> dict:
    """How much error does promotion every 512 k leave against every 128 k, in the model?
    (Each promotion interval is a tensor-core sum of its own; its error grows with its
    length, so 4× the interval should give about 2× the error if the truncations add like a
    random walk, 4× if they add up.)"""
    rng = np.random.default_rng(seed)
    a, bt = rng.standard_normal((mn, k)), rng.standard_normal((mn, k))
    qa, sa = fp8.quantize(a)
    qb, sb = fp8.quantize(bt)
    ref = fp8.reference(qa, qb, sa, sb)
    err = {p: float(np.linalg.norm(fp8.emulate(qa, qb, sa, sb, promote=p) - ref)
                    / np.linalg.norm(ref)) for p in (128, 512)}
    return {"promote 128": f"{err[128]:.2e}", "promote 512": f"{err[512]:.2e}",
            "ratio": f"{err[512] / err[128]:.1f}"}


def ex7b_3(n: int = 8192) -> dict:
    """At n³ and our measured FP8 rate, how long does the product take, and how long would
    reading A and B once and writing C once (FP32 or BF16) take at the copy bandwidth
    chapter 0 measured (``roofline``: the ``copy`` row, read + write)? FP8 halves the input
    bytes and doubles the rate: is 8192³ still bound by arithmetic?"""
    tflops = _speed(_load())[("fp8_e4m3", n)]["tflops"]
    copy = [r for r in results.load("roofline")["rows"] if r["kernel"] == "copy"][0]
    hbm_tbps = copy["gbps"] / 1e3
    flops = 2.0 * n ** 3
    t_math = flops / (tflops * 1e12) * 1e3
    rows = {}
    for out, size in (("f32", 4), ("bf16", 2)):
        nbytes = 2 * n * n * 1 + n * n * size
        rows[f"memory ms ({out} out)"] = nbytes / (hbm_tbps * 1e12) * 1e3
    out = {"TFLOP/s": tflops, "copy TB/s": hbm_tbps, "math ms": t_math, **rows,
           "flop per byte (bf16 out)": flops / (2 * n * n + 2 * n * n)}
    return {key: f"{value:.3g}" for key, value in out.items()}
