"""The formats: e4m3 and e5m2, their codes and values, and what rounding to e4m3 loses."""
from __future__ import annotations

import numpy as np

from lab import fp8, page, plots
from lab.chapters.ch7b.common import OUTLIER_SCALE, fmt
from lab.kernels.wgmma import fp8 as wgmma_fp8


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


def ml_dtypes_finfo(name: str):
    import ml_dtypes

    return ml_dtypes.finfo(getattr(ml_dtypes, name))


def format_values() -> dict:
    e4, e5 = fp8.FORMATS["e4m3"], fp8.FORMATS["e5m2"]
    return {"e4m3_max": fmt(e4.max), "e5m2_max": fmt(e5.max),
            "e4m3_unit": f"2⁻{e4.mantissa_bits + 1}", "e5m2_unit": f"2⁻{e5.mantissa_bits + 1}",
            "e4m3_min_normal": f"2⁻{-int(np.log2(e4.min_normal))}",
            "e4m3_min_sub": f"2⁻{-int(np.log2(e4.min_subnormal))}",
            "keep_bits": f"{-int(np.log2(wgmma_fp8.TC_FP8_UNIT))}",
            "stage_k": f"{wgmma_fp8.CONFIGS['fp8_e4m3'].bk}"}


def values() -> dict:
    """The numbers the formats section quotes."""
    v = format_values()
    e4, bf = fp8.FORMATS["e4m3"], ml_dtypes_finfo("bfloat16")
    v["e4m3_span"] = f"2^{np.log2(e4.max / e4.min_subnormal):.1f}"
    v["bf16_span"] = f"2^{np.log2(float(bf.max) / float(bf.smallest_subnormal)):.0f}"
    return v
