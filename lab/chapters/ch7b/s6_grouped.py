"""Mixture of experts: every expert's product in one launch (``grouped``), the walk over the
groups of the course's grouped kernels, and what they, PyTorch's grouped GEMM, a loop of
``torch.mm`` and a masked ``torch.bmm`` cost at the shapes of two MoE layers, all from one
results file (the selected GPU's)."""
from __future__ import annotations

import math

from lab import page, results, roofline
from lab.chapters.ch7b.common import COUNTERS_LABEL
from lab.kernels import grouped as kernel
from lab.kernels.wgmma import order

EXPERIMENT = "grouped"
#: The implementations, as the table names them.
SHORT = {"torch.mm loop": "loop", "torch._grouped_mm": "grouped_mm",
         "torch.bmm masked": "bmm (masked)"}


def scheduler_source():
    """The teaching kernel's scheduler: a block's tile-row number → (expert, its rows)."""
    return page.source(kernel, "group_of")


def walk_source():
    """The Hopper grouped kernel's tile order: a persistent block's work unit → (first row,
    first column, the group's end, its expert), walking the groups."""
    return page.source(order, "group_order")


def hopper_rows(model: str | None = None) -> list[dict]:
    """One row per layer and token count (of ``model``, or every model's): µs per call of
    PyTorch's grouped GEMM and of ours in both layouts, and ours (contiguous) ÷ the grouped
    GEMM."""
    speed = _speed()
    out = []
    gmm = sorted((r for r in speed.values() if r["impl"] == "torch._grouped_mm"
                  and model in (None, r["model"])),
                 key=lambda r: (r["model"] != "Mixtral 8x7B", r["model"], r["layer"],
                                r["tokens"]))
    for g in gmm:
        key = (g["model"], g["layer"], g["tokens"])
        ours = speed.get((*key, "lab.grouped_gemm", "contiguous"))
        masked = speed.get((*key, "lab.grouped_gemm", "masked"))
        out.append({"layer": g["layer"] if model else f"{g['model']} {g['layer']}",
                    "tokens": g["tokens"],
                    "grouped_mm µs": f"{1e3 * g['median_ms']:,.0f}",
                    "ours µs": f"{1e3 * ours['median_ms']:,.0f}" if ours else "-",
                    "ours masked µs": f"{1e3 * masked['median_ms']:,.0f}" if masked else "-",
                    "ours ÷ grouped_mm": (f"{ours['ratio_to_grouped_mm']:.2f}" if ours
                                          else "-")})
    return out


def hopper_table(model: str):
    """One model's layers: the Hopper grouped kernel against PyTorch's grouped GEMM, BF16,
    medians of the run's processes."""
    rows = hopper_rows(model)
    if not rows:
        raise ValueError(f"no {model!r} layer in the grouped results")
    return page.table(rows, title=f"{model}: ours against the grouped GEMM",
                      source=results.source_line(EXPERIMENT))


def _speed() -> dict:
    """(model, layer, tokens, impl, layout) → the speed row."""
    return {(r["model"], r["layer"], r["tokens"], r["impl"], r["layout"]): r
            for r in results.rows(EXPERIMENT) if r["part"] == "speed"}


def _why_not(r: dict) -> str:
    """A short reason for an implementation that was not timed."""
    reason = r.get("reason") or r.get("error") or ""
    if "one call takes" in reason:
        return reason.removeprefix("one call takes ").split(" (")[0] + " a call"
    return reason[:40]


