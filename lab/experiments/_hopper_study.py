"""Studies of the Hopper kernel: variants that experiments measured and the ladder did not keep.

Each is a :class:`Study` — a :class:`~lab.kernels.wgmma.config.HopperConfig` with settings of its
own — whose :meth:`~Study.overrides` hand the kernel skeleton
(:mod:`lab.kernels.wgmma.specialized`) replacement slots, so that the shipped kernels carry none
of their branches:

* ``sleep`` — the mbarrier waits pass a suspend-time hint (``mbar_wait_sleep``): a waiting warp
  sleeps until the phase completes instead of polling (``hopper_past``: slower);
* ``c_evict`` — the TMA stores of C carry an L2 policy of evict first, so that C's lines leave
  L2 before the panels of A and B that later tiles read again (``hopper_past``: no gain);
* ``warp_store`` — each warp stages and stores its own 16 rows through ``ring`` 2 KB boxes: no
  barrier between warps (``hopper_past``: slower);
* ``vector`` — an FP32 C stored straight from the registers, 8 bytes a store, no staging
  (``hopper_past``: slower);
* ``trace`` — every consumer warpgroup logs the GPU's nanosecond timer at each step of its work
  (:data:`TRACE_EVENTS`) after stream-K's flags (``streamk_trace``, ``hopper_past``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numba import cuda, int32, uint32, uint64

from lab import hopper
from lab.kernels.wgmma.config import ROW, HopperConfig
from lab.kernels.wgmma.epilogue import epilogue, register_slot, staged_slot, staging

#: A traced kernel's (``Study.trace``) events: thread 0 of every consumer warpgroup
#: writes ``code << 56 | globaltimer`` (ns, low 56 bits) at each, in order, into its row of
#: :data:`TRACE_SLOTS` after the flags (:func:`trace_rows` reads them back).
TRACE_EVENTS = {1: "start", 2: "tile multiplied", 3: "tile stored",
                4: "share multiplied", 5: "partial sums published", 6: "fix-up begins",
                7: "partial sums of one block seen", 8: "partial sums added",
                9: "shared tile stored", 10: "end"}
TRACE_SLOTS = 48


def flag_words(blocks: int, consumers: int, trace: bool) -> int:
    """int32 words of a launch's flags: one per consumer warpgroup and block (the atomic
    fix-up: a counter per warpgroup and shared tile, fewer tiles than blocks), then (traced)
    TRACE_SLOTS 8-byte events per warpgroup, from an 8-byte boundary."""
    slots = blocks * consumers
    return slots + (slots % 2 + 2 * TRACE_SLOTS * slots if trace else 0)


def trace_rows(flags, blocks: int, consumers: int):
    """A traced launch's events from its flags (host int32 array): a list per (block, warpgroup)
    of (code, ns) in the order written."""
    slots = blocks * consumers
    start = flag_words(blocks, consumers, False)
    start += start % 2
    words = np.ascontiguousarray(flags[start:start + 2 * TRACE_SLOTS * slots]).view(np.uint64)
    words = words.reshape(slots, TRACE_SLOTS)
    out = []
    for row in words:
        events = [(int(w >> np.uint64(56)), int(w & np.uint64((1 << 56) - 1))) for w in row
                  if int(w >> np.uint64(56))]
        out.append(events)
    return out


@dataclass(frozen=True)
class Study(HopperConfig):
    """A Hopper configuration with a study's settings (see the module's docstring)."""
    sleep: bool = False
    c_evict: bool = False
    warp_store: bool = False
    vector: bool = False
    trace: bool = False

    def overrides(self) -> dict:
        out = {}
        if self.sleep:
            out["wait"] = hopper.mbar_wait_sleep
        if self.c_evict:
            out["store_c"] = hopper.tma_store_2d_evict_first
        if self.warp_store:
            out["store"], out["drain"] = warp_store_slot, warp_drain
        if self.vector:
            out["store"] = vector_store_slot
        if self.trace:
            out["log"] = trace_hook
        return out

    @property
    def epi_boxes(self) -> int:
        return self.ring if self.warp_store else super().epi_boxes

    @property
    def epi_rows(self) -> int:
        """Rows of C per TMA store: a warp's 16 (``warp_store``), else a warpgroup's 64."""
        return 16 if self.warp_store else 64

    def flag_words(self, blocks: int) -> int:
        return flag_words(blocks, self.consumers, self.trace)

    @property
    def label(self) -> str:
        extra = [text for flag, text in ((self.sleep, "sleeping waits"),
                                         (self.c_evict, "C evict-first"),
                                         (self.warp_store, f"per-warp staging ({self.ring} boxes)"),
                                         (self.vector, "vector-store epilogue"),
                                         (self.trace, "traced")) if flag]
        base = super().label
        if self.warp_store:                       # the ring is the warps' own
            base = base.replace(f", {self.ring} staging boxes", "")
        return base.removesuffix(f", {self.kind}") + "".join(f", {t}" for t in extra) \
            + f", {self.kind}"

    def validate(self) -> "Study":
        super().validate()
        specialized = self.producer and not self.pingpong
        problems = []
        if (self.sleep or self.c_evict or self.warp_store or self.vector or self.trace) \
                and not specialized:
            problems.append("the studies are of the specialized kernel")
        if (self.c_evict or self.warp_store) and self.epilogue != "tma":
            problems.append("evict-first and per-warp staging are for the TMA store")
        if self.warp_store and (self.store != "boxes" or self.streamk or self.handoff):
            problems.append("per-warp staging replaces the boxes of the TMA store, without "
                            "stream-K or a hand-off")
        if self.vector and (self.epilogue != "direct" or self.out != "f32" or self.streamk
                            or self.fp8):
            problems.append("the vector-store epilogue replaces the direct one of the 16-bit-"
                            "input kernel with an FP32 C, without stream-K")
        if self.warp_store and self.vector:
            problems.append("one epilogue at a time")
        if self.trace and not (self.persistent and self.cluster == 1 and not self.fp8):
            problems.append("trace logs the steps of the persistent specialized 16-bit kernel, "
                            "without clusters")
        if problems:
            raise ValueError(f"hopper study {self.label}: " + "; ".join(problems))
        return self


def study(cfg: HopperConfig, **changes) -> Study:
    """``cfg`` as a :class:`Study` with ``changes`` (a study's settings or any other field)."""
    base = {f.name: getattr(cfg, f.name) for f in fields(HopperConfig)}
    return Study(**{**base, **changes}).validate()


# ----------------------------------------------------------------------------- the slots

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


def vector_store_slot(cfg: HopperConfig):
    """The epilogue slot with 8-byte stores of whole tiles from registers."""
    return register_slot(epilogue_vector(cfg, epilogue(cfg.mt, cfg.bn)))


def epilogue_warp(cfg: HopperConfig):
    """``store_warp``: one warpgroup's accumulators → C, each warp staging and storing its own
    16 rows (``ring`` 2 KB boxes per warp)."""
    MT, BN, COLS = cfg.mt, cfg.bn, cfg.epi_cols
    QUARTERS = BN // COLS                         # boxes per 64-row slab
    WARP_BOX = 16 * ROW                           # a warp's staging box: 16 rows, 2 KB
    RING = cfg.ring
    WARP_PENDING = RING - 1                       # a warp's stores that may still be reading
    store_c = cfg.overrides().get("store_c", hopper.tma_store_2d)
    stage_box = staging(cfg)

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
    return store_warp


def warp_store_slot(cfg: HopperConfig):
    """The epilogue slot with per-warp staging."""
    return staged_slot(epilogue_warp(cfg))


def warp_drain(cfg: HopperConfig):
    """Every warp's lane 0 waits for its own stores before the block exits."""
    @cuda.jit(device=True, inline="always")
    def drain(thread):
        if thread % 32 == 0:
            hopper.bulk_wait(0)
    return drain


def trace_hook(cfg: HopperConfig):
    """``log``: thread 0 of each consumer warpgroup writes event ``code`` and the GPU's
    nanosecond timer into the warpgroup's row of the trace, after the flags."""
    CONSUMERS = cfg.consumers

    @cuda.jit(device=True, inline="always")
    def log(flags, cw, thread, n, code):
        """Thread 0 of the warpgroup writes event ``code`` and the time into the warpgroup's
        slot ``n`` of the trace; returns n + 1."""
        if thread == 0 and n < TRACE_SLOTS:
            slots = int32(cuda.gridDim.x) * CONSUMERS
            words = slots
            base = uint64(hopper.global_address(flags)) + uint64(4 * (words + words % 2))
            row = uint64(int32(cuda.blockIdx.x) * CONSUMERS + cw) * uint64(TRACE_SLOTS)
            stamp = hopper.globaltimer() & uint64((1 << 56) - 1)
            hopper.st_global_u64(base + uint64(8) * (row + uint64(n)),
                                 (uint64(code) << uint64(56)) | stamp)
        return n + 1
    return log
