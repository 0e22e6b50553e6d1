"""Chapter 8, section 3: the same model on the measured GPU, beside our measured times."""
from __future__ import annotations

from lab import model, page, results, seeds, tables


#: The measured rung standing for each of seed 001's kernels at 4096³: (experiment, match).
MEASURED = {
    "naive": ("naive_tiled", {"kernel": "naive", "part": "size", "n": 4096}),
    "shared": ("naive_tiled", {"kernel": "tiled32", "part": "size", "n": 4096}),
    "register": ("patch_sweep", {"kernel": "block128", "n": 4096}),
    "tensor": ("tensor_cores", {"kernel": "tc_bf16", "part": "ladder", "n": 4096}),
}


#: Names of the rungs in our ladder.
OUR_KERNEL = {kind: match["kernel"] for kind, (_, match) in MEASURED.items()}


def gpu_name() -> str:
    """The measured GPU's short name, from the provenance of ``roofline``."""
    return page.gpu_label(results.load("roofline")["provenance"]["gpu"])


def sheet_key() -> str:
    """The measured GPU's datasheet in :data:`lab.model.DATASHEET` (H200, H100 or A100, by
    its name in the provenance of ``roofline``); the H200's for a GPU that table lacks."""
    gpu = results.load("roofline")["provenance"]["gpu"]
    return next((key for key in ("H200", "H100", "A100") if key in gpu), "H200")


#: What the model on each GPU's datasheet is, beside the section before's (chapter 8's prose).
SHEET_SENTENCE = {
    "H200": "The H200 is an H100 with more and faster HBM, so only the model's HBM time changes.",
    "H100": "On the H100's datasheet these are the H100 times of the table above.",
    "A100": "On the A100's datasheet these are the A100 times of the table above.",
}


def measured_machine() -> dict:
    """The measured GPU with its measured roofs: FP32 from the FMA chains and HBM from the
    streaming read (``roofline``), SMs and maximum clock from the provenance; no tensor roof
    was measured, so its datasheet's stands."""
    data = results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    prov = data["provenance"]
    return {"fp32_tflops": by["fma_chains"]["tflops"],
            "tensor_tflops": model.DATASHEET[sheet_key()]["tensor_tflops"],
            "hbm_gbps": by["stream_read"]["gbps"], "sms": prov["sm_count"],
            "clock_mhz": int(prov["max_sm_clock_mhz"])}


def measured_row(kind: str) -> dict:
    """Our measured row at 4096³ for one of the step-by-step model's kernels (:data:`MEASURED`)."""
    experiment, match = MEASURED[kind]
    match = dict(match)
    n = match.pop("n")
    return next(r for r in results.rows(experiment, **match) if r["m"] == r["n"] == r["k"] == n)


def h200_rows() -> list[dict]:
    """Each kernel: the model on the measured GPU's datasheet roofs and on its measured roofs,
    and the time we measured for the rung that stands for it."""
    rows = []
    for s in seeds.LADDER_MODEL_001:
        kind = s["kernel"]
        sheet = model.rung_model(kind, model.DATASHEET[sheet_key()])
        ours = model.rung_model(kind, measured_machine())
        m = measured_row(kind)
        rows.append({"kernel": s["title"], "ours": OUR_KERNEL[kind], "bound": sheet["bound"],
                     "sheet_ms": sheet["seconds"] * 1e3, "roofs_ms": ours["seconds"] * 1e3,
                     "measured_ms": m["median_ms"],
                     "ratio": m["median_ms"] / (ours["seconds"] * 1e3)})
    return rows


def h200_table():
    """:func:`h200_rows` as a table."""
    name = gpu_name()
    return page.table(h200_rows(), ["kernel", "ours", "bound", "sheet_ms", "roofs_ms",
                                    "measured_ms", "ratio"],
                      {"ours": "our rung", "bound": "model bound",
                       "sheet_ms": f"model, datasheet (ms)",
                       "roofs_ms": f"model, measured roofs (ms)",
                       "measured_ms": f"measured {name} (ms)",
                       "ratio": "measured ÷ model"},
                      source="Model: lab.model.rung_model; datasheet roofs lab.model.DATASHEET"
                             f"['{sheet_key()}']; measured roofs " + results.source_line("roofline")
                             + " Measured: " + ", ".join(
                                 f"lab/results/{results.resolve(e)[0]}/{e}.json"
                                 for e in ("naive_tiled", "patch_sweep", "tensor_cores"))
                             + " (4096³, medians).")


