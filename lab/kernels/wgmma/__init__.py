"""Hopper — ``wgmma`` from shared memory, TMA copies, mbarriers, warp specialization: chapter 7's
ladder and the FP8 kernels of chapter 7b, as one package.

Chapter 5's best kernel (:mod:`lab.kernels.k08_tc_pipeline`) feeds ``mma.sync`` — a warp-wide
16×8×16 product whose operands must first be brought from shared memory into registers with
``ldmatrix`` — from a ``cp.async`` pipeline that every thread takes part in. Hopper changes
both halves (instructions in :mod:`lab.hopper`):

* **wgmma** is issued by a *warpgroup* (4 warps), multiplies 64×N×16 (N up to 256) per
  instruction, reads A and B straight from shared memory through matrix descriptors, and runs
  asynchronously: the threads only wait for it when they need the accumulators or the stage.
* **TMA** (the bulk tensor copy engine) copies a whole tile, swizzled, zero-filled at the edges,
  on one thread's request, and reports the bytes that arrived to an **mbarrier**.

Where things are:

* :mod:`~lab.kernels.wgmma.rungs` — the ladder as one table (number, name, parent, change,
  title, configuration): ``python -m lab list`` and chapter 7 read it;
* :mod:`~lab.kernels.wgmma.config` — :class:`HopperConfig`, the knobs and their rules;
* :mod:`~lab.kernels.wgmma.first` — Hopper rungs 1–3 (no producer warpgroup yet);
* :mod:`~lab.kernels.wgmma.specialized` — the skeleton of rungs 4–19 and FP8, and its slots
  (:mod:`~lab.kernels.wgmma.order`, :mod:`~lab.kernels.wgmma.ring`,
  :mod:`~lab.kernels.wgmma.stage`, :mod:`~lab.kernels.wgmma.promote`,
  :mod:`~lab.kernels.wgmma.epilogue`, :mod:`~lab.kernels.wgmma.streamk`,
  :mod:`~lab.kernels.wgmma.pingpong`);
* :mod:`~lab.kernels.wgmma.host` — kernels built once per configuration, launches, checks;
* :mod:`~lab.kernels.wgmma.fp8` — the FP8 kernels (e4m3 / e5m2, per-tensor and block scales).

Every launch: ``launch(A, B, C)`` with device arrays; C (M×N) is written only inside
``row < M, col < N``. Input types (``kind``): ``f16`` and ``bf16`` for the rungs; ``e4m3`` and
``e5m2`` (FP8, uint8 bits) for the specialized kernel with the TMA-store epilogue, which then
reads Bᵀ (FP8 ``wgmma`` takes both operands K-major) and takes 128 k per stage.
"""
from __future__ import annotations

from lab.kernels.wgmma.config import (BK, EPI_BOX, EPI_COLS, MAX_SHARED, OUT_BYTES, ROW,
                                      HopperConfig)
from lab.kernels.wgmma.host import (OUT_ARRAY, checker16, edges, grouped_launcher,
                                    kernel_for, launcher, launcher16, make_config, needs,
                                    require_hopper, scale_shapes, signature, tma_operands)
from lab.kernels.wgmma.rungs import (LADDER, RUNG_CONFIGS, SPECS, SWEEP_CONFIGS, TITLES, Rung,
                                     for_kind, rung)

__all__ = ["BK", "EPI_BOX", "EPI_COLS", "MAX_SHARED", "OUT_BYTES", "ROW", "HopperConfig",
           "OUT_ARRAY", "checker16", "edges", "grouped_launcher", "kernel_for", "launcher",
           "launcher16", "make_config", "needs", "require_hopper", "scale_shapes", "signature",
           "tma_operands", "LADDER", "RUNG_CONFIGS", "SPECS", "SWEEP_CONFIGS", "TITLES", "Rung",
           "for_kind", "rung"]
