"""Rung 4 — 16-byte loads, a transposed A tile, and patches laid out for the banks.

What changed since chapter 3's ``block128`` (128 × 128 block tile, BK = 8, 16 × 16 threads,
an 8 × 8 patch each): the same tiles and the same arithmetic, moved with fewer, wider
instructions.

* **16-byte global loads.** Each thread fetches its share of a k-tile as whole 16-byte words
  (``LDG.E.128``) through :mod:`lab.vector` — Numba alone emits one 4-byte load per element.
* **A stored transposed** in shared memory, ``As[k][m]``: the 8 values of A a thread needs for
  one k are then consecutive, so they arrive with two ``LDS.128`` instead of eight ``LDS``. Each
  row of the transposed tile is padded by 4 floats, so the four 4-byte stores that transpose a
  16-byte word land in different banks.
* **B stored as it comes**, one ``STS.128`` per word; its 8 values per k are read with two
  ``LDS.128``.
* **The k-loop written out in fours** (``multiply_tile``): NVVM does not fully unroll a loop
  whose body has 64 FFMA, and a rolled loop costs ~20 bookkeeping instructions per k-step.

Two kernels, one difference — where a thread's 8 × 8 patch sits:

* ``vectorized`` — the patch is contiguous (rows ``8·ty … 8·ty+7``, columns ``8·tx …``). A
  quarter-warp's ``LDS.128`` of B then reads addresses 32 bytes apart: two lanes per bank group,
  a 2-way conflict.
* ``vectorized_spread`` — the patch is four 4 × 4 pieces 64 rows/columns apart (rows
  ``4·ty + {0, 64}``, columns ``4·tx + {0, 64}``): eight lanes read 128 consecutive bytes, no
  conflict; the C stores are 16-byte and coalesced as well.

This module also holds the configurable kernel factory the next two rungs reuse
(:func:`make_gemm`): ``stages`` (1 or 2 shared buffers) and ``layout`` (contiguous, spread or
warp-tiled) are the only switches rungs 5 and 6 turn.

Edges: every configuration has two kernels. Shapes that are multiples of the block tile take
the unchecked kernel with 16-byte loads and stores; any other shape takes the same kernel
compiled with ``EDGES=True``: bounds-checked 4-byte loads that fill zeros outside the matrices
and bounds-checked 4-byte stores. The checks sit in the load and store phases only; the
multiply-add loop is identical. Index arithmetic is int32, so each matrix must have fewer than
2³¹ elements (checked in the launch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32

from lab import device
from lab.kernels import KernelSpec
from lab.vector import ld_global_v4, ld_shared_v4, st_global_v4, st_shared_f32, st_shared_v4

SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
INT32_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class Config:
    """One point of the tuning space. Threads per block = 32·(BM/WM)·(BN/WN)."""
    BM: int = 128
    BN: int = 128
    BK: int = 8
    WM: int = 64
    WN: int = 32
    LM: int = 8       # lanes along m inside a warp tile (LM·LN = 32)
    TM: int = 8       # thread patch rows (multiple of 4: TM/4 sub-tiles of 4 rows)
    TN: int = 8       # thread patch columns (multiple of 4)
    PAD: int = 4      # floats of padding per row of the transposed A tile
    layout: str = "warp"  # "contiguous" | "spread" (16×16 thread grid) | "warp" (warp tiles)
    stages: int = 2   # shared buffers: 1 = load, barrier, multiply, barrier; 2 = double buffer
    min_blocks: int = 0   # launch_bounds minimum blocks per SM (0: no launch bounds)

    @property
    def LN(self) -> int:
        return 32 // self.LM

    @property
    def threads(self) -> int:
        if self.layout == "warp":
            return 32 * (self.BM // self.WM) * (self.BN // self.WN)
        return (self.BM // self.TM) * (self.BN // self.TN)

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.BK * ((self.BM + self.PAD) + self.BN) * 4

    def validate(self) -> None:
        c = self
        problems = []
        if 32 % c.LM:
            problems.append("LM must divide 32")
        if c.TM % 4 or c.TN % 4:
            problems.append("TM and TN must be multiples of 4")
        if c.layout not in ("contiguous", "spread", "warp"):
            problems.append(f"unknown layout {c.layout!r}")
        if c.stages not in (1, 2):
            problems.append("stages must be 1 or 2")
        if c.layout == "warp" and (c.BM % c.WM or c.BN % c.WN):
            problems.append("warp tiles must divide the block tile")
        if c.layout == "warp" and (c.WM != (c.TM // 4) * c.LM * 4
                                   or c.WN != (c.TN // 4) * c.LN * 4):
            problems.append("WM must equal (TM/4)·LM·4 and WN (TN/4)·LN·4")
        if c.layout != "warp" and (c.BM % c.TM or c.BN % c.TN or c.threads % 32):
            problems.append("the thread grid must tile the block tile in whole warps")
        if c.BK % 4 or c.PAD % 4:
            problems.append("BK and PAD must be multiples of 4")
        if (c.BM * c.BK // 4) % c.threads or (c.BK * c.BN // 4) % c.threads:
            problems.append("each thread must load a whole number of 16-byte words per tile")
        if c.threads > 1024:
            problems.append("more than 1024 threads per block")
        if problems:
            raise ValueError(f"bad warp-tile config {c}: " + "; ".join(problems))

    def label(self) -> str:
        where = (f"warp {self.WM}x{self.WN} lanes {self.LM}x{self.LN}"
                 if self.layout == "warp" else f"{self.layout} patches")
        return (f"{self.BM}x{self.BN}x{self.BK}, {where}, patch {self.TM}x{self.TN}, "
                f"{self.threads} threads, {self.stages} buffer(s)")


def make_gemm(cfg: Config, EDGES: bool = False, tail=None):
    """One kernel (a new dispatcher) for one configuration; ``EDGES`` adds bounds checks.

    ``tail`` (default None: the plain kernel ``gemm(A, B, C)``) changes what happens around the
    main loop without touching it: an object with device functions ``store(C, row, col, v,
    split, X)`` and ``store4(C, row, col, v0, v1, v2, v3, split, X)`` that write finished
    elements (a fused epilogue, :mod:`lab.kernels.fused_epilogue`; a partial sum,
    :mod:`lab.kernels.splitk`), or None to store plainly, and ``k_range(k_total, split, X)
    -> (k_lo, k_hi)``, the slice of K this block walks (None: all of it). The kernel then takes
    a fourth argument ``X``, a tuple passed through to those functions, and ``split`` is
    ``blockIdx.z``.

    The kernel is assembled from device functions, each built for ``cfg`` by its own factory:
    the multiply of one tile (:func:`make_multiply`), where a thread's words of a tile lie
    (:func:`make_place_words`), the copies of a tile from global to shared memory
    (:func:`make_copies`), the main loop over the k-tiles (:func:`make_main_loop`), the stores
    of a thread's patch (:func:`make_write_patch`) and the body that ties them together
    (:func:`make_body`); all are inlined into the one kernel.
    """
    cfg.validate()
    gemm_body = make_body(cfg, EDGES, tail)
    # launch bounds cap the registers so min_blocks blocks fit on an SM (the simulator has no
    # such option and needs none)
    bounded = cfg.min_blocks and not device.SIMULATOR
    jit = cuda.jit(launch_bounds=(cfg.threads, cfg.min_blocks)) if bounded else cuda.jit

    if tail is not None:
        @jit
        def gemm_tail(A, B, C, X):
            gemm_body(A, B, C, X)
        return gemm_tail

    @jit
    def gemm(A, B, C):
        gemm_body(A, B, C, int32(0))

    return gemm


def sub_tile_steps(cfg: Config) -> tuple[int, int]:
    """Rows and columns from one of a thread's 4 × 4 sub-tiles to the next, by layout."""
    if cfg.layout == "warp":
        return cfg.LM * 4, cfg.LN * 4
    if cfg.layout == "spread":
        return cfg.BM // (cfg.TM // 4), cfg.BN // (cfg.TN // 4)
    return 4, 4


