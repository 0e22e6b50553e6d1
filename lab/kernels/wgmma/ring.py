"""The stage ring's two loops (:mod:`lab.kernels.wgmma.specialized`): the
producer's TMA copies into the ring and the consumers' ``wgmma`` over it, each waiting on its
side's mbarrier of a slot and handing the slot to the other side. Three versions, one change
each: the slot and its phase found by dividing the ring's running count by the stage count
(rungs 4–12), kept as 32-bit counters (``counters``, rungs 13 and 14), and with the consumers'
loop counted in 32 bits (``uniform``, rungs 15 and 16).
"""
from __future__ import annotations

from numba import cuda, int32, uint32

from lab import hopper
from lab.kernels.wgmma.config import HopperConfig
from lab.kernels.wgmma.stage import stage_grouped, stage_multicast, stage_ops


def ring_ops(cfg: HopperConfig):
    """``release`` (a consumer warp hands a slot back), ``produce`` (the producer's copies of
    a tile's k-slices) and ``mainloop`` (a consumer's wgmma over them), as ``cfg`` asks."""
    BM, STAGES = cfg.bm, cfg.stages
    STAGE_BYTES = cfg.stage_bytes
    CLUSTER = cfg.cluster
    DEPTH = cfg.wait_depth
    ELECT = cfg.elect
    wait = cfg.overrides().get("wait", hopper.mbar_wait)   # (a study may replace it)
    load_stage, compute_stage = stage_ops(cfg)
    load_stage_multicast = stage_multicast(cfg)

    @cuda.jit(device=True, inline="always")
    def release(empty, leader):
        """A consumer warp hands a stage back: to its own block's empty barrier, and in a
        cluster to the same barrier of every block (their producers multicast into it)."""
        if leader:
            if CLUSTER == 1:
                hopper.mbar_arrive(empty)
            else:
                for r in range(CLUSTER):
                    hopper.mbar_arrive_cluster(empty, r)

    # region: produce
    @cuda.jit(device=True, inline="always")
    def issue(shared, full0, a_map, b_map, s, kt, block_m, col0, rank):
        """One lane's TMA copies of k-slice ``kt`` of the tile at tile row ``block_m``,
        column ``col0``, into slot ``s`` (multicast in a cluster)."""
        if not ELECT or hopper.elect_one() != 0:
            if CLUSTER == 1:
                load_stage(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                           a_map, b_map, kt, block_m * BM, col0)
            else:
                load_stage_multicast(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                                     a_map, b_map, kt, block_m * BM, col0, rank)

    @cuda.jit(device=True, inline="always")
    def produce(shared, full0, empty0, a_map, b_map, it, k0, k1, block_m, col0, rank):
        """The producer's copies of k-slices k0 … k1-1 of one tile; returns the ring's count."""
        for kt in range(k0, k1):
            s = it % STAGES
            # wait until the consumers released this slot's previous use
            # (and, in a cluster, the partner's consumers released its copy)
            wait(empty0 + uint32(8 * s), ((it // STAGES) % 2) ^ 1)
            issue(shared, full0, a_map, b_map, s, kt, block_m, col0, rank)
            it += 1
        return it
    # endregion: produce

    # region: mainloop
    @cuda.jit(device=True, inline="always")
    def mainloop(acc, shared, full0, empty0, it, count, cw, leader):
        """A consumer's wgmma over ``count`` k-slices of one tile (added into ``acc``),
        handing each stage back once the wgmma that read it are done; returns the count."""
        for kt in range(count):
            s = it % STAGES
            wait(full0 + uint32(8 * s), (it // STAGES) % 2)
            compute_stage(acc, shared + uint32(s * STAGE_BYTES), cw, 1)
            hopper.wgmma_wait(DEPTH)                  # all but the DEPTH newest groups done …
            if kt >= DEPTH:                           # … so slice it-DEPTH's slot goes back
                release(empty0 + uint32(8 * ((it - DEPTH) % STAGES)), leader)
            it += 1
        hopper.wgmma_wait(0)
        for d in range(DEPTH, 0, -1):                 # the slots still held
            if count >= d:
                release(empty0 + uint32(8 * ((it - d) % STAGES)), leader)
        return it
    # endregion: mainloop

    # region: counters
    @cuda.jit(device=True, inline="always")
    def produce_counted(shared, full0, empty0, a_map, b_map, it, k0, k1, block_m, col0,
                        rank):
        """:func:`produce` with the slot and its phase kept as counters: one division per
        tile instead of one per k-slice."""
        s = int32(it % STAGES)                        # 32-bit, as the hardware counts
        phase = int32((it // STAGES) % 2)
        for kt in range(k0, k1):
            wait(empty0 + uint32(8 * s), phase ^ 1)
            issue(shared, full0, a_map, b_map, s, kt, block_m, col0, rank)
            s = int32(s + 1)
            if s == STAGES:
                s = int32(0)
                phase = int32(phase ^ 1)
        return it + (k1 - k0)

    @cuda.jit(device=True, inline="always")
    def counted_slice(acc, shared, full0, empty0, s, phase, held, kt, cw, leader):
        """One k-slice of the counted main loops: wait for slot ``s``, issue its wgmma, hand
        back the slot ``held`` that the k-slice before read once its wgmma are done; returns
        the next slot, its phase and this one."""
        wait(full0 + uint32(8 * s), phase)
        compute_stage(acc, shared + uint32(s * STAGE_BYTES), cw, 1)
        hopper.wgmma_wait(1)                          # the k-slice before is done …
        if kt >= 1:                                   # … so its slot goes back
            release(empty0 + uint32(8 * held), leader)
        held = s
        s = int32(s + 1)
        if s == STAGES:
            s = int32(0)
            phase = int32(phase ^ 1)
        return s, phase, held

    @cuda.jit(device=True, inline="always")
    def mainloop_counted(acc, shared, full0, empty0, it, count, cw, leader):
        """:func:`mainloop` (wait depth 1) with the slot and its phase kept as counters."""
        s = int32(it % STAGES)                        # 32-bit, as the hardware counts
        phase = int32((it // STAGES) % 2)
        held = s                                      # the slot the last k-slice read
        for kt in range(int32(count)):
            s, phase, held = counted_slice(acc, shared, full0, empty0, s, phase, held, kt, cw,
                                           leader)
        hopper.wgmma_wait(0)
        if count >= 1:
            release(empty0 + uint32(8 * held), leader)
        return it + count
    # endregion: counters

    # region: uniform
    @cuda.jit(device=True, inline="always")
    def mainloop_uniform(acc, shared, full0, empty0, it, count, cw, leader):
        """:func:`mainloop_counted` counting its k-slices in 32 bits: ``range`` would keep a
        64-bit count and index in ordinary registers."""
        s = int32(it % STAGES)
        phase = int32((it // STAGES) % 2)
        held = s
        kt = int32(0)
        n = int32(count)
        while kt < n:
            s, phase, held = counted_slice(acc, shared, full0, empty0, s, phase, held, kt, cw,
                                           leader)
            kt = int32(kt + 1)
        hopper.wgmma_wait(0)
        if n >= 1:
            release(empty0 + uint32(8 * held), leader)
        return it + count
    # endregion: uniform

    if cfg.counters:
        produce, mainloop = produce_counted, mainloop_counted   # noqa: F811
    if cfg.uniform:
        mainloop = mainloop_uniform                              # noqa: F811
    if cfg.grouped:
        load_grouped = stage_grouped(cfg)

        # region: produce_grouped
        @cuda.jit(device=True, inline="always")
        def produce_grouped(shared, full0, empty0, a_map, b_map, it, k1, row0, col0, kb):
            """:func:`produce_counted` for a group's tile: A's rows from ``row0``, B's k-slices
            from ``kb`` (its expert's)."""
            s = int32(it % STAGES)
            phase = int32((it // STAGES) % 2)
            for kt in range(k1):
                wait(empty0 + uint32(8 * s), phase ^ 1)
                if not ELECT or hopper.elect_one() != 0:
                    load_grouped(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                                 a_map, b_map, kt, row0, col0, kb)
                s = int32(s + 1)
                if s == STAGES:
                    s = int32(0)
                    phase = int32(phase ^ 1)
            return it + k1
        # endregion: produce_grouped
        produce = produce_grouped                                # noqa: F811
    return release, produce, mainloop
