"""One stage of the ring: the TMA copies that fill it (one thread; plain and multicast to a
cluster) and the ``wgmma`` of one consumer warpgroup that read it (a descriptor built from an
address per ``wgmma``, or steps from the stage's two; ``steps``), and the zeroing of the
accumulators before a tile.
"""
from __future__ import annotations

from numba import cuda, float32, uint32

from lab import hopper
from lab.kernels.wgmma.config import BK, ROW, HopperConfig


def zero_acc(count: int):
    @cuda.jit(device=True, inline="always")
    def zero(acc):
        for i in range(count):
            acc[i] = float32(0)
    return zero


def stage_ops(cfg: HopperConfig):
    """``load_stage`` (one thread: the stage's TMA copies) and ``compute_stage`` (one
    warpgroup: its wgmma of one k-slice), shared by every TMA rung."""
    A_BYTES, STAGE_BYTES, MT, BN, SBK = cfg.a_bytes, cfg.stage_bytes, cfg.mt, cfg.bn, cfg.bk
    B_BOX = SBK * ROW
    B_BOXES = BN // 64
    WG_ROWS = cfg.wg_rows
    K_MAJOR_B = cfg.fp8                       # FP8 wgmma reads Bᵀ (K-major) only
    mma = hopper.wgmma(cfg.kind, BN)

    # region: tma_stage
    @cuda.jit(device=True, inline="always")
    def load_stage(stage, full, map_a, map_b, kt, row0, col0):
        """One thread: announce the stage's bytes on its full barrier, then ask the copy
        engine for the A box (BM rows × 128 bytes of k) and the B tile: BN/64 boxes (64
        k-rows × 64 columns) of B, or (FP8) one box of BN rows × 128 k of Bᵀ."""
        hopper.mbar_expect_tx(full, STAGE_BYTES)
        hopper.tma_load_2d(stage, map_a, kt * SBK, row0, full)
        if K_MAJOR_B:
            hopper.tma_load_2d(stage + uint32(A_BYTES), map_b, kt * SBK, col0, full)
        else:
            for j in range(B_BOXES):
                hopper.tma_load_2d(stage + uint32(A_BYTES + j * B_BOX), map_b, col0 + 64 * j,
                                   kt * SBK, full)
    # endregion: tma_stage

    @cuda.jit(device=True, inline="always")
    def compute_stage(acc, stage, wg, scale_d):
        """One warpgroup's wgmma of one stage (4 k-steps of 32 bytes); ``scale_d`` 0 makes
        the first k-step overwrite the accumulators instead of adding to them."""
        hopper.wgmma_fence()
        sd = scale_d
        for ks in range(4):
            if K_MAJOR_B:
                desc_b = hopper.smem_desc(stage + uint32(A_BYTES + 32 * ks), 16, 1024)
            else:
                desc_b = hopper.smem_desc(stage + uint32(A_BYTES + ks * 16 * ROW), B_BOX, 1024)
            for mi in range(MT):
                desc_a = hopper.smem_desc(
                    stage + uint32((wg * WG_ROWS + mi * 64) * ROW + 32 * ks), 16, 1024)
                mma(acc, mi * (BN // 2), desc_a, desc_b, sd)
            sd = 1
        hopper.wgmma_commit()

    # region: descriptor_steps
    # offsets (>> 4) of a k-step of 16 inputs: 32 bytes along A's (and FP8 Bᵀ's) K-major rows,
    # 16 rows of 128 bytes down B's k; and of the next m64 block of A (64 rows of 128 bytes)
    A_STEP, B_STEP, MI_STEP = 2, (2 if K_MAJOR_B else ROW), 64 * ROW // 16
    B_LBO = 16 if K_MAJOR_B else B_BOX

    @cuda.jit(device=True, inline="always")
    def compute_stage_steps(acc, stage, wg, scale_d):
        """:func:`compute_stage` with the stage's descriptors built once: each wgmma adds a
        constant to their low words (the address field, which never carries)."""
        hopper.wgmma_fence()
        lo_a = hopper.smem_desc_lo(stage + uint32(wg * WG_ROWS * ROW), 16)
        lo_b = hopper.smem_desc_lo(stage + uint32(A_BYTES), B_LBO)
        sd = scale_d
        for ks in range(4):
            desc_b = hopper.smem_desc_join(lo_b + uint32(B_STEP * ks), 1024)
            for mi in range(MT):
                desc_a = hopper.smem_desc_join(lo_a + uint32(MI_STEP * mi + A_STEP * ks), 1024)
                mma(acc, mi * (BN // 2), desc_a, desc_b, sd)
            sd = 1
        hopper.wgmma_commit()
    # endregion: descriptor_steps

    if cfg.steps:
        return load_stage, compute_stage_steps
    return load_stage, compute_stage


def stage_multicast(cfg: HopperConfig):
    """``load_stage`` for a cluster: each block loads its own A box and its share of the B
    boxes, multicast to every block of the cluster (they all use the same B columns)."""
    A_BYTES, STAGE_BYTES, SBK = cfg.a_bytes, cfg.stage_bytes, cfg.bk
    B_BOX = BK * ROW
    SHARE = cfg.bn // 64 // cfg.cluster           # B boxes this block issues
    MASK = (1 << cfg.cluster) - 1
    K_MAJOR_B = cfg.fp8                           # FP8: Bᵀ rows, split among the blocks
    B_ROWS = cfg.bn // cfg.cluster                # (the launch's map of Bᵀ has boxes this tall)

    # region: multicast_stage
    @cuda.jit(device=True, inline="always")
    def load_stage_multicast(stage, full, map_a, map_b, kt, row0, col0, rank):
        """The whole stage's bytes are expected on *this* block's full barrier: its A box, its
        own B share, and the share the partner multicasts (which may land before the
        expect — the barrier's byte count then goes negative until it; the phase cannot
        complete before this arrival)."""
        hopper.mbar_expect_tx(full, STAGE_BYTES)
        hopper.tma_load_2d(stage, map_a, kt * SBK, row0, full)
        if K_MAJOR_B:
            hopper.tma_load_2d_multicast(stage + uint32(A_BYTES + rank * B_ROWS * ROW), map_b,
                                         kt * SBK, col0 + rank * B_ROWS, full, MASK)
        else:
            for i in range(SHARE):
                j = rank * SHARE + i
                hopper.tma_load_2d_multicast(stage + uint32(A_BYTES + j * B_BOX), map_b,
                                             col0 + 64 * j, kt * BK, full, MASK)
    # endregion: multicast_stage

    return load_stage_multicast


def stage_grouped(cfg: HopperConfig):
    """``load_stage`` of a grouped launch: A's box at any first row (a group starts anywhere),
    B's boxes ``kb`` k-slices down the ``[E·K, N]`` matrix (expert e's: ``kb = e·K / 64``);
    FP8: one box of Bᵀ's rows ``kb + col0`` on, down the ``[E·N, K]`` matrix (expert e's:
    ``kb = e·N``)."""
    A_BYTES, STAGE_BYTES, SBK = cfg.a_bytes, cfg.stage_bytes, cfg.bk
    B_BOX = SBK * ROW
    B_BOXES = cfg.bn // 64
    K_MAJOR_B = cfg.fp8

    # region: grouped_stage
    @cuda.jit(device=True, inline="always")
    def load_stage_grouped(stage, full, map_a, map_b, kt, row0, col0, kb):
        hopper.mbar_expect_tx(full, STAGE_BYTES)
        hopper.tma_load_2d(stage, map_a, kt * SBK, row0, full)
        if K_MAJOR_B:
            hopper.tma_load_2d(stage + uint32(A_BYTES), map_b, kt * SBK, kb + col0, full)
        else:
            for j in range(B_BOXES):
                hopper.tma_load_2d(stage + uint32(A_BYTES + j * B_BOX), map_b, col0 + 64 * j,
                                   (kb + kt) * SBK, full)
    # endregion: grouped_stage

    return load_stage_grouped