def dram_evidence() -> dict:
    """The naive kernel at 1024³ under Nsight Compute: the bytes the model counts against the
    bytes DRAM served and the bytes L2 served (``ncu_dram``)."""
    r = next(r for r in results.rows("ncu_dram") if r["kernel"] == "naive")
    return {"n": r["n"], "model": r["model_bytes"], "dram": r["dram_read_bytes"],
            "l2": r["l2_read_bytes"]}


def _loop(kernel: str) -> dict:
    """The hottest loop's instruction counts of a registered kernel (committed compiler
    facts, sm_90)."""
    from lab import compiler

    return compiler.report(kernel)[0].loop_mix


def values() -> dict:
    """The numbers this section's prose quotes, as strings."""
    rows = {r["ours"]: r for r in h200_rows()}
    roofs = measured_machine()
    v = {}
    v["the_gpu"] = gpu_name()
    v["sheet_sentence"] = SHEET_SENTENCE.get(
        sheet_key(), "lab.model has no datasheet for this GPU; the H200's stands in.")
    v["hbm_measured"] = f"{roofs['hbm_gbps'] / 1e3:.2f}"
    v["fp32_measured"] = f"{roofs['fp32_tflops']:.1f}"
    def printed(kind: str) -> tuple[str, str, str]:
        """The measured/model ratio, the measured time and the model's time of one kind."""
        r = rows[OUR_KERNEL[kind]]
        return f"{r['ratio']:.2f}", tables.fmt(r["measured_ms"]), tables.fmt(r["roofs_ms"])
    v["ratio_naive"], v["measured_naive"], _ = printed("naive")
    v["ratio_shared"], _, _ = printed("shared")
    v["ratio_register"], _, v["model_register"] = printed("register")
    v["ratio_tensor"], v["measured_tensor"], _ = printed("tensor")
    h200 = model.rung_model("naive", roofs)
    naive_ms = rows["naive"]["measured_ms"]
    v["naive_served_tbps"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / 1e12:.0f}"
    v["naive_served_x"] = f"{h200['global_bytes'] / (naive_ms * 1e-3) / (roofs['hbm_gbps'] * 1e9):.1f}"
    d = dram_evidence()
    v["ncu_n"] = str(d["n"])
    v["ncu_dram_pct"] = f"{100 * d['dram'] / d['model']:.2f}%"
    v["ncu_l2_pct"] = f"{100 * d['l2'] / d['model']:.1f}%"
    loop = _loop("tiled32")
    lds, lds128, sts = loop.get("LDS", 0), loop.get("LDS.128", 0), loop.get("STS", 0)
    k_per_trip = loop.get("FFMA", 0)                    # one output per thread: one FFMA per k
    v.update({"t32_lds": str(lds), "t32_lds128": str(lds128), "t32_sts": str(sts),
              "t32_k": str(k_per_trip), "t32_hw_passes": str(lds + lds128 + sts),
              "t32_model_passes": str(2 * k_per_trip + sts),
              "t32_hw_share": f"{(lds + lds128 + sts) / (2 * k_per_trip + sts):.0%}"})
    loop = _loop("block128")
    share = loop.get("FFMA", 0) / sum(loop.values())
    v["b128_share"] = f"{share:.2f}"
    v["b128_ceiling_ms"] = f"{model.flops(4096, 4096, 4096) / (share * roofs['fp32_tflops'] * 1e12) * 1e3:.2f}"
    cublas = next(r for r in results.rows("patch_sweep", kernel="cublas_fp32")
                  if r["m"] == r["n"] == r["k"] == 4096)
    v["cublas_fp32_ms"] = f"{cublas['median_ms']:.2f}"
    t = model.rung_model("tensor", roofs)
    tc_ms = rows["tc_bf16"]["measured_ms"]
    v["tc_need_tbps"] = f"{t['global_bytes'] / (tc_ms * 1e-3) / 1e12:.1f}"
    v["tc_min_l2"] = f"{1 - roofs['hbm_gbps'] * 1e9 * tc_ms * 1e-3 / t['global_bytes']:.0%}"
    return v
