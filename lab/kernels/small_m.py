"""The small-M kernel (chapter 9b): a product with a few rows of A, bound by reading B once.

What changed since split-K on ``tc_fp16`` (:mod:`lab.kernels.splitk`): the block tile
follows M instead of being 128 rows whatever M is, A is never copied to pad it, and the split
partials are added inside the same launch.

The arithmetic. C (M×N) = A (M×K) · B (K×N) with M ≤ 128 reads ``2·K·N`` bytes of B, ``2·M·K``
of A and writes ``2·M·N`` of C, for ``2·M·N·K`` FLOPs: ``M`` FLOP per byte of B. The H200's
ridge is ≈ 990 TFLOP/s ÷ 4.8 TB/s ≈ 200 FLOP/byte, so at M ≤ 128 the time is B's bytes over
the memory bandwidth: 32 MB for N = K = 4096 FP16, ≈ 7 µs at 4.8 TB/s (8 µs at the 4.2 TB/s a
copy reaches). Everything else is what keeps that stream from flowing:

* **Rows of the tile.** ``tc_fp16``'s block tile is 128 rows: at M = 1 it multiplies 127 rows
  of zeros, and its padding copies A every call. Here the tile has ``BM`` = 16, 32, 64 or 128
  rows, the first that covers M (:func:`config_for`); the A rows past M are not padded but
  clamped: their copies re-read row M−1 (valid memory) and the epilogue never stores them.
  The tensor-core work is at most 16/M times the useful work at M < 16 — free in a
  memory-bound kernel.
* **Enough bytes in flight.** To stream at ≈ 4 TB/s with ≈ 1 µs of DRAM latency, ≈ 4 MB must
  be in flight, ≈ 30 KB per SM. A block is 4 warps over a BM×BN tile of C (BN = 128 or 64,
  :data:`WIDTHS`) with :data:`STAGES` k-slices of 64 in shared memory (``cp.async``, 16 bytes
  a copy, as in ``tc_fp16``); two to five blocks fit per SM (:func:`blocks_per_sm`, from the shared
  memory and the registers of each tile).
* **Enough blocks, one wave.** N = 4096 makes only 32 column tiles of 128 — a quarter of the
  132 SMs. K is split into ``s`` slices (grid ``tiles × s``), as many as fit on the SMs at
  once beside each other (:func:`splits_for`): a second, partial wave would leave most SMs
  idle while it runs. A 64-column tile doubles the tiles, so it needs half the slices.
  lab.gemm times both widths, each with ``s`` and ``s``/2, on its first call at a shape.
* **One launch.** Each block stores its FP32 partial tile in a workspace ``W[split]``
  (s × M × N, rows padded to 128 columns), makes it visible (``threadfence``), and takes a
  ticket from a per-tile counter (``atomic.add``). The block that draws the last ticket adds
  ``W[0] + W[1] + … + W[s−1]`` in that order for each element of the tile — the same bits
  every run, whichever block is last — writes C in its output type (FP32, FP16, or BF16
  rounded to nearest even) and resets the counter to 0 for the next call. That block reads
  ``s·BM·BN·4`` bytes alone, so it reads them as the copy engine of a memory-bound kernel
  would: 16-byte loads from L2 (``ld.global.cg``: the other SMs' partials are not in this
  SM's L1), each thread two groups of four columns and :data:`UNROLL` slices of both in
  flight before it adds them (the first version added one 4-byte load at a time: at M = 64
  the reduction was most of the kernel's time). No zeroing kernel, no reduction kernel, no
  narrowing kernel: one driver call per product (the launch cost is most of a decode
  product's time as called from Python). No block ever waits for another, so nothing can
  deadlock.

Edges: A rows are clamped (no copy); K is padded with zeros to a multiple of 64 (A and B
copied) only when it is not one; the copies of a last, partial column tile are clamped to the
last 8 valid columns; an A whose address is not 16-byte aligned is copied. A B whose rows are
not whole 16-byte vectors (N not a multiple of 8, or B's start not 16-byte aligned) is read
where it lies, not copied (a 127×4099 product would otherwise copy all 33 MB of a 4096×4099 B
on every call, which takes longer than cuBLAS's whole product): ``cp.async`` copies the
16-byte aligned blocks around each row of the stage, and each thread shifts its chunks out of
them into the B tile (:func:`build`). The epilogue stores ``row < M``, ``col < N`` only.

Registered: ``tc_small_m_fp16`` and ``tc_small_m_bf16`` (FP32 C, :data:`DEFAULT_SPLITS`
slices, 128-column tiles; their check runs the 64-column tiles with a 16-bit C too:
:func:`checker`); :func:`launcher` builds lab.gemm's, with any split factor, either width and
a 16-bit C. Inline PTX
(``mma.sync``, ``ldmatrix``, ``cp.async``): GPU only, not the simulator.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import cuda, float32, int32, int64, uint8, uint32, uint64
from numba.core.types import float16

from lab import convert, device
from lab import enqueue
from lab import ptx
from lab.kernels import KernelSpec
from lab.kernels import k08_tc_pipeline as k08
from lab.kernels.k07_tensor_core import pad_into, round_up
from lab.lru import LRU

if device.SIMULATOR:
    def ld_cg_v4(address):
        raise NotImplementedError("ld.global.cg needs a GPU; the CUDA simulator cannot run it")
else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def ld_cg_v4(typingctx, address):
        """``ld.global.cg.v4.f32``: four float32 at a 16-byte aligned global address, read
        from L2 (not L1, which other SMs' stores do not update)."""
        if not isinstance(address, types.Integer):
            return None
        sig = types.UniTuple(types.float32, 4)(address)

        def codegen(context, builder, sig, args):
            addr = context.cast(builder, args[0], sig.args[0], types.int64)
            f32 = ir.FloatType()
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * 4), [addr.type])
            asm = ir.InlineAsm(fnty, "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];",
                               "=f,=f,=f,=f,l,~{memory}", side_effect=True)
            res = builder.call(asm, [addr])
            vals = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, sig.return_type, vals)
        return sig, codegen