def grouped_rows(model: str | None = None) -> list[dict]:
    """One row per layer and token count (of ``model``, or every model's): the routed rows, how
    many experts got some, and each of PyTorch's implementations' µs per call with its ratio
    to the loop (ours: :func:`hopper_rows`)."""
    speed = _speed()
    other = {(r["model"], r["layer"], r["tokens"], r["impl"], r["layout"]): r
             for r in results.rows(EXPERIMENT) if r["part"] != "speed"}
    out = []
    loops = sorted((r for r in speed.values() if r["impl"] == "torch.mm loop"
                    and model in (None, r["model"])),
                   key=lambda r: (r["model"] != "Mixtral 8x7B", r["layer"], r["tokens"]))
    for loop in loops:
        key = (loop["model"], loop["layer"], loop["tokens"])
        row = {"layer": loop["layer"] if model else f"{loop['model']} {loop['layer']}",
               "tokens": loop["tokens"],
               "rows": loop["rows"],
               "experts": f"{loop['experts_with_rows']}/{loop['experts']}"}
        for impl, layout in (("torch.mm loop", "contiguous"),
                             ("torch._grouped_mm", "contiguous"),
                             ("torch.bmm masked", "masked")):
            r = speed.get((*key, impl, layout))
            name = SHORT[impl]
            if r is None:
                miss = other.get((*key, impl, layout))
                row[name] = _why_not(miss) if miss else "-"
            elif impl == "torch.mm loop":
                row[name] = f"{1e3 * r['median_ms']:,.0f}"
            else:
                row[name] = f"{1e3 * r['median_ms']:,.0f} ({r['ratio_to_loop']:.2f})"
        out.append(row)
    return out


def grouped_table(model: str):
    """One model's layers: µs per call (ratio to the loop in brackets), BF16, medians of the
    run's processes."""
    rows = grouped_rows(model)
    if not rows:
        raise ValueError(f"no {model!r} layer in the grouped results")
    headers = {"loop": "loop µs", "grouped_mm": "grouped_mm µs", "bmm (masked)": "bmm µs"}
    experts = int(rows[0]["experts"].split("/")[1])
    return page.table(rows, headers=headers, title=f"{model}: {experts} experts",
                      source=results.source_line(EXPERIMENT))


def _ratio(model, layer, tokens, impl, layout="contiguous") -> float:
    return _speed()[(model, layer, tokens, impl, layout)]["ratio_to_loop"]


def weights_mb(row: dict, nbytes: int) -> float:
    """MB of weights a row's call reads: every expert with rows, K×N of ``nbytes`` each."""
    return row["experts_with_rows"] * row["k"] * row["n"] * nbytes / 1e6


def values() -> dict:
    """The section's quoted numbers, from the ``grouped`` results file."""
    speed = _speed()
    ds, mx = "DeepSeek-V3-like", "Mixtral 8x7B"
    data = results.load(EXPERIMENT)
    tokens = sorted({r["tokens"] for r in speed.values()})
    decode = [t for t in tokens if t < 1000]
    ds_decode = [speed[(ds, layer, t, "torch._grouped_mm", "contiguous")]
                 for layer in ("gate/up", "down") for t in decode]
    ds_grouped = [r["ratio_to_loop"] for r in ds_decode]
    ds_low = min(ds_decode, key=lambda r: r["ratio_to_loop"])
    mx_grouped = [_ratio(mx, layer, t, "torch._grouped_mm") for layer in ("gate/up", "down")
                  for t in tokens]
    big = max(tokens)
    ds_loop_128 = speed[(ds, "down", 128, "torch.mm loop", "contiguous")]
    mx_pre = speed[(mx, "gate/up", big, "torch.mm loop", "contiguous")]
    mx_pre_g = speed[(mx, "gate/up", big, "torch._grouped_mm", "contiguous")]
    ds_bmm_1 = speed[(ds, "gate/up", 1, "torch.bmm masked", "masked")]
    ds_g_1 = speed[(ds, "gate/up", 1, "torch._grouped_mm", "contiguous")]
    expert_bytes = 2 * ds_loop_128["k"] * ds_loop_128["n"]          # one expert's BF16 B
    read_gbps = roofline.measured()["read_gbps"]
    read_us = expert_bytes / (read_gbps * 1e3)
    per_expert_us = 1e3 * ds_loop_128["median_ms"] / ds_loop_128["experts_with_rows"]
    return {**hopper_values(), **fp8_values(),
        "moe_ds_expert_mb": f"{expert_bytes / 1e6:.0f}",
        "moe_ds_expert_read_us": f"{read_us:.1f}",
        "moe_processes": str(data["parameters"]["processes"]),
        "moe_ds_grouped_min": f"{min(ds_grouped):.2f}",
        "moe_ds_grouped_max": f"{max(ds_grouped):.2f}",
        "moe_ds_grouped_low_at": (
            "a single token, where the loop has only "
            f"{ds_low['experts_with_rows']} products to run" if ds_low["tokens"] == 1
            else f"{ds_low['tokens']} tokens"),
        "moe_mx_grouped_min": f"{min(mx_grouped):.2f}",
        "moe_mx_grouped_max": f"{max(mx_grouped):.2f}",
        "moe_mx_loop_won": ("at every shape" if max(mx_grouped) < 1 else
                            f"at {sum(r < 1 for r in mx_grouped)} of its {len(mx_grouped)} "
                            "shapes"),
        "moe_ds_prefill_grouped": f"{_ratio(ds, 'gate/up', big, 'torch._grouped_mm'):.2f}",
        "moe_ds_prefill_grouped_down": f"{_ratio(ds, 'down', big, 'torch._grouped_mm'):.2f}",
        "moe_ds_experts_128": str(ds_loop_128["experts_with_rows"]),
        "moe_ds_rows_128": str(ds_loop_128["rows"]),
        "moe_ds_loop_128_us": f"{1e3 * ds_loop_128['median_ms']:,.0f}",
        "moe_ds_launch_us": f"{per_expert_us:.0f}",
        "moe_ds_loop_over_read": f"{per_expert_us / read_us:.1f}",
        "moe_ds_bmm_128": f"{_ratio(ds, 'down', 128, 'torch.bmm masked', 'masked'):.1f}",
        "moe_ds_bmm_1_us": f"{1e3 * ds_bmm_1['median_ms']:,.0f}",
        "moe_ds_grouped_1_us": f"{1e3 * ds_g_1['median_ms']:,.0f}",
        "moe_mx_prefill_loop_tflops": f"{mx_pre['tflops']:.0f}",
        "moe_mx_prefill_grouped_tflops": f"{mx_pre_g['tflops']:.0f}",
        "moe_prefill_tokens": f"{big:,}",
        "moe_tile": str(kernel.TILE),
    }



