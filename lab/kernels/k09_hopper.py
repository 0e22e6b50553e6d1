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

Every launch: ``launch(A, B, C)`` with device arrays; C (M×N float32) is written only inside
``row < M, col < N``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import cuda, float32, int32, uint8, uint32, uint64

from lab import hopper, ptx
from lab.kernels import KernelSpec
from lab.kernels.k07_tensor_core import pad_inputs

SIGNATURES = {
    "cpasync": {"f16": "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])",
                "bf16": "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"},
    "tma": "void(uint64[::1], uint64[::1], float32[:, ::1], int32)",
}
BK = 64                       # k per stage: one 128-byte row of 16-bit values
ROW = 128                     # bytes per swizzled row
MAX_SHARED = 227 * 1024


@dataclass(frozen=True)
class HopperConfig:
    """One Hopper kernel variant. Edges in elements, 16-bit inputs."""
    loader: str = "tma"        # "cpasync" (every thread copies) or "tma"
    bm: int = 128              # block tile rows
    bn: int = 128              # block tile columns (= wgmma N)
    stages: int = 4            # k-slices in shared memory at once
    consumers: int = 1         # warpgroups issuing wgmma
    producer: bool = False     # a separate warpgroup issues the TMA copies
    regs: int = 0              # setmaxnreg for consumers (producer gets 40); 0 = off
    persistent: bool = False   # one block per SM loops over tiles
    group_m: int = 8           # block-rows per L2 group in the tile order
    pingpong: bool = False     # consumers take whole tiles in turn (else they split one)
    kind: str = "f16"

    @property
    def wg_rows(self) -> int:
        return self.bm if self.pingpong else self.bm // self.consumers

    @property
    def mt(self) -> int:          # m64 wgmma per k-step per consumer warpgroup
        return self.wg_rows // 64

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + int(self.producer))

    @property
    def a_bytes(self) -> int:
        return self.bm * ROW

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * ROW

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def label(self) -> str:
        parts = [f"{self.bm}x{self.bn}x{BK}", f"{self.stages} stages", self.loader,
                 f"{self.consumers} consumer WG"]
        if self.producer:
            parts.append("+ producer WG")
        if self.regs:
            parts.append(f"setmaxnreg {self.regs}/40")
        if self.persistent:
            parts.append("persistent")
        if self.pingpong:
            parts.append("ping-pong (a tile per WG)")
        return ", ".join(parts) + f", {self.kind}"

    def validate(self) -> "HopperConfig":
        problems = []
        if self.kind not in ("f16", "bf16"):
            problems.append(f"kind must be 'f16' or 'bf16', not {self.kind!r}")
        if self.loader not in ("cpasync", "tma"):
            problems.append(f"loader must be 'cpasync' or 'tma', not {self.loader!r}")
        if self.bn not in hopper.WGMMA_N:
            problems.append(f"bn must be one of {hopper.WGMMA_N}")
        if self.bm % (64 * (1 if self.pingpong else self.consumers)) or self.bm > 256:
            problems.append("bm must be a multiple of 64 per consumer warpgroup, at most 256")
        if self.mt * self.bn // 2 > 128:
            problems.append(f"{self.mt * self.bn // 2} accumulators per thread (> 128)")
        if self.shared_bytes + 1024 > MAX_SHARED:
            problems.append(f"{self.shared_bytes} bytes of shared memory")
        if self.loader == "cpasync" and (self.consumers != 1 or self.producer
                                         or self.persistent):
            problems.append("the cp.async rung has one warpgroup and no producer")
        if (self.regs or self.persistent) and not self.producer:
            problems.append("setmaxnreg and persistence are for the specialized kernel")
        if self.regs and (self.regs % 8 or not 24 <= self.regs <= 256
                          or 128 * 40 + 128 * self.consumers * self.regs > 65536):
            problems.append(f"setmaxnreg {self.regs} does not fit the register file")
        if self.pingpong and not (self.persistent and self.consumers == 2):
            problems.append("ping-pong needs the persistent kernel and two consumer warpgroups")
        if not 2 <= self.stages <= 8:
            problems.append("stages must be 2…8")
        if problems:
            raise ValueError(f"hopper config {self.label}: " + "; ".join(problems))
        return self


# ----------------------------------------------------------------------------- shared pieces

def _tile_order(group_m: int):
    # region: tile_order
    @cuda.jit(device=True, inline="always")
    def tile_coords(tile, tiles_m, tiles_n):
        """Tile number → (tile row, tile column): GROUP_M tile-rows at a time, column by
        column inside a group, so tiles running together share A and B panels in L2."""
        per_group = group_m * tiles_n
        first_m = tile // per_group * group_m
        rows_here = min(tiles_m - first_m, group_m)
        in_group = tile - tile // per_group * per_group
        return first_m + in_group % rows_here, in_group // rows_here
    # endregion: tile_order
    return tile_coords


