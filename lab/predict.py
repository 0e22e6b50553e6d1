"""Predictions for a second GPU, written before it is measured: the reference GPU's measurements
(``lab/results/h200/``) carried over by the course's own models and both GPUs' datasheets.

``python -m lab predict h100-80gb-hbm3`` writes ``lab/results/h100-80gb-hbm3/predictions.json``:
one row per quantity, with a stable ``id``, what it is, the page (and the glued name) that shows
it, the reference value it starts from (file, row, field), the rule that carries it over and why,
the predicted value and unit, and the row of the second GPU's results that will be set beside it
(``compare``: experiment, row, field). Nothing here reads a results file of the target GPU: every
load goes through :func:`reference`, which reads the reference GPU's folder only.

The rules (:data:`RULES`), each one of the course's models:

* **bandwidth** (chapter 0's memory roof): a rate that HBM bounds scales by the ratio of the two
  datasheet bandwidths, a time by its inverse;
* **compute** (chapter 0's compute roof): a time that the SMs bound scales by the ratio of
  SMs × SM clock (1 between the H200 and the H100: 132 SMs at up to 1,980 MHz each);
* **latency+bandwidth**: a kernel that moved its bytes at half the read roof or more on the
  reference is a fixed part (what it took beyond its bytes at the read roof) plus its bytes at the
  target's read roof;
* **roofline**: any other kernel takes the larger of its compute-scaled time and its ideal bytes
  at the target's read roof (chapter 6.1's floor: it becomes memory-bound only if that binds);
* **model**: chapter 8's :func:`lab.model.rung_model` on the target's roofs;
* **count**: chapter 6.1's waves (:func:`lab.model.waves`) with the target's SMs and the blocks
  per SM of the committed sm_90 compiler facts;
* **datasheet**: a fact of the target's datasheet;
* **derived**: a ratio or difference of other predictions, by the formula the page uses.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

from lab import model, results

#: The name a predictions file is stored under (``<gpu>/predictions.json``).
EXPERIMENT = "predictions"
#: The GPU the predictions start from, and its key in :data:`lab.model.DATASHEET`.
REFERENCE, REFERENCE_SHEET = results.REFERENCE_GPU, "H200"
#: GPUs predictions can be made for, by results folder: the name its provenance will record, its
#: key in :data:`lab.model.DATASHEET` (SMs, maximum SM clock, HBM, FP32 and tensor roofs), and
#: what that table lacks: L2 size, compute capability, board power limit, the datasheets.
TARGETS = {
    "h100-80gb-hbm3": {"gpu": "NVIDIA H100 80GB HBM3", "sheet": "H100", "cc": "9.0",
                       "l2_bytes": 50 * 2**20, "power_w": 700, "memory_gb": 80,
                       "source": "NVIDIA H100 SXM5 datasheet (3.35 TB/s HBM3, 80 GB, 700 W) "
                                 "and the NVIDIA H100 Tensor Core GPU architecture whitepaper "
                                 "(132 SMs, 1,980 MHz boost, 50 MB L2)"},
}
#: The reference's board limits, beside :data:`TARGETS`' (the H200 SXM datasheet).
REFERENCE_BOARD = {"power_w": 700, "memory_gb": 141}
#: A kernel whose bytes moved at this share of the read roof or more on the reference is
#: bandwidth-bound there (rule "latency+bandwidth"); below it, rule "roofline".
BANDWIDTH_BOUND = 0.5
#: The weight matrix of chapter 6.1's decode-time shape: (M × 4096) · (4096 × 4096), FP16.
WEIGHTS = (4096, 4096)

RULES = {
    "bandwidth": "scaled by the ratio of the datasheet HBM bandwidths (target / reference for a "
                 "rate, its inverse for a time)",
    "compute": "scaled by the ratio of SMs × maximum SM clock (reference / target for a time)",
    "latency+bandwidth": "the reference time less its bytes at the reference's read roof (a "
                         "fixed part), plus its bytes at the target's predicted read roof",
    "roofline": "the larger of the compute-scaled time and the ideal bytes at the target's "
                "predicted read roof",
    "model": "chapter 8's rung_model on the target's roofs (the predicted FMA and read roofs, "
             "the datasheet tensor roof, SMs and clock)",
    "count": "chapter 6.1's wave model with the target's SMs and the blocks per SM of the "
             "committed sm_90 compiler facts",
    "datasheet": "read from the target's datasheet",
    "derived": "computed from other predictions by the formula the page uses",
}

ASSUMPTIONS = (
    "The target sustains the same fraction of its datasheet HBM bandwidth as the reference does "
    "of its own (the streaming read reached 92% of 4.8 TB/s on the H200).",
    "Both GPUs run their SMs at the same clocks under the same load: the same maximum (1,980 "
    "MHz) and the same 700 W board limit, so the clock a sustained GEMM settles at is the "
    "reference's. (The H100's 80 GB of HBM3 may draw less of the 700 W than the H200's 141 GB "
    "of HBM3e, which would leave its SMs a little more.)",
    "L2 and shared-memory bandwidth scale with the SM clock, so kernels that L2, shared memory, "
    "the FP32 lanes or the tensor cores bound take the reference's time.",
    "The same sm_90a code runs on both (compute capability 9.0): registers, shared memory, "
    "blocks per SM and waves are the reference's.",
    "Fixed costs (the launch, the first loads, the last wave's drain) are the reference's.",
    "cuBLAS picks the same kernels on both (same architecture and SM count).",
    "No results file of the target GPU is read: every number starts from the reference's files.",
)


def machine(gpu: str) -> dict:
    """The datasheet of ``gpu`` (a results folder name: :data:`TARGETS` or the reference) with
    its folder, name, L2 and board limits. ValueError naming the GPUs known otherwise."""
    if gpu == REFERENCE:
        return {"folder": REFERENCE, "gpu": "NVIDIA H200", "cc": "9.0",
                **model.DATASHEET[REFERENCE_SHEET], **REFERENCE_BOARD}
    if gpu not in TARGETS:
        raise ValueError(f"no datasheet to predict GPU {gpu!r} from; predictions can be made "
                         f"for: {', '.join(TARGETS)} (a results folder name, as `python -m lab "
                         "measure` names it); add the GPU to lab.predict.TARGETS and "
                         "lab.model.DATASHEET to predict another")
    t = TARGETS[gpu]
    return {"folder": gpu, **t, **model.DATASHEET[t["sheet"]]}


def reference(experiment: str) -> dict:
    """A results file of the reference GPU (never the target's: predictions do not peek)."""
    return results.load(experiment, gpu=REFERENCE)


def reference_file(experiment: str) -> str:
    return f"lab/results/{REFERENCE}/{experiment}.json"


def ref_row(experiment: str, **match) -> dict:
    """The one row of the reference's ``experiment`` file whose fields equal ``match``
    (the first of several where a file times one thing twice, as ``fp32_ladder`` does cuBLAS)."""
    rows = [r for r in reference(experiment)["rows"]
            if all(r.get(k) == v for k, v in match.items())]
    if not rows:
        raise ValueError(f"{reference_file(experiment)} has no row with {match}")
    return rows[0]


# ----------------------------------------------------------------------------- the rules

class Scales:
    """The reference's measured roofs and the target's predicted ones, and the rules."""

    def __init__(self, target: str):
        self.ref, self.tgt = machine(REFERENCE), machine(target)
        roof = {r["kernel"]: r for r in reference("roofline")["rows"]}
        self.bandwidth = self.tgt["hbm_gbps"] / self.ref["hbm_gbps"]
        self.compute = (self.tgt["sms"] * self.tgt["clock_mhz"]) / (self.ref["sms"]
                                                                    * self.ref["clock_mhz"])
        self.ref_read = roof["stream_read"]["gbps"]
        self.read = self.ref_read * self.bandwidth
        self.ref_fma = roof["fma_chains"]["tflops"]
        self.fma = self.ref_fma * self.compute

    def time_compute(self, ms: float) -> float:
        return ms / self.compute

    def time_bandwidth(self, ms: float) -> float:
        return ms / self.bandwidth

    def share_of_read(self, ms: float, nbytes: float) -> float:
        """The share of the reference's read roof a kernel's ``nbytes`` in ``ms`` is."""
        return nbytes / (ms * 1e-3) / (self.ref_read * 1e9)

    def time(self, ms: float, nbytes: float) -> tuple[float, str]:
        """A reference time ``ms`` of a kernel that must move at least ``nbytes`` through HBM,
        carried to the target: (time in ms, rule). Bandwidth-bound on the reference (at least
        :data:`BANDWIDTH_BOUND` of the read roof): "latency+bandwidth"; otherwise "roofline"."""
        if self.share_of_read(ms, nbytes) >= BANDWIDTH_BOUND:
            fixed = max(0.0, ms - nbytes / (self.ref_read * 1e9) * 1e3)
            return fixed + nbytes / (self.read * 1e9) * 1e3, "latency+bandwidth"
        return max(self.time_compute(ms), nbytes / (self.read * 1e9) * 1e3), "roofline"

    def target_machine(self) -> dict:
        """The target for chapter 8's model: the predicted FMA and read roofs, the datasheet's
        tensor roof, SMs and clock."""
        return {"fp32_tflops": self.fma, "tensor_tflops": self.tgt["tensor_tflops"],
                "hbm_gbps": self.read, "sms": self.tgt["sms"], "clock_mhz": self.tgt["clock_mhz"]}

    def reference_machine(self) -> dict:
        """The reference for chapter 8's model, as chapter 8 builds it (measured roofs)."""
        return {"fp32_tflops": self.ref_fma, "tensor_tflops": self.ref["tensor_tflops"],
                "hbm_gbps": self.ref_read, "sms": self.ref["sms"],
                "clock_mhz": self.ref["clock_mhz"]}


def _source(experiment: str, row: dict, field: str) -> dict:
    return {"file": reference_file(experiment), "experiment": experiment, "row": row,
            "field": field}


def _compare(target: str, experiment: str, row: dict | None, field: str, scale: float = 1.0,
             over: tuple | None = None) -> dict:
    """Where the target's measurement of a quantity will be read (:func:`measured`): ``field``
    of the one row of ``experiment`` matching ``row`` (``row`` None: a ``provenance.`` field),
    times ``scale``, divided by the value ``over`` = (experiment, row, field) names if given."""
    out = {"file": f"lab/results/{target}/{experiment}.json", "experiment": experiment,
           "row": row, "field": field, "scale": scale}
    if over:
        out["over"] = _compare(target, *over)
    return out


def measured(row: dict, root: Path | None = None) -> float | None:
    """The target's measured value of a predicted quantity (a row of a predictions file), read
    from the target's results files under ``root`` as its ``compare`` says; None for a quantity
    of the model alone. ResultsMissing when the target has not been measured yet; ValueError
    when the file has no row, or several, matching."""
    spec = row["compare"]
    if spec is None:
        return None
    value = _read(spec, root) * spec["scale"]
    return value / _read(spec["over"], root) if "over" in spec else value


def _read(spec: dict, root: Path | None) -> float:
    gpu = Path(spec["file"]).parent.name
    data = results.load(spec["experiment"], gpu=gpu, root=root)
    if spec["row"] is None:
        return data["provenance"][spec["field"].removeprefix("provenance.")]
    rows = [r for r in data["rows"] if all(r.get(k) == v for k, v in spec["row"].items())]
    if len(rows) != 1:
        raise ValueError(f"{spec['file']}: {len(rows)} rows match {spec['row']}, not one")
    return rows[0][spec["field"]]


def _q(qid: str, what: str, page: str, unit: str, ref_value: float, sources: list[dict],
       rule: str, why: str, predicted: float, compare: dict | None, glue: str | None = None,
       low: float | None = None, high: float | None = None) -> dict:
    if rule not in RULES:
        raise ValueError(f"{qid}: unknown rule {rule!r}")
    row = {"id": qid, "what": what, "page": page, "glue": glue, "unit": unit,
           "reference": ref_value, "reference_sources": sources, "rule": rule, "why": why,
           "predicted": predicted, "compare": compare}
    if low is not None:
        row["low"], row["high"] = low, high
    return row


# ----------------------------------------------------------------------------- the quantities

def _roofs(s: Scales, target: str) -> list[dict]:
    page = "book/00_machine.ipynb"
    roof = {r["kernel"]: r for r in reference("roofline")["rows"]}
    out = []
    fma = roof["fma_chains"]["tflops"]
    out.append(_q("ch0.fma_tflops", "FP32 FMA roof: the FMA-chains kernel's rate", page,
                  "TFLOP/s", fma, [_source("roofline", {"kernel": "fma_chains"}, "tflops")],
                  "compute", "registers only, no memory: SMs × FP32 lanes × clock, the same "
                  "on both", fma * s.compute,
                  _compare(target, "roofline", {"kernel": "fma_chains"}, "tflops"),
                  glue="fma_roof_tflops"))
    for kernel, glue, what in (("stream_read", "read_tbps", "streaming-read roof"),
                               ("copy", "copy_tbps", "copy bandwidth, read + write counted"),
                               ("memcpy_d2d", "memcpy_tbps", "the driver's device-to-device "
                                                             "copy")):
        v = roof[kernel]["gbps"]
        out.append(_q(f"ch0.{kernel}_gbps", f"HBM: {what} (4 GiB, cache-cold)", page, "GB/s", v,
                      [_source("roofline", {"kernel": kernel}, "gbps")], "bandwidth",
                      "buffers 70× the L2: every byte comes from HBM, at the same share of the "
                      "datasheet bandwidth", v * s.bandwidth,
                      _compare(target, "roofline", {"kernel": kernel}, "gbps"), glue=glue))
    share = s.ref_read / (s.ref["hbm_gbps"])
    out.append(_q("ch0.read_share", "streaming read as a share of the datasheet HBM bandwidth",
                  page, "share", share,
                  [_source("roofline", {"kernel": "stream_read"}, "gbps")], "bandwidth",
                  "the assumption itself, made testable: the same share on both",
                  s.read / s.tgt["hbm_gbps"],
                  _compare(target, "roofline", {"kernel": "stream_read"}, "gbps",
                           1 / s.tgt["hbm_gbps"]), glue="read_share"))
    ridge_ref = model.ridge(fma * 1e12, s.ref_read * 1e9)
    out.append(_q("ch0.ridge_fp32", "FP32 ridge: the FMA roof over the read roof", page,
                  "FLOP/B", ridge_ref,
                  [_source("roofline", {"kernel": "fma_chains"}, "tflops"),
                   _source("roofline", {"kernel": "stream_read"}, "gbps")], "derived",
                  "FMA roof (compute rule) over the read roof (bandwidth rule): a kernel needs "
                  "1.4× the intensity to leave the memory roof",
                  model.ridge(s.fma * 1e12, s.read * 1e9),
                  _compare(target, "roofline", {"kernel": "fma_chains"}, "tflops", 1e3,
                           ("roofline", {"kernel": "stream_read"}, "gbps")),
                  glue="ridge_measured"))
    return out


def _decode(s: Scales, target: str) -> list[dict]:
    page = "book/06_1_waves.ipynb"
    n, k = WEIGHTS
    tc = ref_row("tensor_cores", part="ladder", kernel="cublas_fp16")
    fp16_ref, fp16 = tc["tflops"], tc["tflops"] * s.compute
    out = []
    ridge_ref = model.ridge(fp16_ref * 1e12, s.ref_read * 1e9)
    ridge = model.ridge(fp16 * 1e12, s.read * 1e9)
    src = [_source("tensor_cores", {"part": "ladder", "kernel": "cublas_fp16"}, "tflops"),
           _source("roofline", {"kernel": "stream_read"}, "gbps")]
    out.append(_q("ch6_1.fp16_ridge", "FP16 ridge: cuBLAS FP16's 4096³ rate over the read roof",
                  page, "FLOP/B", ridge_ref, src, "derived", "the FP16 rate is compute-bound "
                  "(compute rule), the read roof scales with bandwidth", ridge,
                  _compare(target, "tensor_cores", {"part": "ladder", "kernel": "cublas_fp16"},
                           "tflops", 1e3, ("roofline", {"kernel": "stream_read"}, "gbps")),
                  glue="fp16_ridge"))

    def cross(r):
        return r * k * n / (k * n - r * (k + n))
    out.append(_q("ch6_1.m_cross", "rows M at which the decode shape (M × 4096)·(4096 × 4096), "
                  "FP16, reaches the FP16 ridge", page, "rows", cross(ridge_ref), src, "derived",
                  "the ridge rises with less bandwidth, so more rows stay memory-bound",
                  cross(ridge), None, glue="m_cross"))
    out.append(_q("ch6_1.l2_mib", "L2 size", page, "MiB",
                  reference("roofline")["provenance"]["l2_bytes"] / 2**20,
                  [{"file": reference_file("roofline"), "experiment": "roofline",
                    "row": None, "field": "provenance.l2_bytes"}], "datasheet",
                  "50 MB on the H100 SXM5: the 32 MiB of decode weights still fit",
                  s.tgt["l2_bytes"] / 2**20, _compare(target, "roofline", None,
                                                       "provenance.l2_bytes", 2.0**-20),
                  glue="l2_mib"))
    floor_ref = model.ideal_bytes(1, n, k, 2) / (s.ref_read * 1e9) * 1e6
    floor = model.ideal_bytes(1, n, k, 2) / (s.read * 1e9) * 1e6
    out.append(_q("ch6_1.decode_m1_floor_us", "the model's least time of the decode shape at "
                  "M = 1 (ideal bytes at the read roof)", page, "µs", floor_ref,
                  [_source("roofline", {"kernel": "stream_read"}, "gbps")], "bandwidth",
                  "bytes over the read roof", floor, None, glue="sk_floor_m1"))
    for m, glue in ((1, "m1_us"), (64, None), (1024, None)):
        row = ref_row("shapes", part="skinny_queued", kernel="cublas_fp16", m=m, rotated=True)
        ms = row["median_ms"]
        nbytes = model.ideal_bytes(m, n, k, 2)
        t, rule = s.time(ms, nbytes)
        share = s.share_of_read(ms, nbytes)
        why = (f"{share:.0%} of the read roof on the reference: bandwidth-bound, a fixed "
               f"{(ms - nbytes / (s.ref_read * 1e9) * 1e3) * 1e3:.1f} µs plus the bytes"
               if rule == "latency+bandwidth" else
               f"{share:.0%} of the read roof on the reference: compute-bound, and its bytes "
               f"at the target's read roof ({nbytes / (s.read * 1e9) * 1e6:.1f} µs) do not "
               "bind")
        low = high = None
        if rule == "latency+bandwidth":
            low, high = ms * 1e3, s.time_bandwidth(ms) * 1e3
            why += (f"; between {low:.1f} µs (limited by loads in flight, as fast as on the "
                    f"reference) and {high:.1f} µs (the same share of the roof)")
        match = {"part": "skinny_queued", "kernel": "cublas_fp16", "m": m, "n": n, "k": k,
                 "rotated": True}
        out.append(_q(f"ch6_1.decode_m{m}_cublas_us", f"cuBLAS FP16 decode-time GEMM, M = {m} "
                      "× 4096 × 4096, weights from HBM, GPU time per call (queued)", page, "µs",
                      ms * 1e3, [_source("shapes", match, "median_ms")], rule, why, t * 1e3,
                      _compare(target, "shapes", match, "median_ms", 1e3), glue=glue,
                      low=low, high=high))
        if m == 1:
            out.append(_q("ch6_1.decode_m1_weight_gbps", "cuBLAS FP16 at M = 1, weights from "
                          "HBM: the weights' bandwidth", page, "GB/s", row["weight_gbps"],
                          [_source("shapes", match, "weight_gbps")], "derived",
                          "the weights' bytes over the predicted time",
                          2 * n * k / (t * 1e-3) / 1e9,
                          _compare(target, "shapes", match, "weight_gbps"), glue="m1_gbps",
                          low=2 * n * k / (high * 1e-6) / 1e9, high=2 * n * k / (low * 1e-6) / 1e9))
    row = ref_row("shapes", part="skinny_queued", kernel="tc_fp16", m=1, rotated=True)
    ms = row["median_ms"]
    t, rule = s.time(ms, model.ideal_bytes(1, n, k, 2))
    match = {"part": "skinny_queued", "kernel": "tc_fp16", "m": 1, "n": n, "k": k,
             "rotated": True}
    out.append(_q("ch6_1.decode_m1_tc_us", "our tc_fp16 on the decode shape at M = 1, weights "
                  "from HBM (queued)", page, "µs", ms * 1e3,
                  [_source("shapes", match, "median_ms")], rule,
                  f"{s.share_of_read(ms, model.ideal_bytes(1, n, k, 2)):.0%} of the read roof: "
                  "32 blocks on 132 SMs, limited by their own loads in flight, not by HBM",
                  t * 1e3, _compare(target, "shapes", match, "median_ms", 1e3),
                  glue="tc_m1_us"))
    return out


def _waves(s: Scales, target: str) -> list[dict]:
    from lab import compiler
    from lab.kernels import get_spec

    page = "book/06_1_waves.ipynb"
    spec = get_spec("tc_fp16")
    tm, tn = spec.tile[:2]
    regs = compiler.report("tc_fp16")[0].registers
    blocks = model.blocks_per_sm(spec.config.threads, regs, spec.config.shared_bytes)
    facts = [{"file": "lab/facts/compiler.json", "experiment": None, "row": {"kernel": "tc_fp16"},
              "field": "registers"}]
    out = []
    for nn, what in ((4097, "waves"), (4097, "last")):
        def count(sms):
            tiles = model.tile_grid(nn, nn, tm, tn)
            w = model.waves(nn, nn, tm, tn, sms, blocks)
            return w if what == "waves" else tiles - (w - 1) * sms * blocks
        out.append(_q(f"ch6_1.w{nn}_{what}", f"tc_fp16 ({tm}×{tn} tiles, {blocks} blocks/SM) at "
                      f"{nn}²: " + ("waves" if what == "waves" else "tiles in the last wave"),
                      page, "waves" if what == "waves" else "tiles", count(s.ref["sms"]), facts,
                      "count", f"{s.tgt['sms']} SMs on the target as on the reference",
                      count(s.tgt["sms"]), None, glue=f"w{nn}_{what}"))
    # the measured step at the last new wave of the sweep (M = 4224, K = 2048, N swept)
    params = reference("waves")["parameters"]
    m, kk = params["m"], params["k"]
    ns = sorted(params["n_values"])
    steps = [(a, b) for a, b in zip(ns, ns[1:])
             if model.waves(m, b, tm, tn, s.tgt["sms"], blocks)
             != model.waves(m, a, tm, tn, s.tgt["sms"], blocks)]
    a, b = steps[-1]
    ta = ref_row("waves", part="sweep", kernel="tc_fp16", n=a)["median_ms"]
    tb = ref_row("waves", part="sweep", kernel="tc_fp16", n=b)["median_ms"]
    pa = s.time(ta, model.ideal_bytes(m, a, kk, 2, 4))[0]
    pb = s.time(tb, model.ideal_bytes(m, b, kk, 2, 4))[0]
    src = [_source("waves", {"part": "sweep", "kernel": "tc_fp16", "n": x}, "median_ms")
           for x in (a, b)]
    out.append(_q("ch6_1.wave_last_tc", f"tc_fp16's measured time step at its last new wave, "
                  f"N {a} → {b} (M = {m}, K = {kk})", page, "×", tb / ta, src, "derived",
                  "both sides compute-bound (roofline rule): the step is the reference's",
                  pb / pa, _compare(target, "waves", {"part": "sweep", "kernel": "tc_fp16",
                                                      "n": b}, "median_ms", 1.0,
                                    ("waves", {"part": "sweep", "kernel": "tc_fp16", "n": a},
                                     "median_ms")), glue="wave_last_tc"))
    return out


def _model(s: Scales, target: str) -> list[dict]:
    """Chapter 8: the model on the target's roofs, and the measured rung that stands for each
    of its four kernels."""
    page = "book/08_model.ipynb"
    measured = {"naive": ("naive_tiled", {"kernel": "naive", "part": "size"}),
                "shared": ("naive_tiled", {"kernel": "tiled32", "part": "size"}),
                "register": ("patch_sweep", {"kernel": "block128"}),
                "tensor": ("tensor_cores", {"kernel": "tc_bf16", "part": "ladder"})}
    roofs = [_source("roofline", {"kernel": "fma_chains"}, "tflops"),
             _source("roofline", {"kernel": "stream_read"}, "gbps")]
    n = 4096
    out = []
    glued = {"model_register", "measured_naive", "measured_tensor"}   # what the page quotes
    for kind, (experiment, match) in measured.items():
        ref = model.rung_model(kind, s.reference_machine(), n)
        tgt = model.rung_model(kind, s.target_machine(), n)
        out.append(_q(f"ch8.model_{kind}_ms", f"chapter 8's model of the {kind} kernel at "
                      f"{n}³ ({tgt['bound']}-bound on the target)", page, "ms",
                      ref["seconds"] * 1e3, roofs, "model",
                      f"bound by {ref['bound']} on the reference, by {tgt['bound']} on the "
                      "target", tgt["seconds"] * 1e3, None,
                      glue=f"model_{kind}" if f"model_{kind}" in glued else None))
        full = {**match, "m": n, "n": n, "k": n}
        row = ref_row(experiment, **full)
        ms = row["median_ms"]
        e = 2 if kind == "tensor" else 4
        t, rule = s.time(ms, model.ideal_bytes(n, n, n, e, 4))
        ratio_ref = ms / (ref["seconds"] * 1e3)
        ratio = t / (tgt["seconds"] * 1e3)
        out.append(_q(f"ch8.measured_{kind}_ms", f"the measured {match['kernel']} at {n}³, the "
                      f"rung standing for the model's {kind} kernel", page, "ms", ms,
                      [_source(experiment, full, "median_ms")], rule,
                      f"{s.share_of_read(ms, model.ideal_bytes(n, n, n, e, 4)):.1%} of the read "
                      "roof in its ideal bytes: L2, shared memory and the SMs bound it, not HBM; "
                      f"the model says {ref['bound']}", t,
                      _compare(target, experiment, full, "median_ms"),
                      glue=f"measured_{kind}" if f"measured_{kind}" in glued else None))
        if abs(ratio / ratio_ref - 1) > 0.01:
            out.append(_q(f"ch8.ratio_{kind}", f"measured ÷ model for the {kind} kernel at "
                          f"{n}³", page, "×", ratio_ref, roofs + [_source(experiment, full,
                                                                           "median_ms")],
                          "derived", "the predicted time over the model's time on the target: "
                          "the model, HBM-bound, slows with the bandwidth; the kernel does not",
                          ratio, None, glue=f"ratio_{kind}"))
    tensor = model.rung_model("tensor", s.target_machine(), n)
    ref_t = model.rung_model("tensor", s.reference_machine(), n)
    row = ref_row("tensor_cores", kernel="tc_bf16", part="ladder", m=n, n=n, k=n)
    t = s.time(row["median_ms"], model.ideal_bytes(n, n, n, 2, 4))[0]

    def l2_share(bytes_, gbps, ms):
        return 1 - gbps * 1e9 * ms * 1e-3 / bytes_
    out.append(_q("ch8.tc_min_l2", "the least share of the model's bytes of tc_bf16 at 4096³ "
                  "that L2 must serve for the measured time", page, "share",
                  l2_share(ref_t["global_bytes"], s.ref_read, row["median_ms"]),
                  roofs + [_source("tensor_cores", {"kernel": "tc_bf16", "part": "ladder"},
                                   "median_ms")], "derived",
                  "the same time from less HBM bandwidth: L2 must serve more",
                  l2_share(tensor["global_bytes"], s.read, t), None, glue="tc_min_l2"))
    return out


#: The book's page of each chapter the ladders' rows name.
PAGES = {"1": "book/01_naive.ipynb", "2": "book/02_tiled.ipynb", "3": "book/03_registers.ipynb",
         "4": "book/04_closing_the_gap.ipynb", "5": "book/05_tensor_cores.ipynb",
         "7.1": "book/07_1_machinery.ipynb"}


def _gemms(s: Scales, target: str) -> list[dict]:
    """Compute-bound GEMMs: every rung of the FP32 ladder and of chapter 5's tensor-core ladder
    at 4096³, and every Hopper rung's ratio to cuBLAS at 4096³ and 8192³."""
    out = []
    n = 4096
    sq = {"m": n, "n": n, "k": n}

    def carried(experiment, match, e):
        row = ref_row(experiment, **match)
        ms = row["median_ms"]
        nbytes = model.ideal_bytes(row["m"], row["n"], row["k"], e, 4)
        t, rule = s.time(ms, nbytes)
        return row, ms, t, rule, s.share_of_read(ms, nbytes)

    def why(share, rule):
        return (f"{share:.1%} of the read roof in its ideal bytes: the FP32 lanes, the tensor "
                "cores, shared memory or L2 bound it, all at the same clock on both"
                if rule == "roofline" else f"{share:.0%} of the read roof: bandwidth-bound")

    for kernel, chapter in _ladder("fp32_ladder"):
        match = {"part": "ladder", "kernel": kernel, **sq}
        when = ref_row("fp32_ladder", **match).get("when")
        if when:                                  # cuBLAS is timed first and last: the first
            match["when"] = when
        _, ms, t, rule, share = carried("fp32_ladder", match, 4)
        out.append(_q(f"ch{chapter}.{kernel}_4096_ms", f"{kernel} (FP32) at 4096³, cache-hot",
                      PAGES[chapter], "ms", ms, [_source("fp32_ladder", match, "median_ms")],
                      rule, why(share, rule), t,
                      _compare(target, "fp32_ladder", match, "median_ms")))
    w = {"part": "ladder", "kernel": "warptile_tuned", **sq}
    c = {"part": "ladder", "kernel": "cublas_fp32", **sq}
    c.update(when=ref_row("fp32_ladder", **c)["when"])      # the first of its two timings
    ours, lib = carried("fp32_ladder", w, 4), carried("fp32_ladder", c, 4)
    out.append(_q("ch4.warptile_tuned_of_cublas", "warptile_tuned's rate as a share of cuBLAS "
                  "FP32's at 4096³", PAGES["4"], "share", lib[1] / ours[1],
                  [_source("fp32_ladder", w, "median_ms"), _source("fp32_ladder", c,
                                                                    "median_ms")],
                  "derived", "both compute-bound (roofline rule on each): the reference's share",
                  lib[2] / ours[2], _compare(target, "fp32_ladder", c, "median_ms", 1.0,
                                             ("fp32_ladder", w, "median_ms"))))
    for kernel, _ in _ladder("tensor_cores"):
        match = {"part": "ladder", "kernel": kernel, **sq}
        _, ms, t, rule, share = carried("tensor_cores", match, 2)
        out.append(_q(f"ch5.{kernel}_4096_ms", f"{kernel} at 4096³, cache-hot", PAGES["5"],
                      "ms", ms, [_source("tensor_cores", match, "median_ms")], rule,
                      why(share, rule), t,
                      _compare(target, "tensor_cores", match, "median_ms")))
    match = {"part": "ladder", "kernel": "tc_fp16", **sq}
    base = {"part": "ladder", "kernel": "cublas_fp16", **sq}
    ours, lib = carried("tensor_cores", match, 2), carried("tensor_cores", base, 2)
    out.append(_q("ch5.tc_fp16_ratio_4096", "tc_fp16's rate over cuBLAS FP16's at 4096³",
                  PAGES["5"], "×", ours[0]["ratio_to_cublas_fp16"],
                  [_source("tensor_cores", match, "ratio_to_cublas_fp16")], "derived",
                  "both compute-bound: the ratio is the reference's", lib[2] / ours[2],
                  _compare(target, "tensor_cores", match, "ratio_to_cublas_fp16")))
    params = reference("hopper")["parameters"]
    for size in params["sizes"]:
        cube = {"m": size, "n": size, "k": size}
        base = {"kernel": "cublas_fp16", "rung": "cuBLAS", **cube}
        lib = carried("hopper", base, 2)
        for rung in params["rungs"]:
            match = {"kernel": f"{rung}_fp16", **cube}
            row, _, t, _, _ = carried("hopper", match, 2)
            out.append(_q(f"ch7.{rung}_fp16_ratio_{size}", f"Hopper rung {rung} (FP16): its "
                          f"rate over cuBLAS FP16's at {size}³", PAGES["7.1"], "×",
                          row["ratio_to_cublas"], [_source("hopper", match, "ratio_to_cublas"),
                                                   _source("hopper", base, "median_ms")],
                          "derived", "both compute-bound (roofline rule on each): the "
                          "reference's ratio", lib[2] / t,
                          _compare(target, "hopper", match, "ratio_to_cublas")))
    return out


def _ladder(experiment: str) -> list[tuple[str, str]]:
    """(kernel, chapter) of every ``ladder`` row at 4096³ of ``experiment``, in file order."""
    seen = {}
    for r in reference(experiment)["rows"]:
        if r.get("part") == "ladder" and r["m"] == r["n"] == r["k"] == 4096:
            seen.setdefault(r["kernel"], str(r.get("chapter") or "5"))
    return list(seen.items())


def _clocks(s: Scales, target: str) -> list[dict]:
    out = []
    for kernel in ("cublas_fp16", "warptile_tuned"):
        row = ref_row("clocks", part="summary", kernel=kernel)
        match = {"part": "summary", "kernel": kernel}
        out.append(_q(f"ch9.clock_{kernel}_mhz", f"median SM clock while {kernel} runs "
                      f"{row['m']}³ for {reference('clocks')['parameters']['run_s']:g} s",
                      "book/09_libraries.ipynb", "MHz", row["sm_mhz_median"],
                      [_source("clocks", match, "sm_mhz_median")], "compute",
                      "the same 700 W limit and the same silicon: the same clock under the "
                      "same load (if anything a little higher: HBM3 at 3.35 TB/s draws less)",
                      row["sm_mhz_median"], _compare(target, "clocks", match, "sm_mhz_median"),
                      glue=("cublas_mhz" if kernel == "cublas_fp16" else "fp32_mhz")))
    # a cache-hot decode GEMM through lab.gemm, replayed from a CUDA graph (chapter 9b)
    match = {"part": "host", "kernel": "lab.gemm", "path": "graph", "m": 1, "n": 4096,
             "k": 4096}
    row = ref_row("launch_cost", **match)
    out.append(_q("ch9b.decode_lab_gemm_graph_us", "lab.gemm on the decode shape (1 × 4096 × "
                  "4096, FP16), cache-hot, GPU-only (CUDA graph)", "book/09b_calling.ipynb",
                  "µs", row["median_ms"] * 1e3, [_source("launch_cost", match, "median_ms")],
                  "compute", f"cache-hot: its 32 MiB of weights stay in the "
                  f"{s.tgt['l2_bytes'] / 2**20:.0f} MiB L2, whose bandwidth follows the clock",
                  s.time_compute(row["median_ms"]) * 1e3,
                  _compare(target, "launch_cost", match, "median_ms", 1e3)))
    return out


def predict(target: str) -> list[dict]:
    """Every quantity predicted for ``target`` (a results folder name of :data:`TARGETS`)."""
    machine(target)                                       # refuses an unknown GPU first
    if target == REFERENCE:
        raise ValueError(f"{target!r} is the reference GPU: its numbers are measured, not "
                         "predicted")
    s = Scales(target)
    rows = (_roofs(s, target) + _decode(s, target) + _waves(s, target) + _model(s, target)
            + _gemms(s, target) + _clocks(s, target))
    ids = [r["id"] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"quantities predicted twice: {dup}")
    for r in rows:
        for f in ("reference", "predicted", "low", "high"):
            if f in r and not (isinstance(r[f], (int, float)) and math.isfinite(r[f])):
                raise ValueError(f"{r['id']}: {f} is {r[f]!r}")
    return rows


def read_files() -> list[str]:
    """The reference results files the predictions read."""
    return ["roofline", "tensor_cores", "shapes", "waves", "naive_tiled", "patch_sweep",
            "hopper", "fp32_ladder", "clocks", "launch_cost"]


def parameters(target: str) -> dict:
    """What the predictions assume and start from: the datasheets, the assumptions, the
    rules, each reference file read and the code that read them, with their SHA-256."""
    s = Scales(target)
    files = {}
    for name in read_files():
        path = results.path_for(name, REFERENCE)
        files[reference_file(name)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    keep = ("fp32_tflops", "tensor_tflops", "hbm_gbps", "sms", "clock_mhz", "power_w")
    code = {f"lab/{m}.py": hashlib.sha256((Path(__file__).parent / f"{m}.py").read_bytes())
            .hexdigest() for m in ("predict", "model")}
    return {"reference_gpu": REFERENCE, "target_gpu": target,
            "datasheets": {REFERENCE: {k: s.ref[k] for k in keep},
                           target: {k: s.tgt[k] for k in keep + ("l2_bytes", "memory_gb")}},
            "datasheet_source": s.tgt["source"],
            "bandwidth_ratio": s.bandwidth, "compute_ratio": s.compute,
            "predicted_read_gbps": s.read, "predicted_fma_tflops": s.fma,
            "bandwidth_bound_share": BANDWIDTH_BOUND,
            "assumptions": list(ASSUMPTIONS), "rules": RULES, "reference_files": files,
            "code": code}


def provenance(target: str) -> dict:
    """The provenance of a predictions file: the GPU predicted (so the file lies in its
    folder), and the software and date of the machine that computed it; no driver or CUDA."""
    from lab import device

    t = machine(target)
    prov = dict(device.provenance())
    prov.update({"gpu": t["gpu"], "compute_capability": t["cc"], "sm_count": t["sms"],
                 "l2_bytes": t["l2_bytes"], "driver": None, "cuda_runtime": None, "cupy": None,
                 "sm_clock_mhz": None, "mem_clock_mhz": None,
                 "max_sm_clock_mhz": str(t["clock_mhz"]), "predicted_from": REFERENCE})
    return prov


ROW_FIELDS = ("id", "what", "page", "unit", "reference", "reference_sources", "rule", "why",
              "predicted")


def save(target: str, *, command: str, root: Path | None = None, force: bool = False) -> Path:
    """Write ``<root>/<target>/predictions.json``. Refuses to replace a predictions file
    (``force`` does): committed predictions must predate the measurements they are set beside."""
    rows = predict(target)
    path = results.path_for(EXPERIMENT, target, root)
    if path.exists() and not force:
        raise ValueError(f"{path} exists: predictions are made once, before the GPU is "
                         "measured, and kept; pass --force to write them again")
    return results.save(EXPERIMENT, rows, parameters=parameters(target), command=command,
                        provenance=provenance(target), row_fields=ROW_FIELDS, root=root,
                        gpu=target, notes="Predicted from the reference GPU's committed "
                        "results and both datasheets, before the target was measured. "
                        "Assumptions in parameters.assumptions; each row's rule in "
                        "parameters.rules.")


def table_rows(rows: list[dict]) -> list[dict]:
    """The predictions as a printable table: id, reference, rule, predicted, unit."""
    return [{"id": r["id"], "reference": r["reference"], "rule": r["rule"],
             "predicted": r["predicted"], "unit": r["unit"]} for r in rows]
