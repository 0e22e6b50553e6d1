"""The epilogue slot of the Hopper kernels (:mod:`lab.kernels.wgmma.specialized`): one consumer
warpgroup's accumulators → C. From registers: guarded stores (Hopper rungs 1–6). Through shared
memory and TMA stores (``epilogue="tma"``, rungs 7–19): a ring of 8 KB staging boxes or the
whole tile at once; and the staged boxes handed to store threads of the producer warpgroup
through mbarriers (``handoff``, rungs 17 and 19).
"""
from __future__ import annotations

from numba import cuda, int32, uint32, uint64

from lab import hopper
from lab.kernels.wgmma.config import EPI_BOX, OUT_BYTES, ROW, HopperConfig


def epilogue(mt: int, bn: int):
    # region: epilogue
    @cuda.jit(device=True, inline="always")
    def store_tile(C, acc, row0, col0, thread):
        """Accumulators of one warpgroup (``mt`` stacked 64×bn wgmma tiles whose first row is
        ``row0``) → C, guarded. Register 4j + r of a thread in warp w, lane l holds row
        16w + l/4 + 8·(r ≥ 2), column 8j + 2·(l % 4) + r % 2."""
        m = uint64(C.shape[0])
        n = uint64(C.shape[1])
        warp = thread // 32
        lane = thread % 32
        for mi in range(mt):
            r0 = uint64(row0 + mi * 64 + 16 * warp + lane // 4)
            for half in range(2):
                r = r0 + uint64(8 * half)
                if r < m:
                    for j in range(bn // 8):
                        c = uint64(col0 + 8 * j + 2 * (lane % 4))
                        i = mi * (bn // 2) + 4 * j + 2 * half
                        if c < n:
                            C[r, c] = acc[i]
                        if c + uint64(1) < n:
                            C[r, c + uint64(1)] = acc[i + 1]
    # endregion: epilogue
    return store_tile


def staging(cfg: HopperConfig):
    """``stage_box``: a lane's share of one box of the accumulators into a 128B-swizzled
    staging box, in the output type."""
    BN, COLS = cfg.bn, cfg.epi_cols
    OUT = OUT_BYTES[cfg.out]
    BF16_OUT = cfg.out == "bf16"
    F16_OUT = cfg.out == "f16"

    @cuda.jit(device=True, inline="always")
    def box_slot(r, jj, lane):
        """Byte offset, in a 128B-swizzled staging box, of the pair at row r, 8-column block
        jj of the box, this lane's two columns."""
        offset = r * ROW + (8 * jj + 2 * (lane % 4)) * OUT
        return uint32(offset ^ ((r % 8) << 4))

    @cuda.jit(device=True, inline="always")
    def stage_pair(where, x, y):
        """Two adjacent values of C into a staging box at shared address ``where``: one 8-byte
        store of two float32, or (a 16-bit C) one 4-byte store of the two rounded."""
        if BF16_OUT:
            hopper.st_shared_bf16x2(where, x, y)
        elif F16_OUT:
            hopper.st_shared_f16x2(where, x, y)
        else:
            hopper.st_shared_v2_f32(where, x, y)

    @cuda.jit(device=True, inline="always")
    def stage_box(box, acc, mi, q, top, lane, scale):
        """This lane's share of box ``q`` of 64-row slab ``mi`` of the accumulators, times
        ``scale``, into the staging box at shared address ``box``: rows ``top`` + lane / 4 and
        8 below it, two columns of each 8-column block."""
        for jj in range(COLS // 8):
            j = q * (COLS // 8) + jj                  # 8-column block of the accumulators
            for half in range(2):
                r = top + lane // 4 + 8 * half
                i = mi * (BN // 2) + 4 * j + 2 * half
                stage_pair(box + box_slot(r, jj, lane), acc[i] * scale, acc[i + 1] * scale)

    return stage_box


def epilogue_tma(cfg: HopperConfig):
    """``store_tile_tma``: one warpgroup's accumulators → C through shared memory and the copy
    engine."""
    MT, BN, COLS = cfg.mt, cfg.bn, cfg.epi_cols
    QUARTERS = BN // COLS                         # boxes per 64-row slab
    WHOLE = cfg.store == "tile"
    RING = cfg.ring
    # A ring of 3 or more: one barrier per box. Before it, the issuing thread waits until the
    # box after this one is free (its store, RING - 1 boxes back, has been read); the ring of
    # 2 waits for the box itself, before a barrier of its own.
    ONE_BARRIER = RING >= 3
    PENDING = RING - 2 if ONE_BARRIER else 1      # stores that may still be reading
    store_c = cfg.overrides().get("store_c", hopper.tma_store_2d)   # (a study may replace it)

    stage_box = staging(cfg)

    # region: epilogue_tma
    @cuda.jit(device=True, inline="always")
    def store_tile_tma(acc, boxes, map_c, row0, col0, thread, bar_id, scale):
        """One warpgroup's accumulators, times ``scale``, → C through shared memory and the
        copy engine, one 64-row × 128-byte box at a time (32 float32 or 64 BF16 columns),
        taking ``ring`` 8 KB staging boxes in turn. Per box: the
        issuing thread (0) waits until the copy engine has *read* the box two back (its
        buffer), the warpgroup writes the box 128B-swizzled (8-byte stores of two float32,
        or 4-byte stores of two BF16; no bank conflicts), fences the writes for the async
        proxy and meets at a named barrier;
        thread 0 issues the TMA store and commits it. (A ring of 3 or more needs one barrier
        per box: thread 0 waits, before it, until the *next* box is free.) The stores run on
        while the warpgroup goes back to its main loop; rows and columns outside C are clipped
        by the copy engine. With whole-tile staging every box of the tile has its own staging
        box: one wait (for the last tile's stores) and two barriers for the whole tile."""
        warp = thread // 32
        lane = thread % 32
        if WHOLE:
            if thread == 0:
                hopper.bulk_wait_read(0)              # the last tile's stores have read it
            hopper.named_barrier(bar_id, 128)
        for mi in range(MT):
            for q in range(QUARTERS):
                if WHOLE:
                    box = boxes + uint32((mi * QUARTERS + q) * EPI_BOX)
                else:
                    box = boxes + uint32(((mi * QUARTERS + q) % RING) * EPI_BOX)
                    if not ONE_BARRIER:
                        if thread == 0:               # the box written two boxes ago is free
                            hopper.bulk_wait_read(PENDING)
                        hopper.named_barrier(bar_id, 128)
                stage_box(box, acc, mi, q, 16 * warp, lane, scale)
                if not WHOLE:
                    hopper.fence_proxy_async()
                    if ONE_BARRIER and thread == 0:   # the next box's slot is free
                        hopper.bulk_wait_read(PENDING)
                    hopper.named_barrier(bar_id, 128)
                    if thread == 0:
                        store_c(box, map_c, col0 + COLS * q, row0 + 64 * mi)
                        hopper.bulk_commit()
        if WHOLE:
            issue_tile(boxes, map_c, row0, col0, thread, bar_id)
    # endregion: epilogue_tma



    @cuda.jit(device=True, inline="always")
    def issue_tile(boxes, map_c, row0, col0, thread, bar_id):
        """Fence the staged tile for the async proxy, meet, and (thread 0) hand each box to
        the copy engine in one bulk group."""
        hopper.fence_proxy_async()
        hopper.named_barrier(bar_id, 128)
        if thread == 0:
            for mi in range(MT):
                for q in range(QUARTERS):
                    store_c(boxes + uint32((mi * QUARTERS + q) * EPI_BOX), map_c,
                                        col0 + COLS * q, row0 + 64 * mi)
            hopper.bulk_commit()

    return store_tile_tma


def epilogue_handoff(cfg: HopperConfig):
    """``stage_handoff`` (a consumer warpgroup stages its accumulators, slot by slot) and
    ``issue_handoff`` (its store thread issues the TMA stores of one tile) for
    ``HopperConfig.handoff``."""
    MT, BN, COLS = cfg.mt, cfg.bn, cfg.epi_cols
    QUARTERS = BN // COLS                         # boxes per 64-row slab
    stage_box = staging(cfg)
    store_c = cfg.overrides().get("store_c", hopper.tma_store_2d)
    SLOTS = cfg.slots
    GROUP = 1 if cfg.store == "boxes" else MT * QUARTERS      # boxes per slot
    GROUPS = MT * QUARTERS // GROUP                            # slots' worth per tile
    READING = SLOTS - 1                       # stores that may still be reading their slot

    # region: handoff_stage
    @cuda.jit(device=True, inline="always")
    def advance(slot, phase):
        """The next staging slot and its phase (32-bit counters across tiles)."""
        slot = int32(slot + 1)
        if slot == SLOTS:
            slot = int32(0)
            phase = int32(phase ^ 1)
        return slot, phase

    @cuda.jit(device=True, inline="always")
    def stage_handoff(acc, boxes, filled, freed, thread, slot, phase, scale):
        """One warpgroup's accumulators, times ``scale``, into its staging slots, handed to
        its store thread: for each slot every warp waits until the slot is free, writes its
        16 rows, fences them for the async proxy and (lane 0, after ``__syncwarp``) arrives
        on the slot's *filled* barrier. Returns the next slot and its phase."""
        warp = thread // 32
        lane = thread % 32
        for grp in range(GROUPS):
            hopper.mbar_wait(freed + uint32(8 * slot), phase ^ 1)
            base = boxes + uint32(slot * (GROUP * EPI_BOX))
            for g in range(GROUP):
                b = grp * GROUP + g
                stage_box(base + uint32(g * EPI_BOX), acc, b // QUARTERS, b % QUARTERS,
                          16 * warp, lane, scale)
            hopper.fence_proxy_async()
            cuda.syncwarp()
            if lane == 0:
                hopper.mbar_arrive(filled + uint32(8 * slot))
            slot, phase = advance(slot, phase)
        return slot, phase
    # endregion: handoff_stage

    # region: handoff_issue
    @cuda.jit(device=True, inline="always")
    def issue_handoff(boxes, filled, freed, map_c, slot, phase, warm, row0, col0):
        """The store thread's half of :func:`stage_handoff` for one tile: for each slot, wait
        until its four warps have filled it, issue its TMA stores and commit them; then
        (once ``warm``: every slot used) wait until the stores of the slot written next have
        been read and arrive on its *freed* barrier. Returns slot, phase and ``warm``."""
        for grp in range(GROUPS):
            hopper.mbar_wait(filled + uint32(8 * slot), phase)
            base = boxes + uint32(slot * (GROUP * EPI_BOX))
            for g in range(GROUP):
                b = grp * GROUP + g
                store_c(base + uint32(g * EPI_BOX), map_c, col0 + COLS * (b % QUARTERS),
                        row0 + 64 * (b // QUARTERS))
            hopper.bulk_commit()
            slot, phase = advance(slot, phase)
            if slot == 0:                     # from here on every slot has been used
                warm = True
            if warm:                          # the next slot's last stores: read yet?
                hopper.bulk_wait_read(READING)
                hopper.mbar_arrive(freed + uint32(8 * slot))
        return slot, phase, warm
    # endregion: handoff_issue

    return stage_handoff, issue_handoff


def store_slot(cfg: HopperConfig):
    """The epilogue slot of the specialized kernel: ``store(C, acc, boxes, c_map, filled,
    freed, row0, col0, thread, cw, slot, phase, scale)`` puts one consumer warpgroup's
    accumulators (times ``scale``) into C — handed to its store thread (``handoff``: returns
    the next staging slot and its phase), through the copy engine (``epilogue="tma"``), or
    with guarded stores from registers (``"direct"``)."""
    MT, BN = cfg.mt, cfg.bn
    if "store" in cfg.overrides():                # a study's epilogue
        return cfg.overrides()["store"](cfg)
    if cfg.handoff:
        stage_handoff = epilogue_handoff(cfg)[0]

        @cuda.jit(device=True, inline="always")
        def store_handoff(C, acc, boxes, c_map, filled, freed, row0, col0, thread, cw, slot,
                          phase, scale):
            return stage_handoff(acc, boxes, filled, freed, thread, slot, phase, scale)
        return store_handoff
    if cfg.epilogue == "tma":
        return staged_slot(epilogue_tma(cfg))
    return register_slot(epilogue(MT, BN))


def staged_slot(store_tile_tma):
    """The epilogue slot of a store through shared memory and the copy engine,
    ``store_tile_tma(acc, boxes, c_map, row0, col0, thread, bar_id, scale)`` (named barrier
    1 + the warpgroup's index)."""
    @cuda.jit(device=True, inline="always")
    def store_tma(C, acc, boxes, c_map, filled, freed, row0, col0, thread, cw, slot,
                  phase, scale):
        store_tile_tma(acc, boxes, c_map, row0, col0, thread, 1 + cw, scale)
        return slot, phase
    return store_tma


def register_slot(store_tile):
    """The epilogue slot of a store from registers,
    ``store_tile(C, acc, row0, col0, thread)``."""
    @cuda.jit(device=True, inline="always")
    def store_direct(C, acc, boxes, c_map, filled, freed, row0, col0, thread, cw, slot, phase,
                     scale):
        store_tile(C, acc, row0, col0, thread)
        return slot, phase
    return store_direct


def drain_slot(cfg: HopperConfig):
    """``drain(thread)``: a consumer warpgroup waits, before the block exits, until its TMA
    stores are done (the hand-off's store threads wait for their own)."""
    if "drain" in cfg.overrides():
        return cfg.overrides()["drain"](cfg)
    WAIT = cfg.epilogue == "tma" and not cfg.handoff

    @cuda.jit(device=True, inline="always")
    def drain(thread):
        if WAIT and thread == 0:
            hopper.bulk_wait(0)                   # stores done before the block exits
    return drain


def grouped_slot(cfg: HopperConfig):
    """The epilogue slot of a grouped launch: ``store(C, acc, boxes, c_map, row0, col0,
    thread, cw, scale, end)`` stores one consumer warpgroup's rows of a tile, only those
    before ``end`` (its group's last row + 1: the rows after it are the next group's). A
    warpgroup's rows all inside the group go through the copy engine as ever; rows that cross
    the end are staged the same way, and the warpgroup copies the rows before it from the
    staging boxes to C with 16-byte stores (the copy engine clips only at C's edges)."""
    store_tile_tma = epilogue_tma(cfg)
    stage_box = staging(cfg)
    MT, BN, COLS, WG_ROWS = cfg.mt, cfg.bn, cfg.epi_cols, cfg.wg_rows
    QUARTERS = BN // COLS
    OUT = OUT_BYTES[cfg.out]
    PIECES = 64 * ROW // 16 // 128                # 16-byte pieces of a box per thread: 4

    # region: grouped_store
    @cuda.jit(device=True, inline="always")
    def store_group(C, acc, boxes, c_map, row0, col0, thread, cw, scale, end):
        bar_id = 1 + cw
        if row0 + WG_ROWS <= end:                 # every row the group's: the copy engine
            store_tile_tma(acc, boxes, c_map, row0, col0, thread, bar_id, scale)
        elif row0 < end:                          # the group ends inside these rows
            warp = thread // 32
            lane = thread % 32
            if thread == 0:
                hopper.bulk_wait_read(0)          # the last tile's stores have read the boxes
            hopper.named_barrier(bar_id, 128)
            for mi in range(MT):
                for q in range(QUARTERS):
                    stage_box(boxes + uint32((mi * QUARTERS + q) * EPI_BOX), acc, mi, q,
                              16 * warp, lane, scale)
            hopper.named_barrier(bar_id, 128)
            n = int32(C.shape[1])
            base = uint64(hopper.global_address(C))
            for mi in range(MT):
                for q in range(QUARTERS):
                    box = boxes + uint32((mi * QUARTERS + q) * EPI_BOX)
                    for p in range(PIECES):
                        i = thread + 128 * p
                        r = i // 8                # the box's row, and its 16-byte piece
                        piece = i % 8
                        row = row0 + 64 * mi + r
                        col = col0 + COLS * q + piece * (16 // OUT)
                        if row < end and col < n:
                            x, y, z, w = hopper.ld_shared_v4_f32(
                                box + uint32(r * ROW + ((piece ^ (r % 8)) << 4)))
                            hopper.st_global_v4_f32(
                                base + uint64(row) * uint64(n * OUT) + uint64(col * OUT),
                                x, y, z, w)
    # endregion: grouped_store

    return store_group
