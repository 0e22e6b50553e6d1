"""The specialized kernel of Hopper rungs 4–19 and FP8, written once as a skeleton with slots.

The skeleton (:func:`build`) is what every rung shares: the shared memory carved into a ring of
stages and the epilogue's staging boxes, the mbarriers (a *full* and an *empty* one per stage,
two *order* ones, the hand-off's), one *producer* warpgroup that issues TMA copies and
*consumer* warpgroups that issue ``wgmma``, meeting only at those barriers, and the persistent
loop over tiles. What a rung changes lives in a slot, each a module of its own:

* tile order — :mod:`~lab.kernels.wgmma.order` (grouped by divisions, read from a table, or
  walked over the experts' groups of a grouped GEMM);
* producer and main loop — :mod:`~lab.kernels.wgmma.ring` (the stage ring's two loops) on
  :mod:`~lab.kernels.wgmma.stage` (one stage's copies and ``wgmma``), and
  :mod:`~lab.kernels.wgmma.promote` (FP8's promotion into FP32);
* epilogue — :mod:`~lab.kernels.wgmma.epilogue` (registers, the copy engine, store threads;
  a grouped GEMM's rows up to its group's end);
* fix-up — :mod:`~lab.kernels.wgmma.streamk` (stream-K's shared last wave);
* ping-pong consumers — :mod:`~lab.kernels.wgmma.pingpong` (Hopper rung 6's side branch).

The rungs are configurations of it (:mod:`lab.kernels.wgmma.rungs`); ``python -m lab show
<kernel>`` prints one as its configuration compiles it, other configurations' lines left out.
"""
from __future__ import annotations

from numba import cuda, float32, int32, uint8, uint32, uint64

from lab import hopper
from lab.kernels.wgmma.config import EPI_BOX, HopperConfig
from lab.kernels.wgmma.epilogue import drain_slot, epilogue_handoff, grouped_slot, store_slot
from lab.kernels.wgmma.order import group_order, order_slot
from lab.kernels.wgmma.pingpong import pingpong_ops
from lab.kernels.wgmma.promote import mainloop_slot
from lab.kernels.wgmma.ring import ring_ops
from lab.kernels.wgmma.stage import zero_acc
from lab.kernels.wgmma.streamk import streamk_ops, streamk_producer


