"""Experiment ``fp8``: FP8 GEMM on Hopper — accuracy of the tensor cores' accumulation, with and
without promotion, and speed beside cuBLASLt FP8 and our BF16 kernel.

**Accuracy** (rows ``part = "accuracy"``): M = N = ``ACCURACY_MN``, K from 512 to 16384, two
kinds of data — ``normal`` (standard normal A and B) and ``outliers`` (the same with a few
columns of A 100× larger, as LLM activations have). The data is quantized to e4m3 with
per-tensor scales (block scales for the block-scaled kernel); every result is compared with the
float64 product of the *dequantised* inputs (what the kernel was given: the error of the
accumulation alone) and with the float64 product of the data before quantization (the error a
user sees). Rows: our kernel with tensor-core accumulation only, with promotion every
128 / 256 / 512 k, with block scales; cuBLASLt FP8 (``torch._scaled_mm``) with fast
accumulation and without; our BF16 kernel on the data rounded to BF16.

**Speed** (``part = "speed"``): at ``SIZES``³, every kernel and its cuBLASLt counterpart (same
input format, same scaling, same output type) timed in one process, *interleaved*: ``ROUNDS``
rounds, each timing every provider once, so clock changes (FP8 at full rate draws up to the
700 W power limit) fall on all of them alike. Each timing queues batches of calls behind a busy
kernel (:func:`lab.bench.time_queued`), so the host's launch path (over 100 µs for our launcher)
is hidden and the GPU's time per call is measured; the SM clock and the board power are sampled
through NVML during each provider's timings (:mod:`lab.clocks`) and recorded on its row. Each
row's ``ratio_to_cublas`` is to the cuBLASLt row named in ``versus``. Inputs are cache-hot (one
buffer set; at 4096³ A and B are 32 MB, at 8192³ 128 MB). Before timing, each of our kernels is
checked against float64 at ``CHECK_SHAPE``, and compared with cuBLASLt at every timed size.
"""
from __future__ import annotations

import numpy as np

from lab import bench, fp8

CHAPTER = "7b"
NEEDS = ("torch",)
NEEDS_KERNELS = ("fp8_e4m3", "fp8_e4m3_promote", "fp8_e4m3_block")
H200_SECONDS = 150  # estimate: 12 kernels compiled and checked, the accuracy sweep, 2 sizes timed
H200_SECONDS_QUICK = 60  # estimate with quick=True: 4096³ only, fewer rounds and K, no sweep
#: ``measure --quick`` leaves this experiment as it is: its quick run is 4096³ alone, without the
#: sweep, where the chapter reads 8192³ too (call ``run(progress, quick=True)`` for it).
QUICK_IN_MEASURE = False

SIZES = (4096, 8192)
ACCURACY_MN = 256
ACCURACY_KS = (512, 1024, 2048, 4096, 8192, 16384)
DATASETS = ("normal", "outliers")
ROUNDS = 5
BATCH = 10
CHECK_SHAPE = (1000, 1030, 999)
ROW_FIELDS = ("part", "kernel", "impl", "m", "n", "k")

#: Our timed FP8 kernels → (configuration source, cuBLASLt counterpart).
OURS = {"fp8_e4m3": "cublaslt_e4m3_f32_fast",
        "fp8_e4m3_bf16": "cublaslt_e4m3_bf16_fast",
        "fp8_e5m2": "cublaslt_e5m2_f32_fast",
        "fp8_e4m3_promote": "cublaslt_e4m3_f32",
        "fp8_e4m3_block": "cublaslt_e4m3_bf16_block"}
#: cuBLASLt providers: (format, output, fast accumulation, block scales).
CUBLAS = {"cublaslt_e4m3_f32_fast": ("e4m3", "f32", True, False),
          "cublaslt_e4m3_f32": ("e4m3", "f32", False, False),
          "cublaslt_e4m3_bf16_fast": ("e4m3", "bf16", True, False),
          "cublaslt_e4m3_bf16": ("e4m3", "bf16", False, False),
          "cublaslt_e5m2_f32_fast": ("e5m2", "f32", True, False),
          "cublaslt_e4m3_bf16_block": ("e4m3", "bf16", False, True)}
BF16_KERNEL = "wgmma_tmastore_bf16"
BF16_CUBLAS = "cublas_bf16"
#: Accuracy rows: label → our configuration's name (registered or in the sweep).
ACCURACY_OURS = {"tensor cores only": "fp8_e4m3",
                 "promote every 128": "fp8_e4m3_promote",
                 "promote every 256": "e4m3 promote every 256",
                 "promote every 512": "e4m3 promote every 512",
                 "block scales, promote every 128": "e4m3 block scales, FP32 out"}
