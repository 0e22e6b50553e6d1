"""Experiment ``grouped`` (chapter 7b): a mixture-of-experts layer's products, every expert at
once, against what PyTorch offers for them, at the shapes of real MoE layers.

A token goes to ``top_k`` of ``E`` experts; expert e multiplies the rows routed to it by its
own weights ``B[e]`` (``[K, N]``). For each layer of :data:`LAYERS` and each token count of
:data:`TOKENS` (decode and prefill), a routing is drawn (seeded; a skewed choice of experts,
as a router's is: a few experts get far more tokens than the mean, some none), and the routed
rows are laid out both ways :mod:`lab.grouped` takes them: contiguous (``[T·top_k, K]``, one
expert's rows after another's) and masked (``[E, M_max, K]``, M_max the largest count). Timed,
BF16 in and out:

* ``torch.mm loop`` — one ``torch.mm`` per expert with rows, on views of the contiguous
  buffer: what a model without a grouped kernel runs;
* ``torch._grouped_mm`` — PyTorch's grouped GEMM (CUTLASS on sm_90), one launch, offsets on
  the GPU; its B in the layout it takes (each expert's ``[K, N]`` column-major, as a model
  would store its weights for it);
* ``torch.bmm masked`` — the masked layout as a batched product: every buffer row computed,
  the padding too (what serves a decode step captured in a CUDA graph without a grouped
  kernel);
* ``lab.grouped_gemm`` — the course's grouped GEMM in both layouts: on a Hopper GPU the
  persistent ``wgmma`` kernel of chapter 7 walking the experts' groups
  (:mod:`lab.kernels.wgmma.order`'s ``group_order``; the row's ``kernel`` names its
  configuration), elsewhere the teaching kernel (:mod:`lab.kernels.grouped`: FP32 arithmetic,
  16 × 16 tiles), timed where one call takes at most :data:`OURS_MAX_MS` (and where its FP32
  copies of the weights fit in memory); the rows say where it was not.

The same layers and token counts in FP8 (``dtype`` ``"e4m3"``), quantized with block scales
(1×128 of A, 128×128 of each expert's weights, ``Bt`` ``[E, N, K]`` as stored), BF16 out:

* ``torch._scaled_mm loop (block)`` — one cuBLASLt FP8 call per expert with rows, with the same
  block scales (where this PyTorch's cuBLASLt takes them; else the row says why not);
* ``torch._scaled_mm loop (tensor, fast)`` — the same loop with unit per-tensor scales and fast
  accumulation: cuBLASLt's fastest FP8 path, a yardstick of speed only (not compared);
* ``lab.grouped_scaled_gemm`` — chapter 7b's block-scaled kernel walking the groups, both
  layouts (``ratio_to_loop`` is to the block-scaled loop, ``ratio_to_fast_loop`` to the fast
  one).

Method: before timing, each implementation's C (poisoned with NaN) is compared per expert with
the float64 product (``max_err``; every expert with rows, the rows past a masked count checked
untouched). Timing: events around a burst of :data:`CALLS` calls with nothing between them (a
framework's queue: host launch cost included where it exceeds the GPU's time), bursts of the
implementations interleaved, :data:`BURSTS` of each; a row holds the median, min and max
ms per call and the useful TFLOP/s (``2 · routed rows · N · K``). ``ratio_to_loop`` is the
loop's median over the row's, ``ratio_to_grouped_mm`` ``torch._grouped_mm``'s. The whole runs
in :data:`PROCESSES` processes; each row is the median process's, ``ratios`` (to the loop) and
``ratios_to_grouped_mm`` every process's.
"""
from __future__ import annotations

import json
import sys

import numpy as np

CHAPTER = "7b"
#: ``measure --jobs N`` runs this experiment alone, after the others: its bursts of calls are
#: bound by the host's time per call at small shapes, which compiling beside it inflates.
ALONE = True
NEEDS = ("torch",)
NEEDS_KERNELS = ()
H200_SECONDS = 200  # estimate: BF16 measured at 82 s on the H200 (3 processes, 4 layers x 4
H200_SECONDS_QUICK = 70  # token counts); FP8 the same again, plus quantizing on the GPU