def build(cfg: HopperConfig):
    """The kernel of ``cfg``: a producer warpgroup (TMA) and consumer warpgroups (wgmma) that
    meet only at full/empty mbarriers, with the slots ``cfg`` chooses."""
    cfg.validate()
    BM, BN, STAGES, MT = cfg.bm, cfg.bn, cfg.stages, cfg.mt
    WG_ROWS = cfg.wg_rows
    CONSUMERS = cfg.consumers
    ACC = MT * BN // 2
    REGS = cfg.regs
    PRODUCER_REGS = cfg.producer_regs
    PERSISTENT = cfg.persistent
    PINGPONG = cfg.pingpong
    EPI_TMA = cfg.epilogue == "tma"
    EPI0 = STAGES * cfg.stage_bytes              # staging boxes after the stage ring
    CLUSTER = cfg.cluster
    ELECT = cfg.elect
    HANDOFF = cfg.handoff                 # staged C handed to store threads (mbarriers)
    SLOTS = cfg.slots
    # a full and an empty mbarrier per stage; 2 "order"; a filled and a freed per hand-off slot
    BARRIERS = 2 * STAGES + 2 + (2 * CONSUMERS * SLOTS if HANDOFF else 0)
    SCALED = cfg.fp8                      # FP8: scale arguments, Bᵀ
    PART = ACC if cfg.promote else 1      # the tensor cores' partial sums, when promoting
    BLOCK = cfg.scales == "block"         # (else per-tensor scales, in the epilogue)
    CB, RA = max(1, BN // 128), 2 * MT    # B scales per tile, A scales per thread (FP8)
    SBK = cfg.bk
    # warps that hand one stage back: each consumer warp of every block of the cluster
    RELEASERS = 4 if PINGPONG else 4 * CONSUMERS * CLUSTER
    EPI_BOXES = cfg.epi_boxes             # staging boxes per consumer warpgroup
    STREAMK = cfg.streamk
    UNIFORM = cfg.uniform
    producer_tile, consumer_tile = order_slot(cfg)
    release, produce, mainloop = ring_ops(cfg)
    multiply = mainloop_slot(cfg, release, mainloop)
    store = store_slot(cfg)
    drain = drain_slot(cfg)
    issue_handoff = epilogue_handoff(cfg)[1]
    streamk_plan, streamk_consumer, log = streamk_ops(cfg, mainloop)
    streamk_produce = streamk_producer(cfg, produce)
    pingpong_consumer = pingpong_ops(cfg)
    zero = zero_acc(ACC)
    GROUPED = bool(cfg.grouped)           # groups of rows, each with its own B (table: bounds)
    EXTRA = 0 if cfg.grouped == "counts" else 1   # offsets: one more than the experts
    row_tiles, group_tile = group_order(cfg)
    store_group = grouped_slot(cfg)

    @cuda.jit(device=True, inline="always")
    def ws_body(map_a, map_b, map_c, C, k, sa, sb, work, flags, table, mmax):
        smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
        bars = cuda.shared.array(BARRIERS, dtype=uint64)
        tid = int32(cuda.threadIdx.x)
        wg = tid // 128
        if CLUSTER > 1 and hopper.cluster_nctarank() != CLUSTER:
            return                    # launched without clusters: C stays unwritten, no hang
        rank = int32(hopper.cluster_ctarank()) if CLUSTER > 1 else int32(0)
        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_tiles = (k + SBK - 1) // SBK
        tiles_m = (m + BM - 1) // BM
        if GROUPED:                                    # every group's tile rows
            tiles_m = row_tiles(table, int32(table.shape[0]) - EXTRA, mmax, m)
        tiles_n = (n + BN - 1) // BN
        # work units: CLUSTER consecutive block rows in one block column (1 tile alone)
        units_m = (tiles_m + CLUSTER - 1) // CLUSTER
        units = units_m * tiles_n
        first = int32(cuda.blockIdx.x) // CLUSTER
        step = int32(cuda.gridDim.x) // CLUSTER if PERSISTENT else units
        tiles = units                                  # (ping-pong: CLUSTER is 1)
        shared = hopper.shared_address(smem)
        full0 = hopper.shared_address(bars)
        empty0 = full0 + uint32(8 * STAGES)
        order0 = full0 + uint32(16 * STAGES)
        filled0 = order0 + uint32(16)                 # (hand-off) per consumer, per slot
        freed0 = filled0 + uint32(8 * CONSUMERS * SLOTS)
        if tid == 0:
            for s in range(STAGES):
                hopper.mbar_init(full0 + uint32(8 * s), 1)              # the producer's arrive
                hopper.mbar_init(empty0 + uint32(8 * s), RELEASERS)     # one per consumer warp
            hopper.mbar_init(order0, 1)
            hopper.mbar_init(order0 + uint32(8), 1)
            if HANDOFF:
                for s in range(CONSUMERS * SLOTS):
                    hopper.mbar_init(filled0 + uint32(8 * s), 4)        # the warps' lane 0
                    hopper.mbar_init(freed0 + uint32(8 * s), 1)         # the store thread
            hopper.fence_barrier_init()
        cuda.syncthreads()
        if CLUSTER > 1:
            hopper.cluster_sync()     # the partner's barriers exist before we multicast to it

        # region: producer
        if wg == 0:                                   # producer warpgroup: copies only
            if REGS:
                hopper.setmaxnreg_dec(PRODUCER_REGS)
            if tid == 0 or (ELECT and tid < 32):
                a_map = hopper.global_address(map_a)
                b_map = hopper.global_address(map_b)
                it = int32(0)                         # k-slices issued so far, all tiles
                # (computed here, after setmaxnreg: live across it they would be spilled)
                dp_tiles, sk_iters, sk_lo, sk_hi = streamk_plan(tiles, k_tiles)
                if GROUPED:
                    ge = int32(0)                     # the walk over the groups: expert,
                    before = int32(0)                 # and its first tile row
                    for unit in range(first, tiles, step):
                        row0, col0, end, ge, before = group_tile(unit, table, mmax, m, tiles_m,
                                                                 tiles_n, ge, before)
                        it = produce(shared, full0, empty0, a_map, b_map, it, k_tiles, row0,
                                     col0, ge * n if SCALED else ge * k_tiles)
                else:
                    for unit in range(first, dp_tiles, step):
                        block_m, col0 = producer_tile(unit, table, units_m, tiles_n, tiles_m,
                                                      rank)
                        it = produce(shared, full0, empty0, a_map, b_map, it, 0, k_tiles,
                                     block_m, col0, rank)
                if STREAMK:                           # this block's k-slices of the last wave
                    it = streamk_produce(shared, full0, empty0, a_map, b_map, it, k_tiles,
                                         sk_lo, sk_hi, dp_tiles, units_m, tiles_n, rank)
            elif HANDOFF and tid % 32 == 0 and tid < 32 * (CONSUMERS + 1):
                # lane 0 of warp 1 + cw: consumer warpgroup cw's store thread
                cw = tid // 32 - 1
                slots = uint32(cw * SLOTS * 8)
                boxes = shared + uint32(EPI0 + cw * EPI_BOXES * EPI_BOX)
                c_map = hopper.global_address(map_c)
                slot = int32(0)                       # the staging slot and its phase
                phase = int32(0)
                warm = False                          # every slot used once
                unit = int32(first)                   # (32-bit: 40 registers here)
                while unit < tiles:
                    block_m, col0 = consumer_tile(unit, table, units_m, tiles_n, tiles_m, rank)
                    slot, phase, warm = issue_handoff(boxes, filled0 + slots, freed0 + slots,
                                                      c_map, slot, phase, warm,
                                                      int32(block_m * BM + cw * WG_ROWS),
                                                      int32(col0))
                    unit = int32(unit + step)
                hopper.bulk_wait(0)                   # stores done before the block exits
        # endregion: producer
        # region: consumer
        else:                                         # consumer warpgroups: wgmma only
            if REGS:
                hopper.setmaxnreg_inc(REGS)
            cw = wg - 1
            if UNIFORM:                               # lane 0's, so the same in every lane
                cw = int32(cuda.shfl_sync(0xFFFFFFFF, cw, 0))
            thread = tid % 128
            leader = thread % 32 == 0                 # lane 0 of each warp signals "empty"
            acc = cuda.local.array(ACC, float32)
            part = cuda.local.array(PART, float32)
            ra = cuda.local.array(RA, float32)
            cb = cuda.local.array(CB, float32)
            scale = float32(1)
            if SCALED and not BLOCK:
                scale = sa[0, 0] * sb[0, 0]           # per-tensor scales, in the epilogue
            if PINGPONG:
                pingpong_consumer(acc, shared, full0, empty0, order0, C, cw, thread, leader,
                                  first, step, tiles, tiles_m, tiles_n, k_tiles,
                                  shared + uint32(EPI0 + cw * 2 * EPI_BOX),
                                  hopper.global_address(map_c))
                if EPI_TMA and thread == 0:
                    hopper.bulk_wait(0)               # stores done before the block exits
                return
            boxes = shared + uint32(EPI0 + cw * EPI_BOXES * EPI_BOX)
            c_map = hopper.global_address(map_c)
            slots = uint32(cw * SLOTS * 8)            # (hand-off) this warpgroup's barriers
            slot = int32(0)                           # (hand-off) its staging slot, phase
            phase = int32(0)
            it = int32(0)
            tn = log(flags, cw, thread, int32(0), 1)  # (events of a traced kernel)
            if GROUPED:
                ge = int32(0)
                before = int32(0)
                for unit in range(first, tiles, step):
                    row0, col0, end, ge, before = group_tile(unit, table, mmax, m, tiles_m,
                                                             tiles_n, ge, before)
                    zero(acc)
                    it = multiply(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw,
                                  leader, sa, sb, row0 + cw * WG_ROWS,
                                  col0 + ge * n if SCALED else col0, thread)  # (FP8: Bᵀ row)
                    store_group(C, acc, boxes, c_map, row0 + cw * WG_ROWS, col0, thread, cw,
                                scale, end)
            else:
                for unit in range(first, streamk_plan(tiles, k_tiles)[0], step):
                    block_m, col0 = consumer_tile(unit, table, units_m, tiles_n, tiles_m, rank)
                    zero(acc)
                    it = multiply(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw, leader,
                                  sa, sb, block_m * BM + cw * WG_ROWS, col0, thread)
                    tn = log(flags, cw, thread, tn, 2)
                    if block_m < tiles_m:
                        slot, phase = store(C, acc, boxes, c_map, filled0 + slots, freed0 + slots,
                                            block_m * BM + cw * WG_ROWS, col0, thread, cw, slot,
                                            phase, scale)
                    tn = log(flags, cw, thread, tn, 3)
            if STREAMK:
                it, tn = streamk_consumer(acc, shared, full0, empty0, it, k_tiles, cw, leader,
                                          thread, boxes, c_map, work, flags, tiles, units_m,
                                          tiles_n, scale, tn)
            drain(thread)                             # its stores done before the block exits
            log(flags, cw, thread, tn, 10)
        # endregion: consumer
        if CLUSTER > 1:
            hopper.cluster_sync()     # no block exits while its partner may still signal it

    return entry_point(cfg, ws_body)


def entry_point(cfg: HopperConfig, ws_body):
    """The kernel of ``cfg``'s argument list around ``ws_body`` (stream-K and traces: workspace
    and flags; a table of tiles; the groups of a grouped GEMM; FP8: scales, then a grouped
    GEMM's groups); the arguments
    a kernel lacks are stand-ins it never reads. One block per SM and a register cap at
    entry: what setmaxnreg needs to take effect."""
    bounds = {} if hopper.SIMULATOR else {"launch_bounds": (cfg.threads, 1)}
    if cfg.streamk or cfg.traced:                  # (a trace is written after the flags)
        @cuda.jit(**bounds)
        def wgmma_ws_sk(map_a, map_b, map_c, C, k, work, flags):
            ws_body(map_a, map_b, map_c, C, k, C, C, work, flags, map_a, int32(0))
        return wgmma_ws_sk
    if cfg.table:
        @cuda.jit(**bounds)
        def wgmma_ws_table(map_a, map_b, map_c, C, k, table):
            ws_body(map_a, map_b, map_c, C, k, C, C, C, map_a, table, int32(0))
        return wgmma_ws_table
    if cfg.grouped and cfg.fp8:
        @cuda.jit(**bounds)
        def wgmma_ws_grouped_scaled(map_a, map_b, map_c, C, k, sa, sb, groups, mmax):
            ws_body(map_a, map_b, map_c, C, k, sa, sb, C, map_a, groups, mmax)
        return wgmma_ws_grouped_scaled
    if cfg.grouped:
        @cuda.jit(**bounds)
        def wgmma_ws_grouped(map_a, map_b, map_c, C, k, groups, mmax):
            ws_body(map_a, map_b, map_c, C, k, C, C, C, map_a, groups, mmax)
        return wgmma_ws_grouped
    if cfg.fp8:
        @cuda.jit(**bounds)
        def wgmma_ws_scaled(map_a, map_b, map_c, C, k, sa, sb):
            ws_body(map_a, map_b, map_c, C, k, sa, sb, C, map_a, map_a, int32(0))
        return wgmma_ws_scaled

    @cuda.jit(**bounds)
    def wgmma_ws(map_a, map_b, map_c, C, k):
        ws_body(map_a, map_b, map_c, C, k, C, C, C, map_a, map_a, int32(0))
    return wgmma_ws
