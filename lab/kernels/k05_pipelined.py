"""Rung 5 — double buffering: the next k-tile travels while the current one is multiplied.

What changed since rung 4 (``vectorized_spread``): the number of shared buffers, 1 → 2.

Rung 4 runs each k-step as *load, barrier, multiply, barrier*: while a block waits for its
global loads nothing multiplies (other resident blocks can fill in, but with ~128 registers per
thread only two blocks share an SM). Here each step is

1. issue the 16-byte global loads of tile t+1 into registers (``load_tile``) — they are now in
   flight;
2. multiply tile t from shared buffer ``cur`` (``multiply_tile``, 512 FFMA per thread) — the
   loads land meanwhile;
3. store the registers into the *other* buffer (``store_tile``), one barrier, swap.

One barrier per step is enough: buffer ``1 - cur`` was last read during step t−1, and every
thread passed step t−1's barrier after finishing those reads. The price is a second
8 × (128 + 4) + 8 × 128 floats of shared memory (16.6 KB per block in all) and the 8 prefetch
registers. ``cp.async`` (global → shared without registers) would free those registers; the
register prefetch is what Numba can express without inline PTX, and it is enough here.

The kernel is :func:`lab.kernels.k04_vectorized.make_gemm` with ``stages=2``.

Edges: as rung 4 (bounds-checked twin kernel when a dimension is not a tile multiple).
"""
from __future__ import annotations

from lab.kernels.k04_vectorized import Config, spec_for

PIPELINED = Config(BM=128, BN=128, BK=8, TM=8, TN=8, layout="spread", stages=2)

_spec, (pipelined_kernel, pipelined_edges_kernel, launch_pipelined) = spec_for(
    "pipelined", PIPELINED, "double-buffered (register prefetch), spread 4x4 pieces")

SPECS = [_spec]
