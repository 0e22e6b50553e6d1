"""The small-M kernel's host side (its kernel needs a GPU: inline PTX): tiles by M, split plan,
what the launch copies, refusals; the registry's checks on the H200 run through `lab check`."""
from __future__ import annotations

import pytest

from lab.kernels import get_spec, small_m


@pytest.mark.parametrize("bn", small_m.WIDTHS)
@pytest.mark.parametrize("m, rows", [(1, 16), (16, 16), (17, 32), (33, 64), (65, 128),
                                     (1000, 128)])
def test_the_tile_follows_m(m, rows, bn):
    cfg = small_m.config_for(m, bn=bn)
    assert cfg.bm == rows and cfg.bn == bn and cfg.threads == 128 and cfg.validate()
    assert cfg.shared_bytes <= 100 * 1024          # at least two blocks per SM
    assert small_m.blocks_per_sm(cfg) >= 2
    assert (cfg.bm, cfg.bn) in small_m.REGISTERS


def test_blocks_per_sm_from_shared_memory_and_registers():
    assert small_m.blocks_per_sm(small_m.config_for(1)) == 3            # 72 KB each
    assert small_m.blocks_per_sm(small_m.config_for(128)) == 2          # 96 KB, 245 registers
    assert small_m.blocks_per_sm(small_m.config_for(1, bn=64)) == 5     # 40 KB each
    assert small_m.blocks_per_sm(small_m.config_for(64, bn=64)) == 3    # 64 KB each


@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (64, 4096, 14336), (128, 14336, 4096),
                                     (16, 64, 8192), (1, 4096, 128)])
@pytest.mark.parametrize("bn", small_m.WIDTHS)
def test_the_split_fills_one_wave_at_most(m, n, k, bn):
    cfg = small_m.config_for(m, bn=bn)
    s = small_m.splits_for(m, n, k, 132, bn=bn)
    assert 1 <= s <= small_m.MAX_SPLITS and s <= max(1, -(-k // small_m.BK) // 2)
    assert small_m.tiles(m, n, cfg) * s <= max(small_m.tiles(m, n, cfg),
                                           small_m.blocks_per_sm(cfg) * 132)


def test_a_bad_tile_is_refused_before_any_launch():
    for bad in (32, 256, "64"):
        with pytest.raises(ValueError, match="tile width"):
            small_m.config_for(1, bn=bad)
        with pytest.raises(ValueError, match="tile width"):
            small_m.launcher(4, bad)
    with pytest.raises(ValueError, match="tile rows"):
        small_m.launcher(4, 64, 48)


def test_tile_rows_can_be_asked_for():
    cfg = small_m.config_for(128, bn=64, bm=64)
    assert (cfg.bm, cfg.bn) == (64, 64) and small_m.tiles(128, 4096, cfg) == 128


def test_the_registered_check_covers_the_other_width_and_a_16_bit_c():
    widths = {bn for bn, _, _ in small_m.CHECK_VARIANTS}
    outs = {out for _, _, out in small_m.CHECK_VARIANTS}
    assert widths == set(small_m.WIDTHS) and outs == {"f32", "native"}
    assert (small_m.BN, small_m.DEFAULT_SPLITS, "f32") in small_m.CHECK_VARIANTS   # the registered launch
    assert get_spec("tc_small_m_fp16").check is not None


@pytest.mark.parametrize("k, splits", [(4096, 8), (4096, 9), (65, 4), (1, 3), (14336, 32)])
def test_slices_cover_k_once_and_none_is_empty(k, splits):
    chunk, slices = small_m.k_slices(k, splits)
    assert chunk % small_m.BK == 0 and 1 <= slices <= splits
    assert (slices - 1) * chunk < k <= slices * chunk


def test_a_bad_split_factor_is_refused_before_any_launch():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="split factor"):
            small_m.launcher(bad)


def test_copies_only_where_needed():
    assert "nothing copied" in small_m.code_path(1, 4096, 4096)
    assert "16x64 tiles" in small_m.code_path(1, 4096, 4096, bn=64)
    assert "K padded to 128" in small_m.code_path(5, 4096, 65)
    assert "B read in place" in small_m.code_path(127, 4099, 4096)


@pytest.mark.parametrize("bm, bn", list(small_m.CONFIGS))
def test_reading_b_in_place_fits_and_is_planned_for(bm, bn):
    """N not a multiple of 8 (K a multiple of 64): B's rows are copied as the aligned blocks
    around them (one block more per row) plus one B tile; a block still fits, and the split
    is planned for what fits of these blocks."""
    cfg = small_m.config_for(bm, bn=bn, bm=bm)
    extra = cfg.stages * cfg.bk * 16 + 2 * cfg.bk * cfg.bn      # a block per row and stage
    assert small_m.shared_bytes(cfg, True) == cfg.shared_bytes + extra
    assert small_m.shared_bytes(cfg, True) <= 227 * 1024 and small_m.blocks_per_sm(cfg, True) >= 1
    assert small_m.in_place(4099, 4096) and not small_m.in_place(4096, 4096)
    assert not small_m.in_place(4099, 4100)                  # K is padded: B is copied anyway
    assert small_m.in_place(4096, 4096, address=2) and not small_m.in_place(4096, 4100, address=2)
    s = small_m.splits_for(bm, 4099, 4096, 132, bn=bn, bm=bm)
    assert small_m.tiles(bm, 4099, cfg) * s <= max(small_m.tiles(bm, 4099, cfg),
                                               small_m.blocks_per_sm(cfg, True) * 132)


def test_registered_for_the_gpu_only():
    for name in ("tc_small_m_fp16", "tc_small_m_bf16"):
        spec = get_spec(name)
        assert not spec.simulator and spec.min_cc == (8, 0) and spec.tile == (16, 128, 64)
        assert spec.launch.splits == small_m.DEFAULT_SPLITS