#: (model, layer, experts, top_k, N, K): each expert's product C[rows, N] = A[rows, K] · B[e].
#: Gate/up is the fused pair of the expert's two input projections.
LAYERS = (("Mixtral 8x7B", "gate/up", 8, 2, 28672, 4096),
          ("Mixtral 8x7B", "down", 8, 2, 4096, 14336),
          ("DeepSeek-V3-like", "gate/up", 256, 8, 4096, 7168),
          ("DeepSeek-V3-like", "down", 256, 8, 7168, 2048))
#: Tokens in a step, by phase (each routed to top_k experts).
TOKENS = (("decode", 1), ("decode", 16), ("decode", 128), ("prefill", 4096))
#: Skew of the routing: expert e is chosen with probability ∝ 1 / (e + 1) ** SKEW.
SKEW = 0.6
CALLS = 10
BURSTS = 5
PROCESSES = 3
#: The teaching kernel is timed only where one call takes at most this long.
OURS_MAX_MS = 60.0
TOLERANCE = 2e-2              # BF16 out: max |error| / max |entry| of the expert's product
IMPLS = ("torch.mm loop", "torch._grouped_mm", "torch.bmm masked", "lab.grouped_gemm")
ROW_FIELDS = ("part", "model", "layer", "tokens", "impl", "layout")


def routing(experts: int, top_k: int, tokens: int, seed: int) -> np.ndarray:
    """Rows per expert (int64, length ``experts``, summing to ``tokens · top_k``): each token
    picks ``top_k`` distinct experts, expert e with probability ∝ 1 / (e + 1) ** SKEW, the
    experts' order shuffled."""
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, experts + 1) ** SKEW
    weight = rng.permutation(weight / weight.sum())
    counts = np.zeros(experts, np.int64)
    for _ in range(tokens):
        counts[rng.choice(experts, size=top_k, replace=False, p=weight)] += 1
    return counts


def _routed(experts: int, top_k: int, tokens: int, seed: int):
    """A step's routing (:func:`routing`) as (counts, offsets, routed rows, M_max) and the
    seeded GPU generator its operands are drawn from."""
    import torch

    counts = routing(experts, top_k, tokens, seed)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    g = torch.Generator(device="cuda").manual_seed(seed)
    return counts, offsets, int(offsets[-1]), int(counts.max()), g


def _base(layer, phase: str, tokens: int, counts, live: int, dtype: str) -> dict:
    """What every row of one layer at one token count holds."""
    model, name, experts, top_k, n, k = layer
    return dict(part="speed", model=model, layer=name, phase=phase, tokens=tokens,
                experts=experts, top_k=top_k, n=n, k=k, rows=int(np.sum(counts)),
                m_max=int(np.max(counts)), experts_with_rows=live,
                counts=[int(c) for c in counts], useful_tflop=flops(counts, n, k) / 1e12,
                dtype=dtype)


def flops(counts, n: int, k: int) -> float:
    return 2.0 * float(np.sum(counts)) * n * k


# ----------------------------------------------------------------------------- one process

def _burst(fn, calls: int) -> float:
    import torch

    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / calls


def _worst(out, ref_rows) -> float:
    """max |error| / max |entry| over the experts' products (inf on a NaN)."""
    worst = 0.0
    for got, ref in ref_rows(out):
        got = got.double()
        if got.isnan().any():
            return float("inf")
        worst = max(worst, float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)))
    return worst


