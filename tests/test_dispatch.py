"""lab.dispatch: the candidates a first call times, decided without a GPU."""
import pytest

from lab import dispatch


@pytest.mark.parametrize("m", [1, 16, 64, 128])
def test_hopper_decode_times_the_unsplit_wgmma_kernel_at_every_m(m):
    """On 9.0 a decode product (M <= SMALL_M) times the tile-table wgmma kernel on 128- and
    64-column tiles beside the small-M kernel, at every M: with 64 rows or fewer it streams B
    faster than the split small-M kernel at shapes like 64x4096x4096. Up to 64 rows its tiles
    are 64 rows tall (one consumer warpgroup), above that 128 (the rung's own: bm 0)."""
    choice = dispatch.choose(m, 4096, 4096, "float16", "float16", (9, 0), 132)
    assert choice.kernel == "tc_small_m_fp16"
    table = [c for c in choice.candidates if c.kernel == "wgmma_table_fp16"]
    rows = 64 if m <= 64 else 128
    assert sorted(c.bn for c in table) == [64, 128]
    assert {c.bm for c in table} == {64 if m <= 64 else 0}
    assert all(c.blocks == dispatch.balanced_blocks(-(-m // rows) * -(-4096 // c.bn), 132)
               for c in table)
    assert f"the tile-table wgmma kernel ({rows}-row tiles)" in str(choice)
    cfgs = [dispatch.hopper_config(c.kernel, c.blocks, c.fixup, c.bn, c.bm) for c in table]
    assert {(cfg.bm, cfg.consumers) for cfg in cfgs} == {(rows, rows // 64)}


def test_few_tiles_rank_64_row_tiles_first():
    """512³ is 8 tiles of 128×256 on 132 SMs: the menu ranks 64×64 (64 tiles) first and times
    64×128 beside it; a large square keeps the rung's 128×256."""
    small = dispatch.choose(512, 512, 512, "float16", "float16", (9, 0), 132)
    assert (small.kernel, small.bm, small.bn, small.blocks) == ("wgmma_table_fp16", 64, 64, 64)
    assert (64, 128) in {(c.bm, c.bn) for c in small.candidates}
    assert "64-row, 64-column tiles" in str(small)
    big = dispatch.choose(4096, 4096, 4096, "float16", "float16", (9, 0), 132)
    assert (big.bm, big.bn) == (0, 0) and not any(c.bm for c in big.candidates)


def test_stream_k_on_one_consumer_warpgroup_is_refused():
    from dataclasses import replace

    cfg = dispatch.hopper_config("wgmma_streamk_fp16", fixup="atomic")
    with pytest.raises(ValueError, match="stream-K is built and checked with two or more"):
        replace(cfg, consumers=1).tile(64, 128)


def test_an_fp32_c_times_rung_19_not_the_stream_k_kernel():
    choice = dispatch.choose(16, 4096, 4096, "bfloat16", "float32", (9, 0), 132)
    kernels = {c.kernel for c in choice.candidates}
    assert "wgmma_handoff_table_bf16" in kernels
    assert not any(k.startswith("wgmma_streamk") for k in kernels)


def test_before_hopper_no_wgmma_candidate():
    choice = dispatch.choose(16, 4096, 4096, "float16", "float16", (8, 0), 108)
    assert not any(c.kernel.startswith("wgmma") for c in choice.candidates)
