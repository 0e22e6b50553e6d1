"""Experiment ``epilogue`` (chapter 6.3): the epilogue fused into our best kernels, against the same
kernels followed by an element-wise kernel, and against what a user calls.

For each design — FP32 (``warptile_tuned`` / ``warptile_tuned_epilogue``) and FP16 tensor cores
(``tc_fp16`` / ``tc_fp16_epilogue``) — each shape of :data:`SHAPES` and each epilogue of
:data:`EPILOGUES`, rows told apart by ``variant``:

* ``gemm`` — the plain kernel (A·B, no epilogue); ``cublas`` the same through cuBLAS;
* ``elementwise`` — the element-wise epilogue kernel alone (reads the product, C and the bias,
  writes D: :func:`lab.kernels.fused_epilogue.make_elementwise`);
* ``unfused`` — plain kernel, then the element-wise kernel (one timed call: both launches);
* ``fused`` — the fused kernel;
* ``cublas_unfused`` — cuBLAS, then our element-wise kernel;
* ``torch_fused`` / ``torch_unfused`` — what a PyTorch user writes (only where torch imports
  with CUDA; rows are skipped, with a note in ``parameters``, otherwise): for bias + ReLU/GELU
  ``torch._addmm_activation(bias, A, B, use_gelu=…)`` (cuBLASLt's fused epilogue) and
  ``act(torch.addmm(bias, A, B))``; for the whole epilogue ``act(torch.addmm(C, A, B, beta=β,
  alpha=α) + bias)`` (torch has no one call for it). FP32 with TF32 off; FP16 returns FP16
  (torch's output dtype follows its inputs), so its D is half the bytes of ours.

``model_bytes`` is the DRAM traffic the model counts for the epilogue part (C, bias, D; plus the
product's write and re-read when unfused: :func:`lab.kernels.fused_epilogue.saved_bytes`).
Rows with ``part="check"`` check every kernel (fused ones against the float64 reference of the
whole epilogue, torch against it with a tolerance for its output dtype) before timing;
``part="launched"`` lists the kernels torch's profiler saw for each torch call (one kernel means
the epilogue ran inside the GEMM). CUDA events, warm-up 3, median of 20 with min and max,
cache-hot inputs. Budget: ≈ 60–90 s, mostly compiling the fused and element-wise kernels.
"""
from __future__ import annotations

import numpy as np

from lab import baselines, bench, model
from numba import cuda  # noqa: E402  (after lab: simulator decided first)

CHAPTER = "6.3"
#: ``measure --jobs N`` runs this experiment alone, after the others: its calls are timed one by
#: one, the host's launch path included, which compiling beside it inflates.
ALONE = True
NEEDS = ("cupy",)
NEEDS_KERNELS = ("tc_fp16_epilogue",)
H200_SECONDS = 110  # measured: 108 s on the H200 (~10 compiles, checks, timing)

#: M, N, K of the timed products.
SHAPES = ((4096, 4096, 4096), (4096, 4096, 1024))
#: name -> (activation, reads C, has bias). α and β of the whole epilogue: ALPHA, BETA.
EPILOGUES = {"bias_relu": ("relu", False, True), "bias_gelu": ("gelu", False, True),
             "full_gelu": ("gelu", True, True)}
ALPHA, BETA = 0.75, -0.5
CHECK_SHAPE = (1024, 1024, 1024)
ODD_SHAPE = (1000, 1030, 999)

DESIGNS = {"fp32": ("warptile_tuned", "warptile_tuned_epilogue", "fp32", np.float32),
           "fp16": ("tc_fp16", "tc_fp16_epilogue", "fp16", np.float16)}


def _torch():
    """torch with CUDA, or None (and why)."""
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - optional
        return None, f"torch not importable ({type(exc).__name__}: {exc})"
    if not torch.cuda.is_available():
        return None, "torch has no CUDA here"
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch, f"torch {torch.__version__}"