def make_multiply(cfg: Config):
    """``multiply_tile(As, Bs, a_off, b_off, acc, fa, fb)``: BK k-steps of a thread's patch
    on one shared buffer (``a_off``/``b_off``: where the thread's first sub-tile starts)."""
    BK, BN, TM, TN = cfg.BK, cfg.BN, cfg.TM, cfg.TN
    RM, RN = TM // 4, TN // 4                # 4×4 sub-tiles per thread along m and n
    SM_STEP, SN_STEP = sub_tile_steps(cfg)
    AP = cfg.BM + cfg.PAD                    # row length of the transposed A tile

    # region: k_loop
    @cuda.jit(device=True, inline="always")
    def k_step(As, Bs, a_off, b_off, acc, fa, fb):
        """One k of the block tile: RM + RN 16-byte shared loads, TM·TN multiply-adds."""
        for s in range(int32(RM)):
            x0, x1, x2, x3 = ld_shared_v4(As, a_off + s * int32(SM_STEP))
            fa[s * 4 + 0] = x0
            fa[s * 4 + 1] = x1
            fa[s * 4 + 2] = x2
            fa[s * 4 + 3] = x3
        for s in range(int32(RN)):
            y0, y1, y2, y3 = ld_shared_v4(Bs, b_off + s * int32(SN_STEP))
            fb[s * 4 + 0] = y0
            fb[s * 4 + 1] = y1
            fb[s * 4 + 2] = y2
            fb[s * 4 + 3] = y3
        for i in range(int32(TM)):
            for j in range(int32(TN)):
                acc[i, j] += fa[i] * fb[j]

    @cuda.jit(device=True, inline="always")
    def multiply_tile(As, Bs, a_off, b_off, acc, fa, fb):
        """BK k-steps on one buffer. k_step is written out four times per trip because NVVM
        will not fully unroll a loop with a body this long: a loop over single k-steps costs
        ~20 bookkeeping instructions per 64 FFMA, this one ~6 per 256."""
        for kq in range(int32(BK // 4)):
            k_step(As, Bs, a_off, b_off, acc, fa, fb)
            k_step(As, Bs, a_off + int32(AP), b_off + int32(BN), acc, fa, fb)
            k_step(As, Bs, a_off + int32(2 * AP), b_off + int32(2 * BN), acc, fa, fb)
            k_step(As, Bs, a_off + int32(3 * AP), b_off + int32(3 * BN), acc, fa, fb)
            a_off = int32(a_off + int32(4 * AP))
            b_off = int32(b_off + int32(4 * BN))

    # endregion: k_loop
    return multiply_tile


def make_place_words(cfg: Config):
    """``place_words(tid, bm, bn, k_lo, n, k_total, ga, gb, ra, qa, rb, qb, sa, sb)``: where
    each 16-byte word thread ``tid`` copies of the block's first k-tile lies."""
    BM, BN, BK, NT = cfg.BM, cfg.BN, cfg.BK, cfg.threads
    AP = BM + cfg.PAD                        # row length of the transposed A tile
    KQ, NQ = BK // 4, BN // 4                # 16-byte words per row of the A / B tile
    LA = BM * BK // 4 // NT                  # 16-byte words of A each thread loads per tile
    LB = BK * BN // 4 // NT

    @cuda.jit(device=True, inline="always")
    def place_words(tid, bm, bn, k_lo, n, k_total, ga, gb, ra, qa, rb, qb, sa, sb):
        """Of each word this thread copies: its flat global index in the first k-tile
        (``ga``/``gb``), its (row, column) in the matrix (``ra``, ``qa``/``rb``, ``qb``) and
        its offset in shared memory (``sa``/``sb``)."""
        for l in range(int32(LA)):
            w = int32(tid + l * int32(NT))
            r = int32(w // int32(KQ))
            q = int32((w % int32(KQ)) * int32(4))
            ra[l] = int32(bm + r)
            qa[l] = int32(q + k_lo)
            ga[l] = int32((bm + r) * k_total + q + k_lo)
            sa[l] = int32(q * int32(AP) + r)
        for l in range(int32(LB)):
            w = int32(tid + l * int32(NT))
            r = int32(w // int32(NQ))
            q = int32((w % int32(NQ)) * int32(4))
            rb[l] = int32(r + k_lo)
            qb[l] = int32(bn + q)
            gb[l] = int32((r + k_lo) * n + bn + q)
            sb[l] = int32(r * int32(BN) + q)

    return place_words


def make_copies(cfg: Config, EDGES: bool):
    """``(load_tile, store_tile)``: the two halves of copying a k-tile to shared memory
    (global → registers, registers → shared); ``EDGES`` makes the global loads
    bounds-checked 4-byte loads."""
    BM, BN, BK, NT = cfg.BM, cfg.BN, cfg.BK, cfg.threads
    AP = BM + cfg.PAD                        # row length of the transposed A tile
    LA = BM * BK // 4 // NT                  # 16-byte words of A each thread loads per tile
    LB = BK * BN // 4 // NT

    @cuda.jit(device=True, inline="always")
    def load_tile(A, B, k0, ga, gb, ra, qa, rb, qb, pa, pb, m, n, k_total):
        """Global -> registers: this thread's LA words of the A tile and LB of the B tile.
        ``ga``/``gb`` hold the flat int32 index of each word in the current k-tile."""
        for l in range(int32(LA)):
            if EDGES:
                for e in range(int32(4)):
                    row = ra[l]
                    col = k0 + qa[l] + e
                    pa[l * 4 + e] = A[row, col] if row < m and col < k_total else float32(0)
            else:
                v0, v1, v2, v3 = ld_global_v4(A, ga[l])
                pa[l * 4 + 0] = v0
                pa[l * 4 + 1] = v1
                pa[l * 4 + 2] = v2
                pa[l * 4 + 3] = v3
        for l in range(int32(LB)):
            if EDGES:
                for e in range(int32(4)):
                    row = k0 + rb[l]
                    col = qb[l] + e
                    pb[l * 4 + e] = B[row, col] if row < k_total and col < n else float32(0)
            else:
                v0, v1, v2, v3 = ld_global_v4(B, gb[l])
                pb[l * 4 + 0] = v0
                pb[l * 4 + 1] = v1
                pb[l * 4 + 2] = v2
                pb[l * 4 + 3] = v3

    @cuda.jit(device=True, inline="always")
    def store_tile(As, Bs, a_buf, b_buf, sa, sb, pa, pb):
        """Registers -> shared: A transposed (four 4-byte stores), B as one 16-byte store."""
        for l in range(int32(LA)):
            for e in range(int32(4)):
                st_shared_f32(As, a_buf + sa[l] + e * int32(AP), pa[l * 4 + e])
        for l in range(int32(LB)):
            st_shared_v4(Bs, b_buf + sb[l], pb[l * 4 + 0], pb[l * 4 + 1], pb[l * 4 + 2],
                         pb[l * 4 + 3])

    return load_tile, store_tile


def make_main_loop(cfg: Config, EDGES: bool):
    """``main_loop(A, B, As, Bs, acc, fa, fb, pa, pb, ga, gb, ra, qa, rb, qb, sa, sb, row0,
    col0, n_tiles, m, n, k_total)``: the block's ``n_tiles`` k-tiles into ``acc`` — the first
    one copied to shared memory, then each next one copied while (two buffers) or after (one)
    the current one is multiplied; ``k_total`` is where the block's k-range ends."""
    BK, DOUBLE = cfg.BK, cfg.stages == 2
    A_BUF, B_BUF = BK * (cfg.BM + cfg.PAD), BK * cfg.BN     # floats per buffer
    LA = cfg.BM * BK // 4 // cfg.threads     # 16-byte words of A each thread loads per tile
    LB = BK * cfg.BN // 4 // cfg.threads
    multiply_tile = make_multiply(cfg)
    load_tile, store_tile = make_copies(cfg, EDGES)

    @cuda.jit(device=True, inline="always")
    def main_loop(A, B, As, Bs, acc, fa, fb, pa, pb, ga, gb, ra, qa, rb, qb, sa, sb, row0, col0,
                  n_tiles, m, n, k_total):
        load_tile(A, B, int32(0), ga, gb, ra, qa, rb, qb, pa, pb, m, n, k_total)
        store_tile(As, Bs, int32(0), int32(0), sa, sb, pa, pb)
        cuda.syncthreads()

        # region: main_loop
        b_step = int32(int32(BK) * n)
        cur = int32(0)               # buffer being multiplied; 1 - cur is being filled
        left = int32(n_tiles - int32(1))
        while left > int32(0):
            for l in range(int32(LA)):
                ga[l] = int32(ga[l] + int32(BK))
            for l in range(int32(LB)):
                gb[l] = int32(gb[l] + b_step)
            k0 = int32((n_tiles - left) * int32(BK))
            if DOUBLE:
                # the next tile's global loads are issued first and land during the multiply
                load_tile(A, B, k0, ga, gb, ra, qa, rb, qb, pa, pb, m, n, k_total)
                multiply_tile(As, Bs, int32(cur * int32(A_BUF) + row0),
                              int32(cur * int32(B_BUF) + col0), acc, fa, fb)
                cur = int32(int32(1) - cur)
                store_tile(As, Bs, int32(cur * int32(A_BUF)), int32(cur * int32(B_BUF)), sa,
                           sb, pa, pb)
                cuda.syncthreads()   # one barrier per k-step: the two buffers alternate
            else:
                multiply_tile(As, Bs, row0, col0, acc, fa, fb)
                cuda.syncthreads()   # everyone is done reading the tile ...
                load_tile(A, B, k0, ga, gb, ra, qa, rb, qb, pa, pb, m, n, k_total)
                store_tile(As, Bs, int32(0), int32(0), sa, sb, pa, pb)
                cuda.syncthreads()   # ... and the next one is complete
            left = int32(left - int32(1))
        multiply_tile(As, Bs, int32(cur * int32(A_BUF) + row0), int32(cur * int32(B_BUF) + col0),
                      acc, fa, fb)
        # endregion: main_loop

    return main_loop


def make_write_patch(cfg: Config, EDGES: bool, tail):
    """``write_patch(C, acc, bm, bn, row0, col0, m, n, split, X)``: a thread's finished patch,
    RM × RN sub-tiles of 4 × 4 (``row0``/``col0``: its first element in the block tile at
    ``bm``/``bn``), as 16-byte stores, or as bounds-checked 4-byte stores (``EDGES``), or
    through ``tail``'s store functions."""
    RM, RN = cfg.TM // 4, cfg.TN // 4
    SM_STEP, SN_STEP = sub_tile_steps(cfg)
    STORE = tail is not None and tail.store is not None
    store = tail.store if STORE else None
    store4 = tail.store4 if STORE else None

    @cuda.jit(device=True, inline="always")
    def write_patch(C, acc, bm, bn, row0, col0, m, n, split, X):
        for si in range(int32(RM)):
            for i in range(int32(4)):
                row = int32(bm + row0 + si * int32(SM_STEP) + i)
                for sj in range(int32(RN)):
                    col = int32(bn + col0 + sj * int32(SN_STEP))
                    if EDGES:
                        for j in range(int32(4)):
                            if row < m and col + j < n:
                                if STORE:
                                    store(C, row, col + j, acc[si * 4 + i, sj * 4 + j], split,
                                          X)
                                else:
                                    C[row, col + j] = acc[si * 4 + i, sj * 4 + j]
                    elif STORE:
                        store4(C, row, col, acc[si * 4 + i, sj * 4 + 0],
                               acc[si * 4 + i, sj * 4 + 1], acc[si * 4 + i, sj * 4 + 2],
                               acc[si * 4 + i, sj * 4 + 3], split, X)
                    else:
                        st_global_v4(C, row * n + col, acc[si * 4 + i, sj * 4 + 0],
                                     acc[si * 4 + i, sj * 4 + 1], acc[si * 4 + i, sj * 4 + 2],
                                     acc[si * 4 + i, sj * 4 + 3])

    return write_patch


def make_body(cfg: Config, EDGES: bool, tail):
    """``gemm_body(A, B, C, X)``: one block's tile of C — its k-range, where its thread's patch
    sits (the layout), the words it copies, the main loop and the patch's stores."""
    BM, BN, BK, WM, WN, LM = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.LM
    TM, TN, NT = cfg.TM, cfg.TN, cfg.threads
    LAYOUT = {"contiguous": 0, "spread": 1, "warp": 2}[cfg.layout]
    TX = BN // TN                            # threads along n in the thread-grid layouts
    AP = BM + cfg.PAD                        # row length of the transposed A tile
    A_SHARED, B_SHARED = cfg.stages * BK * AP, cfg.stages * BK * BN
    LA = BM * BK // 4 // NT                  # 16-byte words of A each thread loads per tile
    LB = BK * BN // 4 // NT
    PA, PB = LA * 4, LB * 4
    WARPS_N = BN // WN
    SPLIT = tail is not None and tail.k_range is not None
    k_range = tail.k_range if SPLIT else None
    place_words = make_place_words(cfg)
    main_loop = make_main_loop(cfg, EDGES)
    write_patch = make_write_patch(cfg, EDGES, tail)

    @cuda.jit(device=True, inline="always")
    def gemm_body(A, B, C, X):
        As = cuda.shared.array(A_SHARED, float32)   # two buffers of As[k][m] (transposed)
        Bs = cuda.shared.array(B_SHARED, float32)   # two buffers of Bs[k][n]
        acc = cuda.local.array((TM, TN), float32)
        fa = cuda.local.array(TM, float32)
        fb = cuda.local.array(TN, float32)
        pa = cuda.local.array(PA, float32)           # the next tile, parked in registers
        pb = cuda.local.array(PB, float32)
        ga = cuda.local.array(LA, int32)             # flat global index of each A word (k0 = 0)
        gb = cuda.local.array(LB, int32)
        ra = cuda.local.array(LA, int32)             # (row, column) of each word, for EDGES
        qa = cuda.local.array(LA, int32)
        rb = cuda.local.array(LB, int32)
        qb = cuda.local.array(LB, int32)
        sa = cuda.local.array(LA, int32)             # shared offset of each word
        sb = cuda.local.array(LB, int32)

        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_total = int32(A.shape[1])      # the row length of A
        split = int32(0)
        k_lo = int32(0)
        k_hi = k_total
        if SPLIT:
            split = int32(cuda.blockIdx.z)
            k_lo, k_hi = k_range(k_total, split, X)
        tid = int32(cuda.threadIdx.x)
        warp = int32(tid // int32(32))
        lane = int32(tid % int32(32))
        bm = int32(int32(cuda.blockIdx.y) * int32(BM))
        bn = int32(int32(cuda.blockIdx.x) * int32(BN))
        # region: placement
        # first row/column of this thread's first 4×4 sub-tile, inside the block tile
        if LAYOUT == 2:      # warp tiles: warps tile the block, lanes LM × LN tile the warp
            row0 = int32((warp // int32(WARPS_N)) * int32(WM) + (lane % int32(LM)) * int32(4))
            col0 = int32((warp % int32(WARPS_N)) * int32(WN) + (lane // int32(LM)) * int32(4))
        elif LAYOUT == 1:    # one grid of threads, each patch spread as RM × RN 4×4 pieces
            row0 = int32((tid // int32(TX)) * int32(4))
            col0 = int32((tid % int32(TX)) * int32(4))
        else:                # one grid of threads, each patch TM × TN contiguous
            row0 = int32((tid // int32(TX)) * int32(TM))
            col0 = int32((tid % int32(TX)) * int32(TN))
        # endregion: placement

        place_words(tid, bm, bn, k_lo, n, k_total, ga, gb, ra, qa, rb, qb, sa, sb)
        for i in range(int32(TM)):
            for j in range(int32(TN)):
                acc[i, j] = float32(0.0)

        # from here on the k-range ends at k_hi (all of K without a split)
        n_tiles = int32((k_hi - k_lo + int32(BK - 1)) // int32(BK))
        main_loop(A, B, As, Bs, acc, fa, fb, pa, pb, ga, gb, ra, qa, rb, qb, sa, sb, row0, col0,
                  n_tiles, m, n, k_hi)
        write_patch(C, acc, bm, bn, row0, col0, m, n, split, X)

    return gemm_body


def check_int32(A, B, C) -> None:
    for label, x in (("A", A), ("B", B), ("C", C)):
        if x.size > INT32_LIMIT:
            raise ValueError(f"{label} has {x.size} elements; these kernels index with int32 "
                             f"(at most {INT32_LIMIT})")


def tiles_fit(cfg, m: int, n: int, k: int) -> bool:
    """True when the unchecked 16-byte kernel applies (every dimension a tile multiple)."""
    return m % cfg.BM == 0 and n % cfg.BN == 0 and k % cfg.BK == 0


def code_path(cfg: Config, m: int, n: int, k: int) -> str:
    """Which kernel the launch picks at M×N×K (:meth:`lab.kernels.KernelSpec.code_path`)."""
    return ("16-byte kernel" if tiles_fit(cfg, m, n, k)
            else f"bounds-checked twin ({cfg.BM}x{cfg.BN}x{cfg.BK} tile)")


def make_launch(cfg: Config, fast, edges):
    """Launch function: the unchecked kernel on tile multiples, the edge kernel otherwise."""
    def launch(A, B, C):
        m, n = C.shape
        k = A.shape[1]
        check_int32(A, B, C)
        kernel = fast if tiles_fit(cfg, m, n, k) else edges
        grid = ((n + cfg.BN - 1) // cfg.BN, (m + cfg.BM - 1) // cfg.BM)
        kernel[grid, cfg.threads](A, B, C)
    return launch


def build(cfg: Config):
    """(fast kernel, edge kernel, launch) for one configuration."""
    fast = make_gemm(cfg, EDGES=False)
    edges = make_gemm(cfg, EDGES=True)
    return fast, edges, make_launch(cfg, fast, edges)


EDGES_NOTE = ("bounds-checked twin kernel (scalar loads/stores) when M, N or K is not a "
              "multiple of the block tile; 16-byte unchecked kernel otherwise")


def spec_for(name: str, cfg: Config, title: str, chapter: str = "4") -> tuple:
    """(KernelSpec, (fast, edges, launch)) for a configuration."""
    built = build(cfg)
    spec = KernelSpec(name, f"{title}: {cfg.label()}", np.float32, built[2], chapter=chapter,
                      compile=((built[0], SIGNATURE), (built[1], SIGNATURE)),
                      edges=EDGES_NOTE, tile=(cfg.BM, cfg.BN, cfg.BK),
                      paths=lambda m, n, k: code_path(cfg, m, n, k), config=cfg)
    return spec, built



#: Chapter 3's block128 shape, with the new loads and layouts.
VECTORIZED = Config(BM=128, BN=128, BK=8, TM=8, TN=8, layout="contiguous", stages=1)
VECTORIZED_SPREAD = Config(BM=128, BN=128, BK=8, TM=8, TN=8, layout="spread", stages=1)

_vec_spec, (vectorized_kernel, vectorized_edges_kernel, launch_vectorized) = spec_for(
    "vectorized", VECTORIZED, "16-byte loads, A transposed, contiguous 8x8 patches")
_spread_spec, (spread_kernel, spread_edges_kernel, launch_spread) = spec_for(
    "vectorized_spread", VECTORIZED_SPREAD, "16-byte loads, A transposed, spread 4x4 pieces")

SPECS = [_vec_spec, _spread_spec]
