"""The roofs chapter 6.1 judges every shape against, from the selected GPU's results files: the
FP32 FMA roof and the streaming-read roof (``roofline``), and cuBLAS FP16's measured 4096³ rate
(``tensor_cores``) as the FP16 roof; and the model's least time of a product under them."""
from __future__ import annotations

from lab import model, results

#: The weight matrix of the decode-time shape: (M × 4096) · (4096 × 4096), FP16.
WEIGHTS = (4096, 4096)


def roofs() -> dict:
    """Peaks (TFLOP/s) by format, the read bandwidth (GB/s), the ridges (FLOP/B), the GPU's
    name, SM count and L2 size."""
    data = results.load("roofline")
    by = {r["kernel"]: r for r in data["rows"]}
    fp16 = next(r for r in results.rows("tensor_cores", part="ladder")
                if r["kernel"] == "cublas_fp16")["tflops"]
    fma, read = by["fma_chains"]["tflops"], by["stream_read"]["gbps"]
    prov = data["provenance"]
    return {"peak": {"FP32": fma, "FP16": fp16}, "read_gbps": read, "gpu_name": prov["gpu"],
            "sm_count": prov["sm_count"], "l2_bytes": prov["l2_bytes"],
            "ridge": {"FP32": model.ridge(fma * 1e12, read * 1e9),
                      "FP16": model.ridge(fp16 * 1e12, read * 1e9)}}


def floor_us(m: int, n: int, k: int, fmt: str = "FP16", r: dict | None = None) -> float:
    """The model's least time (µs): the larger of the FLOPs at the roof of ``fmt`` and the
    ideal bytes (inputs read once, the output written once in the inputs' format) at the read bandwidth."""
    r = r or roofs()
    e = 4 if fmt == "FP32" else 2
    return max(model.flops(m, n, k) / (r["peak"][fmt] * 1e12),
               model.ideal_bytes(m, n, k, e) / (r["read_gbps"] * 1e9)) * 1e6
