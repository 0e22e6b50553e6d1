"""Section 2, the idea: what ``wgmma`` does that ``mma.sync`` did not, and the one layout the
copy engine writes and the descriptors read."""
from __future__ import annotations

import numpy as np

from lab import hopper, page
from lab.kernels import wgmma


def instruction_table():
    """Work per instruction and where its operands come from."""
    rows = [{"instruction": "mma.sync.m16n8k16 (chapter 5)", "issued by": "1 warp",
             "FLOP per instruction": 2 * 16 * 8 * 16, "A and B from": "registers"}]
    for n in hopper.WGMMA_N:
        rows.append({"instruction": f"wgmma.mma_async.m64n{n}k16", "issued by": "1 warpgroup",
                     "FLOP per instruction": 2 * 64 * n * 16,
                     "A and B from": "shared memory (descriptors)"})
    return page.table(rows)


def layout_check() -> str:
    """The NumPy twins of :mod:`lab.hopper`: do the A (K-major) and B (MN-major) descriptors of
    every k-step address exactly the bytes TMA wrote? One line."""
    lbo = wgmma.BK * wgmma.ROW
    ok = True
    for ks in range(4):
        r, kk = np.meshgrid(np.arange(128), np.arange(16), indexing="ij")
        ok &= np.array_equal(hopper.swizzle_128b(32 * ks + hopper.k_major_offset(r, kk)),
                             hopper.swizzle_128b(hopper.tma_box_offset(r, 16 * ks + kk)))
        kk, nn = np.meshgrid(np.arange(16), np.arange(256), indexing="ij")
        ok &= np.array_equal(
            hopper.swizzle_128b(ks * 16 * 128 + hopper.mn_major_offset(nn, kk, lbo)),
            hopper.swizzle_128b(hopper.tma_box_offset(16 * ks + kk, nn % 64) + (nn // 64) * lbo))
    slots = [int(hopper.swizzle_128b(128 * r) - 128 * r) // 16 for r in range(8)]
    return (f"descriptors read what TMA wrote, all 4 k-steps, A and B: {bool(ok)}; "
            f"slot of chunk 0 in rows 0-7: {slots}")
