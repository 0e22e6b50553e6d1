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
#: Registers one thread may hold (every compute capability from 3.5 on, the CUDA programming
#: guide's table of technical specifications); a thread that needs more spills to local memory.
MAX_REGISTERS_PER_THREAD = 255


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


def occupancy(threads: int, registers: int, shared_bytes: int,
              limits: dict | None = None) -> dict:
    """Resident blocks and warps per SM of a kernel with ``threads`` threads per block,
    ``registers`` registers per thread and ``shared_bytes`` of shared memory per block (sm_90
    limits): ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (resident warps over the
    SM's 64) and ``limited_by`` (registers, warps, shared memory or blocks).

    Registers are allocated per warp in units of 256 (``registers`` per thread rounded up);
    each block also costs ``shared_reserved_per_block`` bytes of shared memory.
    """
    lim = limits or SM90_LIMITS
    warps = -(-threads // 32)
    unit = lim["register_unit_per_warp"]
    per_warp = -(-registers * 32 // unit) * unit
    max_warps = lim["threads"] // 32
    by_registers = (lim["registers"] // per_warp) // warps if per_warp else lim["blocks"]
    by_warps = max_warps // warps
    by_shared = (lim["shared_bytes"] // (shared_bytes + lim["shared_reserved_per_block"])
                 if shared_bytes else lim["blocks"])
    limits_by = (("registers", by_registers), ("warps", by_warps),
                 ("shared memory", by_shared), ("blocks", lim["blocks"]))
    blocks = max(0, min(n for _, n in limits_by))
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps / max_warps,
            "limited_by": min(limits_by, key=lambda kv: kv[1])[0]}


def blocks_per_sm(threads: int, registers: int, shared_bytes: int,
                  limits: dict | None = None) -> int:
    """Resident blocks per SM allowed by threads, registers and shared memory
    (:func:`occupancy`'s ``blocks_per_sm``)."""
    return occupancy(threads, registers, shared_bytes, limits)["blocks_per_sm"]


def split_k_tiles(m: int, n: int, tile_m: int, tile_n: int, splits: int) -> int:
    """Work units when K is cut into ``splits`` pieces: every output tile appears ``splits``
    times, each summing its own range of k into a partial tile."""
    return tile_grid(m, n, tile_m, tile_n) * splits


def split_k_extra_bytes(m: int, n: int, splits: int, acc_bytes: int = 4) -> float:
    """Traffic split-K adds: each of ``splits`` partial M×N results written and read back
    once by the reduction (2·splits·M·N·acc_bytes); 0 without a split."""
    return 0.0 if splits <= 1 else 2.0 * splits * m * n * acc_bytes


# ----------------------------------------------------------------------------- chapter 8
# One model for the whole ladder: seed 001's bytes per k-slice of a block, three roofs (HBM,
# shared memory, arithmetic), and the block-by-block counters of its 16 × 16 × 16 animation.

#: Datasheet figures (NVIDIA's A100 SXM4 40 GB, H100 SXM5 and H200 SXM pages; dense, boost
#: clock): FP32 and BF16 tensor roofs (TFLOP/s), HBM bandwidth (GB/s), SMs, maximum SM clock
#: (MHz). Shared memory moves ``SMEM_BYTES_PER_CLOCK`` bytes per SM per clock on all three.
DATASHEET = {
    "A100": {"fp32_tflops": 19.5, "tensor_tflops": 312.0, "hbm_gbps": 1555.0, "sms": 108,
             "clock_mhz": 1410},
    "H100": {"fp32_tflops": 67.0, "tensor_tflops": 989.0, "hbm_gbps": 3350.0, "sms": 132,
             "clock_mhz": 1980},
    "H200": {"fp32_tflops": 67.0, "tensor_tflops": 989.0, "hbm_gbps": 4800.0, "sms": 132,
             "clock_mhz": 1980},
}
#: 32 banks × 4 bytes: what one SM's shared memory delivers per clock (sm_80, sm_90).
SMEM_BYTES_PER_CLOCK = 128

#: Seed 001's four kernels on a square GEMM: block tile (BM, BN), thread (or warp) patch
#: (TM, TN), element bytes, whether the tiles are staged in shared memory, and which roof the
#: arithmetic runs against. The seed names no patch for its tensor-core kernel; we take the
#: 64 × 64 warp tile of chapter 5's ``tc_bf16`` (four warps on a 128 × 128 block).
LADDER_001 = {
    "naive": {"bm": 1, "bn": 1, "tm": 1, "tn": 1, "e": 4, "staged": False, "alu": "fp32"},
    "shared": {"bm": 32, "bn": 32, "tm": 1, "tn": 1, "e": 4, "staged": True, "alu": "fp32"},
    "register": {"bm": 128, "bn": 128, "tm": 8, "tn": 8, "e": 4, "staged": True,
                 "alu": "fp32"},
    "tensor": {"bm": 128, "bn": 128, "tm": 64, "tn": 64, "e": 2, "staged": True,
               "alu": "tensor"},
}


def slice_traffic(bm: int, bn: int, bk: int, tm: int = 1, tn: int = 1, e: int = 4,
                  staged: bool = True) -> dict:
    """Bytes one block moves for one k-slice of depth ``bk``, counted as seed 001 counts them.

    Staged: the block loads its A slice (BM·BK) and B slice (BK·BN) from global memory once,
    stores them in shared memory, and each of its BM·BN / (TM·TN) threads reads TM + TN values
    per k back from shared memory. Not staged (the naive kernel): every multiply-add reads its
    two operands from global memory. Returns ``global`` and ``shared`` bytes.
    """
    if not staged:
        return {"global": float(e * bm * bn * 2 * bk), "shared": 0.0}
    tile = e * (bm * bk + bk * bn)
    reads = e * bk * (bm * bn // (tm * tn)) * (tm + tn)
    return {"global": float(tile), "shared": float(tile + reads)}


def gemm_traffic(m: int, n: int, k: int, bm: int, bn: int, tm: int = 1, tn: int = 1,
                 e: int = 4, staged: bool = True, out_bytes: int = 4) -> dict:
    """Whole-GEMM bytes: :func:`slice_traffic` over every block and every k (BK cancels, so
    one k at a time is summed), plus one store of C (``out_bytes`` per output) in ``global``.
    Assumes M, N divisible by the block tile, and no reuse between blocks (no L2)."""
    blocks = (m // bm) * (n // bn)
    per_k = slice_traffic(bm, bn, 1, tm, tn, e, staged)
    return {"global": blocks * k * per_k["global"] + out_bytes * m * n,
            "shared": blocks * k * per_k["shared"]}


def shared_bandwidth(machine: dict) -> float:
    """Shared-memory bandwidth of a machine in bytes/s: SMs × 128 B × the SM clock."""
    return machine["sms"] * SMEM_BYTES_PER_CLOCK * machine["clock_mhz"] * 1e6


def rung_model(kind: str, machine: dict, n: int = 4096, **changes) -> dict:
    """Seed 001's model of one of its four kernels (:data:`LADDER_001`) on an n³ GEMM.

    Three times, each a roof: global bytes over HBM bandwidth (no reuse in L2), shared bytes
    over shared-memory bandwidth, FLOPs over the FP32 or tensor roof. The kernel takes the
    longest of the three, and that roof is its bound. ``flop_per_byte`` counts the store of C
    with the loads (0.25, 7.97, 31.5, 62.1 at 4096³), as the seed does. ``changes`` replace
    fields of the kernel's :data:`LADDER_001` entry (``bm=256``, ``tm=4``, ...); a block tile
    must divide ``n``.
    """
    unknown = set(changes) - set(LADDER_001[kind])
    if unknown:
        raise ValueError(f"rung_model: no field(s) {sorted(unknown)} in LADDER_001[{kind!r}]; "
                         f"fields: {', '.join(LADDER_001[kind])}")
    cfg = {**LADDER_001[kind], **changes}
    if n % cfg["bm"] or n % cfg["bn"]:
        raise ValueError(f"rung_model: a {cfg['bm']} × {cfg['bn']} block tile does not divide "
                         f"n = {n}")
    t = gemm_traffic(n, n, n, cfg["bm"], cfg["bn"], cfg["tm"], cfg["tn"], cfg["e"],
                     cfg["staged"])
    f = flops(n, n, n)
    peak = machine["tensor_tflops" if cfg["alu"] == "tensor" else "fp32_tflops"] * 1e12
    times = {"HBM": t["global"] / (machine["hbm_gbps"] * 1e9),
             "shared memory": t["shared"] / shared_bandwidth(machine) if t["shared"] else 0.0,
             ("tensor cores" if cfg["alu"] == "tensor" else "FP32 ALUs"): f / peak}
    bound = max(times, key=times.get)
    return {"kernel": kind, "flop_per_byte": f / t["global"], "global_bytes": t["global"],
            "shared_bytes": t["shared"], "times_s": times, "bound": bound,
            "seconds": times[bound], "tflops": f / times[bound] / 1e12}


def step_counters(size: int = 16, block: int = 8, bk: int = 4, patch: int = 1) -> list[dict]:
    """The animation's counters: an ``size``³ product worked one ``block`` × ``block`` tile of C
    at a time (row-major order of tiles), k in slices of ``bk``; element counts after each step.

    For each step: the tile and slice, and the running totals of global loads for the naive
    kernel (two per multiply-add) and for the tiled kernel (its A and B slices), shared-memory
    stores and loads of the tiled kernel (``patch`` × ``patch`` outputs per thread: 2·patch
    loads per k per thread), and multiply-adds.
    """
    tiles = size // block
    rows, naive_g = [], 0
    tiled_g = tiled_ss = tiled_sl = fmas = 0
    for bi in range(tiles):
        for bj in range(tiles):
            for s in range(size // bk):
                step_fma = block * block * bk
                naive_g += 2 * step_fma
                tiled_g += 2 * block * bk
                tiled_ss += 2 * block * bk
                tiled_sl += bk * (block * block // (patch * patch)) * 2 * patch
                fmas += step_fma
                rows.append({"step": len(rows) + 1, "tile": (bi, bj), "slice": s,
                             "naive_global": naive_g, "tiled_global": tiled_g,
                             "tiled_shared_stores": tiled_ss, "tiled_shared_loads": tiled_sl,
                             "fma": fmas})
    return rows


# ----------------------------------------------------------------------------- chapter 10
# One GEMM on several GPUs: the bytes each scheme moves between GPUs, the time of a collective
# from a latency and a bus bandwidth (the nccl-tests convention), and each scheme's time from
# the one-GPU rate and the link. Chapter 10 fits the link to the measured collectives, checks
# the two-GPU predictions against the measurements, then draws 4, 8 and 64 GPUs (model only).

#: Bus bandwidth assumed per GPU between hosts (one 400 Gb/s NIC per GPU), for P > GPUS_PER_HOST.
INTER_HOST_GBPS = 50.0
#: GPUs one NVLink/NVSwitch domain holds (an HGX board).
GPUS_PER_HOST = 8
COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter", "broadcast")


def collective_factor(op: str, p: int) -> float:
    """Bytes each rank moves over its link per byte of the whole buffer, for ring-style
    collectives over ``p`` ranks: (p−1)/p for all-gather and reduce-scatter, 2(p−1)/p for
    all-reduce (a reduce-scatter then an all-gather), 1 for a pipelined broadcast; 0 alone."""
    if op not in COLLECTIVES:
        raise ValueError(f"unknown collective {op!r}; known: {', '.join(COLLECTIVES)}")
    if not isinstance(p, int) or p < 1:
        raise ValueError(f"the number of ranks must be a positive int, got {p!r}")
    if p == 1:
        return 0.0
    return {"all_gather": (p - 1) / p, "reduce_scatter": (p - 1) / p,
            "all_reduce": 2 * (p - 1) / p, "broadcast": 1.0}[op]


def collective_seconds(op: str, nbytes: float, p: int, bus_gbps: float,
                       latency_s: float = 0.0) -> float:
    """Time of one collective on a buffer of ``nbytes`` (the whole, gathered or reduced,
    buffer): ``latency + factor · bytes / bus bandwidth``; nothing to do on one rank."""
    factor = collective_factor(op, p)
    if factor == 0.0:
        return 0.0
    return latency_s + factor * nbytes / (bus_gbps * 1e9)


def fit_link(rows: list[dict]) -> dict:
    """Latency and bus bandwidth of each collective from measured ``bandwidth`` rows
    (``what``, ``bytes``, ``median_ms``, ``world``). Returns ``{op: {"latency_s", "bus_gbps"}}``.

    Two points, each where its term dominates: the bus bandwidth is the slope between the two
    largest buffers (where the latency is a rounding error), the latency what the smallest buffer
    takes beyond its bytes at that bandwidth (where the bytes are). A mid-sized buffer whose median
    is far off the line (a slow repetition pattern, not the link) moves neither number, as it
    would move a least-squares line through every point."""
    out = {}
    for op in COLLECTIVES:
        pts = sorted((r for r in rows if r.get("what") == op), key=lambda r: r["bytes"])
        if len(pts) < 2:
            continue
        p = pts[0]["world"]
        f = collective_factor(op, p)
        (s1, t1), (s2, t2) = [(f * r["bytes"], r["median_ms"] * 1e-3) for r in pts[-2:]]
        bus = (s2 - s1) / (t2 - t1)
        small = pts[0]
        lat = small["median_ms"] * 1e-3 - f * small["bytes"] / bus
        out[op] = {"latency_s": max(0.0, lat), "bus_gbps": bus / 1e9}
    return out


def fit_startup(one_gpu: list[tuple[int, float]]) -> dict:
    """A fixed start-up per call and the rate of the rest, from one-GPU times of square
    products ``[(n, ms), …]``: the line through the two smallest sizes in time against n³.
    Its intercept (``startup_s``) is what a call costs however small its work — the host's
    launch after the timing's synchronisation, the GPU leaving idle — and splitting the
    product does not divide it; ``rate_tflops`` is the slope's rate. Both come from the one-GPU
    rows alone."""
    (n1, t1), (n2, t2) = sorted(one_gpu)[:2]
    per_n3 = (t2 - t1) * 1e-3 / (n2 ** 3 - n1 ** 3)
    return {"startup_s": max(0.0, t1 * 1e-3 - per_n3 * n1 ** 3),
            "rate_tflops": 2.0 / per_n3 / 1e12}


def work_rate(n: int, one_ms: float, startup_s: float) -> float:
    """TFLOP/s of the one-GPU product of size n without its start-up: the rate at which the
    shards' FLOPs are charged."""
    return 2.0 * n ** 3 / (one_ms * 1e-3 - startup_s) / 1e12


def comm_bytes_per_gpu(scheme: str, m: int, n: int, k: int, p: int, e: int = 2,
                       out: int = 4, grid: tuple[int, int] | None = None) -> float:
    """Bytes each GPU receives over its links for one product, by scheme (``e``: input bytes,
    ``out``: bytes of C). ``summa`` on a ``grid`` (rows × columns of GPUs; default 1 × p)."""
    if scheme == "column":
        return 0.0
    if scheme in ("column_gather", "column_overlap"):
        return collective_factor("all_gather", p) * m * n * out
    if scheme == "row_allreduce":
        return collective_factor("all_reduce", p) * m * n * out
    if scheme == "row_reduce_scatter":
        return collective_factor("reduce_scatter", p) * m * n * out
    if scheme == "summa":
        pr, pc = grid or (1, p)
        if pr * pc != p:
            raise ValueError(f"grid {pr}×{pc} does not hold {p} GPUs")
        return (m / pr) * k * e * (pc - 1) / pc + k * (n / pc) * e * (pr - 1) / pr
    raise ValueError(f"unknown scheme {scheme!r}")


def _link(link, op: str) -> tuple[float, float]:
    """(latency s, bus GB/s) of ``op`` from a number (GB/s, no latency) or :func:`fit_link`."""
    if isinstance(link, (int, float)):
        return 0.0, float(link)
    return link[op]["latency_s"], link[op]["bus_gbps"]


def scheme_seconds(scheme: str, m: int, n: int, k: int, p: int, *, rate_tflops: float,
                   link, e: int = 2, out: int = 4, chunks: int = 4, panels_per_rank: int = 2,
                   add_gbps: float = 3000.0, grid: tuple[int, int] | None = None,
                   startup_s: float = 0.0) -> dict:
    """Predicted seconds of one product by ``scheme`` on ``p`` GPUs: ``compute``, ``comm``
    (the collectives alone) and ``total``.

    Arithmetic runs at ``rate_tflops`` (the one-GPU rate), collectives as
    :func:`collective_seconds` with ``link`` (GB/s, or :func:`fit_link`'s dict), SUMMA's
    ``C += T`` at ``add_gbps`` (3 × 4 bytes per element). Unoverlapped schemes add compute and
    communication; ``column_overlap`` is a two-stage pipeline over ``chunks`` (chunk j's gather
    beside chunk j+1's product); ``summa`` broadcasts its first panel, then each panel's product
    and add run beside the next panel's broadcast. ``startup_s`` (:func:`fit_startup`) is added
    once to every total: a call's fixed cost, which no split divides.
    """
    out = _scheme_seconds(scheme, m, n, k, p, rate_tflops=rate_tflops, link=link, e=e, out=out,
                          chunks=chunks, panels_per_rank=panels_per_rank, add_gbps=add_gbps,
                          grid=grid)
    out["total"] += startup_s
    return out


def _scheme_seconds(scheme, m, n, k, p, *, rate_tflops, link, e, out, chunks, panels_per_rank,
                    add_gbps, grid) -> dict:
    def mm(mm_, nn_, kk_):
        return 2.0 * mm_ * nn_ * kk_ / (rate_tflops * 1e12)

    def coll(op, nbytes, ranks):
        lat, bw = _link(link, op)
        return collective_seconds(op, nbytes, ranks, bw, lat)

    w = -(-n // p)
    if scheme == "column":
        t = mm(m, w, k)
        return {"compute": t, "comm": 0.0, "total": t}
    if scheme == "column_gather":
        c, g = mm(m, w, k), coll("all_gather", m * w * p * out, p)
        return {"compute": c, "comm": g, "total": c + g}
    if scheme == "column_overlap":
        c, g = mm(m, w, k), coll("all_gather", m * w * p * out, p)
        lat = _link(link, "all_gather")[0]
        tc, tg = c / chunks, (g - lat) / chunks + lat
        return {"compute": c, "comm": tg * chunks,
                "total": tc + (chunks - 1) * max(tc, tg) + tg}
    if scheme in ("row_allreduce", "row_reduce_scatter"):
        op = "all_reduce" if scheme == "row_allreduce" else "reduce_scatter"
        rows = -(-m // p) * p
        c, r = mm(m, n, -(-k // p)), coll(op, rows * n * out, p)
        return {"compute": c, "comm": r, "total": c + r}
    if scheme == "summa":
        pr, pc = grid or (1, p)
        if pr * pc != p:
            raise ValueError(f"grid {pr}×{pc} does not hold {p} GPUs")
        steps = panels_per_rank * pc
        b = k / steps
        mb, nb = m / pr, n / pc
        panel = mm(mb, nb, b)
        add = 3 * 4 * mb * nb / (add_gbps * 1e9)
        talk = coll("broadcast", mb * b * e, pc) + coll("broadcast", b * nb * e, pr)
        total = talk + panel + (steps - 1) * max(panel + add, talk)
        return {"compute": steps * panel + (steps - 1) * add, "comm": steps * talk,
                "total": total}
    raise ValueError(f"unknown scheme {scheme!r}")


def link_for(p: int, host_link, inter_host_gbps: float = INTER_HOST_GBPS):
    """The link a ring over ``p`` GPUs runs at: the host's (measured) up to
    :data:`GPUS_PER_HOST`, the inter-host network beyond (a ring is as fast as its slowest
    hop)."""
    return host_link if p <= GPUS_PER_HOST else inter_host_gbps
