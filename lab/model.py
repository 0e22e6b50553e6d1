"""The seeds' analytic model: FLOPs, bytes, arithmetic intensity, roofline.

Every number here follows from a formula; nothing is measured. ``e``/``bytes_per_element`` is
the input element size (4 for FP32, 2 for FP16/BF16).
"""
from __future__ import annotations


def flops(m: int, n: int, k: int) -> float:
    """2·M·N·K: one multiply and one add per term of every dot product."""
    return 2.0 * m * n * k


def naive_bytes(m: int, n: int, k: int, bytes_per_element: int = 4,
                out_bytes: int = 4) -> float:
    """Every output reads its own row of A and column of B: 2·e·M·N·K + e_out·M·N."""
    return 2.0 * bytes_per_element * m * n * k + out_bytes * m * n


def naive_intensity(bytes_per_element: int = 4) -> float:
    """2 FLOPs per 2 loaded elements: 1/e, i.e. 0.25 FLOP/byte for FP32, 0.5 for FP16."""
    return 2.0 / (2.0 * bytes_per_element)


def ideal_bytes(m: int, n: int, k: int, bytes_per_element: int = 4,
                out_bytes: int | None = None) -> float:
    """Each input read once, each output written once: e·(MK + KN) + e_out·MN."""
    out_bytes = bytes_per_element if out_bytes is None else out_bytes
    return bytes_per_element * (m * k + k * n) + out_bytes * m * n


def ideal_intensity(m: int, n: int, k: int, bytes_per_element: int = 4,
                    out_bytes: int | None = None) -> float:
    """The best any kernel can do: 2MNK / (e(MK + KN) + e_out MN); n/6 for square FP32."""
    return flops(m, n, k) / ideal_bytes(m, n, k, bytes_per_element, out_bytes)


def tile_intensity(block_m: int, block_n: int | None = None,
                   bytes_per_element: int = 4) -> float:
    """A block tile BM×BN loading (BM + BN)·BK elements per k-slice for 2·BM·BN·BK FLOPs:
    2·BM·BN / (e·(BM + BN)); T/4 for a square FP32 tile (T/2 for FP16). BK cancels."""
    block_n = block_m if block_n is None else block_n
    return 2.0 * block_m * block_n / (bytes_per_element * (block_m + block_n))


def tiled_global_loads(n: int, tile: int) -> float:
    """Element loads from global memory for an n³ product with T×T tiles: 2n³/T."""
    return 2.0 * n ** 3 / tile


def tile_shared_bytes(tile: int, bytes_per_element: int = 4) -> int:
    """Shared memory per block for one T×T tile of A and one of B."""
    return 2 * tile * tile * bytes_per_element


def smem_intensity(patch_m: int, patch_n: int | None = None) -> float:
    """A thread owning a TM×TN patch reads TM + TN FP32 values from shared memory per k and
    does 2·TM·TN FLOPs with them: 2·TM·TN / (4·(TM + TN)); ¼ for 1×1, 2 for 8×8."""
    patch_n = patch_m if patch_n is None else patch_n
    return 2.0 * patch_m * patch_n / (4.0 * (patch_m + patch_n))


def smem_reads_per_fma(patch_m: int, patch_n: int | None = None) -> float:
    """Shared-memory loads per multiply-add: (TM + TN) / (TM·TN); 2, 1, ½, ¼ for 1…8."""
    patch_n = patch_m if patch_n is None else patch_n
    return (patch_m + patch_n) / (patch_m * patch_n)


