"""Hopper rung 12's stream-K (``wgmma_streamk``), the fix-up slot of
:mod:`lab.kernels.wgmma.specialized`: how a block's share of the last wave's k-slices is found,
and what its consumer warpgroups do with it.

The whole waves take whole tiles; the k-slices of the tiles left are numbered tile by tile and
cut into one contiguous share per block. A share that ends inside a tile leaves its partial sums
in the block's slot of a global workspace — ACC/4 rows of 128 16-byte vectors per consumer
warpgroup, row q holding every thread's acc[4q … 4q+3], written with ``st.global.v4.f32`` — and
sets a release flag. The block that holds a tile's last k-slice waits for the flags of the
blocks before it (acquire), copies each partial tile into its warpgroup's epilogue staging
(idle until the tile's store) with ``cp.async``, adds it, clears the flags for the next launch
and stores the tile. Each block does its highest tile first, so the partial sums a block waits
for were the first thing their writers did.

The atomic fix-up (``HopperConfig.fixup="atomic"``) keeps one slot per shared tile instead,
zero between launches: a share that ends inside a tile adds its partial sums into the tile's
slot where it lives in L2 (``red.global.add.v4.f32``) and raises the tile's counter; the
finisher waits for the count of the blocks before it, adds the slot once, zeroes it and stores
the tile.
"""
from __future__ import annotations

from numba import cuda, float32, int32, int64, uint32, uint64

from lab import hopper, ptx
from lab.kernels.wgmma.config import EPI_BOX, HopperConfig
from lab.kernels.wgmma.epilogue import epilogue_tma
from lab.kernels.wgmma.order import tile_order
from lab.kernels.wgmma.stage import zero_acc