#: Slices whose partials one thread loads before adding them (two 16-byte loads each).
UNROLL = 4

BN, BK = 128, 64
#: Tile widths a launch may pick (lab.gemm times both at a shape: a 64-wide tile doubles the
#: tiles of a short, wide product, so it needs half the slices of K and its last block adds a
#: quarter of the partials).
WIDTHS = (128, 64)
#: k-slices in shared memory (128-row tiles: 3; smaller tiles: 4).
STAGES = 4
#: Most slices of K.
MAX_SPLITS = 32
#: Slices of K of the registered kernels' ``launch(A, B, C)``.
DEFAULT_SPLITS = 4
#: Largest M lab.gemm sends here.
MAX_M = 128
#: Shared memory and registers an SM has for blocks (sm_80 and later: 228 KB of shared memory,
#: 1 KB of it reserved per block; 64 K registers).
SM_SHARED, BLOCK_RESERVED, SM_REGISTERS = 228 * 1024, 1024, 65536
#: Registers per thread of each tile (ptxas for sm_90, FP16 output; compiler facts).
REGISTERS = {(16, 128): 80, (32, 128): 118, (64, 128): 162, (128, 128): 245,
             (16, 64): 80, (32, 64): 81, (64, 64): 95, (128, 64): 181}
#: … and of the kernel that reads B in place (:func:`build`; the same compiler facts).
REGISTERS_IN_PLACE = {(16, 128): 111, (32, 128): 126, (64, 128): 164, (128, 128): 255,
                      (16, 64): 72, (32, 64): 114, (64, 64): 127, (128, 64): 230}

#: (tile rows, tile columns) -> configuration (4 warps of 128 threads each).
CONFIGS = {
    (16, 128): k08.TileConfig(bm=16, bn=128, bk=BK, wm=16, wn=32, stages=STAGES, group_m=1),
    (32, 128): k08.TileConfig(bm=32, bn=128, bk=BK, wm=32, wn=32, stages=STAGES, group_m=1),
    (64, 128): k08.TileConfig(bm=64, bn=128, bk=BK, wm=64, wn=32, stages=STAGES, group_m=1),
    (128, 128): k08.TileConfig(bm=128, bn=128, bk=BK, wm=64, wn=64, stages=3, group_m=1),
    (16, 64): k08.TileConfig(bm=16, bn=64, bk=BK, wm=16, wn=16, stages=STAGES, group_m=1),
    (32, 64): k08.TileConfig(bm=32, bn=64, bk=BK, wm=16, wn=32, stages=STAGES, group_m=1),
    (64, 64): k08.TileConfig(bm=64, bn=64, bk=BK, wm=32, wn=32, stages=STAGES, group_m=1),
    (128, 64): k08.TileConfig(bm=128, bn=64, bk=BK, wm=64, wn=32, stages=STAGES, group_m=1),
}
_IN = {"f16": "float16", "bf16": "uint16"}
_OUT = {"f32": "float32", "f16": "float16", "bf16": "uint16"}


def signature(kind: str, out: str) -> str:
    t = _IN[kind]
    return (f"void({t}[:, ::1], {t}[:, ::1], {_OUT[out]}[:, ::1], float32[:, :, ::1], "
            "int32[::1], int32)")


def config_for(m: int, kind: str = "f16", bn: int = BN, bm: int = 0) -> k08.TileConfig:
    """The tile for M rows: the first of 16, 32, 64, 128 rows that covers M (128 above), or
    ``bm`` rows when given (M then spans several tile rows), ``bn`` (one of :data:`WIDTHS`)
    columns wide."""
    from dataclasses import replace

    if bn not in WIDTHS:
        raise ValueError(f"tile width must be one of {WIDTHS}, not {bn!r}")
    if bm and (bm, bn) not in CONFIGS:
        raise ValueError(f"tile rows must be one of 16, 32, 64, 128, not {bm!r}")
    if not bm:
        for bm in (16, 32, 64, 128):
            if m <= bm:
                break
    return replace(CONFIGS[(bm, bn)], kind=kind)


