"""Experiment ``patch_sweep`` (chapter 3): the register-patch sweep and the 128×128 kernel.

``patch1``, ``patch2``, ``patch4``, ``patch8`` (16×16 threads, BK 16, block tile 16·P) and
``block128`` (128×128×8, 8×8 patch), each checked against float64 at 1024³ and at an odd shape
(1000×1030×999, the edge path), then timed at 4096³ (cache-hot) beside cuBLAS FP32 in the same
run. Each row also carries what the GPU's own loader says about the kernel —
``regs_gpu`` (``get_regs_per_thread()``), ``shared_gpu`` (bytes of static shared memory), the
offline ptxas count ``regs_ptxas`` with ``spill_bytes``/``stack_bytes``, and the occupancy those
numbers allow (:func:`lab.model.occupancy`, the CUDA occupancy rules for an H100/H200-class SM).

Rows: kernel, impl ("numba" | "twin" | "cublas"), patch (P or 0 for cuBLAS), m, n, k,
median_ms, min_ms, max_ms, tflops, pct_cublas, regs_gpu, regs_ptxas, spill_bytes, stack_bytes,
shared_gpu, blocks_per_sm, warps_per_sm, occupancy, smem_reads_per_fma, smem_intensity,
checked.

Twin rows (``impl="twin"``): every CUDA C twin of a swept kernel (``lab.twins``; today
``s004_regs4``, seed 004's register kernel, the twin of ``patch4``), checked against float64 at
1024³ and timed at 4096³ right after its Numba kernel, with ``twin_of``, the twin's own
``regs_gpu`` (CuPy's ``num_regs``, NVRTC's allocation), ``regs_nvcc`` (offline ``nvcc -O3``
when available) and ``twin_over_numba`` = twin time / Numba time (≥ 1: Numba at least as fast).

Budget: about 25 s of GPU time.
"""
from __future__ import annotations

from lab import bench, model, twins

CHAPTER = "3"
NEEDS = ("cupy",)
H200_SECONDS = 7  # measured: 7 s on the H200

KERNELS = ("patch1", "patch2", "patch4", "patch8", "block128")
PATCH = {"patch1": 1, "patch2": 2, "patch4": 4, "patch8": 8, "block128": 8}
SIZE = 4096
CHECK_SHAPES = ((1024, 1024, 1024), (1000, 1030, 999))

def gpu_facts(name: str) -> dict:
    """Registers and shared memory of the (first) compiled kernel, as the driver loaded it."""
    from lab.kernels import get_spec

    dispatcher = get_spec(name).compile[0][0]
    regs = dispatcher.get_regs_per_thread()
    smem = dispatcher.get_shared_mem_per_block()
    if isinstance(regs, dict):            # several signatures: take the float32 one
        regs = max(regs.values())
    if isinstance(smem, dict):
        smem = max(smem.values())
    return {"regs_gpu": int(regs), "shared_gpu": int(smem)}


def check_kernel(name: str) -> bool:
    for m, n, k in CHECK_SHAPES:
        verdict = bench.check(name, m, n, k)
        if not verdict.passed:
            raise AssertionError(f"{name} failed its check: {verdict.line()}")
    return True


def twin_regs(name: str) -> dict:
    """Registers and static shared memory of a twin as NVRTC compiled and the driver loaded it
    (``regs_gpu``, ``shared_gpu``; cuFuncGetAttribute), the occupancy they allow, and offline
    ``nvcc -O3`` registers (``regs_nvcc``); None where a fact cannot be had."""
    out = {"regs_gpu": None, "shared_gpu": None, "regs_nvcc": None}
    errors = []
    try:
        from cupy.cuda import driver

        fn = twins._function(name)
        out["regs_gpu"] = int(driver.funcGetAttribute(4, fn.ptr))      # NUM_REGS
        out["shared_gpu"] = int(driver.funcGetAttribute(1, fn.ptr))    # SHARED_SIZE_BYTES
    except Exception as exc:  # noqa: BLE001
        errors.append(f"funcGetAttribute: {type(exc).__name__}: {exc}"[:200])
    if out["regs_gpu"] is None:   # a RawKernel of the same source reports its attributes
        try:
            import cupy

            t = twins.get_twin(name)
            kern = cupy.RawKernel((twins.HERE / t.source).read_text(), t.function,
                                  options=("-std=c++17",))
            out["regs_gpu"] = int(kern.num_regs)
            out["shared_gpu"] = int(kern.shared_size_bytes)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"RawKernel: {type(exc).__name__}: {exc}"[:200])
    if out["regs_gpu"] is not None:
        out.update(model.occupancy(twins.get_twin(name).block ** 2, out["regs_gpu"],
                                   out["shared_gpu"]))
    if errors:
        out["regs_gpu_errors"] = errors
    try:
        out["regs_nvcc"] = twins.compile_report(name).registers
    except Exception:  # noqa: BLE001
        pass
    return out