def torch_calls(torch, name: str, a, b, c, bias):
    """{variant: call()} of what a torch user writes for epilogue ``name`` (torch tensors)."""
    import torch.nn.functional as F

    act, has_c, _ = EPILOGUES[name]
    gelu = (lambda x: F.gelu(x, approximate="tanh"))
    f = F.relu if act == "relu" else gelu
    if not has_c:
        return {"torch_fused": lambda: torch._addmm_activation(bias, a, b,
                                                               use_gelu=act == "gelu"),
                "torch_unfused": lambda: f(torch.addmm(bias, a, b))}
    return {"torch_unfused": lambda: f(torch.addmm(c, a, b, beta=BETA, alpha=ALPHA) + bias)}


def _launched(torch, call) -> list[str]:
    """Names of the GPU kernels one call launches, from torch's profiler."""
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if getattr(e, "device_type", None) is not None
             and "CUDA" in str(e.device_type)]
    return names


def _row(base: dict, variant: str, kernel: str, impl: str, t, flops: float, nbytes) -> dict:
    row = {**base, "variant": variant, "kernel": kernel, "impl": impl, **t.row(),
           "tflops": flops / (t.median_ms * 1e-3) / 1e12}
    if nbytes is not None:
        row["model_bytes"] = nbytes
    return row


def _check_rows(progress) -> list[dict]:
    from lab.kernels import fused_epilogue as epi

    rows = []
    jobs = [(d, e, s) for d in DESIGNS for e in EPILOGUES for s in (CHECK_SHAPE,)]
    jobs += [(d, "full_gelu", ODD_SHAPE) for d in DESIGNS]
    for design, name, shape in progress(jobs, desc="checks"):
        act, has_c, has_bias = EPILOGUES[name]
        fused = DESIGNS[design][1]
        v = epi.check(fused, *shape, activation=act, use_c=has_c, use_bias=has_bias)
        if not v.passed:
            raise AssertionError(f"check failed before timing: {v.line()}")
        rows.append({"part": "check", "design": design, "epilogue": name,
                     "kernel": v.kernel, "m": shape[0], "n": shape[1], "k": shape[2],
                     "rel_frobenius": v.rel_frobenius, "err_over_bound": v.err_over_bound,
                     "passed": True})
    return rows


def _torch_check(torch, design, name, out, a, b, c, bias) -> dict:
    from lab.kernels import fused_epilogue as epi

    act, has_c, _ = EPILOGUES[name]
    ref = epi.reference(a, b, C=c if has_c else None, bias=bias,
                        alpha=ALPHA if has_c else 1.0, beta=BETA if has_c else 0.0,
                        activation=act)
    got = out.float().cpu().numpy().astype(np.float64)
    rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    tol = 1e-2 if design == "fp16" else 1e-5
    return {"rel_frobenius": rel, "tolerance": tol, "passed": rel <= tol}