def tiles(m: int, n: int, cfg: k08.TileConfig) -> int:
    return -(-m // cfg.bm) * -(-n // cfg.bn)


def blocks_per_sm(cfg: k08.TileConfig, in_place: bool = False) -> int:
    """Blocks of ``cfg`` one SM holds at once (shared memory and registers)."""
    by_shared = SM_SHARED // (shared_bytes(cfg, in_place) + BLOCK_RESERVED)
    regs = (REGISTERS_IN_PLACE if in_place else REGISTERS).get((cfg.bm, cfg.bn), 255)
    by_regs = SM_REGISTERS // (((regs + 7) // 8 * 8) * cfg.threads)
    return max(1, min(by_shared, by_regs))


def splits_for(m: int, n: int, k: int, sms: int, kind: str = "f16", bn: int = BN,
               bm: int = 0) -> int:
    """Slices of K for one wave: as many as fit beside the tiles on the SMs at once (a
    second, partial wave would leave most SMs idle while it runs), each slice at least two
    k-tiles of 64, at most :data:`MAX_SPLITS`."""
    cfg = config_for(m, kind, bn, bm)
    t = tiles(m, n, cfg)
    fit = blocks_per_sm(cfg, in_place(n, k)) * sms // t
    return int(max(1, min(fit, MAX_SPLITS, -(-k // BK) // 2)))


def k_slices(k: int, splits: int) -> tuple[int, int]:
    """``(chunk, slices)``: elements of K per slice (whole k-tiles) and how many slices that
    makes — ``splits`` or fewer, none empty. ValueError for a factor below 1."""
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"split factor must be an int >= 1, got {splits!r}")
    kt = -(-k // BK)
    per = -(-kt // min(int(splits), kt))
    return per * BK, -(-kt // per)


def in_place(n: int, k: int, address: int = 0) -> bool:
    """Whether B (at ``address``) is read where it lies: K a multiple of 64 (else A and B are
    padded) and B's rows not whole 16-byte vectors, which ``cp.async`` copies (N not a
    multiple of 8, or B's start not 16-byte aligned)."""
    return k % BK == 0 and (n % 8 != 0 or address % 16 != 0)


def shared_bytes(cfg: k08.TileConfig, in_place: bool = False) -> int:
    """Dynamic shared memory of a block: per stage A's tile and B's tile; reading B in place,
    per stage A's tile and B's rows as copied (one 16-byte block more than a row of the tile,
    :func:`build`), and one B tile."""
    if not in_place:
        return cfg.shared_bytes
    return (cfg.stages * (2 * cfg.bm * cfg.bk + cfg.bk * 16 * (cfg.bn // 8 + 1))
            + 2 * cfg.bk * cfg.bn)


def sizes(cfg: k08.TileConfig, in_place: bool = False) -> SimpleNamespace:
    """The constants the kernel of tile ``cfg`` is compiled with (every device function of
    :func:`build` takes its own from here): copies per thread, byte strides and swizzle masks
    of the shared-memory stages, fragments and accumulators per warp, and, reading B in place,
    the copied rows of B and where the one B tile sits."""
    s = SimpleNamespace()
    s.BM, s.BN_, s.BK_, s.WM, s.WN, s.STAGES_ = cfg.bm, cfg.bn, cfg.bk, cfg.wm, cfg.wn, cfg.stages
    s.WARPS_N = s.BN_ // s.WN
    s.THREADS = cfg.threads
    s.MT, s.NT = s.WM // 16, s.WN // 8
    s.A_CPR, s.B_CPR = s.BK_ // 8, s.BN_ // 8
    s.A_COPIES = s.BM * s.A_CPR // s.THREADS
    s.B_COPIES = s.BK_ * s.B_CPR // s.THREADS
    s.A_STEP, s.B_STEP = s.THREADS // s.A_CPR, s.THREADS // s.B_CPR
    s.A_ROW_BYTES, s.B_ROW_BYTES = 2 * s.BK_, 2 * s.BN_
    s.A_STAGE_BYTES = s.BM * s.A_ROW_BYTES
    s.STAGE_BYTES = cfg.stage_bytes
    s.A_LINE_ROWS = max(1, 8 // s.A_CPR)
    s.A_MASK = min(s.A_CPR, 8) - 1
    s.B_LINE_ROWS = max(1, 8 // s.B_CPR)
    s.B_MASK = min(s.B_CPR, 8) - 1
    s.WAIT = s.STAGES_ - 2
    s.ACC = s.MT * s.NT * 4
    s.A_REGS, s.B_REGS = s.MT * 4, s.NT * 2
    s.NV = s.BN_ // 4                                   # 16-byte groups per tile row
    s.PARTS = 8 * UNROLL
    s.IN_PLACE = bool(in_place)
    s.ROW_BLOCKS = s.BN_ // 8 + 1                       # 16-byte blocks copied per row of B
    s.ROW_COPY = 16 * s.ROW_BLOCKS                      # bytes of a copied row in shared memory
    s.ROW_COPIES = -(-s.BK_ * s.ROW_BLOCKS // s.THREADS)    # copies per thread per stage
    s.STRIDE = s.A_STAGE_BYTES + s.BK_ * s.ROW_COPY if s.IN_PLACE else s.STAGE_BYTES
    s.B_TILE = s.STAGES_ * s.STRIDE     # in place: the one B tile, after the stages
    return s


def build(cfg: k08.TileConfig, out: str = "f32", in_place: bool = False):
    """The kernel for tile ``cfg`` writing C as ``out`` ("f32", "f16" or "bf16" bits).

    ``in_place``: B is read where it lies, at any 2-byte alignment of its rows (N not a
    multiple of 8, or B's start not 16-byte aligned): ``cp.async`` copies, for each row of B
    in a stage, the 16-byte aligned blocks that hold the row's 2·BN bytes — one block more
    than the row — and once the stage has landed every thread shifts its own 16-byte chunks
    out of them (five 4-byte shared loads, a funnel shift by 0 or 16 bits) into the one
    swizzled B tile the fragments read, behind a second barrier. K must be a multiple of 64.

    The kernel is assembled from device functions, each built by its own factory and inlined:
    the block's slice of K multiplied into its accumulators (:func:`make_main_loop`, with the
    stage copies of :func:`make_copy_stage` and :func:`make_in_place`), the accumulators
    stored to C or to the workspace (:func:`make_store_fragments`), and the last block's sum
    of the partials (:func:`make_reduction`)."""
    cfg.validate()
    if cfg.stages < 2:
        raise ValueError("the small-M kernel is pipelined: stages >= 2")
    if out not in _OUT:
        raise ValueError(f"output kind must be one of {tuple(_OUT)}, not {out!r}")
    sz = sizes(cfg, in_place)
    BM, BK_, WARPS_N, ACC = sz.BM, sz.BK_, sz.WARPS_N, sz.ACC
    main_loop = make_main_loop(cfg, in_place)
    store_fragments = make_store_fragments(cfg, out)
    add_partials = make_reduction(cfg, out)

    # region: small_m_kernel
    @cuda.jit
    def small_m(A, B, C, W, T, chunk):
        smem = cuda.shared.array(0, dtype=uint8, alignment=128)
        words = cuda.shared.array(0, dtype=uint32, alignment=128)    # the same bytes
        last = cuda.shared.array(1, dtype=int32)
        tid = int32(cuda.threadIdx.x)
        lane = tid & 31
        warp = tid >> 5
        warp_m = warp // WARPS_N
        warp_n = warp - warp_m * WARPS_N
        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_total = int32(A.shape[1])
        n8 = int32(B.shape[1])
        splits = int32(cuda.gridDim.y)
        split = int32(cuda.blockIdx.y)
        k_lo = split * chunk
        k_hi = min(k_total, k_lo + chunk)
        k_tiles = max(int32(0), (k_hi - k_lo) // BK_)
        blocks_m = int32((m + int32(BM - 1)) // int32(BM))
        pid = int32(cuda.blockIdx.x)
        block_m = int32(pid % blocks_m)            # the blocks of one B column panel are neighbours
        block_n = int32(pid // blocks_m)
        row0 = block_m * BM

        acc = cuda.local.array(ACC, float32)
        main_loop(A, B, smem, words, acc, tid, lane, warp_m, warp_n, row0, block_n, m,
                  k_total, n8, k_lo, k_tiles)
        store_fragments(C, W, acc, lane, warp_m, warp_n, row0, block_n, m, n, split, splits)
        if splits == 1:
            return
        # The last block of this tile to finish adds the partials, in slice order.
        cuda.threadfence()
        cuda.syncthreads()
        if tid == 0:
            ticket = cuda.atomic.add(T, pid, int32(1))
            last[0] = int32(1) if ticket == splits - 1 else int32(0)
            if ticket == splits - 1:
                T[pid] = int32(0)           # ready for the next call
        cuda.syncthreads()
        if last[0] == 0:
            return
        cuda.threadfence()
        add_partials(C, W, tid, row0, block_n, m, n, splits)
    # endregion: small_m_kernel

    return small_m


def make_put(out: str):
    """``put(C, row, col, v)``: one float32 stored into C as ``out`` ("f32", "f16", or "bf16"
    bits, rounded to nearest even)."""
    if out == "bf16":
        @cuda.jit(device=True, inline="always")
        def put(C, row, col, v):
            C[row, col] = convert.bf16_bits(v)     # rounded to nearest even
    elif out == "f16":
        @cuda.jit(device=True, inline="always")
        def put(C, row, col, v):
            C[row, col] = float16(v)
    else:
        @cuda.jit(device=True, inline="always")
        def put(C, row, col, v):
            C[row, col] = v
    return put


def make_copy_stage(cfg: k08.TileConfig, in_place: bool):
    """``copy_stage(stage, a_row, a_chunk, b_row, b_chunk, a_src, b_src, row0, m, a_pitch,
    b_src_step)``: this thread's ``cp.async`` copies of one k-slice into the stage at shared
    address ``stage`` — A's rows (past M re-reading row M−1) and, unless B is read in place,
    B's, both swizzled."""
    sz = sizes(cfg, in_place)
    A_COPIES, A_STEP, A_ROW_BYTES = sz.A_COPIES, sz.A_STEP, sz.A_ROW_BYTES
    A_LINE_ROWS, A_MASK, A_STAGE_BYTES = sz.A_LINE_ROWS, sz.A_MASK, sz.A_STAGE_BYTES
    B_COPIES, B_STEP, B_ROW_BYTES = sz.B_COPIES, sz.B_STEP, sz.B_ROW_BYTES
    B_LINE_ROWS, B_MASK, IN_PLACE = sz.B_LINE_ROWS, sz.B_MASK, sz.IN_PLACE

    @cuda.jit(device=True, inline="always")
    def copy_stage(stage, a_row, a_chunk, b_row, b_chunk, a_src, b_src, row0, m, a_pitch,
                   b_src_step):
        for i in range(int32(A_COPIES)):
            r = a_row + i * A_STEP
            dst = r * A_ROW_BYTES + ((a_chunk ^ ((r // A_LINE_ROWS) & A_MASK)) << 4)
            g = min(row0 + r, m - 1)                 # rows past M re-read row M-1
            ptx.cp_async_16(stage + uint32(dst), a_src + int64(g) * a_pitch)
        if IN_PLACE:
            return
        for i in range(int32(B_COPIES)):
            r = b_row + i * B_STEP
            dst = (A_STAGE_BYTES + r * B_ROW_BYTES
                   + ((b_chunk ^ ((r // B_LINE_ROWS) & B_MASK)) << 4))
            ptx.cp_async_16(stage + uint32(dst), b_src + i * b_src_step)

    return copy_stage


def make_in_place(cfg: k08.TileConfig):
    """``(copy_rows, shift_rows)`` of a kernel reading B in place: the ``cp.async`` copies of
    the 16-byte aligned blocks around each row of a stage, and this thread's shift of its
    chunks out of them into the swizzled B tile."""
    sz = sizes(cfg, in_place=True)
    BK_, THREADS, A_STAGE_BYTES = sz.BK_, sz.THREADS, sz.A_STAGE_BYTES
    ROW_BLOCKS, ROW_COPY, ROW_COPIES = sz.ROW_BLOCKS, sz.ROW_COPY, sz.ROW_COPIES
    B_COPIES, B_STEP, B_ROW_BYTES, B_TILE = sz.B_COPIES, sz.B_STEP, sz.B_ROW_BYTES, sz.B_TILE
    B_LINE_ROWS, B_MASK = sz.B_LINE_ROWS, sz.B_MASK

    # region: small_m_in_place
    @cuda.jit(device=True, inline="always")
    def row_start(b_at, k_row, n, col0):
        """The byte address of B[k_row, col0]."""
        return b_at + int64(2) * (int64(k_row) * int64(n) + int64(col0))

    @cuda.jit(device=True, inline="always")
    def copy_rows(stage, tid, b_at, b_last, k0, n, col0):
        # the 16-byte aligned blocks around each row's 2·BN bytes; none past B's last block
        for i in range(int32(ROW_COPIES)):
            e = tid + i * THREADS
            if e < BK_ * ROW_BLOCKS:
                r = e // ROW_BLOCKS
                j = e - r * ROW_BLOCKS
                block = (row_start(b_at, k0 + r, n, col0) & int64(-16)) + int64(16 * j)
                ptx.cp_async_16(stage + uint32(A_STAGE_BYTES + r * ROW_COPY + 16 * j),
                                min(block, b_last))

    @cuda.jit(device=True, inline="always")
    def shift_rows(shared, words, stage_at, b_row, b_chunk, b_at, k0, n, col0):
        # this thread's chunks of the B tile, out of the copied rows, into the swizzled tile
        for i in range(int32(B_COPIES)):
            r = b_row + i * B_STEP
            skew = int32(row_start(b_at, k0 + r, n, col0) & int64(15)) + 16 * b_chunk
            w = (stage_at + A_STAGE_BYTES + r * ROW_COPY + (skew & int32(-4))) >> 2
            shift = uint64(8 * (skew & 2))
            w0 = uint64(words[w])
            w1 = uint64(words[w + 1])
            w2 = uint64(words[w + 2])
            w3 = uint64(words[w + 3])
            w4 = uint64(words[w + 4])
            dst = B_TILE + r * B_ROW_BYTES + ((b_chunk ^ ((r // B_LINE_ROWS) & B_MASK)) << 4)
            ptx.st_shared_v4_b32(shared + uint32(dst),
                                 uint32(((w1 << uint64(32)) | w0) >> shift),
                                 uint32(((w2 << uint64(32)) | w1) >> shift),
                                 uint32(((w3 << uint64(32)) | w2) >> shift),
                                 uint32(((w4 << uint64(32)) | w3) >> shift))
    # endregion: small_m_in_place

    return copy_rows, shift_rows


def make_main_loop(cfg: k08.TileConfig, in_place: bool):
    """``main_loop(A, B, smem, words, acc, tid, lane, warp_m, warp_n, row0, block_n, m,
    k_total, n8, k_lo, k_tiles)``: the block's ``k_tiles`` k-slices of 64 from ``k_lo`` on,
    multiplied into ``acc`` (zeroed first) — STAGES − 1 stages in flight ahead of the
    ``mma.sync`` of the oldest, which waits for its ``cp.async`` copies and a barrier."""
    sz = sizes(cfg, in_place)
    BN_, BK_, WM, WN = sz.BN_, sz.BK_, sz.WM, sz.WN
    STAGES_, WAIT, ACC, A_REGS, B_REGS = sz.STAGES_, sz.WAIT, sz.ACC, sz.A_REGS, sz.B_REGS
    A_CPR, A_ROW_BYTES, A_LINE_ROWS, A_MASK = sz.A_CPR, sz.A_ROW_BYTES, sz.A_LINE_ROWS, sz.A_MASK
    B_CPR, B_ROW_BYTES, B_LINE_ROWS, B_MASK = sz.B_CPR, sz.B_ROW_BYTES, sz.B_LINE_ROWS, sz.B_MASK
    B_STEP, A_STAGE_BYTES, STAGE_BYTES = sz.B_STEP, sz.A_STAGE_BYTES, sz.STAGE_BYTES
    STRIDE, B_TILE, IN_PLACE = sz.STRIDE, sz.B_TILE, sz.IN_PLACE
    mma_stage = k08.stage_mma(cfg)
    copy_stage = make_copy_stage(cfg, in_place)
    copy_rows, shift_rows = make_in_place(cfg)

    @cuda.jit(device=True, inline="always")
    def main_loop(A, B, smem, words, acc, tid, lane, warp_m, warp_n, row0, block_n, m, k_total,
                  n8, k_lo, k_tiles):
        shared = ptx.shared_address(smem)
        a_row = tid // A_CPR
        a_chunk = tid - a_row * A_CPR
        b_row = tid // B_CPR
        b_chunk = tid - b_row * B_CPR
        a_pitch = int64(2) * int64(k_total)
        a_src = ptx.global_address(A) + int64(16 * a_chunk) + int64(2) * int64(k_lo)
        b_col = min(block_n * BN_ + 8 * b_chunk, n8 - 8)   # a partial tile re-reads its end
        b_src = (ptx.global_address(B) + int64(k_lo + b_row) * int64(2 * n8)
                 + int64(2) * int64(b_col))
        b_src_step = int64(B_STEP) * int64(2 * n8)
        b_src_tile = int64(BK_) * int64(2 * n8)
        b_at = ptx.global_address(B)
        b_last = (b_at + int64(2) * int64(B.shape[0]) * int64(n8) - 1) & int64(-16)
        col0 = block_n * BN_

        frag_row = lane & 15
        frag_half = lane >> 4
        a_frag = uint32((warp_m * WM + frag_row) * A_ROW_BYTES)
        a_swz = (frag_row // A_LINE_ROWS) & A_MASK
        b_frag = uint32((B_TILE if IN_PLACE else A_STAGE_BYTES) + frag_row * B_ROW_BYTES)
        b_swz = (frag_row // B_LINE_ROWS) & B_MASK
        b_chunk0 = warp_n * (WN // 8) + frag_half

        for i in range(int32(ACC)):
            acc[i] = float32(0)
        a_regs = cuda.local.array(A_REGS, uint32)
        b_regs = cuda.local.array(B_REGS, uint32)

        for s in range(int32(STAGES_ - 1)):
            if s < k_tiles:
                copy_stage(shared + uint32(s * STRIDE), a_row, a_chunk, b_row, b_chunk,
                           a_src, b_src, row0, m, a_pitch, b_src_step)
                if IN_PLACE:
                    copy_rows(shared + uint32(s * STRIDE), tid, b_at, b_last, k_lo + s * BK_,
                              n8, col0)
                a_src += 2 * BK_
                b_src += b_src_tile
            ptx.cp_async_commit()

        read_stage = int32(0)
        write_stage = int32(STAGES_ - 1)
        for kt in range(k_tiles):
            ptx.cp_async_wait(WAIT)
            cuda.syncthreads()
            if kt + (STAGES_ - 1) < k_tiles:
                copy_stage(shared + uint32(write_stage * STRIDE), a_row, a_chunk, b_row,
                           b_chunk, a_src, b_src, row0, m, a_pitch, b_src_step)
                if IN_PLACE:
                    copy_rows(shared + uint32(write_stage * STRIDE), tid, b_at, b_last,
                              k_lo + (kt + STAGES_ - 1) * BK_, n8, col0)
                a_src += 2 * BK_
                b_src += b_src_tile
            ptx.cp_async_commit()
            write_stage = int32(write_stage + 1) if write_stage < STAGES_ - 1 else int32(0)
            if IN_PLACE:
                # B's rows of this stage, shifted into the B tile once every thread is past
                # the last stage's fragments; the fragments wait for every thread's chunks
                shift_rows(shared, words, read_stage * STRIDE, b_row, b_chunk, b_at,
                           k_lo + kt * BK_, n8, col0)
                cuda.syncthreads()
                mma_stage(shared, a_frag + uint32(read_stage * STRIDE), b_frag, frag_half,
                          a_swz, b_swz, b_chunk0, a_regs, b_regs, acc)
            else:
                stage = shared + uint32(read_stage * STAGE_BYTES)
                mma_stage(stage, a_frag, b_frag, frag_half, a_swz, b_swz, b_chunk0, a_regs,
                          b_regs, acc)
            read_stage = int32(read_stage + 1) if read_stage < STAGES_ - 1 else int32(0)
        ptx.cp_async_wait(0)

    return main_loop


def make_store_fragments(cfg: k08.TileConfig, out: str):
    """``store_fragments(C, W, acc, lane, warp_m, warp_n, row0, block_n, m, n, split,
    splits)``: this thread's accumulators, into C (one slice: ``put`` as ``out``) or into
    the workspace's page ``W[split]`` (FP32), rows below M and columns below N only."""
    sz = sizes(cfg)
    BN_, WM, WN, MT, NT = sz.BN_, sz.WM, sz.WN, sz.MT, sz.NT
    put = make_put(out)

    @cuda.jit(device=True, inline="always")
    def store_fragments(C, W, acc, lane, warp_m, warp_n, row0, block_n, m, n, split, splits):
        # Accumulator r of fragment (mi, nj): row group + 8·(r // 2), column 2·pair + r % 2.
        row_base = row0 + warp_m * WM + (lane >> 2)
        col_base = block_n * BN_ + warp_n * WN + 2 * (lane & 3)
        for mi in range(int32(MT)):
            for half in range(int32(2)):
                row = row_base + mi * 16 + 8 * half
                if row < m:
                    for nj in range(int32(NT)):
                        col = col_base + nj * 8
                        c = 4 * (mi * NT + nj) + 2 * half
                        if splits == 1:
                            if col < n:
                                put(C, row, col, acc[c])
                            if col + 1 < n:
                                put(C, row, col + 1, acc[c + 1])
                        else:
                            if col < n:
                                W[split, row, col] = acc[c]
                            if col + 1 < n:
                                W[split, row, col + 1] = acc[c + 1]

    return store_fragments


def make_reduction(cfg: k08.TileConfig, out: str):
    """``add_partials(C, W, tid, row0, block_n, m, n, splits)``: the last block's sum of the
    tile's ``splits`` partials ``W[0] + W[1] + …`` in slice order, written to C as ``out``."""
    sz = sizes(cfg)
    BM, BN_, THREADS, NV, PARTS = sz.BM, sz.BN_, sz.THREADS, sz.NV, sz.PARTS
    put = make_put(out)

    @cuda.jit(device=True, inline="always")
    def put4(C, row, col, n, v0, v1, v2, v3):
        put(C, row, col, v0)
        if col + 1 < n:
            put(C, row, col + 1, v1)
        if col + 2 < n:
            put(C, row, col + 2, v2)
        if col + 3 < n:
            put(C, row, col + 3, v3)

    @cuda.jit(device=True, inline="always")
    def add_partials(C, W, tid, row0, block_n, m, n, splits):
        # region: small_m_reduction
        # Each thread adds two groups of four neighbouring columns (16-byte loads from L2),
        # UNROLL slices of both in flight before their adds, the adds in slice order: the
        # same bits every run, whichever block is last.
        pitch = int64(W.shape[2])
        plane = int64(4) * int64(m) * pitch              # bytes from one slice to the next
        w_at = ptx.global_address(W)
        parts = cuda.local.array(PARTS, float32)
        col0 = block_n * BN_
        for e in range(tid, int32(BM * NV), int32(2 * THREADS)):
            ra = e // NV
            row_a = row0 + ra
            col_a = col0 + 4 * (e - ra * NV)
            rb = (e + THREADS) // NV
            row_b = row0 + rb
            col_b = col0 + 4 * (e + THREADS - rb * NV)
            ok_a = row_a < m and col_a < n
            ok_b = row_b < m and col_b < n
            at_a = w_at + int64(4) * (int64(row_a) * pitch + int64(col_a))
            at_b = w_at + int64(4) * (int64(row_b) * pitch + int64(col_b))
            a0 = float32(0)
            a1 = float32(0)
            a2 = float32(0)
            a3 = float32(0)
            b0 = float32(0)
            b1 = float32(0)
            b2 = float32(0)
            b3 = float32(0)
            for z0 in range(int32(0), splits, int32(UNROLL)):
                for j in range(int32(UNROLL)):
                    if z0 + j < splits:
                        if ok_a:
                            x = ld_cg_v4(at_a + int64(z0 + j) * plane)
                            parts[8 * j] = x[0]
                            parts[8 * j + 1] = x[1]
                            parts[8 * j + 2] = x[2]
                            parts[8 * j + 3] = x[3]
                        if ok_b:
                            y = ld_cg_v4(at_b + int64(z0 + j) * plane)
                            parts[8 * j + 4] = y[0]
                            parts[8 * j + 5] = y[1]
                            parts[8 * j + 6] = y[2]
                            parts[8 * j + 7] = y[3]
                for j in range(int32(UNROLL)):
                    if z0 + j < splits:
                        a0 += parts[8 * j]
                        a1 += parts[8 * j + 1]
                        a2 += parts[8 * j + 2]
                        a3 += parts[8 * j + 3]
                        b0 += parts[8 * j + 4]
                        b1 += parts[8 * j + 5]
                        b2 += parts[8 * j + 6]
                        b3 += parts[8 * j + 7]
            if ok_a:
                put4(C, row_a, col_a, n, a0, a1, a2, a3)
            if ok_b:
                put4(C, row_b, col_b, n, b0, b1, b2, b3)
        # endregion: small_m_reduction

    return add_partials


_BUILT = LRU(64)


def kernel_for(cfg: k08.TileConfig, out: str = "f32", in_place: bool = False):
    return _BUILT.get_or_make((cfg, out, bool(in_place)), lambda: build(cfg, out, in_place))


_READY: set = set()


def _allow_shared(kernel, cfg: k08.TileConfig, sig: str, dynamic: int) -> None:
    """:func:`k08._allow_shared`, and the opt-in for ``dynamic`` bytes wherever they and this
    kernel's own static shared memory (its ticket flag) pass 48 KB: a 48 KB configuration
    needs it too, and a kernel reading B in place has more than ``cfg`` says."""
    k08._allow_shared(kernel, cfg, sig)
    key = (id(kernel), id(cuda.current_context()))
    if key in _READY:
        return
    if dynamic + 16 > k08.STATIC_SHARED_LIMIT and not device.SIMULATOR:
        from numba.cuda.cudadrv.driver import binding, driver

        cufunc = kernel.compile(sig)._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, dynamic, cufunc.handle, cufunc.device.id)
    _READY.add(key)


#: Workspaces (partials and tickets) kept, by context, split factor, shape and block count.
_WORK = LRU(16)


def _context_key():
    return "sim" if device.SIMULATOR else id(cuda.current_context())


def workspace(splits: int, m: int, n: int, blocks: int):
    """(W, T): the partials (s × M × N float32, rows padded to a multiple of 128 columns so
    that no 128-byte line holds two tiles' partials) and the per-tile tickets (int32, zeroed
    once; the last block of each tile puts its counter back to 0), kept per shape."""
    pitch = round_up(n, 128)
    if splits * m * pitch > 2**31 - 1:
        raise ValueError(f"the workspace would have {splits * m * pitch} elements; this "
                         "kernel indexes with int32")
    def make():
        w = (cuda.device_array((splits, m, pitch), dtype=np.float32) if splits > 1
             else cuda.device_array((1, 1, 1), dtype=np.float32))
        return w, cuda.to_device(np.zeros(max(1, blocks), np.int32))
    return _WORK.get_or_make((_context_key(), splits, m, n, blocks), make)


#: Padded copies kept, by context, slot, shape and dtype.
_COPIES = LRU(16)


def _address(x) -> int:
    """The device address of ``x`` (the simulator's arrays have none: 0, aligned)."""
    if device.SIMULATOR:
        return 0
    return int(x.__cuda_array_interface__["data"][0])


def _fit(x, rows: int, cols: int, slot: str):
    """``x`` if it is ``rows × cols`` and 16-byte aligned, else a zero-padded copy (cached
    per slot and shape)."""
    if x.shape == (rows, cols) and _address(x) % 16 == 0:
        return x
    dst = _COPIES.get_or_make((_context_key(), slot, rows, cols, x.dtype.str),
                              lambda: cuda.device_array((rows, cols), dtype=x.dtype))
    pad_into(x, dst)
    return dst


def code_path(m: int, n: int, k: int, bn: int = BN) -> str:
    """What the launch copies at M×N×K, and the tile it uses."""
    cfg = config_for(m, bn=bn)
    copies = []
    if k % BK:
        copies.append(f"K padded to {round_up(k, BK)} (A and B copied)")
    elif in_place(n, k):
        copies.append("B read in place (its rows shifted into the tile in shared memory)")
    return (f"{cfg.bm}x{cfg.bn} tiles, A rows clamped (not copied)"
            + ("; " + "; ".join(copies) if copies else "; nothing copied"))


def launch_small(A, B, C, *, splits: int = DEFAULT_SPLITS, bn: int = BN, bm: int = 0) -> None:
    """C = A·B (device arrays; A, B FP16 or BF16 bits, C FP32, FP16 or BF16 bits) with
    ``splits`` slices of K and tiles ``bn`` columns wide (``bm`` rows; 0: by M), in one
    launch (plus copies only where :func:`code_path` says)."""
    m, k = A.shape
    n = B.shape[1]
    kind = "bf16" if A.dtype == np.uint16 else "f16"
    out = {"float32": "f32", "float16": "f16", "uint16": "bf16"}[C.dtype.name]
    if B.dtype != A.dtype:
        raise ValueError(f"A is {A.dtype.name} but B is {B.dtype.name}")
    if C.shape != (m, n):
        raise ValueError(f"C is {C.shape[0]}x{C.shape[1]}; A·B is {m}x{n}")
    chunk, slices = k_slices(k, splits)
    cfg = config_for(m, kind, bn, bm)
    kp = round_up(k, BK)
    a = _fit(A, m, kp, "A")
    direct = in_place(n, k, _address(B))
    b = B if direct else _fit(B, kp, round_up(n, 8), "B")
    blocks = tiles(m, n, cfg)
    W, T = workspace(slices, m, n, blocks)
    kernel = kernel_for(cfg, out, direct)
    sig = signature(kind, out)
    dynamic = shared_bytes(cfg, direct)
    _allow_shared(kernel, cfg, sig, dynamic)
    enqueue.launch(kernel, sig, (blocks, slices), cfg.threads, dynamic,
                  (a, b, C, W, T, np.int32(chunk)))


def launcher(splits: int = DEFAULT_SPLITS, bn: int = BN, bm: int = 0):
    """``launch(A, B, C)`` with ``splits`` slices of K and ``bn``-wide tiles of ``bm`` rows
    (0: by M; refused here if the factor is below 1 or the tile not one of :data:`CONFIGS`),
    memoised: a repeated call replays its launch plan (:func:`lab.enqueue.memo`)."""
    k_slices(1, splits)
    config_for(1, bn=bn, bm=bm)

    def launch(A, B, C):
        launch_small(A, B, C, splits=splits, bn=bn, bm=bm)
    launch.splits = splits
    launch.bn = bn
    return enqueue.memo(launch)


#: What :func:`checker` runs at each shape besides the registered launch (128-column tiles,
#: DEFAULT_SPLITS slices, FP32 C): 64-column tiles, a slice count that divides no K it is
#: checked at evenly, and the inputs' own 16-bit C written by the kernel.
CHECK_VARIANTS = ((BN, DEFAULT_SPLITS, "f32"), (64, 3, "native"))


def checker(name: str, kind: str):
    """``check(m, n, k, seed=None)``: each of :data:`CHECK_VARIANTS` on the same fresh inputs,
    its C poisoned with NaN, against float64 (for a 16-bit C, the bound widened by the
    output's rounding); the first failing verdict, else the one nearest its bound."""
    def check(m: int, n: int, k: int, *, seed: int | None = None):
        from lab import accuracy
        from lab.kernels import KernelUnavailable, runnable

        ok, why = runnable(name)
        if not ok:
            raise KernelUnavailable(why)
        seed = accuracy.new_seed() if seed is None else seed
        a, b = accuracy.random_inputs(m, n, k, np.float16 if kind == "f16" else np.uint16,
                                      np.random.default_rng(seed))
        a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
        ref = a64 @ b64
        da, db = cuda.to_device(a), cuda.to_device(b)
        verdicts = []
        for bn, splits, out in CHECK_VARIANTS:
            if out == "f32":
                poison, unit = np.full((m, n), np.nan, np.float32), 0.0
            elif kind == "f16":
                poison, unit = np.full((m, n), np.nan, np.float16), 2.0 ** -11
            else:
                poison, unit = np.full((m, n), 0x7FC0, np.uint16), 2.0 ** -8
            dc = cuda.to_device(poison)
            launch_small(da, db, dc, splits=splits, bn=bn)
            host = dc.copy_to_host()
            if host.dtype == np.uint16:
                host = (host.astype(np.uint32) << 16).view(np.float32)
            factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=unit)
            bound = factor * (np.abs(a64) @ np.abs(b64)) + k * 2.0 ** -149 + 2.0 ** -24
            verdicts.append(accuracy.judge(
                host.astype(np.float64), ref, bound, kernel=f"{name} ({bn}-wide, {splits} "
                f"slices, {'FP32' if out == 'f32' else kind.upper()} C)", shape=(m, n, k),
                dtype_name="float16" if kind == "f16" else "bfloat16", factor=factor,
                seed=seed))
        failed = [v for v in verdicts if not v.passed]
        return failed[0] if failed else max(verdicts, key=lambda v: v.err_over_bound)
    return check


def _spec(name: str, kind: str) -> KernelSpec:
    cfg = config_for(16, kind)
    bf16 = kind == "bf16"
    return KernelSpec(name, f"small M: {cfg.bm}- to 128-row tiles by M, split K "
                      f"({DEFAULT_SPLITS} slices) reduced in the same launch",
                      np.uint16 if bf16 else np.float16, launcher(DEFAULT_SPLITS),
                      simulator=False, chapter="9b",
                      compile=((kernel_for(cfg, "f32"), signature(kind, "f32")),),
                      edges="A rows clamped; K padded to 64 only when needed; a B whose "
                            "rows are not whole 16-byte vectors read in place; stores check "
                            "row < M, col < N",
                      dtype_name="bfloat16" if bf16 else "", tile=(cfg.bm, cfg.bn, cfg.bk),
                      min_cc=(8, 0), paths=code_path, check=checker(name, kind),
                      needs=f"mma.sync m16n8k16 {'BF16' if bf16 else 'FP16'}, ldmatrix, "
                            "cp.async")


SPECS = [_spec("tc_small_m_fp16", "f16"), _spec("tc_small_m_bf16", "bf16")]

__all__ = ["build", "config_for", "splits_for", "blocks_per_sm", "k_slices", "launch_small",
           "launcher", "code_path", "SPECS", "MAX_M", "WIDTHS"]