def measure(layer, phase: str, tokens: int, seed: int) -> list[dict]:
    """One layer at one token count: the check and timing rows of every implementation."""
    import torch

    import lab

    _, _, experts, top_k, n, k = layer
    counts, offsets, rows, mmax, g = _routed(experts, top_k, tokens, seed)
    bf = torch.bfloat16
    B = torch.empty((experts, k, n), device="cuda", dtype=bf).uniform_(-1, 1, generator=g)
    A = torch.empty((rows, k), device="cuda", dtype=bf).uniform_(-1, 1, generator=g)
    Am = torch.zeros((experts, mmax, k), device="cuda", dtype=bf)
    for e in range(experts):
        Am[e, :counts[e]] = A[offsets[e]:offsets[e + 1]]
    C = torch.empty((rows, n), device="cuda", dtype=bf)
    Cm = torch.empty((experts, mmax, n), device="cuda", dtype=bf)
    offs_end = torch.tensor(offsets[1:], device="cuda", dtype=torch.int32)
    offs = torch.tensor(offsets, device="cuda", dtype=torch.int64)
    cnt = torch.tensor(counts, device="cuda", dtype=torch.int64)
    live = [e for e in range(experts) if counts[e]]
    Bcol = B.transpose(1, 2).contiguous().transpose(1, 2)     # column-major [K, N] per expert

    def contiguous_ref(out):
        for e in live:
            ref = A[offsets[e]:offsets[e + 1]].double() @ B[e].double()
            yield out[offsets[e]:offsets[e + 1]], ref

    def masked_ref(out):
        for e in live:
            yield out[e, :counts[e]], Am[e, :counts[e]].double() @ B[e].double()

    def loop():
        for e in live:
            torch.mm(A[offsets[e]:offsets[e + 1]], B[e], out=C[offsets[e]:offsets[e + 1]])

    def grouped_mm():
        C.copy_(torch._grouped_mm(A, Bcol, offs=offs_end, out_dtype=bf))

    def bmm():
        torch.bmm(Am, B, out=Cm)

    def ours_contiguous():
        lab.grouped_gemm(A, B, C, offsets=offs, check_bounds=False)

    def ours_masked():
        lab.grouped_gemm(Am, B, Cm, counts=cnt, check_bounds=False)

    base = _base(layer, phase, tokens, counts, len(live), "bfloat16")
    impls = {"torch.mm loop": ("contiguous", loop, contiguous_ref, C),
             "torch._grouped_mm": ("contiguous", grouped_mm, contiguous_ref, C),
             "torch.bmm masked": ("masked", bmm, masked_ref, Cm)}
    skipped = {}
    free = torch.cuda.mem_get_info()[0]
    kernels = {layout: lab.grouped.hopper_config("bfloat16", "bfloat16", n_rows, k, n, experts,
                                                 m, layout == "masked", None)
               for layout, n_rows, m in (("contiguous", rows, 0),
                                         ("masked", experts * mmax, mmax))}
    teaching = None in kernels.values()
    if teaching and 4 * experts * k * n + 4 * (rows + experts * mmax) * (k + n) > 0.8 * free:
        skipped["lab.grouped_gemm"] = "its FP32 copies of the weights do not fit in memory"
    else:
        impls["lab.grouped_gemm"] = ("contiguous", ours_contiguous, contiguous_ref, C)
        impls["lab.grouped_gemm masked"] = ("masked", ours_masked, masked_ref, Cm)
    labels = {layout: cfg.label if cfg else "teaching kernel (FP32, 16 x 16 tiles)"
              for layout, cfg in kernels.items()}
    out = _check_and_time(impls, base, counts, experts,
                          {"ratio_to_loop": "torch.mm loop",
                           "ratio_to_grouped_mm": "torch._grouped_mm"},
                          labels, skipped)
    del A, B, Am, C, Cm, Bcol
    torch.cuda.empty_cache()
    return out