def ridge(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the compute roof meets the memory roof."""
    return peak_flops / bandwidth


def attainable(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """Roofline: min(peak, intensity × bandwidth)."""
    return min(peak_flops, intensity * bandwidth)


def kernel_model_4096(kind: str, e: int = 4) -> float:
    """Flop per byte from L2 of seed 001's four kernels (block tiles 32² / 128², patch 8²)."""
    return {"naive": naive_intensity(e), "shared": tile_intensity(32, 32, e),
            "register": tile_intensity(128, 128, e), "tensor": tile_intensity(128, 128, 2)}[kind]


# ----------------------------------------------------------------------------- chapter 6
# Shapes: how a grid of output tiles meets a machine of SMs.

#: Per-SM limits of compute capability 9.0 (H100/H200), CUDA C Programming Guide table.
SM90_LIMITS = {"registers": 65536, "threads": 2048, "blocks": 32, "shared_bytes": 228 * 1024,
               "shared_reserved_per_block": 1024, "register_unit_per_warp": 256}


def tile_grid(m: int, n: int, tile_m: int, tile_n: int) -> int:
    """Output tiles (thread blocks) a BM×BN tiling launches: ⌈M/BM⌉·⌈N/BN⌉."""
    return -(-m // tile_m) * -(-n // tile_n)


def waves(m: int, n: int, tile_m: int, tile_n: int, sms: int = 132,
          blocks_per_sm: int = 1) -> int:
    """Rounds of blocks the GPU runs: ⌈tiles / (SMs · resident blocks per SM)⌉.

    140 tiles on 132 SMs with one block each are two waves, the second with 8 blocks.
    """
    return -(-tile_grid(m, n, tile_m, tile_n) // (sms * blocks_per_sm))


def wave_efficiency(m: int, n: int, tile_m: int, tile_n: int, sms: int = 132,
                    blocks_per_sm: int = 1) -> float:
    """Share of the block slots that hold work, over all waves: tiles / (waves · slots).

    A model that assumes every tile takes the same time and every wave waits for the last
    block of the previous one (tiles of a real kernel drift apart, so the loss is softer).
    """
    slots = sms * blocks_per_sm
    tiles = tile_grid(m, n, tile_m, tile_n)
    return tiles / (waves(m, n, tile_m, tile_n, sms, blocks_per_sm) * slots)


def tile_efficiency(m: int, n: int, tile_m: int, tile_n: int) -> float:
    """Useful outputs over computed outputs when edge tiles cost as much as full ones:
    M·N / (⌈M/BM⌉·BM · ⌈N/BN⌉·BN). The ragged edge's price in the simplest model."""
    return m * n / (tile_grid(m, n, tile_m, tile_n) * tile_m * tile_n)


def blocks_per_sm(threads: int, registers: int, shared_bytes: int,
                  limits: dict | None = None) -> int:
    """Resident blocks per SM allowed by threads, registers and shared memory (sm_90 limits).

    Registers are allocated per warp in units of 256 (``registers`` per thread rounded up);
    each block also costs ``shared_reserved_per_block`` bytes of shared memory.
    """
    lim = limits or SM90_LIMITS
    warps = -(-threads // 32)
    unit = lim["register_unit_per_warp"]
    per_warp = -(-registers * 32 // unit) * unit
    by_registers = (lim["registers"] // per_warp) // warps if per_warp else lim["blocks"]
    by_threads = lim["threads"] // (warps * 32)
    by_shared = (lim["shared_bytes"] // (shared_bytes + lim["shared_reserved_per_block"])
                 if shared_bytes else lim["blocks"])
    return max(0, min(lim["blocks"], by_registers, by_threads, by_shared))


def split_k_tiles(m: int, n: int, tile_m: int, tile_n: int, splits: int) -> int:
    """Work units when K is cut into ``splits`` pieces: every output tile appears ``splits``
    times, each summing its own range of k into a partial tile."""
    return tile_grid(m, n, tile_m, tile_n) * splits


def split_k_extra_bytes(m: int, n: int, splits: int, acc_bytes: int = 4) -> float:
    """Traffic split-K adds: each of ``splits`` partial M×N results written and read back
    once by the reduction (2·splits·M·N·acc_bytes); 0 without a split."""
    return 0.0 if splits <= 1 else 2.0 * splits * m * n * acc_bytes