def hopper_values() -> dict:
    """The numbers quoted of the Hopper grouped kernel's run."""
    speed = _speed()
    data = results.load(EXPERIMENT)
    ours = [r for r in speed.values()
            if r["impl"] == "lab.grouped_gemm" and r["layout"] == "contiguous"]
    to_gmm = sorted(r["ratio_to_grouped_mm"] for r in ours)
    level = [x for x in to_gmm if x >= 0.95]
    short = [r for r in ours if r["ratio_to_grouped_mm"] < 0.95]
    big = max(r["tokens"] for r in ours)
    prefill = [r for r in ours if r["tokens"] == big]
    one = [r for r in ours if r["tokens"] == 1]
    weights = [weights_mb(r, 2) for r in one]
    masked = [r["ratio_to_grouped_mm"] for r in speed.values()
              if r["impl"] == "lab.grouped_gemm" and r["layout"] == "masked"]
    times = [r["median_ms"] for r in one]
    # a time set by the call: across the layers it spans well under the range of their weights
    call_bound = max(times) / min(times) < 0.6 * max(weights) / min(weights)
    mb = f"{min(weights):.0f}–{max(weights):.0f} MB"
    rates = [w / t for w, t in zip(weights, times)]          # MB per ms: GB/s
    return {
        "moe_h_one_how": (
            f"whatever its active experts' weights ({mb}, which the GPU would read in "
            "proportion): a time set by the call, not by the kernel, since each call then "
            "checked and wrapped its operands in Python" if call_bound else
            f"reading its active experts' weights ({mb}) at {min(rates):,.0f}–{max(rates):,.0f} "
            "GB/s: the kernel's time, not the call's"),
        "moe_h_repeat_when": (
            "came after this measurement" if call_bound else "is what this measurement timed"),
        "moe_h_gpu": data["provenance"]["gpu"],
        "moe_h_processes": str(data["parameters"]["processes"]),
        "moe_h_rows": str(len(ours)),
        "moe_h_level": str(len(level)),
        "moe_h_level_min": f"{min(level):.2f}",
        "moe_h_gmm_max": f"{to_gmm[-1]:.2f}",
        "moe_h_gmm_geomean": f"{math.exp(sum(map(math.log, to_gmm)) / len(to_gmm)):.2f}",
        "moe_h_short_min": f"{min(r['ratio_to_grouped_mm'] for r in short):.2f}" if short
                           else "-",
        "moe_h_short_max": f"{max(r['ratio_to_grouped_mm'] for r in short):.2f}" if short
                           else "-",
        "moe_h_one_min_us": f"{1e3 * min(r['median_ms'] for r in one):.0f}",
        "moe_h_one_max_us": f"{1e3 * max(r['median_ms'] for r in one):.0f}",
        "moe_h_masked_min": f"{min(masked):.2f}",
        "moe_h_masked_max": f"{max(masked):.2f}",
        "moe_h_prefill_tflops_min": f"{min(r['tflops'] for r in prefill):.0f}",
        "moe_h_prefill_tflops_max": f"{max(r['tflops'] for r in prefill):.0f}",
    }