def streamk_ops(cfg: HopperConfig, mainloop):
    """``(streamk_plan, streamk_consumer, log)`` for the specialized kernel of ``cfg``, whose
    consumers multiply with ``mainloop(acc, shared, full0, empty0, it, count, cw, leader)``.
    Without ``cfg.streamk`` the plan takes every tile whole; ``log`` writes nothing unless a
    study replaces it."""
    BM, BN, MT = cfg.bm, cfg.bn, cfg.mt
    ACC = MT * BN // 2
    CONSUMERS = cfg.consumers
    WG_ROWS = cfg.wg_rows
    EPI_BOXES = cfg.epi_boxes
    STREAMK = cfg.streamk
    tile_coords = tile_order(cfg.group_m)
    store_tile_tma = epilogue_tma(cfg)
    zero = zero_acc(ACC)
    ATOMIC = cfg.fixup == "atomic"
    Q = ACC // 4                                      # 16-byte rows of a workspace slot

    @cuda.jit(device=True, inline="always")
    def log(flags, cw, thread, n, code):
        """The trace hook: event ``code`` is the warpgroup's ``n``-th; returns n + 1 (a
        study's hook writes it down)."""
        return n + 1

    if "log" in cfg.overrides():                      # a study's trace hook
        log = cfg.overrides()["log"](cfg)             # noqa: F811

    # region: streamk
    @cuda.jit(device=True, inline="always")
    def streamk_range(block, blocks, sk_iters):
        """Block ``block``'s share [lo, hi) of the last wave's k-slices, numbered tile by tile
        (tile t of the last wave owns slices t·k_tiles … (t+1)·k_tiles − 1)."""
        lo = int32(int64(block) * sk_iters // blocks)
        hi = int32(int64(block + 1) * sk_iters // blocks)
        return lo, hi

    @cuda.jit(device=True, inline="always")
    def streamk_plan(tiles, k_tiles):
        """(tiles taken whole, k-slices shared out, this block's share [lo, hi)): every tile
        of the whole waves whole; with stream-K the rest of the tiles' k-slices shared."""
        if not STREAMK:
            return tiles, int32(0), int32(0), int32(0)
        blocks = int32(cuda.gridDim.x)
        dp_tiles = tiles // blocks * blocks
        sk_iters = (tiles - dp_tiles) * k_tiles
        lo, hi = streamk_range(int32(cuda.blockIdx.x), blocks, sk_iters)
        return dp_tiles, sk_iters, lo, hi

    @cuda.jit(device=True, inline="always")
    def slot_row(base, slot, thread):
        """Where ``thread`` keeps its partial sums in workspace slot ``slot``: the slot is
        ACC/4 rows of 128 16-byte vectors, row q holding every thread's acc[4q … 4q+3], so a
        warp's 16-byte accesses to one row cover 512 contiguous bytes."""
        return base + uint64(16) * (slot * uint64(ACC // 4 * 128) + uint64(thread))

    #: the fix-up lands another block's partial sums in the warpgroup's epilogue staging (idle
    #: until the tile's store) in this many rounds of 16-byte copies per thread
    FIX_ROUNDS = max(1, ACC * 128 * 4 // (EPI_BOXES * EPI_BOX))
    FIX_ROWS = ACC // 4 // FIX_ROUNDS

    @cuda.jit(device=True, inline="always")
    def add_partial(acc, row, stage, thread):
        """acc += the partial sums at ``row`` (another block's, in its slot). Each thread copies
        its own 16-byte vectors into ``stage`` with ``cp.async`` — FIX_ROWS copies in flight
        per thread, holding no registers while they fly, where loads into registers could
        keep only four beside ``acc`` — waits for its own copies and adds them; no other
        thread reads them, so no barrier is needed."""
        for h in range(FIX_ROUNDS):
            for qq in range(FIX_ROWS):
                ptx.cp_async_16(stage + uint32(16 * (qq * 128 + thread)),
                                row + uint64(2048 * (h * FIX_ROWS + qq)))
            ptx.cp_async_commit()
            ptx.cp_async_wait(0)
            for qq in range(FIX_ROWS):
                v = hopper.ld_shared_v4_f32(stage + uint32(16 * (qq * 128 + thread)))
                for e in range(4):
                    acc[4 * (h * FIX_ROWS + qq) + e] += v[e]

    @cuda.jit(device=True, inline="always")
    def publish(acc, base, flag0, slot, thread, bar):
        """The warpgroup's partial sums into workspace slot ``slot``, 16 bytes per instruction
        (512 bytes per warp), then its flag set — the finisher's fix-up: stored into the
        block's slot, the flag released; the atomic one: added into the shared tile's slot
        where it lives in L2 (``red.global.add``, nothing returned), its counter raised. The
        barrier orders the warpgroup's stores or adds before thread 0's release."""
        for q in range(Q):
            row = slot_row(base, slot, thread) + uint64(2048 * q)
            if ATOMIC:
                hopper.red_global_add_v4_f32(row, acc[4 * q], acc[4 * q + 1], acc[4 * q + 2],
                                             acc[4 * q + 3])
            else:
                hopper.st_global_v4_f32(row, acc[4 * q], acc[4 * q + 1], acc[4 * q + 2],
                                        acc[4 * q + 3])
        hopper.named_barrier(bar, 128)
        if thread == 0:
            if ATOMIC:
                hopper.count_arrival(flag0 + uint64(4) * slot)
            else:
                hopper.flag_release(flag0 + uint64(4) * slot)

    @cuda.jit(device=True, inline="always")
    def streamk_consumer(acc, shared, full0, empty0, it, k_tiles, cw, leader, thread, boxes,
                         c_map, work, flags, tiles, units_m, tiles_n, scale, tn):
        """This block's share of the last wave, its highest tile first. A share that ends
        inside a tile leaves its partial sums in the block's slot of the workspace and sets
        its flag (only the first segment done can; the atomic fix-up: adds them into the
        tile's slot and raises its counter); a share that holds a tile's last k-slice waits
        for the flags of the blocks before it that hold the tile's first slices, adds their
        partial sums (clearing the flags for the next launch; atomic: waits for the count and
        adds the tile's slot once) and stores the tile. Returns the pipeline's count and the
        trace's (``tn``, events logged)."""
        blocks = int32(cuda.gridDim.x)
        block = int32(cuda.blockIdx.x)
        dp_tiles, sk_iters, sk_lo, sk_hi = streamk_plan(tiles, k_tiles)
        bar = 1 + cw
        seg_end = int32(sk_hi)
        while seg_end > sk_lo:
            t = int32((seg_end - 1) // k_tiles)
            t_start = int32(t * k_tiles)
            seg_start = int32(max(sk_lo, t_start))
            block_m, block_n = tile_coords(dp_tiles + t, units_m, tiles_n)
            zero(acc)
            it = int32(mainloop(acc, shared, full0, empty0, it, seg_end - seg_start, cw,
                                leader))
            tn = log(flags, cw, thread, tn, 4)
            # (the workspace's and flags' addresses, read from the parameters where used)
            base = uint64(hopper.global_address(work))
            flag0 = uint64(hopper.global_address(flags))
            if seg_end - t_start < k_tiles:           # the tile's end is another block's
                mine = t if ATOMIC else block         # (atomic: a slot per shared tile)
                publish(acc, base, flag0, uint64(mine * CONSUMERS + cw), thread, bar)
                tn = log(flags, cw, thread, tn, 5)
            else:
                if seg_start > t_start:               # partial sums to add: the staging is
                    if thread == 0:                   # free once the last tile's stores
                        hopper.bulk_wait_read(0)      # have read it
                    hopper.named_barrier(bar, 128)
                    tn = log(flags, cw, thread, tn, 6)
                j = int32(block - 1)
                others = int32(0)
                while seg_start > t_start and j >= 0:  # the blocks with the tile's first slices
                    lo_j, hi_j = streamk_range(j, blocks, sk_iters)
                    if ATOMIC and hi_j > lo_j and hi_j > t_start:
                        others += 1                   # (atomic: counted, added up below)
                    elif hi_j > lo_j and hi_j > t_start:
                        slot = uint64(j * CONSUMERS + cw)
                        if thread == 0:
                            while hopper.flag_acquire(flag0 + uint64(4) * slot) == 0:
                                pass
                            hopper.flag_clear(flag0 + uint64(4) * slot)
                        tn = log(flags, cw, thread, tn, 7)
                        hopper.named_barrier(bar, 128)
                        add_partial(acc, slot_row(base, slot, thread), boxes, thread)
                        tn = log(flags, cw, thread, tn, 8)
                    if lo_j <= t_start:
                        break
                    j = int32(j - 1)
                if ATOMIC and others > 0:             # their sums, added up in the tile's slot
                    slot = uint64(t * CONSUMERS + cw)
                    if thread == 0:
                        while hopper.flag_acquire(flag0 + uint64(4) * slot) != others:
                            pass
                        hopper.flag_clear(flag0 + uint64(4) * slot)
                    tn = log(flags, cw, thread, tn, 7)
                    hopper.named_barrier(bar, 128)
                    row = slot_row(base, slot, thread)
                    add_partial(acc, row, boxes, thread)
                    for q in range(Q):                # the slot zeroed for the next launch (each
                        hopper.st_global_v4_f32(row + uint64(2048 * q), float32(0),
                                                float32(0), float32(0), float32(0))
                    tn = log(flags, cw, thread, tn, 8)   # thread its own vectors, read above)
                store_tile_tma(acc, boxes, c_map, block_m * BM + cw * WG_ROWS, block_n * BN,
                               thread, bar, scale)
                tn = log(flags, cw, thread, tn, 9)
            seg_end = seg_start
        return it, tn
    # endregion: streamk

    return streamk_plan, streamk_consumer, log


def streamk_producer(cfg: HopperConfig, produce):
    """``streamk_produce``: the producer's copies of this block's share of the last wave, its
    highest tile first (the order the consumers take them in), with the ring's ``produce``."""
    BN = cfg.bn
    tile_coords = tile_order(cfg.group_m)

    @cuda.jit(device=True, inline="always")
    def streamk_produce(shared, full0, empty0, a_map, b_map, it, k_tiles, sk_lo, sk_hi,
                        dp_tiles, units_m, tiles_n, rank):
        seg_end = sk_hi
        while seg_end > sk_lo:
            t = (seg_end - 1) // k_tiles
            seg_start = max(sk_lo, t * k_tiles)
            block_m, block_n = tile_coords(dp_tiles + t, units_m, tiles_n)
            it = produce(shared, full0, empty0, a_map, b_map, it, seg_start - t * k_tiles,
                         seg_end - t * k_tiles, block_m, block_n * BN, rank)
            seg_end = seg_start
        return it
    return streamk_produce
