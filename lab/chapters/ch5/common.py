"""What several sections of chapter 5 use: the machine the predictions are built from, the
tensor-core ladder of the selected GPU's ``tensor_cores`` results, and the rung lists.
"""
from __future__ import annotations

from lab import model, page, results


#: The fed rungs in ladder order (FP16), and the tuned kernel.
FED = ("tc_smem", "tc_warp64", "tc_pipeline", "tc_swizzle", "tc_fp16")


LADDER = ("tc_naive_fp16",) + FED


def machine() -> dict:
    """SMs, SM clock, measured streaming-read bandwidth and tensor-core peak of the selected
    GPU: the numbers every prediction of the chapter is built from.

    The peak is the datasheet's where :data:`lab.model.DATASHEET` knows the GPU, else cuBLAS
    FP16's measured 4096³ rate (labelled as such in ``peak_source``).
    """
    tc = results.load("tensor_cores")
    prov = tc["provenance"]
    read = next(r for r in results.load("roofline")["rows"] if r["kernel"] == "stream_read")
    sheet = model.DATASHEET.get(page.gpu_label(prov["gpu"]))
    if sheet:
        peak, source = sheet["tensor_tflops"] * 1e12, "datasheet"
    else:
        peak = next(r for r in tc["rows"] if r["kernel"] == "cublas_fp16"
                    and r.get("part") == "ladder")["tflops"] * 1e12
        source = "cuBLAS FP16, measured"
    return {"gpu": prov["gpu"], "sms": prov["sm_count"],
            "clock_hz": float(prov.get("max_sm_clock_mhz") or prov["sm_clock_mhz"]) * 1e6,
            "l2_bytes": prov.get("l2_bytes"), "read_bps": read["gbps"] * 1e9,
            "peak": peak, "peak_source": source}


def ladder(gpu: str | None = None) -> dict:
    """The ``ladder`` rows of the selected GPU's (or ``gpu``'s) ``tensor_cores`` results, by
    kernel."""
    return results.by("tensor_cores", gpu=gpu, part="ladder")
