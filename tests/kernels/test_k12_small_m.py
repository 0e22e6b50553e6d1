"""The small-M kernel's host side (its kernel needs a GPU: inline PTX): tiles by M, split plan,
what the launch copies, refusals; the registry's checks on the H200 run through `lab check`."""
from __future__ import annotations

import pytest

from lab.kernels import get_spec, k12_small_m as k12


@pytest.mark.parametrize("m, rows", [(1, 16), (16, 16), (17, 32), (33, 64), (65, 128),
                                     (1000, 128)])
def test_the_tile_follows_m(m, rows):
    cfg = k12.config_for(m)
    assert cfg.bm == rows and cfg.threads == 128 and cfg.validate()
    assert cfg.shared_bytes <= 100 * 1024          # at least two blocks per SM


@pytest.mark.parametrize("k, splits", [(4096, 8), (4096, 9), (65, 4), (1, 3), (14336, 32)])
def test_slices_cover_k_once_and_none_is_empty(k, splits):
    chunk, slices = k12.plan(k, splits)
    assert chunk % k12.BK == 0 and 1 <= slices <= splits
    assert (slices - 1) * chunk < k <= slices * chunk


def test_a_bad_split_factor_is_refused_before_any_launch():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="split factor"):
            k12.launcher(bad)


def test_copies_only_where_needed():
    assert "nothing copied" in k12.code_path(1, 4096, 4096)
    assert "K padded to 128" in k12.code_path(5, 4096, 65)
    assert "padded to 4104" in k12.code_path(127, 4099, 4096)


def test_registered_for_the_gpu_only():
    for name in ("tc_small_m_fp16", "tc_small_m_bf16"):
        spec = get_spec(name)
        assert not spec.simulator and spec.min_cc == (8, 0) and spec.tile == (16, 128, 64)
        assert spec.launch.splits == k12.DEFAULT_SPLITS
