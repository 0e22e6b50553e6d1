"""The FP8 kernels' main loop with *promotion* (``HopperConfig.promote``): the tensor cores
accumulate a few stages into partial sums, which the warpgroup then adds into FP32
accumulators — times the 1×128 / 128×128 block scales of that k-block when scaling by blocks
(``scales="block"``).
"""
from __future__ import annotations

from numba import cuda, float32, int32, uint32

from lab import hopper
from lab.kernels.wgmma.config import HopperConfig
from lab.kernels.wgmma.stage import stage_ops


def promotion_ops(cfg: HopperConfig, release):
    """``mainloop_promoted``: one tile's main loop with promotion, handing stages back with
    ``release`` (the ring's)."""
    BN, STAGES, MT = cfg.bn, cfg.stages, cfg.mt
    STAGE_BYTES = cfg.stage_bytes
    DEPTH = cfg.wait_depth
    wait = cfg.overrides().get("wait", hopper.mbar_wait)   # (a study may replace it)
    PROMOTE = cfg.promote // cfg.bk       # stages between promotions to FP32; 0 = never
    BLOCK = cfg.scales == "block"
    CB = max(1, BN // 128)                # B scales per tile (one per 128 columns)
    RA = 2 * MT                           # A scales per thread (one per row it holds)
    compute_stage = stage_ops(cfg)[1]

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
    def take(ra, cb, ra_next, cb_next):
        """The scales loaded one promotion ago become this promotion's."""
        for i in range(RA):
            ra[i] = ra_next[i]
        for c in range(CB):
            cb[c] = cb_next[c]

    @cuda.jit(device=True, inline="always")
    def mainloop_promoted(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw, leader,
                          sa, sb, row0, col0, thread):
        """One tile's main loop with promotion: the tensor cores accumulate PROMOTE stages
        into ``part`` (the first k-step of each interval overwrites it), then the warpgroup
        waits for them, hands back every stage it holds and adds ``part`` into the FP32
        ``acc`` — with the block scales of that k-block when scaling by blocks. The other
        consumer warpgroup's wgmma keep the tensor cores busy meanwhile.

        The block scales come from global memory one promotion ahead: the loads for the next
        k-block are issued at this promotion and first read at the next, so their latency
        (DRAM, for a tile's first read of them) hides behind a whole k-block instead of
        stalling the promotion that needs them."""
        held = it                                 # oldest slice not yet handed back
        ra_next = cuda.local.array(RA, float32)
        cb_next = cuda.local.array(CB, float32)
        if BLOCK:
            block_scales(ra_next, cb_next, sa, sb, row0, col0, min(PROMOTE, k_tiles) - 1,
                         thread)
        for kt in range(k_tiles):
            s = it % STAGES
            wait(full0 + uint32(8 * s), (it // STAGES) % 2)
            compute_stage(part, shared + uint32(s * STAGE_BYTES), cw,
                          0 if kt % PROMOTE == 0 else 1)
            # each branch hands back its own stages: were the promotion after the branches
            # join, ptxas would wait for every wgmma at the join, in every stage
            if kt % PROMOTE == PROMOTE - 1 or kt == k_tiles - 1:
                if BLOCK:
                    take(ra, cb, ra_next, cb_next)
                    ahead = min(kt + PROMOTE, k_tiles - 1)
                    block_scales(ra_next, cb_next, sa, sb, row0, col0, ahead, thread)
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

    # region: promotion_counted
    @cuda.jit(device=True, inline="always")
    def mainloop_promoted_counted(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw,
                                  leader, sa, sb, row0, col0, thread):
        """:func:`mainloop_promoted` for a promotion every stage with the ring's slot and
        phase kept as 32-bit counters (one division per tile, as rung 13's main loop) and
        the stage it reads handed back right after its wgmma are done."""
        s = int32(it % STAGES)
        phase = int32((it // STAGES) % 2)
        ra_next = cuda.local.array(RA, float32)
        cb_next = cuda.local.array(CB, float32)
        if BLOCK:
            block_scales(ra_next, cb_next, sa, sb, row0, col0, 0, thread)
        kt = int32(0)
        last = int32(k_tiles - 1)
        while kt <= last:
            wait(full0 + uint32(8 * s), phase)
            compute_stage(part, shared + uint32(s * STAGE_BYTES), cw, 0)
            if BLOCK:
                take(ra, cb, ra_next, cb_next)
                block_scales(ra_next, cb_next, sa, sb, row0, col0, min(kt + 1, last), thread)
            hopper.wgmma_wait(0)
            release(empty0 + uint32(8 * s), leader)
            promote(acc, part, ra, cb)
            s = int32(s + 1)
            if s == STAGES:
                s = int32(0)
                phase = int32(phase ^ 1)
            kt = int32(kt + 1)
        return it + k_tiles
    # endregion: promotion_counted

    # endregion: promotion
    if cfg.counters:
        return mainloop_promoted_counted
    return mainloop_promoted


def mainloop_slot(cfg: HopperConfig, release, mainloop):
    """The main-loop slot of the specialized kernel: ``multiply(acc, part, ra, cb, shared,
    full0, empty0, it, k_tiles, cw, leader, sa, sb, row0, col0, thread)`` runs one tile's
    k-slices through the ring — with promotion (``cfg.promote``) or the ring's ``mainloop`` —
    and returns the ring's count."""
    if cfg.promote:
        return promotion_ops(cfg, release)

    @cuda.jit(device=True, inline="always")
    def multiply(acc, part, ra, cb, shared, full0, empty0, it, k_tiles, cw, leader, sa, sb,
                 row0, col0, thread):
        return mainloop(acc, shared, full0, empty0, it, k_tiles, cw, leader)
    return multiply
