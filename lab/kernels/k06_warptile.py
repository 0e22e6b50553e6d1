"""Rung 6 — warp tiles, and a factory of configurations to tune over.

What changed since rung 5 (``pipelined``): only *which thread owns which outputs*. Rung 5 laid
the 16 × 16 threads over the block tile as one grid, so a warp (two rows of 16 threads) covered
a 2·4 × 16·4 strip of each 4 × 4 sub-tile grid. Here the block tile is first cut into warp
tiles (``WM × WN``, one per warp) and a warp's 32 lanes are laid out ``LM × LN`` inside it.
A warp then reads, per k, ``WM`` values of A and ``WN`` values of B from shared memory and
does ``WM·WN`` multiply-adds with them: the warp — the unit that actually issues a shared-memory
load — gets the same reuse trick the thread got in chapter 3, one level up. With
``WM × WN = 64 × 32`` and lanes ``8 × 4`` a warp's ``LDS.128`` of A touches 8 consecutive
16-byte words (one 128-byte line, conflict-free) and its ``LDS.128`` of B 4 words that 8 lanes
each share (broadcast).

Everything else is rung 5: A stored transposed (``As[k][m]``, padded by 4 floats so the
transposing stores do not conflict), 16-byte global loads, two shared buffers and a register
prefetch of the next k-tile while the current one is multiplied (one barrier per k-step), each
thread an ``8 × 8`` patch in ``2 × 2`` sub-tiles of ``4 × 4``.

:func:`make_warptile` builds one kernel per configuration (block tile ``BM × BN × BK``,
warp tile ``WM × WN``, lanes ``LM × LN``, thread patch ``TM × TN``); every size is a closure
constant, so each configuration is its own fully unrolled kernel. ``tools/tune_fp32.py`` sweeps
them on the GPU.

Edges: two kernels per configuration. Shapes that are multiples of the block tile (M % BM,
N % BN, K % BK all zero) take the unchecked kernel with 16-byte loads and stores; any other
shape takes the same kernel compiled with ``EDGES=True``: bounds-checked scalar loads that
fill zeros outside the matrices, and bounds-checked scalar stores. The checks sit in the load
and store phases only; the multiply-add loop is identical. Index arithmetic is int32, so each
matrix must have fewer than 2³¹ elements (checked in the launch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32

from lab.kernels import KernelSpec
from lab.vector import ld_global_v4, ld_shared_v4, st_global_v4, st_shared_v4

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
    min_blocks: int = 0   # launch_bounds minimum blocks per SM (0: no launch bounds)

    @property
    def LN(self) -> int:
        return 32 // self.LM

    @property
    def threads(self) -> int:
        return 32 * (self.BM // self.WM) * (self.BN // self.WN)

    @property
    def shared_bytes(self) -> int:
        return 2 * self.BK * ((self.BM + self.PAD) + self.BN) * 4

    def validate(self) -> None:
        c = self
        problems = []
        if 32 % c.LM:
            problems.append("LM must divide 32")
        if c.TM % 4 or c.TN % 4:
            problems.append("TM and TN must be multiples of 4")
        if c.BM % c.WM or c.BN % c.WN:
            problems.append("warp tiles must divide the block tile")
        if c.WM != (c.TM // 4) * c.LM * 4 or c.WN != (c.TN // 4) * c.LN * 4:
            problems.append("WM must equal (TM/4)·LM·4 and WN (TN/4)·LN·4")
        if c.BK % 4 or c.PAD % 4:
            problems.append("BK and PAD must be multiples of 4")
        if (c.BM * c.BK // 4) % c.threads or (c.BK * c.BN // 4) % c.threads:
            problems.append("each thread must load a whole number of 16-byte words per tile")
        if c.threads > 1024:
            problems.append("more than 1024 threads per block")
        if problems:
            raise ValueError(f"bad warp-tile config {c}: " + "; ".join(problems))

    def label(self) -> str:
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} "
                f"lanes {self.LM}x{self.LN} patch {self.TM}x{self.TN} ({self.threads} thr)")


def make_warptile(cfg: Config, EDGES: bool = False):
    """The warp-tiled, double-buffered kernel for one configuration (a new dispatcher)."""
    cfg.validate()
    BM, BN, BK, WM, WN, LM, LN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.LM, cfg.LN
    TM, TN, NT = cfg.TM, cfg.TN, cfg.threads
    RM, RN = TM // 4, TN // 4                # 4×4 sub-tiles per thread along m and n
    SM_STEP, SN_STEP = LM * 4, LN * 4        # distance between a thread's sub-tiles
    AP = BM + cfg.PAD                        # row length of the transposed A tile
    A_BUF, B_BUF = BK * AP, BK * BN          # floats per buffer
    KQ = BK // 4                             # 16-byte words per row of the A tile
    NQ = BN // 4                             # 16-byte words per row of the B tile
    LA = BM * BK // 4 // NT                  # 16-byte words of A each thread loads per tile
    LB = BK * BN // 4 // NT
    WARPS_N = BN // WN
    jit = cuda.jit(launch_bounds=(NT, cfg.min_blocks)) if cfg.min_blocks else cuda.jit

    @jit
    def warptile(A, B, C):
        As = cuda.shared.array(2 * A_BUF, float32)
        Bs = cuda.shared.array(2 * B_BUF, float32)
        acc = cuda.local.array((TM, TN), float32)
        fa = cuda.local.array(TM, float32)
        fb = cuda.local.array(TN, float32)
        pa = cuda.local.array(LA * 4, float32)     # prefetched A words (registers)
        pb = cuda.local.array(LB * 4, float32)

        m = int32(C.shape[0])
        n = int32(C.shape[1])
        k_total = int32(A.shape[1])
        tid = int32(cuda.threadIdx.x)
        warp = tid // int32(32)
        lane = tid % int32(32)
        bm = int32(cuda.blockIdx.y) * int32(BM)
        bn = int32(cuda.blockIdx.x) * int32(BN)
        # where this thread's first 4×4 sub-tile starts inside the block tile
        row0 = (warp // int32(WARPS_N)) * int32(WM) + (lane % int32(LM)) * int32(4)
        col0 = (warp % int32(WARPS_N)) * int32(WN) + (lane // int32(LM)) * int32(4)

        for i in range(int32(TM)):
            for j in range(int32(TN)):
                acc[i, j] = float32(0.0)

        n_tiles = (k_total + int32(BK - 1)) // int32(BK)

        # ---- load k-tile 0 into registers, then into buffer 0
        k0 = int32(0)
        for l in range(int32(LA)):
            w = tid + l * int32(NT)
            r = w // int32(KQ)
            q = (w % int32(KQ)) * int32(4)
            if EDGES:
                for e in range(int32(4)):
                    pa[l * 4 + e] = A[bm + r, k0 + q + e] if (
                        bm + r < m and k0 + q + e < k_total) else float32(0.0)
            else:
                v0, v1, v2, v3 = ld_global_v4(A, (bm + r) * k_total + k0 + q)
                pa[l * 4 + 0] = v0
                pa[l * 4 + 1] = v1
                pa[l * 4 + 2] = v2
                pa[l * 4 + 3] = v3
        for l in range(int32(LB)):
            w = tid + l * int32(NT)
            r = w // int32(NQ)
            q = (w % int32(NQ)) * int32(4)
            if EDGES:
                for e in range(int32(4)):
                    pb[l * 4 + e] = B[k0 + r, bn + q + e] if (
                        k0 + r < k_total and bn + q + e < n) else float32(0.0)
            else:
                v0, v1, v2, v3 = ld_global_v4(B, (k0 + r) * n + bn + q)
                pb[l * 4 + 0] = v0
                pb[l * 4 + 1] = v1
                pb[l * 4 + 2] = v2
                pb[l * 4 + 3] = v3
        for l in range(int32(LA)):
            w = tid + l * int32(NT)
            r = w // int32(KQ)
            q = (w % int32(KQ)) * int32(4)
            for e in range(int32(4)):
                As[(q + e) * int32(AP) + r] = pa[l * 4 + e]       # transposed: As[k][m]
        for l in range(int32(LB)):
            w = tid + l * int32(NT)
            r = w // int32(NQ)
            q = (w % int32(NQ)) * int32(4)
            st_shared_v4(Bs, r * int32(BN) + q, pb[l * 4 + 0], pb[l * 4 + 1],
                         pb[l * 4 + 2], pb[l * 4 + 3])
        cuda.syncthreads()

        t = int32(0)
        while t < n_tiles:
            cur = t % int32(2)
            a_base = cur * int32(A_BUF)
            b_base = cur * int32(B_BUF)
            more = t + int32(1) < n_tiles
            # ---- prefetch k-tile t+1 into registers (in flight during the multiply-adds)
            if more:
                k0 = (t + int32(1)) * int32(BK)
                for l in range(int32(LA)):
                    w = tid + l * int32(NT)
                    r = w // int32(KQ)
                    q = (w % int32(KQ)) * int32(4)
                    if EDGES:
                        for e in range(int32(4)):
                            pa[l * 4 + e] = A[bm + r, k0 + q + e] if (
                                bm + r < m and k0 + q + e < k_total) else float32(0.0)
                    else:
                        v0, v1, v2, v3 = ld_global_v4(A, (bm + r) * k_total + k0 + q)
                        pa[l * 4 + 0] = v0
                        pa[l * 4 + 1] = v1
                        pa[l * 4 + 2] = v2
                        pa[l * 4 + 3] = v3
                for l in range(int32(LB)):
                    w = tid + l * int32(NT)
                    r = w // int32(NQ)
                    q = (w % int32(NQ)) * int32(4)
                    if EDGES:
                        for e in range(int32(4)):
                            pb[l * 4 + e] = B[k0 + r, bn + q + e] if (
                                k0 + r < k_total and bn + q + e < n) else float32(0.0)
                    else:
                        v0, v1, v2, v3 = ld_global_v4(B, (k0 + r) * n + bn + q)
                        pb[l * 4 + 0] = v0
                        pb[l * 4 + 1] = v1
                        pb[l * 4 + 2] = v2
                        pb[l * 4 + 3] = v3
            # ---- multiply the current buffer: BK steps, fully unrolled
            for kk in range(int32(BK)):
                for s in range(int32(RM)):
                    x0, x1, x2, x3 = ld_shared_v4(
                        As, a_base + kk * int32(AP) + row0 + s * int32(SM_STEP))
                    fa[s * 4 + 0] = x0
                    fa[s * 4 + 1] = x1
                    fa[s * 4 + 2] = x2
                    fa[s * 4 + 3] = x3
                for s in range(int32(RN)):
                    y0, y1, y2, y3 = ld_shared_v4(
                        Bs, b_base + kk * int32(BN) + col0 + s * int32(SN_STEP))
                    fb[s * 4 + 0] = y0
                    fb[s * 4 + 1] = y1
                    fb[s * 4 + 2] = y2
                    fb[s * 4 + 3] = y3
                for i in range(int32(TM)):
                    for j in range(int32(TN)):
                        acc[i, j] += fa[i] * fb[j]
            # ---- park the prefetched tile in the other buffer; one barrier per k-step
            if more:
                a_next = (int32(1) - cur) * int32(A_BUF)
                b_next = (int32(1) - cur) * int32(B_BUF)
                for l in range(int32(LA)):
                    w = tid + l * int32(NT)
                    r = w // int32(KQ)
                    q = (w % int32(KQ)) * int32(4)
                    for e in range(int32(4)):
                        As[a_next + (q + e) * int32(AP) + r] = pa[l * 4 + e]
                for l in range(int32(LB)):
                    w = tid + l * int32(NT)
                    r = w // int32(NQ)
                    q = (w % int32(NQ)) * int32(4)
                    st_shared_v4(Bs, b_next + r * int32(BN) + q, pb[l * 4 + 0],
                                 pb[l * 4 + 1], pb[l * 4 + 2], pb[l * 4 + 3])
            cuda.syncthreads()
            t += int32(1)

        # ---- write the patch: RM × RN sub-tiles of 4 × 4
        for si in range(int32(RM)):
            for i in range(int32(4)):
                row = bm + row0 + si * int32(SM_STEP) + i
                for sj in range(int32(RN)):
                    col = bn + col0 + sj * int32(SN_STEP)
                    if EDGES:
                        for j in range(int32(4)):
                            if row < m and col + j < n:
                                C[row, col + j] = acc[si * 4 + i, sj * 4 + j]
                    else:
                        st_global_v4(C, row * n + col, acc[si * 4 + i, sj * 4 + 0],
                                     acc[si * 4 + i, sj * 4 + 1], acc[si * 4 + i, sj * 4 + 2],
                                     acc[si * 4 + i, sj * 4 + 3])

    return warptile


def check_int32(A, B, C) -> None:
    for label, x in (("A", A), ("B", B), ("C", C)):
        if x.size > INT32_LIMIT:
            raise ValueError(f"{label} has {x.size} elements; these kernels index with int32 "
                             f"(at most {INT32_LIMIT})")


def tiles_fit(cfg, m: int, n: int, k: int) -> bool:
    """True when the unchecked 16-byte kernel applies (every dimension a tile multiple)."""
    return m % cfg.BM == 0 and n % cfg.BN == 0 and k % cfg.BK == 0


def make_launch(cfg: Config, fast, edges):
    """Launch function: the unchecked kernel on tile multiples, the edge kernel otherwise."""
    def launch(A, B, C):
        m, n = C.shape
        k = A.shape[1]
        check_int32(A, B, C)
        kernel = fast if tiles_fit(cfg, m, n, k) else edges
        grid = ((n + cfg.BN - 1) // cfg.BN, (m + cfg.BM - 1) // cfg.BM)
        kernel[grid, cfg.threads](A, B, C)
    launch.config = cfg
    return launch


def build(cfg: Config):
    """(fast kernel, edge kernel, launch) for one configuration."""
    fast = make_warptile(cfg, EDGES=False)
    edges = make_warptile(cfg, EDGES=True)
    return fast, edges, make_launch(cfg, fast, edges)


#: The configuration the ladder uses (the best of the sweep in tools/tune_fp32.py).
DEFAULT = Config()
#: A few others kept registered, so their compiler facts are in the book.
VARIANTS = {
    "warptile": DEFAULT,
    "warptile_128x64": Config(BM=128, BN=64, BK=8, WM=64, WN=32, LM=8),
    "warptile_bk16": Config(BM=128, BN=128, BK=16, WM=64, WN=32, LM=8),
}

_BUILT = {name: build(cfg) for name, cfg in VARIANTS.items()}
warptile_kernel, warptile_edges_kernel, launch_warptile = _BUILT["warptile"]

EDGES_NOTE = ("bounds-checked twin kernel (scalar loads/stores) when M, N or K is not a "
              "multiple of the block tile; 16-byte unchecked kernel otherwise")

SPECS = [
    KernelSpec(name, f"warp tiles {cfg.label()}, double-buffered", np.float32,
               _BUILT[name][2], chapter=4,
               compile=((_BUILT[name][0], SIGNATURE), (_BUILT[name][1], SIGNATURE)),
               edges=EDGES_NOTE)
    for name, cfg in VARIANTS.items()
]
