"""Hopper — ``wgmma`` from shared memory, TMA copies, mbarriers, warp specialization.

Chapter 5's best kernel (:mod:`lab.kernels.k08_tc_pipeline`) feeds ``mma.sync`` — a warp-wide
16×8×16 product whose operands must first be brought from shared memory into registers with
``ldmatrix`` — from a ``cp.async`` pipeline that every thread takes part in. Hopper changes
both halves (instructions in :mod:`lab.hopper`):

* **wgmma** is issued by a *warpgroup* (4 warps), multiplies 64×N×16 (N up to 256) per
  instruction, reads A and B straight from shared memory through matrix descriptors, and runs
  asynchronously: the threads only wait for it when they need the accumulators or the stage.
* **TMA** (the bulk tensor copy engine) copies a whole tile, swizzled, zero-filled at the edges,
  on one thread's request, and reports the bytes that arrived to an **mbarrier**.

The rungs, one change each (every rung FP16 and BF16; ``k`` = 64 per stage; 128B swizzle):

1. ``wgmma_cpasync`` — one warpgroup, 128×128 block tile, chapter 5's cp.async pipeline (4
   stages) writing the 128B-swizzled layout; ldmatrix + mma.sync replaced by 2 × 4
   ``wgmma.m64n128k16`` per stage. Edges: the launch pads A and B to the tile, like chapter 5.
2. ``wgmma_tma`` — the copies become TMA: thread 0 asks for one A box and two B boxes per
   stage, each stage has a *full* mbarrier the warpgroup waits on. Edges: TMA zero-fills;
   only a row pitch that is not a multiple of 16 bytes needs a pad (K or N not a multiple of 8).
3. ``wgmma_2wg`` — a 128×256 tile for two warpgroups, each 64×256 (``wgmma.m64n256k16``): twice
   the FLOP per byte of shared memory and of global memory per block.
4. ``wgmma_ws`` — warp specialization: a third, *producer* warpgroup only issues TMA; the two
   consumer warpgroups only compute. *Empty* mbarriers hand stages back, so no block-wide
   barrier remains in the loop and a consumer keeps one wgmma group in flight while it
   releases the previous stage. ``setmaxnreg`` moves registers from the producer (40) to the
   consumers (232).
5. ``wgmma_persistent`` — one block per SM walks the tiles (grouped order, for L2): the
   producer fills the next tile's stages while the consumers store the last tile's results.
6. ``wgmma_pingpong`` — the two consumer warpgroups stop sharing a tile: each owns a whole
   128×128 tile (two ``m64n128k16`` per k-step), and they take the block's tiles in turn. The
   stage ring is consumed in tile order, and an *order* mbarrier passes the mainloop from one
   warpgroup to the other, so while one warpgroup stores its results the other is already
   multiplying: the tensor cores no longer wait for the epilogue. 6 stages of 32 KB.
7. ``wgmma_tmastore`` — rung 5 with its epilogue through shared memory: each consumer
   warpgroup writes its accumulators, 64×32 float32 at a time, into one of two 8 KB
   128B-swizzled staging boxes (8-byte stores, no bank conflicts), fences them for the async
   proxy, and one thread hands each box to the copy engine (``cp.async.bulk.tensor`` store,
   ``bulk_group``); it waits only until the box two back has been *read*. C leaves as whole
   coalesced 128-byte rows while the warpgroup is already in the next tile's main loop; the
   copy engine clips rows and columns outside C.
8. ``wgmma_cluster`` — rung 7 in clusters of 2 blocks that own vertically adjacent tiles
   (same B columns): each block loads its A box and half of the B boxes, *multicast* into both
   blocks' shared memory, so the L2 → SM traffic for B halves. A stage is free only when the
   consumers of both blocks have released it: every consumer warp arrives on the empty barrier
   of both blocks (``mapa`` + remote ``mbarrier.arrive``). A cluster barrier after the barrier
   inits (no multicast into a block whose barriers do not exist yet) and one before exit (no
   block leaves while its partner may still signal it). Launched through ``cuLaunchKernelEx``
   with a cluster dimension (:func:`lab.hopper.launch_cluster`).
9. ``wgmma_out16`` — rung 8 with C rounded to the input type (FP16/BF16, as ``torch.mm``
   returns it) in the epilogue: 64 columns per 128-byte box, half the bytes stored.
10. ``wgmma_tile16`` — rung 7 (no cluster) with a 16-bit C staged a *whole tile* at a time:
    each consumer warpgroup has four 8 KB staging boxes (its 64×256 tile), so the epilogue
    waits once (for the previous tile's stores to have been read) and meets at two barriers
    per tile, not a wait and two barriers per box; 3 stages make room (4 stages and 64 KB of
    staging do not fit).
11. ``wgmma_grid128`` — rung 10 on 128 blocks instead of one per SM (132): 4096³'s 512 tiles
    and 8192³'s 2048 are then whole waves of 4 and 16, and a wave covers one half (8192³) or
    one whole (4096³) group of the grouped tile order.
12. ``wgmma_streamk`` — rung 10 (132 blocks) with stream-K for the last wave: whole waves take
    whole tiles, the k-slices of the tiles left are shared evenly among all blocks (every SM,
    however few the tiles), and a tile's partial sums meet in a global workspace, each slot
    with a release/acquire flag (:mod:`lab.kernels.k09_streamk`).
13. ``wgmma_lean`` — rung 11 with a lean main loop: the stage ring's slot and phase kept as
    32-bit counters that wrap (one division per tile), and each ``wgmma``'s two descriptors a
    constant added to the low word of the k-slice's two (built once per k-slice).
14. ``wgmma_ring`` — the best with an FP32 C: rung 7 on 128 blocks in 3 stages, with rung 13's
    main loop, its C staged through a ring of four 8 KB boxes per consumer warpgroup (one
    barrier per box: before it the issuing thread waits until the *next* box has been read).
15. ``wgmma_uniform`` — rung 13 with the consumers' warpgroup index read from lane 0
    (``shfl.sync``): the compiler then knows it is one value per warp and builds the
    descriptors in uniform registers, without moving them there from ordinary ones; and the
    k-slice loop counted in 32 bits. 49 SASS instructions per k-slice instead of 67.
16. ``wgmma_ring_uniform`` — rung 14 (FP32 C) with rung 15's changes.
17. ``wgmma_handoff`` — rung 16 with its C handed to store threads: each consumer warp
    writes its rows of a staging box and arrives on the box's *filled* mbarrier; a thread of
    the producer warpgroup (one per consumer warpgroup) waits for it, issues the TMA store and
    arrives on the box's *freed* mbarrier once the store has read it. The consumer warps no
    longer meet at a named barrier per box, and no consumer thread waits for the copy engine.
18. ``wgmma_table`` — rung 15 with each tile's row and first column read from a table that
    the launcher computes once per shape (:mod:`lab.kernels.k09_table`), instead of found
    between tiles by the grouped order's 64-bit divisions (a call of a division routine each).
19. ``wgmma_handoff_table`` — rung 17 (FP32 C) with the same table, read by its store threads
    too.

Parameters of the specialized kernel that the ``hopper`` experiment sweeps (FP16): ``group_m``
(block rows per L2 group), ``wait_depth`` (wgmma groups a consumer keeps in flight before it
releases a stage: 1 in every rung), ``elect`` (the producer warp runs the loop and
``elect.sync`` picks the lane that issues), ``regs``/``producer_regs`` (setmaxnreg), ``store``
(the epilogue's staging: two boxes in turn, or the whole tile), ``grid`` (a cap on the blocks of
a persistent launch). More than 4 stages of 128×256×64 do not fit: 48 KB each, 227 KB of shared
memory per block.

Every launch: ``launch(A, B, C)`` with device arrays; C (M×N float32) is written only inside
``row < M, col < N``.

Input types (``kind``): ``f16`` and ``bf16`` for the rungs; ``e4m3`` and ``e5m2`` (FP8, uint8
bits) for the specialized kernel with the TMA-store epilogue, which then reads Bᵀ (FP8
``wgmma`` takes both operands K-major), takes 128 k per stage, and has the parameters ``out``
(FP32 or BF16 result), ``scales`` (per-tensor, in the epilogue, or 1×128 / 128×128 blocks at
each promotion) and ``promote`` (partial sums moved into FP32 registers every ``promote`` k):
:mod:`lab.kernels.k09_fp8`.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import cuda, float32, int32, uint8, uint32, uint64

from lab import convert, hopper
from lab import enqueue
from lab.kernels import KernelSpec
from lab.kernels.k07_tensor_core import pad_inputs, pad_into, pad_operand
from lab.kernels.k09_epilogue import epilogue, epilogue_handoff, epilogue_tma, epilogue_vector
from lab.kernels.k09_first import build_cpasync, build_tma
from lab.kernels.k09_parts import (BK, EPI_BOX, OUT_BYTES, SIGNATURES, HopperConfig, stage_ops,
                                   tile_order, zero_acc)
from lab.kernels.k09_ring import ring_ops
from lab.kernels import k09_table
from lab.kernels.k09_streamk import flag_words, streamk_ops


# ----------------------------------------------------------------------------- rungs 4-19

def build_ws(cfg: HopperConfig):
    """Rungs 4–19: a producer warpgroup (TMA) and consumer warpgroups (wgmma) that meet only
    at full/empty mbarriers; optionally setmaxnreg, a persistent tile loop, ping-pong
    consumers (a whole tile each, in turn), an epilogue through shared memory and TMA
    stores (issued by the consumers, or by store threads of the producer warpgroup), stream-K,
    and clusters whose blocks multicast the B tile to each other."""
    cfg.validate()
    BM, BN, STAGES, MT, GROUP_M = cfg.bm, cfg.bn, cfg.stages, cfg.mt, cfg.group_m
    STAGE_BYTES = cfg.stage_bytes
    WG_ROWS = cfg.wg_rows
    CONSUMERS = cfg.consumers
    ACC = MT * BN // 2
    REGS = cfg.regs
    PRODUCER_REGS = cfg.producer_regs
    PERSISTENT = cfg.persistent
    PINGPONG = cfg.pingpong
    EPI_TMA = cfg.epilogue == "tma"
    EPI0 = STAGES * STAGE_BYTES                    # staging boxes after the stage ring
    CLUSTER = cfg.cluster
    DEPTH = cfg.wait_depth
    ELECT = cfg.elect
    wait = hopper.mbar_wait_sleep if cfg.sleep else hopper.mbar_wait
    HANDOFF = cfg.handoff                 # staged C handed to store threads (mbarriers)
    SLOTS = cfg.slots
    # a full and an empty mbarrier per stage; 2 "order"; hand-off: a filled and a freed
    # mbarrier per staging slot of each consumer warpgroup
    BARRIERS = 2 * STAGES + 2 + (2 * CONSUMERS * SLOTS if HANDOFF else 0)
    SCALED = cfg.fp8                      # FP8: scale arguments, Bᵀ
    PROMOTE = cfg.promote // cfg.bk       # stages between promotions to FP32; 0 = never
    PART = ACC if PROMOTE else 1          # the tensor cores' partial sums, when promoting
    BLOCK = cfg.scales == "block"
    CB = max(1, BN // 128)                # B scales per tile (one per 128 columns)
    RA = 2 * MT                           # A scales per thread (two rows per m64 tile)
    SBK = cfg.bk
    # warps that hand one stage back: each consumer warp of every block of the cluster
    RELEASERS = 4 if PINGPONG else 4 * CONSUMERS * CLUSTER
    tile_coords = tile_order(GROUP_M)
    store_tile = epilogue(MT, BN)
    store_tile_tma = epilogue_tma(cfg)
    store_tile_vector = epilogue_vector(cfg, store_tile)
    EPI_VECTOR = cfg.epilogue == "vector"
    WARP_STORE = cfg.store == "warp"          # (every warp's lane 0 issues its stores)
    EPI_BOXES = cfg.epi_boxes             # staging boxes per consumer warpgroup
    STREAMK = cfg.streamk
    stage_handoff, issue_handoff = epilogue_handoff(cfg)
    zero = zero_acc(ACC)
    load_stage, compute_stage = stage_ops(cfg)

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

    # region: promotion
    # region: promotion_scales
    @cuda.jit(device=True, inline="always")
    def block_scales(ra, cb, sa, sb, row0, col0, kb, thread):
        """This thread's A scales of k-block ``kb`` (its 2·MT rows; 1×128 blocks) and the
        tile's B scales (one per 128 columns; 128×128 blocks). Rows past M read the last."""
        warp = thread // 32
        lane = thread % 32
        for mi in range(MT):
            for half in range(2):
                r = min(row0 + mi * 64 + 16 * warp + lane // 4 + 8 * half, sa.shape[0] - 1)
                ra[2 * mi + half] = sa[r, kb]
        for c in range(CB):
            cb[c] = sb[min(col0 // 128 + c, sb.shape[0] - 1), kb]

    @cuda.jit(device=True, inline="always")
    def promote(acc, part, ra, cb):
        """FP32 accumulators += the tensor cores' partial sums (times the block scales)."""
        for mi in range(MT):
            for j in range(BN // 8):
                for half in range(2):
                    i = mi * (BN // 2) + 4 * j + 2 * half
                    if BLOCK:
                        scale = ra[2 * mi + half] * cb[j // 16]
                        acc[i] += part[i] * scale
                        acc[i + 1] += part[i + 1] * scale
                    else:
                        acc[i] += part[i]
                        acc[i + 1] += part[i + 1]
    # endregion: promotion_scales

    @cuda.jit(device=True, inline="always")
    def mainloop_promoted(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw, leader,
                          sa, sb, row0, col0, thread):
        """One tile's main loop with promotion: the tensor cores accumulate PROMOTE stages
        into ``part`` (the first k-step of each interval overwrites it), then the warpgroup
        waits for them, hands back every stage it holds and adds ``part`` into the FP32
        ``acc`` — with the block scales of that k-block when scaling by blocks. The other
        consumer warpgroup's wgmma keep the tensor cores busy meanwhile."""
        held = it                                 # oldest slice not yet handed back
        for kt in range(k_tiles):
            s = it % STAGES
            wait(full0 + uint32(8 * s), (it // STAGES) % 2)
            compute_stage(part, shared + uint32(s * STAGE_BYTES), cw,
                          0 if kt % PROMOTE == 0 else 1)
            # each branch hands back its own stages: were the promotion after the branches
            # join, ptxas would wait for every wgmma at the join, in every stage
            if kt % PROMOTE == PROMOTE - 1 or kt == k_tiles - 1:
                if BLOCK:
                    block_scales(ra, cb, sa, sb, row0, col0, kt, thread)
                hopper.wgmma_wait(0)
                while held <= it:
                    release(empty0 + uint32(8 * (held % STAGES)), leader)
                    held += 1
                promote(acc, part, ra, cb)
            else:
                hopper.wgmma_wait(DEPTH)
                while held < it + 1 - DEPTH:
                    release(empty0 + uint32(8 * (held % STAGES)), leader)
                    held += 1
            it += 1
        return it

    # endregion: promotion

    release, produce, mainloop = ring_ops(cfg)
    UNIFORM = cfg.uniform
    TABLE = cfg.table                     # rung 18: each tile's row and column from a table
    streamk_plan, streamk_consumer, log = streamk_ops(cfg, mainloop)

    # One block per SM and a register cap at entry: what setmaxnreg needs to take effect.
    bounds = {} if hopper.SIMULATOR else {"launch_bounds": (cfg.threads, 1)}

    @cuda.jit(device=True, inline="always")
    def ws_body(map_a, map_b, map_c, C, k, sa, sb, work, flags, table):
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
                for unit in range(first, dp_tiles, step):
                    if TABLE:
                        block_m = table[2 * unit]
                        col0 = table[2 * unit + 1]
                    else:
                        unit_m, block_n = tile_coords(unit, units_m, tiles_n)
                        # a block row past M (odd tile rows, cluster 2) reloads the last one
                        block_m = min(unit_m * CLUSTER + rank, tiles_m - 1)
                        col0 = block_n * BN
                    it = produce(shared, full0, empty0, a_map, b_map, it, 0, k_tiles,
                                 block_m, col0, rank)
                if STREAMK:                           # this block's k-slices of the last wave
                    seg_end = sk_hi
                    while seg_end > sk_lo:
                        t = (seg_end - 1) // k_tiles
                        seg_start = max(sk_lo, t * k_tiles)
                        block_m, block_n = tile_coords(dp_tiles + t, units_m, tiles_n)
                        it = produce(shared, full0, empty0, a_map, b_map, it,
                                     seg_start - t * k_tiles, seg_end - t * k_tiles,
                                     block_m, block_n * BN, rank)
                        seg_end = seg_start
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
                    if TABLE:
                        block_m = table[2 * unit]
                        col0 = table[2 * unit + 1]
                    else:
                        block_m, block_n = tile_coords(unit, units_m, tiles_n)
                        col0 = block_n * BN
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
            for unit in range(first, streamk_plan(tiles, k_tiles)[0], step):
                if TABLE:
                    block_m = table[2 * unit]
                    col0 = table[2 * unit + 1]
                else:
                    unit_m, block_n = tile_coords(unit, units_m, tiles_n)
                    block_m = unit_m * CLUSTER + rank
                    col0 = block_n * BN
                zero(acc)
                if PROMOTE:
                    it = mainloop_promoted(acc, part, ra, cb, shared, full0, empty0, it,
                                           k_tiles, cw, leader, sa, sb,
                                           block_m * BM + cw * WG_ROWS, col0, thread)
                else:
                    it = mainloop(acc, shared, full0, empty0, it, k_tiles, cw, leader)
                tn = log(flags, cw, thread, tn, 2)
                if block_m < tiles_m:
                    if HANDOFF:
                        slot, phase = stage_handoff(acc, boxes, filled0 + slots,
                                                    freed0 + slots, thread, slot, phase, scale)
                    elif EPI_TMA:
                        store_tile_tma(acc, boxes, c_map, block_m * BM + cw * WG_ROWS,
                                       col0, thread, 1 + cw, scale)
                    elif EPI_VECTOR:
                        store_tile_vector(C, acc, block_m * BM + cw * WG_ROWS, col0, thread)
                    else:
                        store_tile(C, acc, block_m * BM + cw * WG_ROWS, col0, thread)
                tn = log(flags, cw, thread, tn, 3)
            if STREAMK:
                it, tn = streamk_consumer(acc, shared, full0, empty0, it, k_tiles, cw, leader,
                                          thread, boxes, c_map, work, flags, tiles, units_m,
                                          tiles_n, scale, tn)
            if EPI_TMA and not HANDOFF and (thread == 0 or (WARP_STORE and thread % 32 == 0)):
                hopper.bulk_wait(0)                   # stores done before the block exits
            log(flags, cw, thread, tn, 10)
        # endregion: consumer
        if CLUSTER > 1:
            hopper.cluster_sync()     # no block exits while its partner may still signal it

    @cuda.jit(**bounds)
    def wgmma_ws(map_a, map_b, map_c, C, k):
        ws_body(map_a, map_b, map_c, C, k, C, C, C, map_a, map_a)  # (no scales, stream-K)

    @cuda.jit(**bounds)
    def wgmma_ws_scaled(map_a, map_b, map_c, C, k, sa, sb):
        ws_body(map_a, map_b, map_c, C, k, sa, sb, C, map_a, map_a)

    @cuda.jit(**bounds)
    def wgmma_ws_sk(map_a, map_b, map_c, C, k, work, flags):
        ws_body(map_a, map_b, map_c, C, k, C, C, work, flags, map_a)

    @cuda.jit(**bounds)
    def wgmma_ws_table(map_a, map_b, map_c, C, k, table):
        ws_body(map_a, map_b, map_c, C, k, C, C, C, map_a, table)

    if STREAMK or cfg.trace:                       # (a trace is written after the flags)
        return wgmma_ws_sk
    if TABLE:
        return wgmma_ws_table
    return wgmma_ws_scaled if SCALED else wgmma_ws


# ----------------------------------------------------------------------------- launching

_BUILT: dict = {}


def kernel_for(cfg: HopperConfig):
    """The (cached) kernel for ``cfg``."""
    if cfg not in _BUILT:
        if cfg.loader == "cpasync":
            _BUILT[cfg] = build_cpasync(cfg)
        elif cfg.producer:
            _BUILT[cfg] = build_ws(cfg)
        else:
            _BUILT[cfg] = build_tma(cfg)
    return _BUILT[cfg]


def signature(cfg: HopperConfig) -> str:
    if cfg.loader == "cpasync":
        return SIGNATURES["cpasync"][cfg.kind]
    if cfg.fp8:
        return SIGNATURES["fp8"].format(out="uint16" if cfg.out == "bf16" else "float32")
    if cfg.streamk or cfg.trace:                     # C, then the workspace (float32)
        return SIGNATURES["ws_sk"].replace("float32[:, ::1], int32,",
                                           f"{OUT_ARRAY[cfg.out]}[:, ::1], int32,", 1)
    if cfg.table:                                    # C, then the table of tiles
        return SIGNATURES["ws_table"].replace("float32", OUT_ARRAY[cfg.out], 1)
    if cfg.producer and cfg.out != "f32":             # 16-bit C (BF16 as uint16 bits)
        return SIGNATURES["ws"].replace("float32", OUT_ARRAY[cfg.out])
    return SIGNATURES["ws"] if cfg.producer else SIGNATURES["tma"]


#: The array type of C for each output type (BF16 travels as uint16 bits).
OUT_ARRAY = {"f32": "float32", "f16": "float16", "bf16": "uint16"}


def require_hopper() -> None:
    """RuntimeError unless the current GPU has compute capability 9.x (wgmma, TMA)."""
    cc = cuda.get_current_device().compute_capability
    if cc[0] != 9:
        raise RuntimeError(f"the Hopper kernels need compute capability 9.0 (sm_90a); this GPU "
                           f"is {cc[0]}.{cc[1]}")


_SM_COUNT: dict = {}


def _sm_count() -> int:
    dev = cuda.get_current_device()
    if dev.id not in _SM_COUNT:
        _SM_COUNT[dev.id] = int(dev.MULTIPROCESSOR_COUNT)
    return _SM_COUNT[dev.id]


def tma_operands(A, B, cfg: HopperConfig):
    """(map_a, map_b, K, keep): tensor maps for A (M×K) and B (K×N; FP8: Bᵀ, N×K), after
    padding K and N (FP8: K) when their row pitch is not a multiple of 16 bytes (TMA's
    rule); ``keep`` holds the padded arrays alive while the kernel runs."""
    if cfg.fp8:
        kp = -(-A.shape[1] // 16) * 16
        a = pad_operand(A, A.shape[0], kp, "A")
        b = pad_operand(B, B.shape[0], kp, "B")
        map_a = hopper.tensor_map_2d(a, cfg.bm, cfg.bk, dtype_name="uint8")
        map_b = hopper.tensor_map_2d(b, cfg.bn // cfg.cluster, cfg.bk, dtype_name="uint8")
        return map_a, map_b, kp, (a, b)
    a, b = pad_inputs(A, B, 1, 8, 8) if (A.shape[1] % 8 or B.shape[1] % 8) else (A, B)
    name = "bfloat16" if cfg.kind == "bf16" else "float16"
    map_a = hopper.tensor_map_2d(a, cfg.bm, 64, dtype_name=name)
    map_b = hopper.tensor_map_2d(b, BK, 64, dtype_name=name)
    return map_a, map_b, int(a.shape[1]), (a, b)


def scale_shapes(cfg: HopperConfig, m: int, n: int, k: int) -> tuple[tuple, tuple]:
    """The shapes of the scale arrays of an FP8 launch at M×N×K: (1, 1) each for per-tensor
    scales; for block scales one per 1×128 block of A, (M, ⌈K/128⌉), and one per 128×128
    block of Bᵀ, (⌈N/128⌉, ⌈K/128⌉)."""
    if cfg.scales == "tensor":
        return (1, 1), (1, 1)
    kb = -(-k // 128)
    return (m, kb), (-(-n // 128), kb)


def launcher(cfg: HopperConfig):
    """``launch(A, B, C)`` for ``cfg``; FP8: ``launch(A, Bt, C, sa, sb)`` with A (M×K) and
    Bt (N×K, B transposed) as uint8 bits, C float32 or (``out="bf16"``) uint16 bits, and the
    float32 scales of :func:`scale_shapes`: C = (sa·A)·(sb·B) with the scales expanded over
    their blocks."""
    cfg.validate()
    dynamic = cfg.shared_bytes
    scratch: dict = {}                  # stream-K: blocks -> (workspace, flags), kept

    def streamk_scratch(blocks: int):
        """The workspace (a partial 64×BN tile per consumer warpgroup and block, float32; zero
        for the atomic fix-up, whose finishers zero each slot again after reading it) and the
        flags (int32, zero; each reader clears the one it read) of a stream-K launch."""
        if blocks not in scratch:
            acc = cfg.mt * cfg.bn // 2
            words = flag_words(blocks, cfg.consumers, cfg.trace)
            # (traced without stream-K: only the flags and the trace after them are used)
            shape = (blocks * cfg.consumers * acc if cfg.streamk else 1, 128)
            work = (cuda.to_device(np.zeros(shape, np.float32)) if cfg.fixup == "atomic"
                    else cuda.device_array(shape, np.float32))
            scratch[blocks] = (work, cuda.to_device(np.zeros(words, np.int32)))
        return scratch[blocks]

    tables: dict = {}                   # rung 18: (m, n) -> its table of tiles, on the device

    def tile_table(m: int, n: int):
        if (m, n) not in tables:
            tables[(m, n)] = cuda.to_device(k09_table.tile_table(m, n, cfg))
        return tables[(m, n)]

    def launch(A, B, C, sa=None, sb=None) -> None:
        require_hopper()
        if cfg.fp8:
            want = scale_shapes(cfg, C.shape[0], C.shape[1], A.shape[1])
            for label, x, shape in (("sa", sa, want[0]), ("sb", sb, want[1])):
                if x is None or tuple(x.shape) != shape:
                    raise ValueError(f"{cfg.scales} scales: {label} must be a float32 device "
                                     f"array of shape {shape}, got "
                                     f"{None if x is None else tuple(x.shape)}")
        kernel = kernel_for(cfg)
        hopper.allow_dynamic_shared(kernel, signature(cfg), dynamic)
        m, n = C.shape
        if cfg.loader == "cpasync":
            a, b = pad_inputs(A, B, cfg.bm, cfg.bn, BK)
            blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic, (a, b, C))
            return
        map_a, map_b, k, keep = tma_operands(A, B, cfg)
        tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
        if not cfg.producer:
            blocks = min(tiles, _sm_count()) if cfg.persistent else tiles
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic,
                          (map_a, map_b, C, np.int32(k)))
            launch.keep = (map_a, map_b, keep)    # alive until the next call (async launch)
            return
        out = C
        if cfg.epilogue == "tma":
            # the TMA store needs a 16-byte row pitch: an N that is not a multiple of 4
            # float32 (8 BF16) goes through a wider output, copied back after
            per = 16 // OUT_BYTES[cfg.out]
            if n % per:
                out = cuda.device_array((m, n + (-n) % per), dtype=C.dtype)
            map_c = hopper.tensor_map_2d(out, cfg.epi_rows, cfg.epi_cols,
                                         dtype_name={"bf16": "bfloat16", "f16": "float16"}
                                         .get(cfg.out, "float32"))
        else:
            map_c = map_a                         # not read
        args = (map_a, map_b, map_c, out, np.int32(k))
        if cfg.fp8:
            args += (sa, sb)
        units = -(-m // (cfg.bm * cfg.cluster)) * -(-n // cfg.bn)
        if cfg.cluster == 1:
            blocks = min(units, _sm_count()) if cfg.persistent else units
            blocks = min(blocks, cfg.grid) if cfg.grid else blocks
            if cfg.streamk:
                # every SM takes a share of the k-slices, however few the tiles (a decode
                # shape's 16 tiles on 132 SMs: a split-K over all of them), at most one
                # block per k-slice and at most cfg.grid blocks
                blocks = min(_sm_count(), units * -(-k // BK), cfg.grid or _sm_count())
            if cfg.streamk or cfg.trace:
                args += streamk_scratch(blocks)
            if cfg.table:
                args += (tile_table(m, n),)
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic, args)
        else:
            clusters = units
            if cfg.persistent:
                clusters = min(units, hopper.max_active_clusters(
                    kernel, signature(cfg), cfg.threads, dynamic, cfg.cluster))
                if cfg.grid:
                    clusters = min(clusters, cfg.grid // cfg.cluster)
            hopper.launch_cluster(kernel, signature(cfg), clusters * cfg.cluster, cfg.threads,
                                  dynamic, args, cfg.cluster)
        if out is not C:
            pad_into(out, C)              # cropped back to C's columns
        launch.keep = (map_a, map_b, map_c, out, keep)   # alive until the next call

    run = enqueue.memo(launch)      # a repeated call replays its launch plans (lab.enqueue)
    run.scratch = scratch           # stream-K: blocks -> (workspace, flags), for a trace
    return run


def make_config(**changes) -> HopperConfig:
    return HopperConfig(**changes).validate()


#: The rungs; each adds one idea to the one before (FP16 here, BF16 the same with kind="bf16").
#: Rungs 7 and 8 build on rung 5, the best before them; rung 6, ping-pong, is a side branch.
_PERSISTENT = HopperConfig(bm=128, bn=256, stages=4, consumers=2, producer=True, regs=232,
                           persistent=True)
RUNG_CONFIGS = {
    "wgmma_cpasync": HopperConfig(loader="cpasync", bm=128, bn=128, stages=4),
    "wgmma_tma": HopperConfig(bm=128, bn=128, stages=4),
    "wgmma_2wg": HopperConfig(bm=128, bn=256, stages=4, consumers=2),
    "wgmma_ws": HopperConfig(bm=128, bn=256, stages=4, consumers=2, producer=True, regs=232),
    "wgmma_persistent": _PERSISTENT,
    "wgmma_pingpong": HopperConfig(bm=128, bn=128, stages=6, consumers=2, producer=True,
                                   regs=232, persistent=True, pingpong=True),
    "wgmma_tmastore": replace(_PERSISTENT, epilogue="tma"),
    # setmaxnreg 224/56: the cluster producer's loop needs more than 40 registers (it spilled)
    "wgmma_cluster": replace(_PERSISTENT, epilogue="tma", cluster=2, regs=224,
                             producer_regs=56),
}
#: Rung 9: rung 8 with C rounded to the input type in the epilogue (as torch.mm returns it):
#: half the bytes through the staging boxes and the TMA store.
RUNG_CONFIGS["wgmma_out16"] = replace(RUNG_CONFIGS["wgmma_cluster"], out="f16")
#: Rung 10: rung 7 (no cluster: at 4096³ rung 7 with a 16-bit C measured ahead of rung 9) with
#: a 16-bit C staged a whole tile at a time — one wait and two barriers per tile instead of a
#: wait and two barriers per 8 KB box — in 3 stages (4 stages and 32 KB of staging per
#: consumer warpgroup do not fit).
RUNG_CONFIGS["wgmma_tile16"] = replace(RUNG_CONFIGS["wgmma_tmastore"], out="f16", stages=3,
                                       store="tile")
#: Rung 11: rung 10 on a grid of 128 blocks, not one per SM (132): 4096³'s 512 tiles and
#: 8192³'s 2048 are then whole waves, and each wave one half or one whole group of the tile
#: order.
RUNG_CONFIGS["wgmma_grid128"] = replace(RUNG_CONFIGS["wgmma_tile16"], grid=128)
#: Rung 12: rung 10 (one block per SM) with stream-K for the last wave: the whole waves take
#: whole tiles, the tiles left are shared out by k-slices evenly among all blocks, and the block
#: that holds a tile's last k-slices adds the others' partial sums (through global memory) and
#: stores it. 4096³: 3 waves of 132 tiles, then 116 tiles' 7424 k-slices, 56 or 57 per block.
RUNG_CONFIGS["wgmma_streamk"] = replace(RUNG_CONFIGS["wgmma_tile16"], streamk=True)
#: Rung 13: rung 11 with a lean main loop — the ring's slot and phase kept as 32-bit counters
#: (one division per tile, not per k-slice) and each wgmma's descriptors a constant step from
#: the k-slice's two: 67 SASS instructions per k-slice where rung 11 has 138.
RUNG_CONFIGS["wgmma_lean"] = replace(RUNG_CONFIGS["wgmma_grid128"], counters=True, steps=True)
#: Rung 14, FP32 C: rung 7 on rung 11's grid of 128 in 3 stages, with rung 13's main loop and
#: its C staged through a ring of 4 boxes per warpgroup (one barrier per box, 64 KB).
RUNG_CONFIGS["wgmma_ring"] = replace(RUNG_CONFIGS["wgmma_tmastore"], stages=3, grid=128,
                                     counters=True, steps=True, ring=4)
#: Rungs 15 and 16: rungs 13 and 14 with a uniform warpgroup index (read from lane 0, so the
#: descriptors stay in uniform registers) and a 32-bit k-slice loop: 49 SASS instructions per
#: k-slice where rungs 13 and 14 have 67.
RUNG_CONFIGS["wgmma_uniform"] = replace(RUNG_CONFIGS["wgmma_lean"], uniform=True)
RUNG_CONFIGS["wgmma_ring_uniform"] = replace(RUNG_CONFIGS["wgmma_ring"], uniform=True)
#: Rung 17, FP32 C: rung 16 with the staged C handed to a store thread per consumer
#: warpgroup through a filled and a freed mbarrier per box, instead of a named barrier per box.
RUNG_CONFIGS["wgmma_handoff"] = replace(RUNG_CONFIGS["wgmma_ring_uniform"], handoff=True)
#: Rungs 18 and 19: rungs 15 and 17 with the tile order read from a table (k09_table): the
#: producer, the consumers and the store threads find a tile's row and column with two loads,
#: not with the 64-bit divisions of ``tile_order`` between tiles.
RUNG_CONFIGS["wgmma_table"] = replace(RUNG_CONFIGS["wgmma_uniform"], table=True)
RUNG_CONFIGS["wgmma_handoff_table"] = replace(RUNG_CONFIGS["wgmma_handoff"], table=True)

#: Cheap variations of rungs 7 and 8, one change each (FP16): the sweep of the ``hopper``
#: experiment. (5 or 6 stages of 128×256×64 do not fit: 48 KB a stage, 227 KB in all.)
SWEEP_CONFIGS = {
    "tmastore": RUNG_CONFIGS["wgmma_tmastore"],
    "tmastore group_m 16": replace(RUNG_CONFIGS["wgmma_tmastore"], group_m=16),
    "tmastore wait depth 0": replace(RUNG_CONFIGS["wgmma_tmastore"], wait_depth=0),
    "tmastore elect.sync": replace(RUNG_CONFIGS["wgmma_tmastore"], elect=True),
    "tmastore setmaxnreg 240/24": replace(RUNG_CONFIGS["wgmma_tmastore"], regs=240,
                                          producer_regs=24),
    "cluster": RUNG_CONFIGS["wgmma_cluster"],
    "cluster group_m 16": replace(RUNG_CONFIGS["wgmma_cluster"], group_m=16),
    "cluster direct epilogue": replace(RUNG_CONFIGS["wgmma_cluster"], epilogue="direct"),
    "cluster elect.sync": replace(RUNG_CONFIGS["wgmma_cluster"], elect=True),
}

TITLES = {
    "wgmma_cpasync": "wgmma from cp.async-filled 128B-swizzled stages, 1 warpgroup, 128×128",
    "wgmma_tma": "+ TMA copies and full mbarriers",
    "wgmma_2wg": "+ 128×256 tile, two consumer warpgroups (m64n256k16)",
    "wgmma_ws": "+ producer warpgroup, empty mbarriers, setmaxnreg",
    "wgmma_persistent": "+ persistent blocks (one per SM), grouped tile order",
    "wgmma_pingpong": "+ ping-pong: a 128×128 tile per consumer warpgroup, taken in turn, "
                      "so one stores while the other multiplies",
    "wgmma_tmastore": "persistent + epilogue through shared memory and TMA stores, "
                      "overlapping the next tile's main loop",
    "wgmma_cluster": "+ clusters of 2 blocks sharing B by TMA multicast",
    "wgmma_out16": "+ 16-bit output (FP16/BF16 C, as torch.mm returns), rounded in the "
                   "TMA-store epilogue",
    "wgmma_tile16": "rung 7 + 16-bit output staged a whole tile at a time (one wait, two "
                    "barriers per tile), 3 stages",
    "wgmma_grid128": "+ a grid of 128 blocks: whole waves of tiles",
    "wgmma_streamk": "rung 10 + stream-K for the last wave (partial tiles added through "
                     "global memory)",
    "wgmma_lean": "rung 11 + a lean main loop (slot counters, descriptor steps)",
    "wgmma_ring": "rung 7 (FP32 C) + 3 stages, grid 128, rung 13's main loop, a ring of 4 "
                  "staging boxes",
    "wgmma_uniform": "rung 13 + a uniform warpgroup index and a 32-bit k-slice loop",
    "wgmma_ring_uniform": "rung 14 (FP32 C) + rung 15's uniform index and 32-bit loop",
    "wgmma_handoff": "rung 16 (FP32 C) + store threads: the staged C handed over through "
                     "mbarriers",
    "wgmma_table": "rung 15 + the tile order read from a table (no divisions between "
                   "tiles)",
    "wgmma_handoff_table": "rung 17 (FP32 C) + rung 18's tile table",
}


def edges(cfg: HopperConfig) -> str:
    """How ``cfg``'s kernel handles M, N, K that are not multiples of its tile."""
    if cfg.loader == "cpasync":
        return ("launch pads A and B with zeros to the block tile; stores check row < M, "
                "col < N")
    text = ("TMA zero-fills boxes past the edges (K or N is padded to a multiple of 8 only "
            "when the row pitch is not 16-byte aligned); ")
    if cfg.epilogue == "tma":
        text += ("the TMA store clips its boxes to C (an N that is not a multiple of 4 goes "
                 "through a wider output, copied back)")
    else:
        text += "stores check row < M, col < N"
    if cfg.cluster > 1:
        text += ("; with an odd number of block rows the second block of the last pair "
                 "loads the last block row again and stores nothing")
    return text


def _needs(cfg: HopperConfig) -> str:
    text = "sm_90a: wgmma" + (", TMA, mbarriers" if cfg.loader == "tma" else ", cp.async")
    text += ", setmaxnreg" if cfg.regs else ""
    text += ", TMA store" if cfg.epilogue == "tma" else ""
    text += ", clusters (multicast)" if cfg.cluster > 1 else ""
    text += ", whole-tile staging" if cfg.store == "tile" else ""
    text += ", stream-K (flags between blocks)" if cfg.streamk else ""
    text += ", store threads (mbarrier hand-off)" if cfg.handoff else ""
    text += ", a table of tiles" if cfg.table else ""
    return text


def launcher16(cfg: HopperConfig):
    """The registry's ``launch(A, B, C)`` (C float32) for a 16-bit-output ``cfg``: the kernel
    writes a 16-bit C, widened exactly into C after."""
    launch = launcher(cfg)

    def launch_ab(A, B, C) -> None:
        m, n = C.shape
        out = cuda.device_array((m, n), dtype=np.float16 if cfg.out == "f16" else np.uint16)
        launch(A, B, out)
        convert.widen(out, C)
        launch_ab.keep = out
    return launch_ab


def checker16(name: str, cfg: HopperConfig):
    """``check(m, n, k, seed=None)`` for a 16-bit-output kernel: fresh inputs, its 16-bit C
    poisoned with NaN, float64 reference, the elementwise bound with the output's rounding
    (unit 2⁻¹¹ for FP16, 2⁻⁸ for BF16) added."""
    def check(m: int, n: int, k: int, *, seed: int | None = None):
        from lab import accuracy
        from lab.kernels import KernelUnavailable, runnable

        ok, why = runnable(name)
        if not ok:
            raise KernelUnavailable(why)
        seed = accuracy.new_seed() if seed is None else seed
        f16 = cfg.kind == "f16"
        a, b = accuracy.random_inputs(m, n, k, np.float16 if f16 else np.uint16,
                                      np.random.default_rng(seed))
        a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
        poison = (np.full((m, n), np.nan, np.float16) if f16
                  else np.full((m, n), 0x7FC0, np.uint16))   # BF16 bits of a NaN
        out = cuda.to_device(poison)
        launcher(cfg)(cuda.to_device(a), cuda.to_device(b), out)
        host = out.copy_to_host()
        value = (host if cfg.kind == "f16"
                 else (host.astype(np.uint32) << 16).view(np.float32)).astype(np.float64)
        unit = 2.0 ** -11 if cfg.out == "f16" else 2.0 ** -8
        factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=unit)
        bound = factor * (np.abs(a64) @ np.abs(b64)) + k * 2.0 ** -149 + 2.0 ** -24
        return accuracy.judge(value, a64 @ b64, bound, kernel=name, shape=(m, n, k),
                              dtype_name="float16" if cfg.kind == "f16" else "bfloat16",
                              factor=factor, seed=seed)
    return check


def _spec(name: str, cfg: HopperConfig) -> KernelSpec:
    kernel = kernel_for(cfg)
    bf16 = cfg.kind == "bf16"
    suffix = "_bf16" if bf16 else "_fp16"
    wide = cfg.out != "f32"
    return KernelSpec(name + suffix, f"Hopper: {TITLES[name]} ({'BF16' if bf16 else 'FP16'})",
                      np.uint16 if bf16 else np.float16,
                      launcher16(cfg) if wide else launcher(cfg), simulator=False,
                      check=checker16(name + suffix, cfg) if wide else None,
                      chapter=7, compile=((kernel, signature(cfg)),), edges=edges(cfg),
                      dtype_name="bfloat16" if bf16 else "", tile=(cfg.bm, cfg.bn, BK),
                      min_cc=(9, 0), max_cc=(9, 0), needs=_needs(cfg), config=cfg)


SPECS = [_spec(name, replace(cfg, kind=kind, out=kind if cfg.out != "f32" else "f32"))
         for name, cfg in RUNG_CONFIGS.items() for kind in ("f16", "bf16")]
