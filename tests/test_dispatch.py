"""lab.dispatch: the candidates a first call times, decided without a GPU."""
import pytest

from lab import dispatch


@pytest.mark.parametrize("m", [1, 16, 64, 128])
def test_hopper_decode_times_the_unsplit_wgmma_kernel_at_every_m(m):
    """On 9.0 a decode product (M <= SMALL_M) times the tile-table wgmma kernel on 128- and
    64-column tiles beside the small-M kernel, at every M: with 64 rows or fewer it streams B
    faster than the split small-M kernel at shapes like 64x4096x4096."""
    choice = dispatch.choose(m, 4096, 4096, "float16", "float16", (9, 0), 132)
    assert choice.kernel == "tc_small_m_fp16"
    table = [c for c in choice.candidates if c.kernel == "wgmma_table_fp16"]
    assert sorted(c.bn for c in table) == [64, 128]
    assert all(c.blocks == dispatch.balanced_blocks(-(-m // 128) * -(-4096 // c.bn), 132)
               for c in table)
    assert "the tile-table wgmma kernel" in str(choice)


def test_an_fp32_c_times_rung_19_not_the_stream_k_kernel():
    choice = dispatch.choose(16, 4096, 4096, "bfloat16", "float32", (9, 0), 132)
    kernels = {c.kernel for c in choice.candidates}
    assert "wgmma_handoff_table_bf16" in kernels
    assert not any(k.startswith("wgmma_streamk") for k in kernels)


def test_before_hopper_no_wgmma_candidate():
    choice = dispatch.choose(16, 4096, 4096, "float16", "float16", (8, 0), 108)
    assert not any(c.kernel.startswith("wgmma") for c in choice.candidates)
