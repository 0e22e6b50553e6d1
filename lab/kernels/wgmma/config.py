"""The configuration of a Hopper kernel (:class:`HopperConfig`): tile, stages, warpgroups,
input and output types, the choices of each slot of the skeleton, what follows from them, and
the rules that say which combinations exist.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


SIGNATURES = {
    "cpasync": {"f16": "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])",
                "bf16": "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"},
    "tma": "void(uint64[::1], uint64[::1], float32[:, ::1], int32)",
    "ws": "void(uint64[::1], uint64[::1], uint64[::1], float32[:, ::1], int32)",
    # stream-K: then the workspace of partial tiles and their flags
    "ws_sk": "void(uint64[::1], uint64[::1], uint64[::1], float32[:, ::1], int32, "
             "float32[:, ::1], int32[::1])",
    # rung 18: then its table of tiles (two int32 each: tile row, first column)
    "ws_grouped": "void(uint64[::1], uint64[::1], uint64[::1], {out}[:, ::1], int32, "
                  "{bounds}[::1], int32)",
    "ws_table": "void(uint64[::1], uint64[::1], uint64[::1], float32[:, ::1], int32, "
                "int32[::1])",
    # FP8: C (float32 or BF16 bits), then the scales of A and of B (float32, 2-D)
    "fp8": "void(uint64[::1], uint64[::1], uint64[::1], {out}[:, ::1], int32, "
           "float32[:, ::1], float32[:, ::1])",
    # grouped FP8 (block scales): the scales, then the groups' bounds and M_max
    "fp8_grouped": "void(uint64[::1], uint64[::1], uint64[::1], uint16[:, ::1], int32, "
                   "float32[:, ::1], float32[:, ::1], {bounds}[::1], int32)",
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
#: Tile widths: whole 64-column boxes of B (its 128-byte swizzled rows), each a wgmma N.
TILE_N = (64, 128, 192, 256)


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
    epilogue: str = "direct"   # "direct" (st.global from registers) or "tma" (smem + TMA store)
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
    # tile staged at once: one wait and two barriers per tile).
    store: str = "boxes"
    ring: int = 2              # "boxes": staging boxes per warpgroup, in turn
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
    # the consumers hand their staged C to a store thread of their own in the producer
    # warpgroup through mbarriers (a "filled" and a "freed" one per staging slot): each warp
    # arrives when its rows of a slot are written, and waits only until the slot it writes
    # next is free; the store thread issues the TMA stores and waits for them to be read.
    # No barrier among the consumer warps; the slots are counted across tiles, so ``ring``
    # need not divide a tile's boxes
    handoff: bool = False
    # rung 18: the block reads each tile's row and first column from a table that the launcher
    # computes once per shape (the grouped order of ``tile_order``), instead of finding them
    # with 64-bit divisions between tiles
    table: bool = False
    # grouped GEMM (mixture-of-experts): C's rows are the experts' groups, each multiplied by
    # its own B[e] (B read as one [E·K, N] matrix, expert e's k-slices from row e·K; FP8: Bᵀ
    # as one [E·N, K] matrix, expert e's rows from e·N, and its 128×128 block scales as one
    # [E·N/128, K/128] array); the
    # groups are given by ``offsets`` (contiguous rows) or ``counts`` (a fixed buffer of
    # ``M_max`` rows per expert), read on the GPU; the persistent blocks walk the groups' tiles
    # (:func:`lab.kernels.wgmma.order.group_order`) and store only each group's own rows
    grouped: str = ""

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
        if self.store == "boxes":
            return self.ring
        return self.mt * (self.bn // self.epi_cols)

    @property
    def epi_rows(self) -> int:
        """Rows of C per TMA store: a warpgroup's 64."""
        return 64

    # Hooks for studies (``lab.experiments``): a subclass of this configuration may replace a
    # slot's function without the shipped kernels carrying its branches.
    def overrides(self) -> dict:
        """Slot replacements: ``wait`` (an mbarrier wait), ``store_c`` (the TMA store of one
        staged box), ``store`` and ``drain`` (builders of the epilogue slot and of the wait
        for its stores before exit), ``log`` (a builder of the trace hook). None here."""
        return {}

    @property
    def traced(self) -> bool:
        """Whether the kernel logs its steps after stream-K's flags (a study's trace hook)."""
        return "log" in self.overrides()

    def flag_words(self, blocks: int) -> int:
        """int32 words of a launch's flags: one per consumer warpgroup and block (the atomic
        fix-up: a counter per warpgroup and shared tile, fewer tiles than blocks)."""
        return blocks * self.consumers

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

    def tile(self, bm: int, bn: int) -> "HopperConfig":
        """This configuration on ``bm``×``bn`` tiles with as many stages (2…8) as fit in shared
        memory beside its staging (the menu of ``lab.gemm``: a narrower tile is a smaller
        stage, so more of them)."""
        cfg = replace(self, bm=bm, bn=bn, stages=2)
        room = MAX_SHARED - 1024 - cfg.epilogue_bytes
        return replace(cfg, stages=max(2, min(8, room // cfg.stage_bytes))).validate()

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
        if self.cluster > 1:
            parts.append(f"cluster {self.cluster} (B multicast)")
        if self.wait_depth != 1 and self.producer and not self.pingpong:
            parts.append(f"wgmma wait depth {self.wait_depth}")
        if self.elect:
            parts.append("elect.sync producer")
        if self.store == "tile":
            parts.append("whole-tile staging")
        elif self.ring != 2:
            parts.append(f"{self.ring} staging boxes")
        if self.grid:
            parts.append(f"grid {self.grid}")
        if self.counters:
            parts.append("slot counters")
        if self.steps:
            parts.append("descriptor steps")
        if self.uniform:
            parts.append("uniform index")
        if self.handoff:
            parts.append("store threads (hand-off)")
        if self.table:
            parts.append("tile table")
        if self.grouped:
            parts.append(f"grouped ({self.grouped})")
        if self.streamk:
            parts.append("stream-K last wave" + ("" if self.fixup == "finisher" else
                                                 f", fix-up {self.fixup}"))
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
        if self.bn not in TILE_N:
            problems.append(f"bn must be one of {TILE_N}")
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
        if self.epilogue not in ("direct", "tma"):
            problems.append(f"epilogue must be 'direct' or 'tma', not {self.epilogue!r}")
        if self.epilogue == "tma" and not self.producer:
            problems.append("the TMA-store epilogue is for the specialized kernels")
        if self.cluster not in (1, 2):
            problems.append("cluster must be 1 or 2")
        if self.cluster > 1 and (not specialized or (not self.fp8
                                                     and (self.bn // 64) % self.cluster)):
            problems.append("clusters need the specialized (non-ping-pong) kernel and B boxes "
                            "that split evenly among the blocks")
        if self.store not in ("boxes", "tile"):
            problems.append(f"store must be 'boxes' or 'tile', not {self.store!r}")
        elif self.store != "boxes" and not (specialized and self.epilogue == "tma"):
            problems.append("whole-tile staging is for the specialized kernel's TMA store")
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
        if self.streamk and self.consumers < 2 and not self.pingpong:
            problems.append("stream-K is built and checked with two or more consumer "
                            "warpgroups (on 64-row tiles with one, a launch with more tiles "
                            "than blocks read past its buffers)")
        if self.fixup not in ("finisher", "atomic"):
            problems.append(f"fixup must be 'finisher' or 'atomic', not {self.fixup!r}")
        elif self.fixup == "atomic" and not self.streamk:
            problems.append("the atomic fix-up is stream-K's")
        if self.grid and (not self.persistent or self.grid % self.cluster or self.grid < 1):
            problems.append("grid caps a persistent launch, in whole clusters")
        if self.wait_depth not in (0, 1, 2) or self.wait_depth >= self.stages:
            problems.append("wait_depth must be 0, 1 or 2 and below the stage count")
        if (self.wait_depth != 1 or self.elect or self.counters or self.steps) \
                and not specialized:
            problems.append("wait_depth, elect, counters and steps are parameters of the "
                            "specialized kernel")
        if self.counters and (self.wait_depth != 1 or self.promote not in (0, self.bk)):
            problems.append("slot counters are for wait depth 1, without promotion or with a "
                            "promotion every stage")
        if self.uniform and not (self.counters and self.steps and not self.streamk):
            problems.append("the uniform index is for the main loop with slot counters and "
                            "descriptor steps, without stream-K")
        if self.table and not (specialized and self.persistent and self.cluster == 1
                               and not self.streamk):
            problems.append("a tile table is for the persistent specialized kernel without "
                            "clusters or stream-K")
        if self.grouped not in ("", "offsets", "counts"):
            problems.append(f"grouped must be '', 'offsets' or 'counts', not {self.grouped!r}")
        elif self.grouped and not (specialized and self.persistent and self.cluster == 1
                                   and self.epilogue == "tma" and self.store == "tile"
                                   and not (self.streamk or self.table or self.handoff)
                                   and (not self.fp8 or self.scales == "block")):
            problems.append("grouped GEMM is for the persistent specialized kernel (16-bit, or "
                            "FP8 with block scales) with whole-tile staging, without clusters, "
                            "stream-K, a tile table or store threads")
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
