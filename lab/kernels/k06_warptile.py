"""Rung 6 — warp tiles, and a factory of configurations to tune over.

What changed since rung 5 (``pipelined``): only *which thread owns which outputs* — the two
lines that compute ``row0``/``col0`` in :func:`lab.kernels.k04_vectorized.make_gemm`.

Rung 5 lays 16 × 16 threads over the block tile as one grid: a warp is two rows of 16
threads, so per k it reads 2·8 values of A and 16·8 of B from shared memory — 144 values for
the 2·16·64 = 2048 multiply-adds it does. Here the block tile is first cut into warp tiles
(``WM × WN = 64 × 32``, one per warp) and a warp's 32 lanes are laid ``LM × LN = 8 × 4`` inside
it, each lane still owning four 4 × 4 pieces. Per k a warp now reads 64 values of A and 32 of B
— 96 values for the same 2048 multiply-adds. The reuse trick of chapter 3, applied to the unit
that actually issues the shared-memory loads. Both ``LDS.128`` remain conflict-free: 8 lanes
read 128 consecutive bytes of A; B's 4 distinct words are each shared by 8 lanes (broadcast).

:class:`Config` (block tile ``BM × BN × BK``, warp tile ``WM × WN``, lanes ``LM × LN``, thread
patch ``TM × TN``, padding, buffers, launch bounds) names one kernel; every size is a closure
constant, so each configuration compiles to its own fully unrolled kernel. :func:`sweep_configs`
is the tuning space ``tools/tune_fp32.py`` times on the GPU.

Edges: as rung 4 (bounds-checked twin kernel when a dimension is not a tile multiple).
"""
from __future__ import annotations

from lab.kernels.k04_vectorized import Config, build, spec_for

# region: variants
#: The configuration the ladder uses (update from tools/tune_fp32.py's table).
DEFAULT = Config(BM=128, BN=128, BK=8, WM=64, WN=32, LM=8, TM=8, TN=8, layout="warp", stages=2)

#: Registered beside the default so their compiler facts and timings are in the book.
VARIANTS = {
    "warptile": DEFAULT,
    "warptile_128x64": Config(BM=128, BN=64, BK=8, WM=64, WN=32, LM=8, layout="warp"),
    "warptile_bk16": Config(BM=128, BN=128, BK=16, WM=64, WN=32, LM=8, layout="warp",
                            min_blocks=2),
    # The fastest of tools/tune_fp32.py's 26 configurations on the H200 at 4096³
    # (lab/results/h200/fp32_tune.json): a 64×128 block of 128 threads, 4 blocks per SM.
    "warptile_tuned": Config(BM=64, BN=128, BK=8, WM=32, WN=64, LM=4, TM=8, TN=8,
                             layout="warp"),
}
# endregion: variants

_BUILT = {}
SPECS = []
for _name, _cfg in VARIANTS.items():
    _spec, _BUILT[_name] = spec_for(_name, _cfg, "warp tiles, double-buffered"
                                    + (" (autotuned)" if _name.endswith("tuned") else ""))
    SPECS.append(_spec)
warptile_kernel, warptile_edges_kernel, launch_warptile = _BUILT["warptile"]


def sweep_configs() -> list[Config]:
    """The tuning space: block tiles, k-depths, warp shapes and thread patches whose
    accumulators fit in registers (tools/tune_fp32.py adds launch-bound variants)."""
    out = []
    for bm, bn in ((128, 128), (128, 64), (64, 128), (256, 64), (64, 256)):
        for bk in (8, 16):
            for wm, wn, lm in ((64, 32, 8), (32, 64, 4), (32, 32, 4), (64, 16, 8)):
                for tm, tn in ((8, 8), (8, 4), (4, 8)):
                    cfg = Config(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, LM=lm, TM=tm, TN=tn,
                                 layout="warp")
                    try:
                        cfg.validate()
                    except ValueError:
                        continue
                    if not 64 <= cfg.threads <= 512 or cfg.shared_bytes > 48 * 1024:
                        continue
                    out.append(cfg)
    return out


__all__ = ["Config", "DEFAULT", "VARIANTS", "SPECS", "build", "sweep_configs"]
