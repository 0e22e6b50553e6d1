"""Rungs 18 and 19's tile table (lab.kernels.wgmma.order): the grouped order of tile_order, on the
host, and the configuration's rules."""
from dataclasses import replace

import numpy as np
import pytest

from lab.kernels import wgmma as K
from lab.kernels.wgmma.order import tile_order
from lab.kernels.wgmma.order import tile_table


@pytest.mark.parametrize("m,n,group_m", [(1, 1, 8), (4096, 4096, 8), (8192, 8192, 8),
                                          (1000, 1030, 8), (2100, 4200, 16), (130, 4100, 8)])
def test_the_table_is_the_grouped_order(m, n, group_m):
    """Tile u of the table is where ``tile_order``'s device function sends tile u: the same
    row, and its column times the tile width — for every tile, edges and partial groups too."""
    cfg = replace(K.RUNG_CONFIGS["wgmma_table"], group_m=group_m)
    coords = getattr(tile_order(group_m), "py_func", tile_order(group_m))
    tiles_m, tiles_n = -(-m // cfg.bm), -(-n // cfg.bn)
    want = [(r, c * cfg.bn) for r, c in (coords(u, tiles_m, tiles_n)
                                         for u in range(tiles_m * tiles_n))]
    table = tile_table(m, n, cfg)
    assert table.dtype == np.int32 and table.size == 2 * tiles_m * tiles_n
    assert list(map(tuple, table.reshape(-1, 2).tolist())) == want
    # every tile once
    assert len(set(want)) == len(want)


def test_rungs_18_and_19_are_rungs_15_and_17_with_the_table():
    r15, r17 = K.RUNG_CONFIGS["wgmma_uniform"], K.RUNG_CONFIGS["wgmma_handoff"]
    assert K.RUNG_CONFIGS["wgmma_table"] == replace(r15, table=True)
    assert K.RUNG_CONFIGS["wgmma_handoff_table"] == replace(r17, table=True)
    assert "tile table" in K.RUNG_CONFIGS["wgmma_table"].label
    assert K.signature(K.RUNG_CONFIGS["wgmma_table"]).endswith("int32, int32[::1])")
    for bad in (dict(streamk=True), dict(cluster=2, regs=224, producer_regs=56),
                dict(persistent=False, grid=0)):
        with pytest.raises(ValueError, match="tile table"):
            replace(K.RUNG_CONFIGS["wgmma_table"], **bad).validate()


def test_a_table_too_large_for_int32_is_refused():
    with pytest.raises(ValueError, match="int32"):
        tile_table(128, 2 ** 31, K.RUNG_CONFIGS["wgmma_table"])
