"""Hopper rung 6's consumers (``HopperConfig.pingpong``): the two consumer warpgroups stop
sharing a tile and take the block's tiles in turn, an *order* mbarrier passing the main loop
from one to the other, so that one stores while the other multiplies.
"""
from __future__ import annotations

from numba import cuda, float32, uint32

from lab import hopper
from lab.kernels.wgmma.config import HopperConfig
from lab.kernels.wgmma.epilogue import epilogue, epilogue_tma
from lab.kernels.wgmma.order import tile_order
from lab.kernels.wgmma.stage import stage_ops, zero_acc


def pingpong_ops(cfg: HopperConfig):
    """``pingpong_consumer``: a consumer warpgroup's whole work in the ping-pong kernel."""
    BM, BN, STAGES, MT = cfg.bm, cfg.bn, cfg.stages, cfg.mt
    STAGE_BYTES = cfg.stage_bytes
    EPI_TMA = cfg.epilogue == "tma"
    wait = cfg.overrides().get("wait", hopper.mbar_wait)   # (a study may replace it)
    tile_coords = tile_order(cfg.group_m)
    store_tile = epilogue(MT, BN)
    store_tile_tma = epilogue_tma(cfg)
    zero = zero_acc(MT * BN // 2)
    compute_stage = stage_ops(cfg)[1]

    # region: pingpong
    @cuda.jit(device=True, inline="always")
    def pingpong_consumer(acc, shared, full0, empty0, order0, C, cw, thread, leader, first,
                          step, tiles, tiles_m, tiles_n, k_tiles, boxes, c_map):
        """Consumer ``cw`` takes the block's tiles number cw, cw + 2, cw + 4, … (the producer
        loads every tile's k-slices in turn into one ring). Before its mainloop it waits on
        its *order* barrier until the other warpgroup has seen the last full stage of the tile
        before, then multiplies, hands the mainloop back, and stores while the other computes.
        (Waiting first also keeps each full-barrier wait within one phase of the barrier.)"""
        mine = order0 + uint32(8 * cw)
        other = order0 + uint32(8 * (1 - cw))
        count = (tiles - first + step - 1) // step       # tiles of this block
        for p in range(cw, count, 2):
            block_m, block_n = tile_coords(first + p * step, tiles_m, tiles_n)
            if p > 0:                                    # my turn: the other is past its loop
                wait(mine, ((p - 1) // 2) % 2)
            zero(acc)
            it = p * k_tiles                             # the ring's slice count so far
            for kt in range(k_tiles):
                s = it % STAGES
                wait(full0 + uint32(8 * s), (it // STAGES) % 2)
                compute_stage(acc, shared + uint32(s * STAGE_BYTES), 0, 1)
                hopper.wgmma_wait(1)
                if kt > 0 and leader:
                    hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
                it += 1
            if thread == 0:                              # the other's turn to multiply
                hopper.mbar_arrive(other)
            hopper.wgmma_wait(0)
            if leader:
                hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
            if EPI_TMA:                                  # rung 10: through the copy engine
                store_tile_tma(acc, boxes, c_map, block_m * BM, block_n * BN, thread, 1 + cw,
                               float32(1))
            else:
                store_tile(C, acc, block_m * BM, block_n * BN, thread)
    # endregion: pingpong
    return pingpong_consumer