def quantize_blocks(x, rows_block: int):
    """``x`` (float, ``[..., R, K]``, R and K multiples of ``rows_block`` and 128) on the GPU
    → (e4m3 codes, float32 scales ``[..., R/rows_block, K/128]``): one scale per
    ``rows_block``×128 block, its largest magnitude over e4m3's largest (448)."""
    import torch

    *lead, r, k = x.shape
    blocks = x.float().reshape(*lead, r // rows_block, rows_block, k // 128, 128)
    amax = blocks.abs().amax(dim=(-3, -1)).clamp_min(1e-30)
    scale = (amax / 448.0).float()
    codes = (blocks / scale[..., None, :, None]).reshape(x.shape).to(torch.float8_e4m3fn)
    return codes, scale


def _blockwise(codes, scales, rows_block: int):
    """float64 ``scale · code`` of :func:`quantize_blocks`'s blocks."""
    *lead, r, k = codes.shape
    x = codes.double().reshape(*lead, r // rows_block, rows_block, k // 128, 128)
    return (x * scales.double()[..., None, :, None]).reshape(codes.shape)


def measure_fp8(layer, phase: str, tokens: int, seed: int) -> list[dict]:
    """One layer at one token count in FP8 with block scales (1×128 of A, 128×128 of each
    expert's weights; BF16 C): ``lab.grouped_scaled_gemm`` in both layouts against a loop of
    ``torch._scaled_mm`` calls (one per expert with rows) with the same block scales where
    this PyTorch's cuBLASLt takes them, and a loop with per-tensor scales and fast
    accumulation (the fastest FP8 GEMM cuBLASLt has, for scale)."""
    import torch

    import lab

    _, _, experts, top_k, n, k = layer
    counts, offsets, rows, mmax, g = _routed(experts, top_k, tokens, seed)
    bf = torch.bfloat16
    Bt = torch.empty((experts, n, k), device="cuda", dtype=torch.float8_e4m3fn)
    sb = torch.empty((experts, n // 128, k // 128), device="cuda", dtype=torch.float32)
    for e in range(experts):                     # an expert at a time: 256 × 4096 × 7168
        Bt[e], sb[e] = quantize_blocks(torch.empty((n, k), device="cuda", dtype=bf)
                                       .uniform_(-1, 1, generator=g), 128)
    A, sa = quantize_blocks(torch.empty((rows, k), device="cuda", dtype=bf)
                            .uniform_(-1, 1, generator=g), 1)
    Am = torch.zeros((experts, mmax, k), device="cuda", dtype=A.dtype)
    sam = torch.ones((experts, mmax, k // 128), device="cuda", dtype=torch.float32)
    for e in range(experts):
        Am[e, :counts[e]] = A[offsets[e]:offsets[e + 1]]
        sam[e, :counts[e]] = sa[offsets[e]:offsets[e + 1]]
    C = torch.empty((rows, n), device="cuda", dtype=bf)
    Cm = torch.empty((experts, mmax, n), device="cuda", dtype=bf)
    offs = torch.tensor(offsets, device="cuda", dtype=torch.int64)
    cnt = torch.tensor(counts, device="cuda", dtype=torch.int64)
    live = [e for e in range(experts) if counts[e]]
    one = torch.ones((), device="cuda", dtype=torch.float32)

    def reference(e):
        a = _blockwise(A[offsets[e]:offsets[e + 1]], sa[offsets[e]:offsets[e + 1]], 1)
        return a @ _blockwise(Bt[e], sb[e], 128).T

    def contiguous_ref(out):
        for e in live:
            yield out[offsets[e]:offsets[e + 1]], reference(e)

    def masked_ref(out):
        for e in live:
            yield out[e, :counts[e]], reference(e)

    # cuBLASLt's block scaling takes both scale arrays outer-dim-major (lab.experiments.fp8)
    sa_t = [sa[offsets[e]:offsets[e + 1]].t().contiguous().t() for e in range(experts)]
    sb_t = [sb[e].t() for e in range(experts)]

    def loop_block():
        for e in live:
            C[offsets[e]:offsets[e + 1]] = torch._scaled_mm(
                A[offsets[e]:offsets[e + 1]], Bt[e].t(), sa_t[e], sb_t[e], out_dtype=bf)

    def loop_tensor():
        for e in live:
            C[offsets[e]:offsets[e + 1]] = torch._scaled_mm(
                A[offsets[e]:offsets[e + 1]], Bt[e].t(), one, one, out_dtype=bf,
                use_fast_accum=True)

    def ours_contiguous():
        lab.grouped_scaled_gemm(A, Bt, C, scale_a=sa, scale_b=sb, offsets=offs,
                                check_bounds=False, check_scales=False)

    def ours_masked():
        lab.grouped_scaled_gemm(Am, Bt, Cm, scale_a=sam, scale_b=sb, counts=cnt,
                                check_bounds=False, check_scales=False)

    base = _base(layer, phase, tokens, counts, len(live), "e4m3")
    impls = {"torch._scaled_mm loop (block)": ("contiguous", loop_block, contiguous_ref, C),
             "torch._scaled_mm loop (tensor, fast)": ("contiguous", loop_tensor, None, C),
             "lab.grouped_scaled_gemm": ("contiguous", ours_contiguous, contiguous_ref, C),
             "lab.grouped_scaled_gemm masked": ("masked", ours_masked, masked_ref, Cm)}
    labels = {layout: lab.grouped.fp8_tile_config(layout == "masked",
                                                  mmax if layout == "masked" else rows / experts
                                                  ).label
              for layout in ("contiguous", "masked")}
    out = _check_and_time(impls, base, counts, experts,
                          {"ratio_to_loop": "torch._scaled_mm loop (block)",
                           "ratio_to_fast_loop": "torch._scaled_mm loop (tensor, fast)"},
                          labels)
    del A, Bt, Am, C, Cm, sa, sb, sam
    torch.cuda.empty_cache()
    return out


def _check_and_time(impls, base, counts, experts, yardsticks: dict, labels: dict,
                    skipped: dict | None = None) -> list[dict]:
    """Check each implementation's C (poisoned with NaN) per expert against float64 (a
    ``None`` reference: unit scales, not compared, and the row says so), then time the ones
    that passed in interleaved bursts (ours only where one call takes at most
    :data:`OURS_MAX_MS`). ``yardsticks``: a row field → the implementation whose median over
    the row's it holds; ``labels``: layout → our kernel's configuration; ``skipped``: the
    implementations already left out, with why."""
    import torch

    out, skipped, timed = [], dict(skipped or {}), {}
    for impl, (layout, fn, ref_rows, target) in impls.items():
        target.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except (RuntimeError, TypeError, ValueError) as exc:
            skipped[impl] = f"{type(exc).__name__}: {exc}"[:200]
            continue
        err = _worst(target, ref_rows) if ref_rows is not None else None
        untouched = True
        if layout == "masked" and impl.startswith("lab."):
            untouched = all(bool(target[e, counts[e]:].isnan().all()) for e in range(experts))
        row = dict(base, impl=impl.removesuffix(" masked") if impl.startswith("lab.") else impl,
                   layout=layout, max_err=err,
                   passed=bool((err is None or err < TOLERANCE) and untouched))
        if err is None:
            row["check"] = "not compared (unit scales: a speed yardstick)"
        if impl.startswith("lab."):
            row["kernel"] = labels[layout]
        if not row["passed"]:
            out.append(dict(row, part="check", error=f"error {err:.3g}, rows past counts "
                                                        f"untouched: {untouched}"))
            continue
        if impl.startswith("lab."):
            once = _burst(fn, 1)
            if once > OURS_MAX_MS:
                skipped[impl] = f"one call takes {once:.0f} ms (> {OURS_MAX_MS:.0f} ms)"
                continue
        timed[impl] = (row, fn)
    samples = {impl: [] for impl in timed}
    for fn in (f for _, f in timed.values()):
        fn()
    for _ in range(BURSTS):
        for impl, (_, fn) in timed.items():
            samples[impl].append(_burst(fn, CALLS))
    medians = {impl: float(np.median(x)) for impl, x in samples.items()}
    for impl, (row, _) in timed.items():
        med = medians[impl]
        ratios = {field: medians[other] / med if other in medians else None
                  for field, other in yardsticks.items()}
        out.append(dict(row, median_ms=med, min_ms=float(min(samples[impl])),
                        max_ms=float(max(samples[impl])), bursts=BURSTS, calls=CALLS,
                        tflops=base["useful_tflop"] / (med * 1e-3), **ratios))
    for impl, why in skipped.items():
        layout = "masked" if "masked" in impl else "contiguous"
        out.append(dict(base, impl=impl.removesuffix(" masked"), layout=layout,
                        part="skipped", reason=why))
    return out


def child(path: str, index: int) -> None:
    """One process: every layer and token count, BF16 then FP8, rows appended to ``path`` as
    measured."""
    for li, layer in enumerate(LAYERS):
        for ti, (phase, tokens) in enumerate(TOKENS):
            got = measure(layer, phase, tokens, seed=1000 * li + ti)
            got += measure_fp8(layer, phase, tokens, seed=1000 * li + ti)
            with open(path, "a") as f:
                for r in got:
                    f.write(json.dumps(dict(r, process=index)) + "\n")


# ----------------------------------------------------------------------------- the run

def merge(raw: list[dict], processes: int) -> list[dict]:
    """One row per :data:`ROW_FIELDS`: the median process's (by ``median_ms``), with every
    process's ratio to the loop. A check that failed in any process is kept as it failed."""
    out, keyed = [], {}
    failed = {tuple(r.get(f) for f in ROW_FIELDS[1:]) for r in raw if r["part"] == "check"}
    for r in raw:
        key = tuple(r.get(f) for f in ROW_FIELDS)
        if r["part"] == "check" or (r["part"] == "speed" and key[1:] in failed):
            if r["part"] == "check":
                out.append(dict(r, processes=processes))
            continue
        keyed.setdefault(key, []).append(r)
    for key, group in keyed.items():
        if group[0]["part"] != "speed":
            row = dict(group[0])
            row.pop("process", None)
            out.append(dict(row, processes=len(group)))
            continue
        if len(group) != processes:        # timed in some processes only: not a median
            row = {f: group[0][f] for f in (*ROW_FIELDS, "phase", "n", "k", "experts")}
            out.append(dict(row, part="skipped", processes=processes,
                            reason=f"timed in {len(group)} of {processes} processes"))
            continue
        ordered = sorted(group, key=lambda r: r["median_ms"])
        middle = dict(ordered[(len(ordered) - 1) // 2])
        middle.pop("process", None)
        ratios = [r["ratio_to_loop"] for r in sorted(group, key=lambda r: r["process"])]
        to_gmm = [r.get("ratio_to_grouped_mm") for r in sorted(group, key=lambda r: r["process"])]
        middle.update(processes=len(group), ratios=ratios, ratios_to_grouped_mm=to_gmm,
                      ratio_min=min(ratios) if None not in ratios else None,
                      ratio_max=max(ratios) if None not in ratios else None)
        out.append(middle)
    return out


def run(progress, quick: bool = False) -> dict:
    import torch

    from lab import experiments

    processes = 1 if quick else PROCESSES
    raw = experiments.in_processes("grouped", processes, progress)
    return {"rows": merge(raw, processes), "row_fields": list(ROW_FIELDS),
            "parameters": parameters(torch.__version__, processes), "notes": NOTES}


def parameters(torch_version: str, processes: int) -> dict:
    return {"layers": [list(x) for x in LAYERS], "tokens": [list(t) for t in TOKENS],
            "skew": SKEW, "calls": CALLS, "bursts": BURSTS, "processes": processes,
            "ours_max_ms": OURS_MAX_MS, "tolerance": TOLERANCE, "dtype": "bfloat16",
            "inputs": "PyTorch tensors, uniform(-1, 1), BF16; B [E, K, N] row-major (a "
                      "column-major copy for torch._grouped_mm)",
            "torch": torch_version}


NOTES = ("Per call: events around a burst of `calls` calls, nothing between them; "
         "implementations interleaved burst by burst; median_ms the median burst. tflops "
         "counts useful work (2 x routed rows x N x K; torch.bmm also computes the padding "
         "rows). ratio_to_loop = the torch.mm loop's median / the row's; ratio_to_grouped_mm "
         "= torch._grouped_mm's / the row's. Each row is the median process's; ratios and "
         "ratios_to_grouped_mm list every process's. Every implementation's C was "
         "checked per expert against float64 (poisoned with NaN first) before timing.")


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], int(sys.argv[3]))
