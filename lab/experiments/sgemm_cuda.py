"""Experiment ``sgemm_cuda`` (chapter 4): a public CUDA C FP32 ladder timed on this GPU by its own
program, to put beside ours.

siboehm/SGEMM_CUDA (MIT) is a worklog's ladder of twelve SGEMM kernels in CUDA C plus cuBLAS
(its kernel 0). This experiment builds it from a checkout named by ``LAB_SGEMM_CUDA`` with the
system's ``nvcc`` for this GPU's architecture, runs ``./sgemm K`` for every kernel, and reads the
average time its own CUDA-event timer prints (50 launches at each size after one warm-up, on
cache-hot inputs; it checks each kernel against cuBLAS before timing and stops on a mismatch).
Its program reports one average per size, not a median, so the rows carry ``avg_ms`` and no
spread; ``pct_cublas`` is against its kernel 0 at the same size in the same build.

Rows: ``peer_kernel`` (its number), ``rung`` (its name for it), ``m = n = k``, ``avg_ms``,
``tflops``, ``pct_cublas``, ``status`` ("ok", or what its program said when it failed).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHAPTER = "4"
NEEDS = ("sgemm-cuda",)
H200_SECONDS = 120  # estimate: about a minute of nvcc, then 13 kernels × 6 sizes

#: Its kernels in its order, with the names its README gives them.
RUNGS = {0: "cuBLAS", 1: "naive", 2: "global-memory coalescing", 3: "shared-memory blocking",
         4: "1-D block tiling", 5: "2-D block tiling", 6: "vectorised accesses",
         7: "bank conflicts (linearise)", 8: "bank conflicts (offset)", 9: "autotuning",
         10: "warp tiling", 11: "double buffering", 12: "double buffering (2)"}
SIZES_REPORTED = (128, 256, 512, 1024, 2048, 4096)
_LINE = re.compile(r"Average elapsed time: \(\s*([0-9.]+)\) s, performance: \(\s*([0-9.]+)\) "
                   r"GFLOPS\. size: \((\d+)\)")


def source_dir() -> Path | None:
    """The SGEMM_CUDA checkout named by ``LAB_SGEMM_CUDA``, when it holds ``sgemm.cu``."""
    path = os.environ.get("LAB_SGEMM_CUDA")
    return Path(path) if path and (Path(path) / "sgemm.cu").is_file() else None


def nvcc_path() -> str | None:
    return shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",)
                                         if os.path.exists(p)), None)


def missing() -> str | None:
    """Why this experiment cannot run here, or None."""
    if source_dir() is None:
        return ("needs a checkout of siboehm/SGEMM_CUDA named by LAB_SGEMM_CUDA "
                "(git clone https://github.com/siboehm/SGEMM_CUDA)")
    if nvcc_path() is None:
        return "needs the CUDA toolkit's nvcc (with cuBLAS) to build SGEMM_CUDA"
    return None


def parse(text: str) -> list[tuple[int, float, float]]:
    """(size, seconds, GFLOP/s) for every size its program printed."""
    return [(int(s), float(t), float(g)) for t, g, s in _LINE.findall(text)]


def build(src: Path, out: Path, arch: str) -> Path:
    """Compile its ``sgemm`` program (the sources its CMake file lists) for ``arch``."""
    exe = out / "sgemm"
    cmd = [nvcc_path(), "-O3", "-std=c++17", f"-arch={arch}", "-I", str(src / "src"),
           str(src / "sgemm.cu"), *sorted(str(p) for p in (src / "src").glob("*.cu")),
           "-lcublas", "-o", str(exe)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"nvcc could not build SGEMM_CUDA: {run.stderr.strip()[-800:]}")
    return exe


def rows_for(kernel: int, text: str, status: str, cublas: dict[int, float]) -> list[dict]:
    out = []
    for size, seconds, gflops in parse(text):
        tflops = 2.0 * size ** 3 / seconds / 1e12
        out.append({"kernel": "cublas_fp32 (SGEMM_CUDA kernel 0)" if kernel == 0
                    else f"sgemm_cuda_{kernel:02d}",
                    "peer_kernel": kernel, "rung": RUNGS.get(kernel, str(kernel)),
                    "m": size, "n": size, "k": size, "avg_ms": seconds * 1e3,
                    "tflops": tflops, "printed_gflops": gflops,
                    "pct_cublas": (100.0 * tflops / cublas[size]) if size in cublas else None,
                    "status": status})
    return out


def run(progress) -> dict:
    from lab import device

    src = source_dir()
    cc = device.provenance()["compute_capability"]
    arch = "sm_" + cc.replace(".", "")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(src, Path(tmp), arch)
        outputs = {}
        for kernel in progress(sorted(RUNGS), desc="SGEMM_CUDA kernels"):
            run_ = subprocess.run([str(exe), str(kernel)], capture_output=True, text=True,
                                  timeout=300, cwd=tmp)
            text = run_.stdout + run_.stderr
            status = "ok" if run_.returncode == 0 else (
                "failed: " + (text.strip().splitlines() or ["no output"])[-1][:200])
            outputs[kernel] = (text, status)
    cublas = {size: 2.0 * size ** 3 / seconds / 1e12
              for size, seconds, _ in parse(outputs[0][0])}
    rows = []
    for kernel, (text, status) in outputs.items():
        rows += rows_for(kernel, text, status, cublas)
    return {"rows": rows,
            "row_fields": ["kernel", "peer_kernel", "rung", "m", "avg_ms", "tflops", "status"],
            "parameters": {"source": "siboehm/SGEMM_CUDA", "arch": arch,
                           "build": f"nvcc -O3 -std=c++17 -arch={arch} -lcublas",
                           "timer": "its own: CUDA events around 50 launches per size, average",
                           "sizes": list(SIZES_REPORTED)},
            "notes": "Timed by SGEMM_CUDA's own program, not by lab.bench; avg_ms is its "
                     "average over 50 launches. pct_cublas is against its kernel 0 (cuBLAS "
                     "SGEMM) at the same size, in the same build and run."}