ACCURACY_CUBLAS = {"cuBLASLt fast accumulation": "cublaslt_e4m3_f32_fast",
                   "cuBLASLt": "cublaslt_e4m3_f32"}


def config(name: str):
    """The k09 configuration of one of our FP8 kernels or sweep variants."""
    from lab.kernels.wgmma import fp8 as F

    return F.CONFIGS.get(name) or F.SWEEP_CONFIGS[name]


# ----------------------------------------------------------------------------- operands

class Operands:
    """One draw of data at M×N×K, quantized every way the providers need, on the GPU."""

    def __init__(self, m: int, n: int, k: int, rng, dataset: str = "normal"):
        from numba import cuda

        a = rng.standard_normal((m, k))
        if dataset == "outliers":
            cols = rng.choice(k, size=max(1, k // 256), replace=False)
            a[:, cols] *= 100.0
        bt = rng.standard_normal((n, k))
        self.shape = (m, n, k)
        self.data = (a, bt)                       # before any rounding
        self.host = {}
        self.dev = {}
        for fmt in fp8.FORMATS:
            qa, sa = fp8.quantize(a, fmt)
            qb, sb = fp8.quantize(bt, fmt)
            self.host[fmt] = (qa, qb, sa, sb)
        qa, sa = fp8.quantize(a, "e4m3", fp8.ACT_BLOCK)
        qb, sb = fp8.quantize(bt, "e4m3", fp8.WEIGHT_BLOCK)
        self.host["e4m3 block"] = (qa, qb, sa, sb)
        for key, arrays in self.host.items():
            self.dev[key] = tuple(cuda.to_device(x) for x in arrays)
        a16 = bench.to_format(a.astype(np.float32), np.uint16)
        b16 = bench.to_format(np.ascontiguousarray(bt.T).astype(np.float32), np.uint16)
        self.bf16 = (a16, b16)
        self.dev["bf16"] = (cuda.to_device(a16), cuda.to_device(b16))

    def exact(self) -> np.ndarray:
        """float64 A·B of the data before quantization."""
        return self.data[0] @ self.data[1].T

    def reference(self, key: str) -> np.ndarray:
        if key == "bf16":
            a16, b16 = self.bf16
            return bench.to_float64(a16) @ bench.to_float64(b16)
        qa, qb, sa, sb = self.host[key]
        return fp8.reference(qa, qb, sa, sb, key.split()[0], key.endswith("block"))


def _key(cfg) -> str:
    return cfg.kind + (" block" if cfg.scales == "block" else "")


# ----------------------------------------------------------------------------- providers

def ours(name: str, ops: Operands):
    """(call, output array) for our FP8 configuration ``name`` on ``ops``."""
    from numba import cuda

    from lab.kernels import wgmma as K

    cfg = config(name)
    m, n, _ = ops.shape
    a, bt, sa, sb = ops.dev[_key(cfg)]
    out = cuda.device_array((m, n), dtype=np.uint16 if cfg.out == "bf16" else np.float32)
    launch = K.launcher(cfg)
    return (lambda i=0: launch(a, bt, out, sa, sb)), out


def bf16_ours(ops: Operands):
    from numba import cuda

    from lab.kernels import get_spec

    m, n, _ = ops.shape
    a, b = ops.dev["bf16"]
    out = cuda.device_array((m, n), dtype=np.float32)
    launch = get_spec(BF16_KERNEL).launch
    return (lambda i=0: launch(a, b, out)), out


def _torch_fp8(x, fmt: str):
    import torch

    t = torch.as_tensor(x, device="cuda")
    return t.view(torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2)


def cublas(name: str, ops: Operands):
    """(call, result holder) for a cuBLASLt FP8 provider through ``torch._scaled_mm``: A
    row-major, B column-major (our Bᵀ, N×K, seen transposed), the same scales, the same
    output type. The holder's ``[0]`` is the last result."""
    import torch

    fmt, out, fast, block = CUBLAS[name]
    a, bt, sa, sb = ops.dev["e4m3 block" if block else fmt]
    ta, tb = _torch_fp8(a, fmt), _torch_fp8(bt, fmt).t()
    tsa = torch.as_tensor(sa, device="cuda")
    tsb = torch.as_tensor(sb, device="cuda")
    if block:
        # cuBLASLt's block scaling wants both scale arrays outer-dim-major: A's (M, K/128)
        # with strides (1, M), B's (K/128, N/128) with strides (1, K/128) — our (N/128, K/128)
        # row-major seen transposed (K/128 a multiple of 4 here)
        tsa = tsa.t().contiguous().t()
        tsb = tsb.t()
    else:
        tsa, tsb = tsa.reshape(()), tsb.reshape(())
    dtype = torch.bfloat16 if out == "bf16" else torch.float32
    held = [None]

    def call(i=0):
        held[0] = torch._scaled_mm(ta, tb, tsa, tsb, out_dtype=dtype, use_fast_accum=fast)
    return call, held


def bf16_cublas(ops: Operands):
    import torch

    a, b = ops.dev["bf16"]
    ta = torch.as_tensor(a, device="cuda").view(torch.bfloat16)
    tb = torch.as_tensor(b, device="cuda").view(torch.bfloat16)
    held = [None]

    def call(i=0):
        held[0] = torch.mm(ta, tb)
    return call, held


def result(out) -> np.ndarray:
    """A provider's last result as float32 on the host (BF16 bits or tensors widened)."""
    if isinstance(out, list):
        return out[0].float().cpu().numpy()
    host = out.copy_to_host()
    return fp8.bf16_bits_to_float32(host) if host.dtype == np.uint16 else host


# ----------------------------------------------------------------------------- accuracy

def _errors(value: np.ndarray, ref: np.ndarray, suffix: str = "") -> dict:
    """Relative Frobenius error and max error over max entry (or, for a result holding NaN
    or infinity, an ``error`` naming how many)."""
    diff = np.abs(value.astype(np.float64) - ref)
    if not np.all(np.isfinite(diff)):
        return {"error": f"{int(np.sum(~np.isfinite(diff)))} element(s) NaN or infinite"}
    return {"rel_frobenius" + suffix: float(np.linalg.norm(diff) / np.linalg.norm(ref)),
            ("max_err_vs_exact" if suffix else "max_err_over_max_entry"):
                float(diff.max() / np.abs(ref).max())}


def accuracy(ks, progress) -> list[dict]:
    """The error table: every accumulation mode at every K, both datasets."""
    from numba import cuda

    rows = []
    rng = np.random.default_rng(25)
    mn = ACCURACY_MN
    for dataset in DATASETS:
        for k in progress(ks, desc=f"accuracy ({dataset})"):
            ops = Operands(mn, mn, k, rng, dataset)
            exact = ops.exact()
            runs = [(label, "ours", name, _key(config(name)), *ours(name, ops))
                    for label, name in ACCURACY_OURS.items()]
            runs += [(label, "cublas", name, "e4m3", *cublas(name, ops))
                     for label, name in ACCURACY_CUBLAS.items()]
            runs.append(("BF16", "ours", BF16_KERNEL, "bf16", *bf16_ours(ops)))
            for label, impl, name, key, call, out in runs:
                call()
                cuda.synchronize()
                value = result(out)
                rows.append({"part": "accuracy", "what": label, "kernel": name, "impl": impl,
                             "format": key, "dataset": dataset, "m": mn, "n": mn, "k": k,
                             **_errors(value, ops.reference(key)),
                             **_errors(value, exact, "_vs_exact")})
    return rows


# ----------------------------------------------------------------------------- speed

def _check_ours(names) -> list[dict]:
    """Each of our configurations once at CHECK_SHAPE against float64 (scaled operands)."""
    from numba import cuda

    from lab.kernels.wgmma import fp8 as F

    rows = []
    for name in names:
        cfg = config(name)
        verdict = F.checker(name, cfg)(*CHECK_SHAPE)
        if not verdict.passed:
            raise AssertionError(verdict.line())
        rows.append({"part": "check", "kernel": name, "impl": "ours",
                     "m": CHECK_SHAPE[0], "n": CHECK_SHAPE[1], "k": CHECK_SHAPE[2],
                     "rel_frobenius": verdict.rel_frobenius,
                     "max_err_over_max_entry": verdict.max_err_over_max_entry,
                     "err_over_bound": verdict.err_over_bound})
        cuda.synchronize()
    return rows


def providers(ops: Operands, sweep) -> dict:
    """label → (impl, call, output, versus) for every provider timed at one size."""
    out = {}
    for name in CUBLAS:
        try:
            call, held = cublas(name, ops)
            call()
            out[name] = ("cublas", call, held, None)
        except Exception as exc:  # noqa: BLE001 - a recipe this cuBLASLt lacks: recorded
            out[name] = ("cublas", None, f"{type(exc).__name__}: {str(exc)[:200]}", None)
    for name, versus in OURS.items():
        call, dev = ours(name, ops)
        out[name] = ("ours", call, dev, versus)
    for name in sweep:
        call, dev = ours(name, ops)
        cfg = config(name)
        versus = ("cublaslt_e4m3_bf16_block" if cfg.scales == "block" and cfg.out == "bf16"
                  else "cublaslt_e4m3_f32" if cfg.promote
                  else "cublaslt_e4m3_f32_fast")
        out["sweep: " + name] = ("ours", call, dev, versus)
    call, dev = bf16_ours(ops)
    out[BF16_KERNEL] = ("ours", call, dev, BF16_CUBLAS)
    call, held = bf16_cublas(ops)
    out[BF16_CUBLAS] = ("cublas", call, held, None)
    return out


def speed(n: int, rounds: int, sweep, sampler, spinner, progress) -> list[dict]:
    """Every provider at n³, interleaved over ``rounds`` rounds."""
    from numba import cuda

    from lab import clocks

    ops = Operands(n, n, n, np.random.default_rng(n))
    table = providers(ops, sweep)
    live = {label: p for label, p in table.items() if p[1] is not None}
    samples = {label: [] for label in live}
    covered = {label: [] for label in live}
    for r in progress(range(rounds), desc=f"{n}³ interleaved rounds"):
        order = list(live) if r % 2 == 0 else list(reversed(live))
        for label in order:
            call = live[label][1]
            with sampler.phase(f"{n}:{label}"):
                t, cov = bench.time_queued(lambda i, c=call: c(), spinner=spinner,
                                           batch=BATCH, batches=3)
            samples[label] += t.samples_ms
            covered[label].append(cov)
    cuda.synchronize()
    results = {label: result(live[label][2]) for label in live}
    rows = []
    for label, (impl, call, out, versus) in table.items():
        if call is None:
            rows.append({"part": "speed", "kernel": label, "impl": impl, "m": n, "n": n, "k": n,
                         "error": out})
            continue
        ms = np.array(samples[label])
        row = {"part": "speed", "kernel": label, "impl": impl, "m": n, "n": n, "k": n,
               "median_ms": float(np.median(ms)), "min_ms": float(ms.min()),
               "max_ms": float(ms.max()), "repeats": int(ms.size), "rounds": rounds,
               "spin_covered": float(np.mean(covered[label]))}
        row["tflops"] = 2.0 * n ** 3 / (row["median_ms"] * 1e-3) / 1e12
        if label.startswith("sweep: ") or label in OURS:
            row["config"] = config(label.removeprefix("sweep: ")).label
        clock = clocks.summary(sampler.samples, f"{n}:{label}")
        row.update(sm_mhz=clock["sm_mhz_median"], sm_mhz_min=clock["sm_mhz_min"],
                   power_w=clock["power_w_mean"], power_w_max=clock["power_w_max"])
        if versus is not None:
            row["versus"] = versus
            if versus in live:
                base = np.median(samples[versus])
                row["ratio_to_cublas"] = float(base / row["median_ms"])
                mine, theirs = results[label], results[versus]
                row["max_diff_vs_cublas"] = float(np.max(np.abs(mine - theirs))
                                                  / np.max(np.abs(theirs)))
        rows.append(row)
    return rows


def run(progress, quick: bool = False) -> dict:
    from numba import cuda

    from lab import clocks
    from lab.kernels.wgmma import fp8 as F

    bench.require_gpu("the fp8 experiment")
    sizes = SIZES[:1] if quick else SIZES
    rounds = 3 if quick else ROUNDS
    ks = ACCURACY_KS[:4] if quick else ACCURACY_KS
    sweep = [] if quick else list(F.SWEEP_CONFIGS)
    rows = _check_ours([*OURS, *F.SWEEP_CONFIGS])
    rows += accuracy(ks, progress)
    spinner = bench.Spinner()
    with clocks.Sampler() as sampler:
        for n in sizes:
            rows += speed(n, rounds, sweep, sampler, spinner, progress)
            cuda.synchronize()
        max_mhz, limit_w = sampler.max_sm_mhz, sampler.power_limit_w
    import ml_dtypes
    import torch

    return {"rows": rows, "row_fields": ROW_FIELDS,
            "parameters": {"torch": torch.__version__, "ml_dtypes": ml_dtypes.__version__,
                           "sizes": list(sizes), "rounds": rounds, "batch": BATCH,
                           "accuracy_mn": ACCURACY_MN, "accuracy_ks": list(ks),
                           "datasets": list(DATASETS), "check_shape": list(CHECK_SHAPE),
                           "max_sm_mhz": max_mhz, "power_limit_w": limit_w,
                           "timing": "queued behind a busy kernel (GPU time per call), "
                                     "interleaved rounds, cache-hot"},
            "notes": "accuracy errors are against float64 of the dequantised inputs "
                     "(rel_frobenius, max_err_over_max_entry) and of the data before "
                     "quantization (*_vs_exact)"}