# ----------------------------------------------------------------------------- FP8

#: The FP8 implementations (block scales; BF16 C), as the results name them.
FP8_LOOP, FP8_FAST, FP8_OURS = ("torch._scaled_mm loop (block)",
                                "torch._scaled_mm loop (tensor, fast)",
                                "lab.grouped_scaled_gemm")


def fp8_gpu() -> str:
    """The GPU folder whose ``grouped`` file holds FP8 rows: the selected GPU's, else the
    first other that does (ResultsMissing when none does)."""
    chosen, _ = results.resolve(EXPERIMENT)
    for gpu in [chosen] + [g for g in results.measured_on(EXPERIMENT) if g != chosen]:
        if any(r.get("dtype") == "e4m3" for r in results.rows(EXPERIMENT, gpu)):
            return gpu
    raise results.ResultsMissing("no grouped results file holds FP8 rows (run `python -m lab "
                                 "measure grouped` on a Hopper GPU)")


def _fp8_speed() -> dict:
    return {(r["model"], r["layer"], r["tokens"], r["impl"], r["layout"]): r
            for r in results.rows(EXPERIMENT, fp8_gpu())
            if r["part"] == "speed" and r.get("dtype") == "e4m3"}


def fp8_rows(model: str | None = None) -> list[dict]:
    """One row per layer and token count in FP8 (of ``model``, or every model's): µs per call
    of the loop of per-tensor ``torch._scaled_mm`` calls with fast accumulation (and of the
    block-scaled loop where cuBLASLt ran it), of ours in both layouts, ours' TFLOP/s and ours
    ÷ the fast loop."""
    speed = _fp8_speed()
    block = any(r["impl"] == FP8_LOOP for r in speed.values())
    mine = sorted((r for r in speed.values() if r["impl"] == FP8_OURS
                   and r["layout"] == "contiguous" and model in (None, r["model"])),
                  key=lambda r: (r["model"] != "Mixtral 8x7B", r["model"], r["layer"],
                                 r["tokens"]))
    out = []
    for ours in mine:
        key = (ours["model"], ours["layer"], ours["tokens"])

        def us(impl, layout="contiguous"):
            r = speed.get((*key, impl, layout))
            return f"{1e3 * r['median_ms']:,.0f}" if r else "-"
        row = {"layer": ours["layer"] if model else f"{ours['model']} {ours['layer']}",
               "tokens": ours["tokens"], "rows": ours["rows"]}
        if block:
            row["block loop µs"] = us(FP8_LOOP)
        row.update({"fast loop µs": us(FP8_FAST), "ours µs": us(FP8_OURS),
                    "ours masked µs": us(FP8_OURS, "masked"),
                    "ours TFLOP/s": f"{ours['tflops']:,.0f}",
                    "ours ÷ fast loop": (f"{ours['ratio_to_fast_loop']:.2f}"
                                         if ours.get("ratio_to_fast_loop") else "-")})
        out.append(row)
    return out


def fp8_table(model: str | None = None):
    """One model's layers (or both models') in FP8 with block scales: ours against a loop of
    cuBLASLt calls."""
    rows = fp8_rows(model)
    if not rows:
        raise ValueError(f"no FP8 {model!r} layer in the grouped results")
    return page.table(rows, title=f"{model or 'Both models'}: FP8 with block scales, BF16 out",
                      source=results.source_line(EXPERIMENT, fp8_gpu()))


