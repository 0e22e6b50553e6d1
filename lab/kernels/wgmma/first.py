"""The first three Hopper rungs (:mod:`lab.kernels.wgmma.host` launches them):
rung 1 feeds ``wgmma`` from a cp.async pipeline every thread takes part in; rungs 2 and 3 fill
the stages with TMA copies that thread 0 issues, each stage with a *full* mbarrier, and hand
stages back at a block barrier. No producer warpgroup yet: that is rung 4's change.
"""
from __future__ import annotations

from numba import cuda, float32, int32, uint8, uint32, uint64

from lab import hopper, ptx
from lab.kernels.wgmma.config import BK, ROW, HopperConfig
from lab.kernels.wgmma.epilogue import epilogue
from lab.kernels.wgmma.order import tile_order
from lab.kernels.wgmma.stage import stage_ops, zero_acc


# ----------------------------------------------------------------------------- rung 1

def build_cpasync(cfg: HopperConfig):
    """Rung 1: one warpgroup, cp.async-filled 128B-swizzled stages, wgmma from shared memory."""
    cfg.validate()
    BM, BN, STAGES, MT, GROUP_M = cfg.bm, cfg.bn, cfg.stages, cfg.mt, cfg.group_m
    A_BYTES, STAGE_BYTES = cfg.a_bytes, cfg.stage_bytes
    B_BOX = BK * ROW                      # one 64-column block of the B tile: 8 KB
    A_COPIES = BM * 8 // 128              # 16-byte chunks per thread per stage
    B_CPR = BN // 8                       # chunks per B row
    B_COPIES = BK * B_CPR // 128
    WAIT = STAGES - 2
    ACC = MT * BN // 2
    mma = hopper.wgmma(cfg.kind, BN)
    tile_coords = tile_order(GROUP_M)
    store_tile = epilogue(MT, BN)
    zero = zero_acc(ACC)

    # region: cpasync_copy
    @cuda.jit(device=True, inline="always")
    def copy_stage(stage, tid, a_src, b_src, a_pitch, b_pitch):
        """This thread's cp.async copies of one k-slice into the 128B-swizzled layout wgmma
        reads: A row r at r·128 bytes, chunk c at (c ^ r % 8)·16; B as BN/64 blocks of
        64 k-rows × 128 bytes, each row swizzled the same way."""
        chunk = tid % 8
        for i in range(A_COPIES):
            r = tid // 8 + 16 * i
            dst = r * ROW + ((chunk ^ (r % 8)) << 4)
            ptx.cp_async_16(stage + uint32(dst), a_src + r * a_pitch + 16 * chunk)
        bc = tid % B_CPR
        for i in range(B_COPIES):
            k = tid // B_CPR + (128 // B_CPR) * i
            dst = A_BYTES + (bc // 8) * B_BOX + k * ROW + (((bc % 8) ^ (k % 8)) << 4)
            ptx.cp_async_16(stage + uint32(dst), b_src + k * b_pitch + 16 * bc)
    # endregion: cpasync_copy

    @cuda.jit
    def wgmma_cpasync(A, B, C):
        smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
        tid = int32(cuda.threadIdx.x)
        k_pad = int32(A.shape[1])
        n_pad = int32(B.shape[1])
        k_tiles = k_pad // BK
        block_m, block_n = tile_coords(int32(cuda.blockIdx.x), int32(A.shape[0]) // BM,
                                       n_pad // BN)
        shared = hopper.shared_address(smem)
        a_pitch = 2 * k_pad
        b_pitch = 2 * n_pad
        a_src = hopper.global_address(A) + (block_m * BM) * a_pitch
        b_src = hopper.global_address(B) + 2 * block_n * BN
        acc = cuda.local.array(ACC, float32)
        zero(acc)

        # region: cpasync_mainloop
        for s in range(STAGES - 1):                    # prologue: slices 0 … STAGES-2
            if s < k_tiles:
                copy_stage(shared + uint32(s * STAGE_BYTES), tid, a_src + 2 * BK * s,
                           b_src + BK * s * b_pitch, a_pitch, b_pitch)
            ptx.cp_async_commit()
        for kt in range(k_tiles):
            ptx.cp_async_wait(WAIT)                 # my copies of slice kt landed
            hopper.fence_proxy_async()                 # … visible to wgmma's (async) reads
            cuda.syncthreads()                         # … everyone's; slot kt-1 is free
            nxt = kt + STAGES - 1
            if nxt < k_tiles:
                copy_stage(shared + uint32((nxt % STAGES) * STAGE_BYTES), tid,
                           a_src + 2 * BK * nxt, b_src + BK * nxt * b_pitch, a_pitch, b_pitch)
            ptx.cp_async_commit()
            stage = shared + uint32((kt % STAGES) * STAGE_BYTES)
            hopper.wgmma_fence()
            for ks in range(BK // 16):
                desc_b = hopper.smem_desc(stage + uint32(A_BYTES + ks * 16 * ROW), B_BOX, 1024)
                for mi in range(MT):
                    desc_a = hopper.smem_desc(stage + uint32(mi * 64 * ROW + 32 * ks), 16, 1024)
                    mma(acc, mi * (BN // 2), desc_a, desc_b, 1)
            hopper.wgmma_commit()
            hopper.wgmma_wait(0)                       # slot kt is read: free after the barrier
        ptx.cp_async_wait(0)
        # endregion: cpasync_mainloop
        store_tile(C, acc, block_m * BM, block_n * BN, tid)

    return wgmma_cpasync


# ----------------------------------------------------------------------------- rungs 2-3

def build_tma(cfg: HopperConfig):
    """Rungs 2–3: TMA copies into full-mbarrier stages; every warpgroup computes, thread 0
    also issues the copies; a block barrier per k-slice hands stages back."""
    cfg.validate()
    BM, BN, STAGES, MT, GROUP_M = cfg.bm, cfg.bn, cfg.stages, cfg.mt, cfg.group_m
    STAGE_BYTES = cfg.stage_bytes
    WG_ROWS = cfg.wg_rows
    ACC = MT * BN // 2
    tile_coords = tile_order(GROUP_M)
    store_tile = epilogue(MT, BN)
    zero = zero_acc(ACC)
    load_stage, compute_stage = stage_ops(cfg)

    @cuda.jit
    def wgmma_tma(map_a, map_b, C, k):
        smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
        bars = cuda.shared.array(STAGES, dtype=uint64)
        tid = int32(cuda.threadIdx.x)
        wg = tid // 128
        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_tiles = (k + BK - 1) // BK
        block_m, block_n = tile_coords(int32(cuda.blockIdx.x), (m + BM - 1) // BM,
                                       (n + BN - 1) // BN)
        row0 = block_m * BM
        col0 = block_n * BN
        shared = hopper.shared_address(smem)
        full0 = hopper.shared_address(bars)
        a_map = hopper.global_address(map_a)
        b_map = hopper.global_address(map_b)
        acc = cuda.local.array(ACC, float32)
        zero(acc)

        # region: tma_mainloop
        if tid == 0:
            for s in range(STAGES):
                hopper.mbar_init(full0 + uint32(8 * s), 1)
            hopper.fence_barrier_init()
        cuda.syncthreads()
        if tid == 0:                                     # prologue: slices 0 … STAGES-2
            for s in range(STAGES - 1):
                if s < k_tiles:
                    load_stage(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                               a_map, b_map, s, row0, col0)
        for kt in range(k_tiles):
            nxt = kt + STAGES - 1                        # its slot was freed by the barrier
            if tid == 0 and nxt < k_tiles:               # at the end of iteration kt-1
                s = nxt % STAGES
                load_stage(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                           a_map, b_map, nxt, row0, col0)
            s = kt % STAGES
            hopper.mbar_wait(full0 + uint32(8 * s), (kt // STAGES) % 2)   # bytes landed
            compute_stage(acc, shared + uint32(s * STAGE_BYTES), wg, 1)
            hopper.wgmma_wait(0)
            cuda.syncthreads()                           # every warpgroup is done with slot s
        # endregion: tma_mainloop
        store_tile(C, acc, row0 + wg * WG_ROWS, col0, tid % 128)

    return wgmma_tma