def _epilogue(mt: int, bn: int):
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


def _zero(count: int):
    @cuda.jit(device=True, inline="always")
    def zero(acc):
        for i in range(count):
            acc[i] = float32(0)
    return zero


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
    tile_coords = _tile_order(GROUP_M)
    store_tile = _epilogue(MT, BN)
    zero = _zero(ACC)

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
    A_BYTES, STAGE_BYTES = cfg.a_bytes, cfg.stage_bytes
    B_BOX = BK * ROW
    B_BOXES = BN // 64
    WG_ROWS = cfg.wg_rows
    ACC = MT * BN // 2
    mma = hopper.wgmma(cfg.kind, BN)
    tile_coords = _tile_order(GROUP_M)
    store_tile = _epilogue(MT, BN)
    zero = _zero(ACC)

    # region: tma_stage
    @cuda.jit(device=True, inline="always")
    def load_stage(stage, full, map_a, map_b, kt, row0, col0):
        """One thread: announce the stage's bytes on its full barrier, then ask the copy
        engine for the A box (BM rows × 64 k) and BN/64 B boxes (64 k-rows × 64 columns)."""
        hopper.mbar_expect_tx(full, STAGE_BYTES)
        hopper.tma_load_2d(stage, map_a, kt * BK, row0, full)
        for j in range(B_BOXES):
            hopper.tma_load_2d(stage + uint32(A_BYTES + j * B_BOX), map_b, col0 + 64 * j,
                               kt * BK, full)
    # endregion: tma_stage

    @cuda.jit(device=True, inline="always")
    def compute_stage(acc, stage, wg):
        hopper.wgmma_fence()
        for ks in range(BK // 16):
            desc_b = hopper.smem_desc(stage + uint32(A_BYTES + ks * 16 * ROW), B_BOX, 1024)
            for mi in range(MT):
                desc_a = hopper.smem_desc(
                    stage + uint32((wg * WG_ROWS + mi * 64) * ROW + 32 * ks), 16, 1024)
                mma(acc, mi * (BN // 2), desc_a, desc_b, 1)
        hopper.wgmma_commit()

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
            compute_stage(acc, shared + uint32(s * STAGE_BYTES), wg)
            hopper.wgmma_wait(0)
            cuda.syncthreads()                           # every warpgroup is done with slot s
        # endregion: tma_mainloop
        store_tile(C, acc, row0 + wg * WG_ROWS, col0, tid % 128)

    return wgmma_tma


# ----------------------------------------------------------------------------- rungs 4-5

def build_ws(cfg: HopperConfig):
    """Rungs 4–6: a producer warpgroup (TMA) and consumer warpgroups (wgmma) that meet only
    at full/empty mbarriers; optionally setmaxnreg, a persistent tile loop, and ping-pong
    consumers (a whole tile each, in turn)."""
    cfg.validate()
    BM, BN, STAGES, MT, GROUP_M = cfg.bm, cfg.bn, cfg.stages, cfg.mt, cfg.group_m
    A_BYTES, STAGE_BYTES = cfg.a_bytes, cfg.stage_bytes
    B_BOX = BK * ROW
    B_BOXES = BN // 64
    WG_ROWS = cfg.wg_rows
    CONSUMERS = cfg.consumers
    ACC = MT * BN // 2
    REGS = cfg.regs
    PERSISTENT = cfg.persistent
    PINGPONG = cfg.pingpong
    BARRIERS = 2 * STAGES + 2             # a full and an empty mbarrier per stage; 2 "order"
    RELEASERS = 4 if PINGPONG else 4 * CONSUMERS   # warps that hand one stage back
    mma = hopper.wgmma(cfg.kind, BN)
    tile_coords = _tile_order(GROUP_M)
    store_tile = _epilogue(MT, BN)
    zero = _zero(ACC)

    @cuda.jit(device=True, inline="always")
    def load_stage(stage, full, map_a, map_b, kt, row0, col0):
        hopper.mbar_expect_tx(full, STAGE_BYTES)
        hopper.tma_load_2d(stage, map_a, kt * BK, row0, full)
        for j in range(B_BOXES):
            hopper.tma_load_2d(stage + uint32(A_BYTES + j * B_BOX), map_b, col0 + 64 * j,
                               kt * BK, full)

    @cuda.jit(device=True, inline="always")
    def compute_stage(acc, stage, wg):
        hopper.wgmma_fence()
        for ks in range(BK // 16):
            desc_b = hopper.smem_desc(stage + uint32(A_BYTES + ks * 16 * ROW), B_BOX, 1024)
            for mi in range(MT):
                desc_a = hopper.smem_desc(
                    stage + uint32((wg * WG_ROWS + mi * 64) * ROW + 32 * ks), 16, 1024)
                mma(acc, mi * (BN // 2), desc_a, desc_b, 1)
        hopper.wgmma_commit()

    # region: pingpong
    @cuda.jit(device=True, inline="always")
    def pingpong_consumer(acc, shared, full0, empty0, order0, C, cw, thread, leader, first,
                          step, tiles, tiles_m, tiles_n, k_tiles):
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
                hopper.mbar_wait(mine, ((p - 1) // 2) % 2)
            zero(acc)
            it = p * k_tiles                             # the ring's slice count so far
            for kt in range(k_tiles):
                s = it % STAGES
                hopper.mbar_wait(full0 + uint32(8 * s), (it // STAGES) % 2)
                compute_stage(acc, shared + uint32(s * STAGE_BYTES), 0)
                hopper.wgmma_wait(1)
                if kt > 0 and leader:
                    hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
                it += 1
            if thread == 0:                              # the other's turn to multiply
                hopper.mbar_arrive(other)
            hopper.wgmma_wait(0)
            if leader:
                hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
            store_tile(C, acc, block_m * BM, block_n * BN, thread)
    # endregion: pingpong

    # One block per SM and a register cap at entry: what setmaxnreg needs to take effect.
    bounds = {} if hopper.SIMULATOR else {"launch_bounds": (cfg.threads, 1)}

    @cuda.jit(**bounds)
    def wgmma_ws(map_a, map_b, C, k):
        smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
        bars = cuda.shared.array(BARRIERS, dtype=uint64)
        tid = int32(cuda.threadIdx.x)
        wg = tid // 128
        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_tiles = (k + BK - 1) // BK
        tiles_m = (m + BM - 1) // BM
        tiles_n = (n + BN - 1) // BN
        tiles = tiles_m * tiles_n
        first = int32(cuda.blockIdx.x)
        step = int32(cuda.gridDim.x) if PERSISTENT else tiles
        shared = hopper.shared_address(smem)
        full0 = hopper.shared_address(bars)
        empty0 = full0 + uint32(8 * STAGES)
        order0 = full0 + uint32(16 * STAGES)
        if tid == 0:
            for s in range(STAGES):
                hopper.mbar_init(full0 + uint32(8 * s), 1)              # the producer's arrive
                hopper.mbar_init(empty0 + uint32(8 * s), RELEASERS)     # one per consumer warp
            hopper.mbar_init(order0, 1)
            hopper.mbar_init(order0 + uint32(8), 1)
            hopper.fence_barrier_init()
        cuda.syncthreads()

        # region: producer
        if wg == 0:                                   # producer warpgroup: copies only
            if REGS:
                hopper.setmaxnreg_dec(40)
            if tid == 0:
                a_map = hopper.global_address(map_a)
                b_map = hopper.global_address(map_b)
                it = int32(0)                         # k-slices issued so far, all tiles
                for tile in range(first, tiles, step):
                    block_m, block_n = tile_coords(tile, tiles_m, tiles_n)
                    for kt in range(k_tiles):
                        s = it % STAGES
                        # wait until the consumers released this slot's previous use
                        hopper.mbar_wait(empty0 + uint32(8 * s), ((it // STAGES) % 2) ^ 1)
                        load_stage(shared + uint32(s * STAGE_BYTES), full0 + uint32(8 * s),
                                   a_map, b_map, kt, block_m * BM, block_n * BN)
                        it += 1
        # endregion: producer
        # region: consumer
        else:                                         # consumer warpgroups: wgmma only
            if REGS:
                hopper.setmaxnreg_inc(REGS)
            cw = wg - 1
            thread = tid % 128
            leader = thread % 32 == 0                 # lane 0 of each warp signals "empty"
            acc = cuda.local.array(ACC, float32)
            if PINGPONG:
                pingpong_consumer(acc, shared, full0, empty0, order0, C, cw, thread, leader,
                                  first, step, tiles, tiles_m, tiles_n, k_tiles)
                return
            it = int32(0)
            for tile in range(first, tiles, step):
                block_m, block_n = tile_coords(tile, tiles_m, tiles_n)
                zero(acc)
                for kt in range(k_tiles):
                    s = it % STAGES
                    hopper.mbar_wait(full0 + uint32(8 * s), (it // STAGES) % 2)
                    compute_stage(acc, shared + uint32(s * STAGE_BYTES), cw)
                    hopper.wgmma_wait(1)              # slice it-1's wgmma are done …
                    if kt > 0 and leader:             # … so its slot goes back
                        hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
                    it += 1
                hopper.wgmma_wait(0)
                if leader:
                    hopper.mbar_arrive(empty0 + uint32(8 * ((it - 1) % STAGES)))
                store_tile(C, acc, block_m * BM + cw * WG_ROWS, block_n * BN, thread)
        # endregion: consumer

    return wgmma_ws


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
    return SIGNATURES["cpasync"][cfg.kind] if cfg.loader == "cpasync" else SIGNATURES["tma"]


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
    """(map_a, map_b, K, keep): tensor maps for A (M×K) and B (K×N), after padding K and N to
    multiples of 8 when their row pitch is not a multiple of 16 bytes (TMA's rule); ``keep``
    holds the padded arrays alive while the kernel runs."""
    a, b = pad_inputs(A, B, 1, 8, 8) if (A.shape[1] % 8 or B.shape[1] % 8) else (A, B)
    name = "bfloat16" if cfg.kind == "bf16" else "float16"
    map_a = hopper.tensor_map_2d(a, cfg.bm, 64, dtype_name=name)
    map_b = hopper.tensor_map_2d(b, BK, 64, dtype_name=name)
    return map_a, map_b, int(a.shape[1]), (a, b)


def launcher(cfg: HopperConfig):
    """``launch(A, B, C)`` for ``cfg``."""
    cfg.validate()
    dynamic = cfg.shared_bytes

    def launch(A, B, C) -> None:
        require_hopper()
        kernel = kernel_for(cfg)
        hopper.allow_dynamic_shared(kernel, signature(cfg), dynamic)
        m, n = C.shape
        if cfg.loader == "cpasync":
            a, b = pad_inputs(A, B, cfg.bm, cfg.bn, BK)
            blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
            kernel[blocks, cfg.threads, 0, dynamic](a, b, C)
            return
        map_a, map_b, k, keep = tma_operands(A, B, cfg)
        tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
        blocks = min(tiles, _sm_count()) if cfg.persistent else tiles
        kernel[blocks, cfg.threads, 0, dynamic](map_a, map_b, C, np.int32(k))
        launch.keep = (map_a, map_b, keep)    # alive until the next call (async launch)

    launch.config = cfg
    return launch


def make_config(**changes) -> HopperConfig:
    return HopperConfig(**changes).validate()


#: The rungs; each adds one idea to the one before (FP16 here, BF16 the same with kind="bf16").
RUNG_CONFIGS = {
    "wgmma_cpasync": HopperConfig(loader="cpasync", bm=128, bn=128, stages=4),
    "wgmma_tma": HopperConfig(bm=128, bn=128, stages=4),
    "wgmma_2wg": HopperConfig(bm=128, bn=256, stages=4, consumers=2),
    "wgmma_ws": HopperConfig(bm=128, bn=256, stages=4, consumers=2, producer=True, regs=232),
    "wgmma_persistent": HopperConfig(bm=128, bn=256, stages=4, consumers=2, producer=True,
                                     regs=232, persistent=True),
    "wgmma_pingpong": HopperConfig(bm=128, bn=128, stages=6, consumers=2, producer=True,
                                   regs=232, persistent=True, pingpong=True),
}

TITLES = {
    "wgmma_cpasync": "wgmma from cp.async-filled 128B-swizzled stages, 1 warpgroup, 128×128",
    "wgmma_tma": "+ TMA copies and full mbarriers",
    "wgmma_2wg": "+ 128×256 tile, two consumer warpgroups (m64n256k16)",
    "wgmma_ws": "+ producer warpgroup, empty mbarriers, setmaxnreg",
    "wgmma_persistent": "+ persistent blocks (one per SM), grouped tile order",
    "wgmma_pingpong": "+ ping-pong: a 128×128 tile per consumer warpgroup, taken in turn, "
                      "so one stores while the other multiplies",
}

EDGES = {"cpasync": "launch pads A and B with zeros to the block tile; stores check row < M, "
                    "col < N",
         "tma": "TMA zero-fills boxes past the edges (K or N is padded to a multiple of 8 only "
                "when the row pitch is not 16-byte aligned); stores check row < M, col < N"}


def _spec(name: str, cfg: HopperConfig) -> KernelSpec:
    kernel = kernel_for(cfg)
    bf16 = cfg.kind == "bf16"
    suffix = "_bf16" if bf16 else "_fp16"
    return KernelSpec(name + suffix, f"Hopper: {TITLES[name]} ({'BF16' if bf16 else 'FP16'})",
                      np.uint16 if bf16 else np.float16, launcher(cfg), simulator=False,
                      chapter=7, compile=((kernel, signature(cfg)),), edges=EDGES[cfg.loader],
                      dtype_name="bfloat16" if bf16 else "", tile=(cfg.bm, cfg.bn, BK),
                      min_cc=(9, 0), max_cc=(9, 0),
                      needs="sm_90a: wgmma" + (", TMA, mbarriers" if cfg.loader == "tma" else
                                               ", cp.async")
                            + (", setmaxnreg" if cfg.regs else ""))


SPECS = [_spec(name, replace(cfg, kind=kind)) for name, cfg in RUNG_CONFIGS.items()
         for kind in ("f16", "bf16")]
