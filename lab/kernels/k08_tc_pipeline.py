"""Tensor cores, fed — block tiles in shared memory, warp tiles, a cp.async pipeline.

Rung 1 (:mod:`lab.kernels.k07_tensor_core`) issued ``mma.sync`` but read every operand from
global memory at 8 FLOP/byte. This module climbs back up the same pyramid as the FP32 chapters,
now with the layouts the tensor cores want:

1. **Block tiles in shared memory, copied with ``cp.async``.** A block of ``THREADS`` threads
   owns a ``BM × BN`` tile of C and walks k in slices of ``BK``: each thread copies 16-byte
   chunks of the A and B tiles global → shared with ``cp.async.cg`` (no register round trip).
   Against global memory the block now does 2·BM·BN / ((BM + BN)·2 bytes) FLOP per byte:
   64 for 128 × 128.
2. **Warp tiles and ``ldmatrix``.** Each warp owns a ``WM × WN`` piece of the block tile: per
   16-deep k-step it reads ``WM/16`` A fragments (``ldmatrix.x4``) and ``WN/16`` pairs of B
   fragments (``ldmatrix.x4.trans`` — B is stored k-major, the instruction transposes it into
   the "col" layout) and issues ``(WM/16)·(WN/8)`` mma.sync on them: 32 for 64 × 64, against 8
   ldmatrix. The accumulators (``WM·WN/32`` floats per lane) stay in registers.
3. **A multi-stage pipeline.** ``STAGES`` slices live in shared memory at once: while the
   warps multiply slice ``t``, the copies of slices ``t+1 … t+STAGES−1`` are in flight
   (``cp.async.commit_group`` per slice, ``cp.async.wait_group STAGES−2`` before using one).
   One barrier per slice.
4. **A swizzled layout.** ``ldmatrix`` serves 8 rows of 16 bytes per shared-memory wavefront
   only if the 8 rows fall in 8 different 16-byte bank slots. Rows of a 32-wide FP16 A tile
   are 64 bytes apart, so rows 0, 2, 4, 6 collide (a 4-way conflict); rows of B tiles are 256
   bytes apart, all 8 collide. The swizzle stores chunk ``c`` of row ``r`` at chunk
   ``c XOR f(r)`` so that every ldmatrix phase and every cp.async phase is conflict-free
   (:func:`swizzle` and :func:`lab.fragments.wavefronts`).
5. **Block order for L2 reuse.** Blocks are numbered in groups of ``GROUP_M`` block-rows: the
   blocks resident together share a few A row-panels and B column-panels, which then come from
   L2 rather than HBM.

Everything is a parameter of :func:`make_config` / :func:`build`, so ``tools/tune_tc.py`` can
sweep them; the registered rungs switch the ideas on one at a time.

Edges: the launch pads A to (⌈M/BM⌉·BM) × (⌈K/BK⌉·BK) and B to (⌈K/BK⌉·BK) × (⌈N/BN⌉·BN)
with zeros (skipped when the shape is already a multiple; the copy is timed in the
``tensor_cores`` experiment), and the epilogue checks ``row < M`` and ``col < N``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32, int64, uint8, uint32

from lab import enqueue
from lab import ptx
from lab.kernels import KernelSpec
from lab.kernels.k07_tensor_core import pad_inputs
from lab.lru import LRU

SIGNATURE = {"f16": "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])",
             "bf16": "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"}
#: Shared memory a block may use on sm_90 (227 KB); above 48 KB it must be requested.
MAX_SHARED = 227 * 1024
STATIC_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class TileConfig:
    """One point of the design space. All edges in elements; 16-bit inputs."""
    bm: int = 128         # block tile rows (M)
    bn: int = 128         # block tile columns (N)
    bk: int = 32          # k-slice per pipeline stage
    wm: int = 64          # warp tile rows
    wn: int = 64          # warp tile columns
    stages: int = 4       # slices in shared memory at once (1 = load, wait, compute)
    swizzle: bool = True  # XOR-swizzled shared layout (False: plain row-major)
    group_m: int = 8      # block-rows per L2 group (1 = plain row-major block order)
    kind: str = "f16"     # "f16" or "bf16" inputs

    @property
    def warps(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn)

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def stage_bytes(self) -> int:
        return 2 * (self.bm * self.bk + self.bk * self.bn)

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def label(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk} warp {self.wm}x{self.wn} s{self.stages}"
                f"{' swz' if self.swizzle else ''} g{self.group_m} {self.kind}")

    def validate(self) -> "TileConfig":
        problems = []
        if self.kind not in ("f16", "bf16"):
            problems.append(f"kind must be 'f16' or 'bf16', not {self.kind!r}")
        if self.bm % self.wm or self.bn % self.wn:
            problems.append("warp tile must divide the block tile")
        if self.wm % 16 or self.wn % 16:
            problems.append("warp tile edges must be multiples of 16")
        if self.bk % 16 or self.bk < 16:
            problems.append("bk must be a multiple of 16")
        if not 1 <= self.warps <= 32:
            problems.append(f"{self.warps} warps per block")
        for name, chunks in (("A", self.bm * self.bk // 8), ("B", self.bk * self.bn // 8)):
            if chunks % self.threads:
                problems.append(f"{name} tile's {chunks} 16-byte chunks do not split evenly "
                                f"over {self.threads} threads")
        if self.threads % (self.bk // 8) or self.threads % (self.bn // 8):
            problems.append("threads must be a multiple of the chunks per tile row")
        if self.shared_bytes > MAX_SHARED:
            problems.append(f"{self.shared_bytes} bytes of shared memory > {MAX_SHARED}")
        if not 1 <= self.stages <= 8:
            problems.append("stages must be 1…8")
        if self.group_m < 1:
            problems.append("group_m must be >= 1")
        if problems:
            raise ValueError(f"tile config {self.label}: " + "; ".join(problems))
        return self


# region: swizzle
def swizzle_term(row: int, chunks_per_row: int) -> int:
    """The XOR applied to the 16-byte chunk index of ``row`` (host-side twin of the kernel's).

    Eight consecutive rows must land in eight different 16-byte slots of a 128-byte line.
    With ``chunks_per_row >= 8`` XOR-ing with ``row % 8`` does it; with 4 (a 64-byte row,
    two rows per line) XOR with ``(row // 2) % 4``; with 2, ``(row // 4) % 2``.
    """
    rows_per_line = max(1, 8 // chunks_per_row)
    return (row // rows_per_line) & (min(chunks_per_row, 8) - 1)


def swizzle(row: int, chunk: int, chunks_per_row: int) -> int:
    """Physical chunk where logical chunk ``chunk`` of ``row`` is stored."""
    return chunk ^ swizzle_term(row, chunks_per_row)
# endregion: swizzle


def stage_mma(cfg: TileConfig):
    """``mma_stage(stage, a_frag, b_frag, frag_half, a_swz, b_swz, b_chunk0, a_regs, b_regs,
    acc)``: one shared-memory stage's fragments (``ldmatrix``) and ``mma.sync`` into ``acc``, for
    a warp whose A and B fragments start at ``a_frag`` and ``b_frag`` bytes into the stage —
    the fed rungs' inner loop, which the small-M kernel (:mod:`lab.kernels.small_m`) shares."""
    MT, NT = cfg.wm // 16, cfg.wn // 8
    NP = NT // 2
    KS = cfg.bk // 16
    A_ROW_BYTES, B_ROW_BYTES = 2 * cfg.bk, 2 * cfg.bn
    mma = ptx.mma_f16 if cfg.kind == "f16" else ptx.mma_bf16

    @cuda.jit(device=True, inline="always")
    def mma_stage(stage, a_frag, b_frag, frag_half, a_swz, b_swz, b_chunk0, a_regs, b_regs,
                  acc):
        # region: fragments_and_mma
        for ks in range(int32(KS)):
            a_at = stage + a_frag + uint32(((2 * ks + frag_half) ^ a_swz) << 4)
            for mi in range(int32(MT)):
                f = ptx.ldmatrix_x4(a_at + uint32(mi * 16 * A_ROW_BYTES))
                a_regs[4 * mi] = f[0]
                a_regs[4 * mi + 1] = f[1]
                a_regs[4 * mi + 2] = f[2]
                a_regs[4 * mi + 3] = f[3]
            b_at = stage + b_frag + uint32(ks * 16 * B_ROW_BYTES)
            for p in range(int32(NP)):
                f = ptx.ldmatrix_x4_trans(b_at + uint32(((b_chunk0 + 2 * p) ^ b_swz) << 4))
                b_regs[4 * p] = f[0]
                b_regs[4 * p + 1] = f[1]
                b_regs[4 * p + 2] = f[2]
                b_regs[4 * p + 3] = f[3]
            for mi in range(int32(MT)):
                a = (a_regs[4 * mi], a_regs[4 * mi + 1], a_regs[4 * mi + 2],
                     a_regs[4 * mi + 3])
                for nj in range(int32(NT)):
                    c = 4 * (mi * NT + nj)
                    d = mma(a, (b_regs[2 * nj], b_regs[2 * nj + 1]),
                            (acc[c], acc[c + 1], acc[c + 2], acc[c + 3]))
                    acc[c] = d[0]
                    acc[c + 1] = d[1]
                    acc[c + 2] = d[2]
                    acc[c + 3] = d[3]
        # endregion: fragments_and_mma

    return mma_stage


def build(cfg: TileConfig, tail=None):
    """Compile-ready ``@cuda.jit`` kernel for ``cfg`` (constants baked in as closure values).

    ``tail`` (default None: the plain kernel ``tc_kernel(A, B, C)``) is the hook of
    :func:`lab.kernels.k04_vectorized.make_gemm`: device functions ``store(C, row, col, v,
    split, X)`` (a fused epilogue, a partial sum; None: a plain store) and ``k_range(k_total,
    split, X) -> (k_lo, k_hi)`` (None: all of K; else multiples of BK), a fourth kernel
    argument ``X`` passed through to them, and ``split = blockIdx.y``.
    """
    cfg.validate()
    BM, BN, BK, WM, WN, STAGES = cfg.bm, cfg.bn, cfg.bk, cfg.wm, cfg.wn, cfg.stages
    GROUP_M = cfg.group_m
    WARPS_N = BN // WN
    THREADS = cfg.threads
    MT = WM // 16                      # 16-row A fragments per warp tile
    NT = WN // 8                       # 8-column B fragments per warp tile
    A_CPR = BK // 8                    # 16-byte chunks per row of the A tile
    B_CPR = BN // 8                    # … of the B tile
    A_COPIES = BM * A_CPR // THREADS   # cp.async per thread per stage
    B_COPIES = BK * B_CPR // THREADS
    A_STEP = THREADS // A_CPR          # rows between one thread's successive A copies
    B_STEP = THREADS // B_CPR
    A_ROW_BYTES = 2 * BK
    B_ROW_BYTES = 2 * BN
    A_STAGE_BYTES = BM * A_ROW_BYTES
    STAGE_BYTES = cfg.stage_bytes
    A_LINE_ROWS = max(1, 8 // A_CPR)
    A_MASK = (min(A_CPR, 8) - 1) if cfg.swizzle else 0
    B_LINE_ROWS = max(1, 8 // B_CPR)
    B_MASK = (min(B_CPR, 8) - 1) if cfg.swizzle else 0
    WAIT = max(STAGES - 2, 0)
    PIPELINED = STAGES >= 2
    ACC = MT * NT * 4                  # FP32 accumulators per lane
    A_REGS = MT * 4
    B_REGS = NT * 2
    mma_stage = stage_mma(cfg)
    TAIL = tail is not None
    STORE = TAIL and tail.store is not None
    SPLIT = TAIL and tail.k_range is not None
    store = tail.store if STORE else None
    k_range = tail.k_range if SPLIT else None

    @cuda.jit(device=True, inline="always")
    def copy_stage(stage, a_row, a_chunk, b_row, b_chunk, a_src, b_src, a_src_step,
                   b_src_step):
        """This thread's cp.async copies of one k-slice of A and B into the stage at shared
        address ``stage`` (16-byte chunks, swizzled when the config says so)."""
        for i in range(int32(A_COPIES)):
            r = a_row + i * A_STEP
            dst = r * A_ROW_BYTES + ((a_chunk ^ ((r // A_LINE_ROWS) & A_MASK)) << 4)
            ptx.cp_async_16(stage + uint32(dst), a_src + i * a_src_step)
        for i in range(int32(B_COPIES)):
            r = b_row + i * B_STEP
            dst = (A_STAGE_BYTES + r * B_ROW_BYTES
                   + ((b_chunk ^ ((r // B_LINE_ROWS) & B_MASK)) << 4))
            ptx.cp_async_16(stage + uint32(dst), b_src + i * b_src_step)

    @cuda.jit(device=True, inline="always")
    def tc_body(A, B, C, X):
        smem = cuda.shared.array(0, dtype=uint8, alignment=128)
        tid = int32(cuda.threadIdx.x)
        lane = tid & 31
        warp = tid >> 5
        warp_m = warp // WARPS_N
        warp_n = warp - warp_m * WARPS_N
        k_padded = int32(A.shape[1])
        n_padded = int32(B.shape[1])
        k_tiles = k_padded // BK
        split = int32(0)
        k_lo = int32(0)
        if SPLIT:                           # this block walks K[k_lo : k_hi] only
            split = int32(cuda.blockIdx.y)
            k_lo, k_hi = k_range(k_padded, split, X)
            k_tiles = (k_hi - k_lo) // BK

        # region: block_order
        # Block order: GROUP_M block-rows at a time, column by column inside a group.
        blocks_m = int32(A.shape[0]) // BM
        blocks_n = n_padded // BN
        pid = int32(cuda.blockIdx.x)
        per_group = GROUP_M * blocks_n
        first_m = pid // per_group * GROUP_M
        rows_here = min(blocks_m - first_m, GROUP_M)
        in_group = pid - pid // per_group * per_group
        block_m = first_m + in_group % rows_here
        block_n = in_group // rows_here
        # endregion: block_order

        # This thread's cp.async copies: chunk a_chunk of rows a_row, a_row + A_STEP, …
        shared = ptx.shared_address(smem)
        a_row = tid // A_CPR
        a_chunk = tid - a_row * A_CPR
        b_row = tid // B_CPR
        b_chunk = tid - b_row * B_CPR
        a_src = (ptx.global_address(A)
                 + int64(block_m * BM + a_row) * int64(2 * k_padded) + int64(16 * a_chunk))
        b_src = (ptx.global_address(B)
                 + int64(b_row) * int64(2 * n_padded) + int64(2 * block_n * BN + 16 * b_chunk))
        if SPLIT:
            a_src += int64(2) * int64(k_lo)
            b_src += int64(k_lo) * int64(2 * n_padded)
        a_src_step = int64(A_STEP) * int64(2 * k_padded)
        b_src_step = int64(B_STEP) * int64(2 * n_padded)
        b_src_tile = int64(BK) * int64(2 * n_padded)

        # This lane's ldmatrix rows: row (lane % 16), chunk (lane // 16) of each 16×16 piece.
        frag_row = lane & 15
        frag_half = lane >> 4
        a_frag = uint32((warp_m * WM + frag_row) * A_ROW_BYTES)
        a_swz = (frag_row // A_LINE_ROWS) & A_MASK
        b_frag = uint32(A_STAGE_BYTES + frag_row * B_ROW_BYTES)
        b_swz = (frag_row // B_LINE_ROWS) & B_MASK
        b_chunk0 = warp_n * (WN // 8) + frag_half

        acc = cuda.local.array(ACC, float32)
        for i in range(int32(ACC)):
            acc[i] = float32(0)
        a_regs = cuda.local.array(A_REGS, uint32)
        b_regs = cuda.local.array(B_REGS, uint32)

        # Prologue: slices 0 … STAGES-2 in flight.
        for s in range(int32(STAGES - 1)):
            if s < k_tiles:
                stage = shared + uint32(s * STAGE_BYTES)
                copy_stage(stage, a_row, a_chunk, b_row, b_chunk, a_src, b_src,
                           a_src_step, b_src_step)
                a_src += 2 * BK
                b_src += b_src_tile
            ptx.cp_async_commit()

        # region: main_loop
        read_stage = int32(0)
        write_stage = int32(STAGES - 1)
        for kt in range(k_tiles):
            if not PIPELINED:               # one stage: load it, wait, compute
                copy_stage(shared, a_row, a_chunk, b_row, b_chunk, a_src, b_src,
                           a_src_step, b_src_step)
                a_src += 2 * BK
                b_src += b_src_tile
                ptx.cp_async_commit()
            ptx.cp_async_wait(WAIT)          # slice kt has landed (for this thread) …
            cuda.syncthreads()               # … and for every thread; stage kt-1 is free
            if PIPELINED:
                if kt + (STAGES - 1) < k_tiles:
                    stage = shared + uint32(write_stage * STAGE_BYTES)
                    copy_stage(stage, a_row, a_chunk, b_row, b_chunk, a_src, b_src,
                               a_src_step, b_src_step)
                    a_src += 2 * BK
                    b_src += b_src_tile
                ptx.cp_async_commit()
                write_stage = int32(write_stage + 1) if write_stage < STAGES - 1 else int32(0)

            stage = shared + uint32(read_stage * STAGE_BYTES)
            # region: stage_mma
            mma_stage(stage, a_frag, b_frag, frag_half, a_swz, b_swz, b_chunk0, a_regs, b_regs,
                      acc)
            # endregion: stage_mma
            read_stage = int32(read_stage + 1) if read_stage < STAGES - 1 else int32(0)
            if not PIPELINED:
                cuda.syncthreads()           # everyone done with the stage before reloading
        ptx.cp_async_wait(0)
        # endregion: main_loop

        # Epilogue: accumulator register r of fragment (mi, nj) is row group + 8·(r // 2),
        # column 2·pair + r % 2 of that 16×8 piece.
        m, n = C.shape
        row_base = block_m * BM + warp_m * WM + (lane >> 2)
        col_base = block_n * BN + warp_n * WN + 2 * (lane & 3)
        for mi in range(int32(MT)):
            for half in range(int32(2)):
                row = row_base + mi * 16 + 8 * half
                if row < m:
                    for nj in range(int32(NT)):
                        col = col_base + nj * 8
                        c = 4 * (mi * NT + nj) + 2 * half
                        if STORE:
                            if col < n:
                                store(C, row, col, acc[c], split, X)
                            if col + 1 < n:
                                store(C, row, col + 1, acc[c + 1], split, X)
                        else:
                            if col < n:
                                C[row, col] = acc[c]
                            if col + 1 < n:
                                C[row, col + 1] = acc[c + 1]

    if TAIL:
        @cuda.jit
        def tc_tail(A, B, C, X):
            tc_body(A, B, C, X)
        return tc_tail

    @cuda.jit
    def tc_kernel(A, B, C):
        tc_body(A, B, C, int32(0))

    return tc_kernel


_BUILT = LRU(64)


def kernel_for(cfg: TileConfig):
    """The (cached) compiled-on-demand kernel for ``cfg``."""
    return _BUILT.get_or_make(cfg, lambda: build(cfg))


_READY: set = set()


def _allow_shared(kernel, cfg: TileConfig, signature=None) -> None:
    """Compile for this context and allow ``cfg.shared_bytes`` of dynamic shared memory.

    Above 48 KB a kernel must opt in (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``);
    the carveout is set to prefer shared memory over L1 (cp.async.cg bypasses L1 anyway).
    """
    from numba.cuda.cudadrv.driver import binding, driver

    key = (id(kernel), id(cuda.current_context()))
    if key in _READY:
        return
    compiled = kernel.compile(signature or SIGNATURE[cfg.kind])
    cufunc = compiled._codelibrary.get_cufunc()
    if cfg.shared_bytes > STATIC_SHARED_LIMIT:
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, cfg.shared_bytes, cufunc.handle, cufunc.device.id)
    cufunc.set_shared_memory_carveout(100)
    _READY.add(key)


def launcher(cfg: TileConfig):
    """``launch(A, B, C)`` for ``cfg``: pad, then one block per BM × BN tile of C."""
    cfg.validate()

    def launch(A, B, C) -> None:
        kernel = kernel_for(cfg)
        a, b = pad_inputs(A, B, cfg.bm, cfg.bn, cfg.bk)
        _allow_shared(kernel, cfg)
        blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
        enqueue.launch(kernel, SIGNATURE[cfg.kind], blocks, cfg.threads, cfg.shared_bytes,
                      (a, b, C))

    return enqueue.memo(launch)     # a repeated call replays its launch plans (lab.enqueue)


def make_config(**changes) -> TileConfig:
    """A validated :class:`TileConfig`; unspecified fields keep the tuned defaults."""
    return TileConfig(**changes).validate()


# region: rung_configs
#: The registered rungs: each switches on one more idea. ``tc_fp16`` is the tuned kernel.
RUNG_CONFIGS = {
    "tc_smem": TileConfig(bm=64, bn=64, bk=32, wm=32, wn=32, stages=1, swizzle=False,
                          group_m=1),
    "tc_warp64": TileConfig(bm=128, bn=128, bk=32, wm=64, wn=64, stages=1, swizzle=False,
                            group_m=1),
    "tc_pipeline": TileConfig(bm=128, bn=128, bk=32, wm=64, wn=64, stages=4, swizzle=False,
                              group_m=1),
    "tc_swizzle": TileConfig(bm=128, bn=128, bk=32, wm=64, wn=64, stages=4, swizzle=True,
                             group_m=1),
    # tc_fp16/tc_bf16: the fastest of tools/tune_tc.py's sweep on the H200 at 4096³
    # (128×128×64 tiles, 3 stages, 96 KB of shared memory, 2 blocks per SM).
    "tc_fp16": TileConfig(bm=128, bn=128, bk=64, wm=64, wn=64, stages=3, swizzle=True,
                          group_m=8),
    "tc_bf16": TileConfig(bm=128, bn=128, bk=64, wm=64, wn=64, stages=3, swizzle=True,
                          group_m=8, kind="bf16"),
}
# endregion: rung_configs

TITLES = {
    "tc_smem": "tensor cores: 64×64 block tiles via cp.async, 32×32 warp tiles, ldmatrix",
    "tc_warp64": "tensor cores: 128×128 block, 64×64 warp tiles",
    "tc_pipeline": "tensor cores: + 4-stage cp.async pipeline",
    "tc_swizzle": "tensor cores: + swizzled shared layout (no bank conflicts)",
    "tc_fp16": "tensor cores: + grouped block order for L2, BK 64, 3 stages (tuned, FP16)",
    "tc_bf16": "tensor cores: tuned kernel, BF16 inputs",
}

EDGES = ("launch pads A and B with zeros to multiples of the block tile (BM, BN, BK); "
         "epilogue checks row < M, col < N")


def code_path(cfg: TileConfig, m: int, n: int, k: int) -> str:
    """Whether the launch pads A and B at M×N×K, and to what
    (:meth:`lab.kernels.KernelSpec.code_path`)."""
    padded = tuple(-(-x // t) * t for x, t in ((m, cfg.bm), (n, cfg.bn), (k, cfg.bk)))
    return "no padding" if padded == (m, n, k) else "pads to {}x{}x{}".format(*padded)


def _spec(name: str, cfg: TileConfig) -> KernelSpec:
    kernel = kernel_for(cfg)
    bf16 = cfg.kind == "bf16"
    return KernelSpec(name, TITLES[name], np.uint16 if bf16 else np.float16, launcher(cfg),
                      simulator=False, chapter="5", compile=((kernel, SIGNATURE[cfg.kind]),),
                      edges=EDGES, dtype_name="bfloat16" if bf16 else "",
                      tile=(cfg.bm, cfg.bn, cfg.bk), min_cc=(8, 0),
                      paths=lambda m, n, k: code_path(cfg, m, n, k), config=cfg,
                      needs=f"mma.sync m16n8k16 {'BF16' if bf16 else 'FP16'}, ldmatrix, "
                            "cp.async")


SPECS = [_spec(name, cfg) for name, cfg in RUNG_CONFIGS.items()]