def run(progress) -> dict:
    from lab.kernels import get_spec
    from lab.kernels import fused_epilogue as epi

    bench.require_gpu("the epilogue experiment")
    torch, torch_note = _torch()
    bench.compile_ahead([name for design in DESIGNS.values() for name in design[:2]])
    rows = _check_rows(progress)
    rng = np.random.default_rng(10)
    for (m, n, k) in progress(SHAPES, desc="shapes"):
        c_host = rng.uniform(-1, 1, (m, n)).astype(np.float32)
        bias_host = rng.uniform(-1, 1, n).astype(np.float32)
        d_c, d_bias = cuda.to_device(c_host), cuda.to_device(bias_host)
        p = cuda.device_array((m, n), np.float32)
        out = cuda.device_array((m, n), np.float32)
        flops = model.flops(m, n, k)
        for design, (plain_name, fused_name, kind, dtype) in DESIGNS.items():
            a, b = bench.random_inputs(m, n, k, dtype, rng)
            d_a, d_b = cuda.to_device(a), cuda.to_device(b)
            plain, fused = get_spec(plain_name).launch, epi.FUSED[fused_name]
            base = {"part": "time", "design": design, "m": m, "n": n, "k": k,
                    "dtype": np.dtype(dtype).name}
            t = bench.time_gpu(lambda i: plain(d_a, d_b, p))
            rows.append(_row({**base, "epilogue": "none"}, "gemm", plain_name, "numba", t,
                             flops, None))
            t = bench.time_gpu(lambda i: baselines.launch(kind, d_a, d_b, p))
            rows.append(_row({**base, "epilogue": "none"}, "gemm", f"cublas_{kind}",
                             "cublas", t, flops, None))
            if torch is not None:
                ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
                tdt = ta.dtype
                tc_, tbias = (torch.from_numpy(c_host).cuda().to(tdt),
                              torch.from_numpy(bias_host).cuda().to(tdt))
            for name, (act, has_c, has_bias) in EPILOGUES.items():
                kw = {"bias": d_bias, "activation": act}
                if has_c:
                    kw.update(C=d_c, alpha=ALPHA, beta=BETA)
                saved = epi.saved_bytes(m, n, c=has_c)
                eb = {**base, "epilogue": name}
                t = bench.time_gpu(lambda i: epi.launch_elementwise(p, out, **kw))
                row = _row(eb, "elementwise", "elementwise", "numba", t, flops,
                           saved["fused"] + m * n * 4)            # reads P as well
                row.pop("tflops")
                row["gbps"] = row["model_bytes"] / (t.median_ms * 1e-3) / 1e9
                rows.append(row)
                t = bench.time_gpu(lambda i: (plain(d_a, d_b, p),
                                              epi.launch_elementwise(p, out, **kw)))
                rows.append(_row(eb, "unfused", f"{plain_name}+elementwise", "numba", t, flops,
                                 saved["unfused"]))
                t = bench.time_gpu(lambda i: fused(d_a, d_b, out, **kw))
                rows.append(_row(eb, "fused", fused_name, "numba", t, flops, saved["fused"]))
                t = bench.time_gpu(lambda i: (baselines.launch(kind, d_a, d_b, p),
                                              epi.launch_elementwise(p, out, **kw)))
                rows.append(_row(eb, "cublas_unfused", f"cublas_{kind}+elementwise", "cublas",
                                 t, flops, saved["unfused"]))
                if torch is None:
                    continue
                for variant, call in torch_calls(torch, name, ta, tb, tc_, tbias).items():
                    verdict = _torch_check(torch, design, name, call(), a, b, c_host,
                                           bias_host)
                    rows.append({"part": "check", "design": design, "epilogue": name,
                                 "kernel": f"torch:{variant}", "m": m, "n": n, "k": k,
                                 **verdict})
                    t = bench.time_gpu(lambda i: call())
                    row = _row(eb, variant, f"torch:{variant}", "torch", t, flops, None)
                    row["out_dtype"] = str(tdt).removeprefix("torch.")
                    rows.append(row)
                    try:
                        launched = _launched(torch, call)
                    except Exception as exc:  # noqa: BLE001 - the profiler is optional
                        launched, err = None, f"{type(exc).__name__}: {exc}"[:200]
                    else:
                        err = None
                    rows.append({"part": "launched", "design": design, "epilogue": name,
                                 "kernel": f"torch:{variant}", "m": m, "n": n, "k": k,
                                 "launched": launched, "error": err})
    return {"rows": rows, "row_fields": ["part", "kernel", "m", "n", "k"],
            "parameters": {"shapes": [list(s) for s in SHAPES],
                           "epilogues": {k: list(v) for k, v in EPILOGUES.items()},
                           "alpha": ALPHA, "beta": BETA, "check_shape": list(CHECK_SHAPE),
                           "odd_shape": list(ODD_SHAPE), "torch": torch_note,
                           "gelu": "tanh form (cuBLASLt's GELU epilogue; torch "
                                   "approximate='tanh')",
                           "inputs": "cache-hot; C, bias and D float32 for our kernels and "
                                     "cuBLAS; torch's D has its inputs' dtype",
                           "timing": "CUDA events per call, warm-up 3, 20 calls"},
            "notes": "model_bytes: the epilogue's DRAM bytes by the model (C if read, bias, D; "
                     "unfused adds the product's write and re-read; elementwise rows: P, C, "
                     "bias read, D written). tflops: 2·M·N·K over the row's whole time."}
