"""What the sections of chapter 7b share: the name of the results file it reads, the sizes, the
accuracy modes and timed pairs in the order the tables list them, and small formatters."""
from __future__ import annotations

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


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def fmt(x) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def speed(data: dict) -> dict:
    return {(r["kernel"], r["m"]): r for r in data["rows"] if r["part"] == "speed"}


def accuracy(data: dict, dataset: str) -> dict:
    """(mode, k) → relative Frobenius error for one dataset."""
    return {(r["what"], r["k"]): r.get("rel_frobenius", float("nan"))
            for r in data["rows"] if r["part"] == "accuracy" and r["dataset"] == dataset}

#: How a Hopper configuration's label names the main loop with slot counters (results rows
#: carry the label, so a section can tell which main loop a row ran).
COUNTERS_LABEL = "slot counters"
