"""The Hopper ladder as one table: each rung's number, registry name, the rung it changes,
the one change, its title and its configuration — the one source for the registry, chapter 7's
tables, ``python -m lab list`` and the README.

Every rung is its parent's configuration with the fields of ``change`` replaced (FP16 here; the
registry adds a BF16 twin of each with ``kind="bf16"``). Rung 6, ping-pong, is a side branch
off rung 5 that later rungs do not take; rungs 10, 12 and 14 go back to rung 7. A new rung is
one :func:`rung` line here (plus, when it needs new code, the one slot it changes and a test).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lab.kernels import KernelSpec
from lab.kernels.wgmma.config import BK, HopperConfig
from lab.kernels.wgmma.host import (checker16, edges, kernel_for, launcher, launcher16, needs,
                                    signature)


@dataclass(frozen=True)
class Rung:
    """One rung: ``number`` in chapter 7's ladder ("Hopper rung N"), ``name`` (the registry's,
    without ``_fp16``/``_bf16``), ``parent`` (the rung it changes; "" for the first, which
    changes chapter 5's kernel), ``change`` (the configuration fields it sets), ``title`` and
    ``config`` (the parent's with ``change`` applied)."""
    number: int
    name: str
    parent: str
    title: str
    change: dict = field(default_factory=dict)
    config: HopperConfig = field(default_factory=HopperConfig)

    @property
    def page(self) -> str:
        """The book's page of the rung: 7.1 (the Hopper machinery, rungs 1–8) or 7.2 (past
        cuBLAS, rungs 9–19)."""
        return "7.1" if self.number <= LAST_MACHINERY else "7.2"

    @property
    def change_text(self) -> str:
        """The change as ``field=value, …`` (the first rung: its whole configuration)."""
        return ", ".join(f"{k}={v!r}" for k, v in self.change.items())


LADDER: dict[str, Rung] = {}
#: The last rung of page 7.1; the rungs after it are page 7.2's.
LAST_MACHINERY = 8


def rung(number: int, name: str, parent: str, title: str, **change) -> Rung:
    """Add rung ``number`` to :data:`LADDER`: ``parent``'s configuration with ``change``."""
    if name in LADDER or any(r.number == number for r in LADDER.values()):
        raise ValueError(f"Hopper rung {number} ({name}) is in the ladder twice")
    if parent and parent not in LADDER:
        raise ValueError(f"Hopper rung {number} ({name}): parent {parent!r} is not a rung")
    if parent and not change:
        raise ValueError(f"Hopper rung {number} ({name}) changes nothing in {parent}")
    base = LADDER[parent].config if parent else HopperConfig()
    LADDER[name] = Rung(number, name, parent, title, dict(change),
                        replace(base, **change).validate())
    return LADDER[name]


rung(1, "wgmma_cpasync", "",
     "wgmma from cp.async-filled 128B-swizzled stages, 1 warpgroup, 128×128",
     loader="cpasync", bm=128, bn=128, stages=4)
rung(2, "wgmma_tma", "wgmma_cpasync", "+ TMA copies and full mbarriers", loader="tma")
rung(3, "wgmma_2wg", "wgmma_tma", "+ 128×256 tile, two consumer warpgroups (m64n256k16)",
     bn=256, consumers=2)
rung(4, "wgmma_ws", "wgmma_2wg", "+ producer warpgroup, empty mbarriers, setmaxnreg",
     producer=True, regs=232)
rung(5, "wgmma_persistent", "wgmma_ws",
     "+ persistent blocks (one per SM), grouped tile order", persistent=True)
rung(6, "wgmma_pingpong", "wgmma_persistent",
     "+ ping-pong: a 128×128 tile per consumer warpgroup, taken in turn, so one stores while "
     "the other multiplies", bn=128, stages=6, pingpong=True)
rung(7, "wgmma_tmastore", "wgmma_persistent",
     "persistent + epilogue through shared memory and TMA stores, overlapping the next "
     "tile's main loop", epilogue="tma")
# setmaxnreg 224/56: the cluster producer's loop needs more than 40 registers (it spilled)
rung(8, "wgmma_cluster", "wgmma_tmastore", "+ clusters of 2 blocks sharing B by TMA multicast",
     cluster=2, regs=224, producer_regs=56)
rung(9, "wgmma_out16", "wgmma_cluster",
     "+ 16-bit output (FP16/BF16 C, as torch.mm returns), rounded in the TMA-store epilogue",
     out="f16")
# (rung 7, not rung 9: at 4096³ rung 7 with a 16-bit C measured ahead of rung 9; 4 stages and
# 32 KB of staging per consumer warpgroup do not fit)
rung(10, "wgmma_tile16", "wgmma_tmastore",
     "rung 7 + 16-bit output staged a whole tile at a time (one wait, two barriers per tile), "
     "3 stages", out="f16", stages=3, store="tile")
rung(11, "wgmma_grid128", "wgmma_tile16", "+ a grid of 128 blocks: whole waves of tiles",
     grid=128)
rung(12, "wgmma_streamk", "wgmma_tile16",
     "rung 10 + stream-K for the last wave (partial tiles added through global memory)",
     streamk=True)
rung(13, "wgmma_lean", "wgmma_grid128",
     "rung 11 + a lean main loop (slot counters, descriptor steps)", counters=True, steps=True)
rung(14, "wgmma_ring", "wgmma_tmastore",
     "rung 7 (FP32 C) + 3 stages, grid 128, rung 13's main loop, a ring of 4 staging boxes",
     stages=3, grid=128, counters=True, steps=True, ring=4)
rung(15, "wgmma_uniform", "wgmma_lean",
     "rung 13 + a uniform warpgroup index and a 32-bit k-slice loop", uniform=True)
rung(16, "wgmma_ring_uniform", "wgmma_ring",
     "rung 14 (FP32 C) + rung 15's uniform index and 32-bit loop", uniform=True)
rung(17, "wgmma_handoff", "wgmma_ring_uniform",
     "rung 16 (FP32 C) + store threads: the staged C handed over through mbarriers",
     handoff=True)
rung(18, "wgmma_table", "wgmma_uniform",
     "rung 15 + the tile order read from a table (no divisions between tiles)", table=True)
rung(19, "wgmma_handoff_table", "wgmma_handoff", "rung 17 (FP32 C) + rung 18's tile table",
     table=True)

#: name → configuration (FP16), in ladder order.
RUNG_CONFIGS = {name: r.config for name, r in LADDER.items()}
#: name → title.
TITLES = {name: r.title for name, r in LADDER.items()}

#: Cheap variations of rungs 7 and 8, one change each (FP16): the sweep of the ``hopper``
#: experiment. (5 or 6 stages of 128×256×64 do not fit: 48 KB a stage, 227 KB in all.)
SWEEP_CONFIGS = {
    "tmastore": RUNG_CONFIGS["wgmma_tmastore"],
    "tmastore group_m 16": replace(RUNG_CONFIGS["wgmma_tmastore"], group_m=16),
    "tmastore wait depth 0": replace(RUNG_CONFIGS["wgmma_tmastore"], wait_depth=0),
    "tmastore elect.sync": replace(RUNG_CONFIGS["wgmma_tmastore"], elect=True),
    "tmastore setmaxnreg 240/24": replace(RUNG_CONFIGS["wgmma_tmastore"], regs=240,
                                          producer_regs=24),
    "cluster": RUNG_CONFIGS["wgmma_cluster"],
    "cluster group_m 16": replace(RUNG_CONFIGS["wgmma_cluster"], group_m=16),
    "cluster direct epilogue": replace(RUNG_CONFIGS["wgmma_cluster"], epilogue="direct"),
    "cluster elect.sync": replace(RUNG_CONFIGS["wgmma_cluster"], elect=True),
}


def for_kind(cfg: HopperConfig, kind: str) -> HopperConfig:
    """``cfg`` (written for FP16) for input ``kind``: a 16-bit C becomes the input's type."""
    return replace(cfg, kind=kind, out=kind if cfg.out != "f32" else "f32")


def spec(r: Rung, kind: str) -> KernelSpec:
    """The registry's entry for rung ``r`` with input ``kind`` ("f16" or "bf16")."""
    cfg = for_kind(r.config, kind)
    bf16 = kind == "bf16"
    name = r.name + ("_bf16" if bf16 else "_fp16")
    wide = cfg.out != "f32"
    return KernelSpec(name, f"Hopper: {r.title} ({'BF16' if bf16 else 'FP16'})",
                      np.uint16 if bf16 else np.float16,
                      launcher16(cfg) if wide else launcher(cfg), simulator=False,
                      check=checker16(name, cfg) if wide else None,
                      chapter=r.page, compile=((kernel_for(cfg), signature(cfg)),),
                      edges=edges(cfg), dtype_name="bfloat16" if bf16 else "",
                      tile=(cfg.bm, cfg.bn, BK), min_cc=(9, 0), max_cc=(9, 0),
                      needs=needs(cfg), config=cfg)


def registry_name(name: str) -> str:
    """A registry name for ``name``: a rung's name without a suffix is its FP16 kernel."""
    return name + "_fp16" if name in LADDER else name


def parent_of(name: str) -> str | None:
    """The registry name of the rung that rung ``name`` (a registry name) changes, same input
    type; None for a kernel that is not a Hopper rung or for rung 1 (its parent is chapter 5's
    kernel)."""
    base, _, suffix = name.rpartition("_")
    r = LADDER.get(base)
    if r is None or suffix not in ("fp16", "bf16") or not r.parent:
        return None
    return f"{r.parent}_{suffix}"


SPECS = [spec(r, kind) for r in LADDER.values() for kind in ("f16", "bf16")]