def time_twins(kernel: str, numba_row: dict) -> list[dict]:
    """The CUDA C twins of ``kernel`` at SIZE³ (checked at 1024³ first)."""
    rows = []
    for t in twins.twins_of(kernel):
        if t not in twins.available() or not twins.supports(t, SIZE, SIZE, SIZE):
            continue
        try:
            verdict = bench.check(t, 1024, 1024, 1024)
            if not verdict.passed:
                raise AssertionError(f"failed its check: {verdict.line()}")
            row = bench.time(t, SIZE, SIZE, SIZE, repeats=20, check_first=False)
        except Exception as exc:  # noqa: BLE001 -- a broken twin must not cost the sweep
            rows.append({"kernel": t, "impl": "twin", "twin_of": kernel, "m": SIZE, "n": SIZE,
                         "k": SIZE, "patch": numba_row["patch"], "checked": False,
                         "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        row.update(impl="twin", patch=numba_row["patch"], checked=True, **twin_regs(t),
                   twin_over_numba=row["median_ms"] / numba_row["median_ms"])
        rows.append(row)
    return rows


def run(progress) -> dict:
    from lab import baselines, compiler

    rows = []
    cublas = None
    if "fp32" in baselines.available():
        cublas = bench.time("cublas_fp32", SIZE, SIZE, SIZE, repeats=20, check_first=False)
        cublas.update(impl="cublas", patch=0, pct_cublas=100.0, checked=False)
    for name in progress(KERNELS, desc="patch_sweep"):
        checked = check_kernel(name)
        row = bench.time(name, SIZE, SIZE, SIZE, repeats=20, check_first=False)
        rep = compiler.report(name)[0]
        facts = gpu_facts(name)
        p = PATCH[name]
        threads = 256
        row.update(impl="numba", patch=p, checked=checked, regs_ptxas=rep.registers,
                   spill_bytes=rep.spill_stores + rep.spill_loads, stack_bytes=rep.stack_bytes,
                   **facts, **model.occupancy(threads, facts["regs_gpu"], facts["shared_gpu"]),
                   smem_reads_per_fma=model.smem_reads_per_fma(p),
                   smem_intensity=model.smem_intensity(p),
                   loop_ffma_share=rep.summary()["loop_ffma_share"])
        extra = time_twins(name, row)
        for r in [row, *extra]:
            if cublas and "tflops" in r:
                r["pct_cublas"] = 100.0 * r["tflops"] / cublas["tflops"]
            rows.append(r)
    if cublas:   # timed again after the sweep: the ratio uses the mean of the two
        again = bench.time("cublas_fp32", SIZE, SIZE, SIZE, repeats=20, check_first=False)
        cublas["tflops_after"] = again["tflops"]
        rows.append(cublas)
    return {"rows": rows,
            "row_fields": ["kernel", "patch", "m", "n", "k", "median_ms", "min_ms", "max_ms",
                           "tflops"],
            "parameters": {"kernels": list(KERNELS), "size": SIZE, "threads": "16x16",
                           "twins": [t for k in KERNELS for t in twins.twins_of(k)
                                     if t in twins.available()],
                           "bk": {"patch*": 16, "block128": 8},
                           "check_shapes": [list(s) for s in CHECK_SHAPES],
                           "inputs": "cache-hot (one buffer set)",
                           "occupancy_limits": model.SM90_LIMITS},
            "notes": "regs_gpu from Dispatcher.get_regs_per_thread() on the GPU; regs_ptxas "
                     "from lab.compiler (ptxas -v, sm_90, offline). cuBLAS: cublasGemmEx "
                     "COMPUTE_32F, TF32 off. Twins (impl='twin'): CUDA C compiled by NVRTC "
                     "through CuPy RawModule, same process and timing code; "
                     "twin_over_numba = twin ms / Numba ms."}
