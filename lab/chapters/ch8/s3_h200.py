"""Chapter 8, section 3: the same model on the measured GPU, beside our measured times."""
from __future__ import annotations

from lab import model, page, results, seeds


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


def measured_machine() -> dict:
    """The H200 with its measured roofs: FP32 from the FMA chains and HBM from the streaming
    read (``roofline``), SMs and maximum clock from the provenance; no tensor roof was
    measured, so the datasheet's stands."""
    data = results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    prov = data["provenance"]
    return {"fp32_tflops": by["fma_chains"]["tflops"],
            "tensor_tflops": model.DATASHEET["H200"]["tensor_tflops"],
            "hbm_gbps": by["stream_read"]["gbps"], "sms": prov["sm_count"],
            "clock_mhz": int(prov["max_sm_clock_mhz"])}


def measured_row(kind: str) -> dict:
    """Our measured row at 4096³ for one of the step-by-step model's kernels (:data:`MEASURED`)."""
    experiment, match = MEASURED[kind]
    match = dict(match)
    n = match.pop("n")
    return next(r for r in results.rows(experiment, **match) if r["m"] == r["n"] == r["k"] == n)


def h200_rows() -> list[dict]:
    """Each kernel: the model on the H200's datasheet roofs and on its measured roofs, and the
    time we measured for the rung that stands for it."""
    rows = []
    for s in seeds.LADDER_MODEL_001:
        kind = s["kernel"]
        sheet = model.rung_model(kind, model.DATASHEET["H200"])
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
                             "['H200']; measured roofs " + results.source_line("roofline")
                             + " Measured: lab/results/h200/naive_tiled.json, patch_sweep.json,"
                               " tensor_cores.json (4096³, medians).")