def fp8_values() -> dict:
    """The numbers quoted of the grouped FP8 run."""
    gpu = fp8_gpu()
    data = results.load(EXPERIMENT, gpu)
    speed = _fp8_speed()
    ours = [r for r in speed.values() if r["impl"] == FP8_OURS and r["layout"] == "contiguous"]
    big = max(r["tokens"] for r in ours)
    ds = [r for r in ours if r["model"] == "DeepSeek-V3-like"]
    mx = [r for r in ours if r["model"] == "Mixtral 8x7B"]
    ds_many = [r["ratio_to_fast_loop"] for r in ds if r["tokens"] > 1]
    ds_one = [r["ratio_to_fast_loop"] for r in ds if r["tokens"] == 1]
    mx_decode = [r["ratio_to_fast_loop"] for r in mx if r["tokens"] < big]
    mx_pre = [r for r in mx if r["tokens"] == big]
    mx_fast_pre = [speed[(r["model"], r["layer"], big, FP8_FAST, "contiguous")] for r in mx_pre]
    read = [weights_mb(r, 1) / r["median_ms"] for r in mx if r["tokens"] <= 16]   # GB/s
    stream = roofline.measured(gpu)["read_gbps"]
    fp8_all = [r for r in data["rows"] if r.get("dtype") == "e4m3"]
    refused = [r for r in fp8_all if r["impl"] == FP8_LOOP and r["part"] == "skipped"]
    why = refused[0]["reason"] if refused else ""
    status = next((w for w in why.replace("`", " ").split() if w.startswith("CUBLAS_STATUS")),
                  why[:60])
    counted = all(COUNTERS_LABEL in r.get("kernel", "") for r in ours)
    return {
        "moe_f8_loop_note": ("with today's main loop" if counted else
                             "before its main loop changed (the speed section above)"),
        "moe_f8_gpu": data["provenance"]["gpu"],
        "moe_f8_processes": str(data["parameters"]["processes"]),
        "moe_f8_configs": str(sum(1 for cfg in _fp8_configs())),
        "moe_f8_shapes": str(len(ours)),
        "moe_f8_refusal": status,
        "moe_f8_ds_min": f"{min(ds_many):.1f}",
        "moe_f8_ds_max": f"{max(ds_many):.1f}",
        "moe_f8_ds_one": (f"{min(ds_one):.2f}" if f"{min(ds_one):.2f}" == f"{max(ds_one):.2f}"
                          else f"{min(ds_one):.2f}–{max(ds_one):.2f}"),
        # ahead where every decode row is past the loop; level or ahead where the lowest is
        # within the few percent two runs of the loop differ by (a claim tested against 3 %)
        "moe_f8_mx_decode_how": "ahead" if min(mx_decode) > 1 else "level or ahead",
        "moe_f8_mx_decode_min": f"{min(mx_decode):.2f}",
        "moe_f8_mx_decode_max": f"{max(mx_decode):.2f}",
        "moe_f8_mx_prefill_ratio_min": f"{min(r['ratio_to_fast_loop'] for r in mx_pre):.2f}",
        "moe_f8_mx_prefill_ratio_max": f"{max(r['ratio_to_fast_loop'] for r in mx_pre):.2f}",
        "moe_f8_mx_prefill_min": f"{min(r['tflops'] for r in mx_pre):,.0f}",
        "moe_f8_mx_prefill_max": f"{max(r['tflops'] for r in mx_pre):,.0f}",
        "moe_f8_mx_fast_min": f"{min(r['tflops'] for r in mx_fast_pre):,.0f}",
        "moe_f8_mx_fast_max": f"{max(r['tflops'] for r in mx_fast_pre):,.0f}",
        "moe_f8_ds_prefill_min": f"{min(r['tflops'] for r in ds if r['tokens'] == big):,.0f}",
        "moe_f8_ds_prefill_max": f"{max(r['tflops'] for r in ds if r['tokens'] == big):,.0f}",
        "moe_f8_mx_read_min": f"{min(read):,.0f}",
        "moe_f8_mx_read_max": f"{max(read):,.0f}",
        "moe_f8_mx_read_share_min": f"{100 * min(read) / stream:.0f}%",
        "moe_f8_mx_read_share_max": f"{100 * max(read) / stream:.0f}%",
        "moe_f8_stream_read": f"{stream:,.0f}",
    }


def _fp8_configs():
    from lab import grouped
    return [cfg for cfg in grouped.hopper_configs() if cfg.fp8]
