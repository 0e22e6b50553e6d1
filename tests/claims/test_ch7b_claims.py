"""What chapter 7b's mixture-of-experts section says of the ``grouped`` results holds in them."""
from __future__ import annotations

from lab import results
from lab.chapters import ch7b


def _speed():
    return [r for r in results.rows("grouped") if r["part"] == "speed"]


def _ratios(impl, **match):
    return [r["ratio_to_loop"] for r in _speed() if r["impl"] == impl
            and all(r[k] == v for k, v in match.items())]


def test_every_timed_row_was_checked_and_passed():
    rows = results.rows("grouped")
    assert _speed() and all(r["passed"] for r in _speed())
    assert not [r for r in rows if r["part"] == "check"]


def test_grouped_beats_the_loop_on_256_experts_and_loses_on_eight():
    deepseek = _ratios("torch._grouped_mm", model="DeepSeek-V3-like")
    mixtral = _ratios("torch._grouped_mm", model="Mixtral 8x7B")
    assert len(deepseek) == len(mixtral) == 8
    assert min(deepseek) > 1 and max(mixtral) < 1
    v = ch7b.values()
    decode = _ratios("torch._grouped_mm", model="DeepSeek-V3-like", phase="decode")
    assert v["moe_ds_grouped_min"] == f"{min(decode):.1f}"
    assert float(v["moe_mx_prefill_loop_tflops"]) > float(v["moe_mx_prefill_grouped_tflops"])


def test_the_why_holds():
    """Four or so rows an expert at 128 tokens, nearly every expert touched; the loop spends
    several times an expert's read time on each; masked bmm wins at 128 tokens and loses to
    the grouped GEMM at one."""
    v = ch7b.values()
    rows, experts = int(v["moe_ds_rows_128"]), int(v["moe_ds_experts_128"])
    assert 3 <= rows / experts <= 6 and experts >= 0.9 * 256
    assert float(v["moe_ds_launch_us"]) > 3 * float(v["moe_ds_expert_read_us"])
    assert float(v["moe_ds_bmm_128"]) > 1
    assert float(v["moe_ds_bmm_1_us"].replace(",", "")) > \
        float(v["moe_ds_grouped_1_us"].replace(",", ""))


def test_what_our_grouped_kernel_did_is_what_the_page_says():
    """Ours (the Hopper kernel, both layouts) timed on every layer and token count; its ratios
    to the grouped GEMM as quoted; the shapes behind it are those named; at one token it takes
    longer than reading the active experts' weights at the roof."""
    v = ch7b.values()
    ours = [r for r in results.rows("grouped") if r["impl"] == "lab.grouped_gemm"]
    assert ours and all(r["part"] == "speed" for r in ours)
    assert all(r["kernel"].startswith(("64x", "128x")) and "grouped" in r["kernel"] for r in ours)
    contiguous = sorted(r["ratio_to_grouped_mm"] for r in ours if r["layout"] == "contiguous")
    assert len(contiguous) == int(v["moe_ours_rows"]) == 16
    assert v["moe_ours_gmm_min"] == f"{contiguous[0]:.2f}"
    assert v["moe_ours_gmm_max"] == f"{contiguous[-1]:.2f}"
    level = int(v["moe_ours_level"])
    assert level == sum(x >= 0.95 for x in contiguous) and level + int(v["moe_ours_short"]) == 16
    short = {r["tokens"] for r in ours
             if r["layout"] == "contiguous" and r["ratio_to_grouped_mm"] < 0.95}
    assert v["moe_ours_short_tokens"] == (", ".join(f"{t:,}" for t in sorted(short)) or "none")
    assert float(v["moe_ds_ours_1_us"].replace(",", "")) > \
        float(v["moe_ds_1_read_us"].replace(",", ""))

