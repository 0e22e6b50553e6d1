"""The parts every Hopper rung is built from (:mod:`lab.kernels.k09_hopper`): the kernel's
configuration (:class:`HopperConfig`: tile, stages, warpgroups, input and output types and what
follows from them), the order in which a persistent block walks its tiles, the epilogues (from
registers: guarded, or 8-byte stores of whole tiles; through shared memory and TMA stores: a
ring of boxes, the whole tile, or each warp its own rows, optionally marked evict-first in L2),
and the TMA copies of one stage (plain and multicast). The stage ring's loops are in
:mod:`lab.kernels.k09_ring`.
"""
from __future__ import annotations

from dataclasses import dataclass

from numba import cuda, float32, int32, uint32, uint64

from lab import hopper

SIGNATURES = {
    "cpasync": {"f16": "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])",
                "bf16": "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"},
    "tma": "void(uint64[::1], uint64[::1], float32[:, ::1], int32)",
    "ws": "void(uint64[::1], uint64[::1], uint64[::1], float32[:, ::1], int32)",
    # stream-K: then the workspace of partial tiles and their flags
    "ws_sk": "void(uint64[::1], uint64[::1], uint64[::1], float32[:, ::1], int32, "
             "float32[:, ::1], int32[::1])",
    # FP8: C (float32 or BF16 bits), then the scales of A and of B (float32, 2-D)
    "fp8": "void(uint64[::1], uint64[::1], uint64[::1], {out}[:, ::1], int32, "
           "float32[:, ::1], float32[:, ::1])",
}
BK = 64                       # k per stage: one 128-byte row of 16-bit values
ROW = 128                     # bytes per swizzled row
EPI_COLS = 32                 # float32 columns per TMA-store box: one 128-byte swizzled row
EPI_BOX = 64 * ROW            # one 64-row × 128-byte staging box: 8 KB
MAX_SHARED = 227 * 1024
#: Input types: bytes per value. FP8 (``e4m3``, ``e5m2``) travels as uint8 bits.
ELEM_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1}
FP8_KINDS = ("e4m3", "e5m2")
#: Output types of the TMA-store epilogue: bytes per value (BF16 travels as uint16 bits).
#: A 16-bit input kind may leave in its own type (``out`` = ``kind``), as ``torch.mm`` returns.
OUT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}


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
    epilogue: str = "direct"   # "direct" (st.global from registers), "tma" (smem + TMA store)
                               # or "vector" (8-byte st.global of whole tiles from registers)
    cluster: int = 1           # blocks per cluster; 2: B multicast to both (block rows 2p, 2p+1)
    wait_depth: int = 1        # wgmma groups a consumer leaves in flight before releasing a stage
    elect: bool = False        # the producer's warp runs the loop, elect.sync picks the issuer
    producer_regs: int = 40    # setmaxnreg.dec for the producer (when regs is set)
    # FP8 only (kind e4m3 / e5m2; B arrives as Bᵀ, N×K):
    out: str = "f32"           # output type: "f32", or "bf16" (FP8, BF16) / "f16" (FP16)
                               # rounded in the TMA-store epilogue
    scales: str = ""           # "tensor": one scale per operand, applied in the epilogue;
                               # "block": 1×128 (A) and 128×128 (B) scales, at each promotion
    promote: int = 0           # k between promotions of the accumulators to FP32; 0 = never
    # The TMA-store epilogue's staging: "boxes" (``ring`` 8 KB boxes per consumer warpgroup,
    # taken in turn; with two, a wait and two barriers per box), "tile" (the warpgroup's whole
    # tile staged at once: one wait and two barriers per tile), "warp" (each warp stages and
    # stores its own 16 rows through ``ring`` 2 KB boxes: no barrier between warps).
    store: str = "boxes"
    ring: int = 2              # "boxes"/"warp": staging boxes per warpgroup/warp, in turn
    grid: int = 0              # at most this many blocks in a persistent launch; 0 = all fit
    # stream-K for the last wave: whole tiles while every block has one, then the k-slices of
    # the tiles left shared evenly among all blocks, partial tiles added up through global
    # memory by the block that holds each tile's last k-slice
    streamk: bool = False
    # stream-K's fix-up: "finisher" (the block holding a tile's last k-slice adds the others'
    # partial sums and stores the tile) or "atomic" (every block but the finisher adds its
    # partial sums into the tile's one slot in L2 with ``red.global.add``; the finisher waits
    # for their count, adds the slot once and zeroes it)
    fixup: str = "finisher"
    # stream-K only, for the experiment ``streamk_trace``: every consumer warpgroup logs the
    # GPU's nanosecond timer at each step of its work (:data:`TRACE_EVENTS`) after the flags
    trace: bool = False
    # the producer's and consumers' mbarrier waits pass a suspend-time hint (``mbar_wait_sleep``):
    # a waiting warp sleeps until the phase completes instead of polling
    sleep: bool = False
    # the producer's and consumers' main loops keep the ring's slot and phase as counters
    # (one division per tile) rather than dividing the k-slice count by the stage count each time
    counters: bool = False
    # each wgmma's descriptors are the k-slice's two descriptors (built once per k-slice) plus
    # a constant in their low word, instead of a descriptor built from an address per wgmma
    steps: bool = False
    # the consumers' warpgroup index read from lane 0 (``shfl.sync``), so that the compiler
    # knows it is the same in every lane and keeps the descriptors in uniform registers, and
    # their k-slice loop counted in 32 bits (a ``while`` loop, not Numba's 64-bit ``range``)
    uniform: bool = False
    # the TMA stores of C carry an L2 policy of evict first, so that C's lines leave L2 before
    # the panels of A and B that later tiles read again
    c_evict: bool = False
    # the consumers hand their staged C to a store thread of their own in the producer
    # warpgroup through mbarriers (a "filled" and a "freed" one per staging slot): each warp
    # arrives when its rows of a slot are written, and waits only until the slot it writes
    # next is free; the store thread issues the TMA stores and waits for them to be read.
    # No barrier among the consumer warps; the slots are counted across tiles, so ``ring``
    # need not divide a tile's boxes
    handoff: bool = False

    @property
    def fp8(self) -> bool:
        return self.kind in FP8_KINDS

    @property
    def bk(self) -> int:
        """k per stage: one 128-byte swizzled row (64 16-bit or 128 FP8 values)."""
        return ROW // ELEM_BYTES.get(self.kind, 2)

    @property
    def epi_cols(self) -> int:
        """Output columns per TMA-store box: one 128-byte row (32 float32 or 64 BF16)."""
        return ROW // OUT_BYTES.get(self.out, 4)

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
    def epi_boxes(self) -> int:
        """Staging boxes (64 rows × 128 bytes) per consumer warpgroup: ``ring`` taken in turn,
        or (``store`` "tile") one per box of the warpgroup's tile."""
        if self.store in ("boxes", "warp"):     # (a warp's box is a quarter of 8 KB)
            return self.ring
        return self.mt * (self.bn // self.epi_cols)

    @property
    def epi_rows(self) -> int:
        """Rows of C per TMA store: a warp's 16 ("warp" staging), else a warpgroup's 64."""
        return 16 if self.store == "warp" else 64

    @property
    def slots(self) -> int:
        """Staging slots per consumer warpgroup that a hand-off counts: the ring's boxes, or
        one whole tile."""
        return self.ring if self.store == "boxes" else 1

    @property
    def epilogue_bytes(self) -> int:
        """The staging boxes of every consumer warpgroup for the TMA store."""
        return self.consumers * self.epi_boxes * EPI_BOX if self.epilogue == "tma" else 0

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes + self.epilogue_bytes

    @property
    def label(self) -> str:
        parts = [f"{self.bm}x{self.bn}x{self.bk}", f"{self.stages} stages", self.loader,
                 f"{self.consumers} consumer WG"]
        if self.producer:
            parts.append("+ producer WG")
        if self.regs:
            parts.append(f"setmaxnreg {self.regs}/{self.producer_regs}")
        if self.persistent:
            parts.append("persistent")
            if self.group_m != 8:
                parts.append(f"group_m {self.group_m}")
        if self.pingpong:
            parts.append("ping-pong (a tile per WG)")
        if self.epilogue == "tma":
            parts.append("TMA-store epilogue")
        elif self.epilogue == "vector":
            parts.append("vector-store epilogue")
        if self.cluster > 1:
            parts.append(f"cluster {self.cluster} (B multicast)")
        if self.wait_depth != 1 and self.producer and not self.pingpong:
            parts.append(f"wgmma wait depth {self.wait_depth}")
        if self.elect:
            parts.append("elect.sync producer")
        if self.store == "tile":
            parts.append("whole-tile staging")
        elif self.store == "warp":
            parts.append(f"per-warp staging ({self.ring} boxes)")
        elif self.ring != 2:
            parts.append(f"{self.ring} staging boxes")
        if self.grid:
            parts.append(f"grid {self.grid}")
        if self.sleep:
            parts.append("sleeping waits")
        if self.counters:
            parts.append("slot counters")
        if self.steps:
            parts.append("descriptor steps")
        if self.uniform:
            parts.append("uniform index")
        if self.c_evict:
            parts.append("C evict-first")
        if self.handoff:
            parts.append("store threads (hand-off)")
        if self.streamk:
            parts.append("stream-K last wave" + ("" if self.fixup == "finisher" else
                                                 f", fix-up {self.fixup}")
                         + (" (traced)" if self.trace else ""))
        if self.fp8:
            parts.append(f"{self.scales} scales")
            parts.append(f"promotion every {self.promote} k" if self.promote
                         else "tensor-core accumulation")
            parts.append(f"{self.out.upper()} out")
        elif self.out != "f32":
            parts.append(f"{self.out.upper()} out")
        return ", ".join(parts) + f", {self.kind}"

    def validate(self) -> "HopperConfig":
        problems = []
        if self.kind not in ELEM_BYTES:
            problems.append(f"kind must be one of {tuple(ELEM_BYTES)}, not {self.kind!r}")
        if self.loader not in ("cpasync", "tma"):
            problems.append(f"loader must be 'cpasync' or 'tma', not {self.loader!r}")
        if self.bn not in hopper.WGMMA_N and not (self.fp8 and self.bn in (192,)):
            problems.append(f"bn must be one of {hopper.WGMMA_N}"
                            + (" or 192" if self.fp8 else ""))
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
        if self.regs and (self.regs % 8 or not 24 <= self.regs <= 256):
            problems.append(f"setmaxnreg {self.regs} does not fit the register file")
        if self.pingpong and not (self.persistent and self.consumers == 2):
            problems.append("ping-pong needs the persistent kernel and two consumer warpgroups")
        if not 2 <= self.stages <= 8:
            problems.append("stages must be 2…8")
        specialized = self.producer and not self.pingpong
        if self.epilogue not in ("direct", "tma", "vector"):
            problems.append(f"epilogue must be 'direct', 'tma' or 'vector', not "
                            f"{self.epilogue!r}")
        if self.epilogue == "vector" and not (specialized and self.out == "f32"
                                              and not self.streamk and not self.fp8):
            problems.append("the vector-store epilogue is for the specialized 16-bit-input "
                            "kernel with an FP32 C, without stream-K")
        if self.epilogue == "tma" and not self.producer:
            problems.append("the TMA-store epilogue is for the specialized kernels")
        if self.cluster not in (1, 2):
            problems.append("cluster must be 1 or 2")
        if self.cluster > 1 and (not specialized or (not self.fp8
                                                     and (self.bn // 64) % self.cluster)):
            problems.append("clusters need the specialized (non-ping-pong) kernel and B boxes "
                            "that split evenly among the blocks")
        if self.store not in ("boxes", "tile", "warp"):
            problems.append(f"store must be 'boxes', 'tile' or 'warp', not {self.store!r}")
        elif self.store != "boxes" and not (specialized and self.epilogue == "tma"
                                            and not (self.store == "warp" and self.streamk)):
            problems.append("whole-tile and per-warp staging are for the specialized kernel's "
                            "TMA store (per-warp staging without stream-K)")
        if not 2 <= self.ring <= 8 or (self.ring != 2 and (
                self.store == "tile" or self.streamk or self.pingpong
                or (not self.handoff
                    and (self.mt * (self.bn // self.epi_cols)) % self.ring))):
            problems.append("ring (2…8 staging boxes, a divisor of a warpgroup's boxes per "
                            "tile unless handed off) is for the boxes of the specialized "
                            "kernel's TMA store, without stream-K")
        if self.handoff and not (specialized and self.epilogue == "tma" and self.cluster == 1
                                 and self.store in ("boxes", "tile") and not self.streamk
                                 and not self.fp8 and self.consumers <= 3):
            problems.append("the hand-off to store threads is for the specialized 16-bit "
                            "kernel's TMA store (boxes or whole tiles), without clusters or "
                            "stream-K, and at most 3 consumer warpgroups (one store thread "
                            "each in the producer's other warps)")
        if self.streamk and not (specialized and self.persistent and self.cluster == 1
                                 and self.epilogue == "tma" and not self.fp8):
            problems.append("stream-K is for the persistent specialized 16-bit kernel with the "
                            "TMA store, without clusters")
        if self.fixup not in ("finisher", "atomic"):
            problems.append(f"fixup must be 'finisher' or 'atomic', not {self.fixup!r}")
        elif self.fixup == "atomic" and not self.streamk:
            problems.append("the atomic fix-up is stream-K's")
        if self.trace and not self.streamk:
            problems.append("trace logs stream-K's steps: it needs streamk")
        if self.grid and (not self.persistent or self.grid % self.cluster or self.grid < 1):
            problems.append("grid caps a persistent launch, in whole clusters")
        if self.wait_depth not in (0, 1, 2) or self.wait_depth >= self.stages:
            problems.append("wait_depth must be 0, 1 or 2 and below the stage count")
        if (self.wait_depth != 1 or self.elect or self.sleep or self.counters or self.steps) \
                and not specialized:
            problems.append("wait_depth, elect, sleep, counters and steps are parameters of "
                            "the specialized kernel")
        if self.counters and (self.wait_depth != 1 or self.promote):
            problems.append("slot counters are for wait depth 1 without promotion")
        if self.c_evict and not (self.epilogue == "tma" and specialized):
            problems.append("the evict-first policy is for the specialized kernel's TMA store")
        if self.uniform and not (self.counters and self.steps and not self.streamk):
            problems.append("the uniform index is for the main loop with slot counters and "
                            "descriptor steps, without stream-K")
        if self.producer_regs % 8 or not 24 <= self.producer_regs <= 256:
            problems.append("producer_regs must be a multiple of 8 in 24…256")
        if self.regs and 128 * self.producer_regs + 128 * self.consumers * self.regs > 65536:
            problems.append(f"setmaxnreg {self.regs}/{self.producer_regs} does not fit the "
                            "register file (64 K)")
        problems += self._fp8_problems(specialized)
        if problems:
            raise ValueError(f"hopper config {self.label}: " + "; ".join(problems))
        return self

    def _fp8_problems(self, specialized: bool) -> list[str]:
        """The rules of the FP8 parameters (out, scales, promote)."""
        problems = []
        if self.out not in OUT_BYTES:
            problems.append(f"out must be one of {tuple(OUT_BYTES)}, not {self.out!r}")
        if not self.fp8:
            if (self.scales, self.promote) != ("", 0):
                problems.append("scales and promote are parameters of the FP8 kernels")
            if self.out not in ("f32", self.kind):
                problems.append(f"a {self.kind} kernel leaves FP32 or {self.kind}, "
                                f"not {self.out!r}")
            if self.out != "f32" and self.epilogue != "tma":
                problems.append("a 16-bit output needs the TMA-store epilogue")
            return problems
        if self.out == "f16":
            problems.append("FP8 kernels leave FP32 or BF16")
        if not (specialized and self.epilogue == "tma"):
            problems.append("FP8 runs on the specialized kernel with the TMA-store epilogue")
        if self.cluster > 1 and (self.promote or (self.bn // self.cluster) % 8):
            problems.append("FP8 clusters: tensor-core accumulation, B rows that split evenly")
        if self.scales not in ("tensor", "block"):
            problems.append(f"FP8 scales must be 'tensor' or 'block', not {self.scales!r}")
        if self.promote < 0 or self.promote % self.bk:
            problems.append(f"promote must be 0 or a multiple of the stage's k ({self.bk})")
        if self.scales == "block" and (self.promote != self.bk or self.bn % 128):
            problems.append("block scales (128 k each) are applied at a promotion every "
                            f"{self.bk} k, on tiles of whole 128-column blocks")
        acc = self.mt * self.bn // 2 * (2 if self.promote else 1)
        if acc > 192:
            problems.append(f"{acc} accumulator registers per thread (> 192) with promotion")
        return problems


# ----------------------------------------------------------------------------- shared pieces

def tile_order(group_m: int):
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


def epilogue_vector(cfg: HopperConfig, store_tile):
    """``store_tile_vector``: one warpgroup's FP32 accumulators → C from registers, 8 bytes a
    store where the tile lies inside C; elsewhere ``store_tile``, the kernel's guarded
    :func:`epilogue`."""
    MT, BN, WG_ROWS = cfg.mt, cfg.bn, cfg.wg_rows

    # region: epilogue_vector
    @cuda.jit(device=True, inline="always")
    def store_tile_vector(C, acc, row0, col0, thread):
        """A tile inside C (and an even N: 8-byte aligned pairs): each register pair (two
        adjacent columns) leaves in one ``st.global.v2.f32``, so a warp's store is 8 rows ×
        32 bytes, whole sectors, with no shared memory, barrier or wait: the stores drain
        while the warpgroup is already in the next tile's main loop. Else the guarded store."""
        m = uint64(C.shape[0])
        n = uint64(C.shape[1])
        r0 = uint64(row0)
        c0 = uint64(col0)
        if r0 + uint64(WG_ROWS) <= m and c0 + uint64(BN) <= n and n % uint64(2) == 0:
            warp = uint64(thread // 32)
            lane = uint64(thread % 32)
            base = (uint64(hopper.global_address(C))
                    + ((r0 + uint64(16) * warp + lane // uint64(4)) * n
                       + c0 + uint64(2) * (lane % uint64(4))) * uint64(4))
            for mi in range(MT):
                for half in range(2):
                    row = base + uint64(mi * 64 + 8 * half) * n * uint64(4)
                    for j in range(BN // 8):
                        i = mi * (BN // 2) + 4 * j + 2 * half
                        hopper.st_global_v2_f32(row + uint64(32 * j), acc[i], acc[i + 1])
        else:
            store_tile(C, acc, row0, col0, thread)
    # endregion: epilogue_vector
    return store_tile_vector


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
    WARP = cfg.store == "warp"
    WARP_BOX = 16 * ROW                           # a warp's staging box: 16 rows, 2 KB
    RING = cfg.ring
    WARP_PENDING = RING - 1                       # a warp's stores that may still be reading
    # A ring of 3 or more: one barrier per box. Before it, the issuing thread waits until the
    # box after this one is free (its store, RING - 1 boxes back, has been read); the ring of
    # 2 waits for the box itself, before a barrier of its own.
    ONE_BARRIER = RING >= 3
    PENDING = RING - 2 if ONE_BARRIER else 1      # stores that may still be reading
    store_c = hopper.tma_store_2d_evict_first if cfg.c_evict else hopper.tma_store_2d

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

    # region: epilogue_warp
    @cuda.jit(device=True, inline="always")
    def store_warp(acc, boxes, map_c, row0, col0, thread, bar_id, scale):
        """Per-warp staging: each warp stages its own 16 rows of a box (2 KB, 128B-swizzled)
        in a ring of ``ring`` boxes of its own, and its lane 0 issues the TMA store of those
        rows and commits it. The only waits are the warp's own: lane 0 waits until the store
        that last used the slot has read it, ``__syncwarp`` hands that to the other lanes;
        no barrier between the warps (``bar_id`` is not used)."""
        warp = thread // 32
        lane = thread % 32
        mine = boxes + uint32(warp * RING * WARP_BOX)
        for mi in range(MT):
            for q in range(QUARTERS):
                box = mine + uint32(((mi * QUARTERS + q) % RING) * WARP_BOX)
                if lane == 0:
                    hopper.bulk_wait_read(WARP_PENDING)   # the slot's last store has read it
                cuda.syncwarp()
                stage_box(box, acc, mi, q, 0, lane, scale)
                hopper.fence_proxy_async()
                cuda.syncwarp()
                if lane == 0:
                    store_c(box, map_c, col0 + COLS * q, row0 + 64 * mi + 16 * warp)
                    hopper.bulk_commit()
    # endregion: epilogue_warp


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

    return store_warp if WARP else store_tile_tma


def epilogue_handoff(cfg: HopperConfig):
    """``stage_handoff`` (a consumer warpgroup stages its accumulators, slot by slot) and
    ``issue_handoff`` (its store thread issues the TMA stores of one tile) for
    ``HopperConfig.handoff``."""
    MT, BN, COLS = cfg.mt, cfg.bn, cfg.epi_cols
    QUARTERS = BN // COLS                         # boxes per 64-row slab
    stage_box = staging(cfg)
    store_c = hopper.tma_store_2d_evict_first if cfg.c_evict else hopper.tma_store_2d
    SLOTS = cfg.slots
    GROUP = 1 if cfg.store == "boxes" else MT * QUARTERS      # boxes per slot
    GROUPS = MT * QUARTERS // GROUP                            # slots' worth per tile
    READING = SLOTS - 1                       # stores that may still be reading their slot

    # region: epilogue_handoff
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
    # endregion: epilogue_handoff

    return stage_handoff, issue_handoff
