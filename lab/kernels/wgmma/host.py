"""The host side of the Hopper kernels: each configuration's kernel built once, its signature,
the launch (tensor maps, padding where TMA needs a 16-byte pitch, the persistent grid, clusters,
stream-K's workspace, the tile table), and the registry's wrappers for a 16-bit C (widen, check).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import cuda

from lab import convert, enqueue, hopper
from lab.kernels.k07_tensor_core import pad_inputs, pad_into, pad_operand
from lab.kernels.wgmma.config import BK, OUT_BYTES, SIGNATURES, HopperConfig
from lab.kernels.wgmma.first import build_cpasync, build_tma
from lab.kernels.wgmma.order import tile_table
from lab.kernels.wgmma.specialized import build
from lab.lru import LRU

#: Kernels built, by configuration: every registered one and the experiments' many more.
_BUILT = LRU(512)


def kernel_for(cfg: HopperConfig):
    """The (cached) kernel for ``cfg``: rungs 1–3's own, or the specialized skeleton's. The
    persistent grid is the launch's (the kernel reads ``gridDim``): configurations that differ
    only in ``grid`` share one kernel."""
    cfg = replace(cfg, grid=0) if cfg.persistent else cfg

    def make():
        if cfg.loader == "cpasync":
            return build_cpasync(cfg)
        return build(cfg) if cfg.producer else build_tma(cfg)
    return _BUILT.get_or_make(cfg, make)


def signature(cfg: HopperConfig) -> str:
    if cfg.loader == "cpasync":
        return SIGNATURES["cpasync"][cfg.kind]
    if cfg.fp8 and cfg.grouped:                      # the scales, the groups' bounds, M_max
        return SIGNATURES["fp8_grouped"].format(bounds="int64")
    if cfg.fp8:
        return SIGNATURES["fp8"].format(out="uint16" if cfg.out == "bf16" else "float32")
    if cfg.grouped:                                  # C, then the groups' bounds, M_max
        return SIGNATURES["ws_grouped"].format(out=OUT_ARRAY[cfg.out], bounds="int64")
    if cfg.streamk or cfg.traced:                    # C, then the workspace (float32)
        return SIGNATURES["ws_sk"].replace("float32[:, ::1], int32,",
                                           f"{OUT_ARRAY[cfg.out]}[:, ::1], int32,", 1)
    if cfg.table:                                    # C, then the table of tiles
        return SIGNATURES["ws_table"].replace("float32", OUT_ARRAY[cfg.out], 1)
    if cfg.producer and cfg.out != "f32":             # 16-bit C (BF16 as uint16 bits)
        return SIGNATURES["ws"].replace("float32", OUT_ARRAY[cfg.out])
    return SIGNATURES["ws"] if cfg.producer else SIGNATURES["tma"]


#: The array type of C for each output type (BF16 travels as uint16 bits).
OUT_ARRAY = {"f32": "float32", "f16": "float16", "bf16": "uint16"}


def require_hopper() -> None:
    """RuntimeError unless the current GPU has compute capability 9.x (wgmma, TMA)."""
    cc = cuda.get_current_device().compute_capability
    if cc[0] != 9:
        raise RuntimeError(f"the Hopper kernels need compute capability 9.0 (sm_90a); this GPU "
                           f"is {cc[0]}.{cc[1]}")


_SM_COUNT = LRU(16)                   # per device


def _sm_count() -> int:
    dev = cuda.get_current_device()
    return _SM_COUNT.get_or_make(dev.id, lambda: int(dev.MULTIPROCESSOR_COUNT))


def tma_operands(A, B, cfg: HopperConfig):
    """(map_a, map_b, K, keep): tensor maps for A (M×K) and B (K×N; FP8: Bᵀ, N×K), after
    padding K and N (FP8: K) when their row pitch is not a multiple of 16 bytes (TMA's
    rule); ``keep`` holds the padded arrays alive while the kernel runs."""
    if cfg.fp8:
        kp = -(-A.shape[1] // 16) * 16
        a = pad_operand(A, A.shape[0], kp, "A")
        b = pad_operand(B, B.shape[0], kp, "B")
        map_a = hopper.tensor_map_2d(a, cfg.bm, cfg.bk, dtype_name="uint8")
        map_b = hopper.tensor_map_2d(b, cfg.bn // cfg.cluster, cfg.bk, dtype_name="uint8")
        return map_a, map_b, kp, (a, b)
    a, b = pad_inputs(A, B, 1, 8, 8) if (A.shape[1] % 8 or B.shape[1] % 8) else (A, B)
    name = "bfloat16" if cfg.kind == "bf16" else "float16"
    map_a = hopper.tensor_map_2d(a, cfg.bm, 64, dtype_name=name)
    map_b = hopper.tensor_map_2d(b, BK, 64, dtype_name=name)
    return map_a, map_b, int(a.shape[1]), (a, b)


def scale_shapes(cfg: HopperConfig, m: int, n: int, k: int) -> tuple[tuple, tuple]:
    """The shapes of the scale arrays of an FP8 launch at M×N×K: (1, 1) each for per-tensor
    scales; for block scales one per 1×128 block of A, (M, ⌈K/128⌉), and one per 128×128
    block of Bᵀ, (⌈N/128⌉, ⌈K/128⌉)."""
    if cfg.scales == "tensor":
        return (1, 1), (1, 1)
    kb = -(-k // 128)
    return (m, kb), (-(-n // 128), kb)


def launcher(cfg: HopperConfig):
    """``launch(A, B, C)`` for ``cfg``; FP8: ``launch(A, Bt, C, sa, sb)`` with A (M×K) and
    Bt (N×K, B transposed) as uint8 bits, C float32 or (``out="bf16"``) uint16 bits, and the
    float32 scales of :func:`scale_shapes`: C = (sa·A)·(sb·B) with the scales expanded over
    their blocks."""
    cfg.validate()
    dynamic = cfg.shared_bytes
    scratch: dict = {}                  # stream-K: blocks -> (workspace, flags), kept

    def streamk_scratch(blocks: int):
        """The workspace (a partial 64×BN tile per consumer warpgroup and block, float32; zero
        for the atomic fix-up, whose finishers zero each slot again after reading it) and the
        flags (int32, zero; each reader clears the one it read) of a stream-K launch."""
        if blocks not in scratch:
            acc = cfg.mt * cfg.bn // 2
            words = cfg.flag_words(blocks)
            # (traced without stream-K: only the flags and the trace after them are used)
            shape = (blocks * cfg.consumers * acc if cfg.streamk else 1, 128)
            work = (cuda.to_device(np.zeros(shape, np.float32)) if cfg.fixup == "atomic"
                    else cuda.device_array(shape, np.float32))
            scratch[blocks] = (work, cuda.to_device(np.zeros(words, np.int32)))
        return scratch[blocks]

    tables: dict = {}                   # rung 18: (m, n) -> its table of tiles, on the device

    def table_of(m: int, n: int):
        if (m, n) not in tables:
            tables[(m, n)] = cuda.to_device(tile_table(m, n, cfg))
        return tables[(m, n)]

    def launch(A, B, C, sa=None, sb=None) -> None:
        require_hopper()
        if cfg.fp8:
            want = scale_shapes(cfg, C.shape[0], C.shape[1], A.shape[1])
            for label, x, shape in (("sa", sa, want[0]), ("sb", sb, want[1])):
                if x is None or tuple(x.shape) != shape:
                    raise ValueError(f"{cfg.scales} scales: {label} must be a float32 device "
                                     f"array of shape {shape}, got "
                                     f"{None if x is None else tuple(x.shape)}")
        kernel = kernel_for(cfg)
        hopper.allow_dynamic_shared(kernel, signature(cfg), dynamic)
        m, n = C.shape
        if cfg.loader == "cpasync":
            a, b = pad_inputs(A, B, cfg.bm, cfg.bn, BK)
            blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic, (a, b, C))
            return
        map_a, map_b, k, keep = tma_operands(A, B, cfg)
        tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
        if not cfg.producer:
            blocks = min(tiles, _sm_count()) if cfg.persistent else tiles
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic,
                          (map_a, map_b, C, np.int32(k)))
            launch.keep = (map_a, map_b, keep)    # alive until the next call (async launch)
            return
        out = C
        if cfg.epilogue == "tma":
            # the TMA store needs a 16-byte row pitch: an N that is not a multiple of 4
            # float32 (8 BF16) goes through a wider output, copied back after
            per = 16 // OUT_BYTES[cfg.out]
            if n % per:
                out = cuda.device_array((m, n + (-n) % per), dtype=C.dtype)
            map_c = hopper.tensor_map_2d(out, cfg.epi_rows, cfg.epi_cols,
                                         dtype_name={"bf16": "bfloat16", "f16": "float16"}
                                         .get(cfg.out, "float32"))
        else:
            map_c = map_a                         # not read
        args = (map_a, map_b, map_c, out, np.int32(k))
        if cfg.fp8:
            args += (sa, sb)
        units = -(-m // (cfg.bm * cfg.cluster)) * -(-n // cfg.bn)
        if cfg.cluster == 1:
            blocks = min(units, _sm_count()) if cfg.persistent else units
            blocks = min(blocks, cfg.grid) if cfg.grid else blocks
            if cfg.streamk:
                # every SM takes a share of the k-slices, however few the tiles (a decode
                # shape's 16 tiles on 132 SMs: a split-K over all of them), at most one
                # block per k-slice and at most cfg.grid blocks
                blocks = min(_sm_count(), units * -(-k // BK), cfg.grid or _sm_count())
            if cfg.streamk or cfg.traced:
                args += streamk_scratch(blocks)
            if cfg.table:
                args += (table_of(m, n),)
            enqueue.launch(kernel, signature(cfg), blocks, cfg.threads, dynamic, args)
        else:
            clusters = units
            if cfg.persistent:
                clusters = min(units, hopper.max_active_clusters(
                    kernel, signature(cfg), cfg.threads, dynamic, cfg.cluster))
                if cfg.grid:
                    clusters = min(clusters, cfg.grid // cfg.cluster)
            hopper.launch_cluster(kernel, signature(cfg), clusters * cfg.cluster, cfg.threads,
                                  dynamic, args, cfg.cluster)
        if out is not C:
            pad_into(out, C)              # cropped back to C's columns
        launch.keep = (map_a, map_b, map_c, out, keep)   # alive until the next call

    run = enqueue.memo(launch)     # a repeated call replays its launch plans (lab.enqueue)
    run.scratch = scratch           # stream-K: blocks -> (workspace, flags), for a trace
    return run


def grouped_launcher(cfg: HopperConfig):
    """``launch(A, B, C, groups, mmax)`` for a grouped ``cfg`` (``cfg.grouped``): A ``[rows,
    K]`` and C ``[rows, N]`` (the masked layout's ``[E, M_max, ·]`` seen as 2-D), B every
    expert's ``[K, N]`` stacked, ``[E·K, N]``; ``groups`` the offsets (``E + 1``) or counts
    (``E``) as a device array of int32 or int64, read by the kernel; ``mmax`` the rows of an
    expert's buffer (counts) or 0. K must be a multiple of 64 (a k-slice never straddles two
    experts' B) and N of 8 (the copy engine's 16-byte row pitch).

    FP8 (block scales): ``launch(A, Bt, C, groups, mmax, sa, sb)`` with A ``[rows, K]`` and
    every expert's Bᵀ ``[N, K]`` stacked, ``[E·N, K]``, as uint8 codes, C ``[rows, N]`` BF16
    bits (uint16), ``sa`` ``[rows, K/128]`` (1×128 blocks of A) and ``sb`` ``[E·N/128,
    K/128]`` (each expert's 128×128 blocks of Bᵀ), float32; K and N multiples of 128 (a scale
    block never straddles two experts)."""
    cfg.validate()
    if not cfg.grouped:
        raise ValueError(f"{cfg.label}: not a grouped configuration")
    dynamic = cfg.shared_bytes
    name = "bfloat16" if cfg.kind == "bf16" else "float16"
    out_name = {"bf16": "bfloat16", "f16": "float16"}.get(cfg.out, "float32")

    def shapes_fp8(A, B, C, sa, sb) -> int:
        rows, k = A.shape
        n = C.shape[1]
        experts = B.shape[0] // n if n else 0
        want = ((rows, k // 128), (experts * (n // 128), k // 128))
        if (k % 128 or n % 128 or B.shape[1] != k or B.shape[0] % n or tuple(C.shape)
                != (rows, n) or sa is None or sb is None
                or (tuple(sa.shape), tuple(sb.shape)) != want):
            raise ValueError(
                f"grouped FP8 launch: A {tuple(A.shape)}, Bt {tuple(B.shape)}, C "
                f"{tuple(C.shape)}, sa {None if sa is None else tuple(sa.shape)}, sb "
                f"{None if sb is None else tuple(sb.shape)}: K and N must be multiples of "
                f"128, Bt [E·N, K], C [rows of A, N], sa {want[0]} and sb {want[1]}")
        return k

    def launch(A, B, C, groups, mmax: int, sa=None, sb=None) -> None:
        require_hopper()
        rows, k = A.shape
        if cfg.fp8:
            k = shapes_fp8(A, B, C, sa, sb)
            sig = SIGNATURES["fp8_grouped"].format(bounds=np.dtype(groups.dtype).name)
            map_a = hopper.tensor_map_2d(A, cfg.bm, cfg.bk, dtype_name="uint8")
            map_b = hopper.tensor_map_2d(B, cfg.bn, cfg.bk, dtype_name="uint8")
        else:
            n = B.shape[1]
            if k % BK or B.shape[0] % k or n % 8 or tuple(C.shape) != (rows, n):
                raise ValueError(f"grouped launch: A {tuple(A.shape)}, B {tuple(B.shape)}, C "
                                 f"{tuple(C.shape)}: K must be a multiple of {BK}, B [E·K, N] "
                                 "with N a multiple of 8, C [rows of A, N]")
            sig = SIGNATURES["ws_grouped"].format(out=OUT_ARRAY[cfg.out],
                                                  bounds=np.dtype(groups.dtype).name)
            map_a = hopper.tensor_map_2d(A, cfg.bm, 64, dtype_name=name)
            map_b = hopper.tensor_map_2d(B, BK, 64, dtype_name=name)
        kernel = kernel_for(cfg)
        hopper.allow_dynamic_shared(kernel, sig, dynamic)
        map_c = hopper.tensor_map_2d(C, cfg.epi_rows, cfg.epi_cols, dtype_name=out_name)
        # every SM: the tiles are counted on the GPU (blocks past them exit at once)
        blocks = min(_sm_count(), cfg.grid) if cfg.grid else _sm_count()
        args = (map_a, map_b, map_c, C, np.int32(k))
        if cfg.fp8:
            args += (sa, sb)
        enqueue.launch(kernel, sig, blocks, cfg.threads, dynamic,
                       args + (groups, np.int32(mmax)))
        launch.keep = (map_a, map_b, map_c)       # alive until the next call

    return enqueue.memo(launch)


def make_config(**changes) -> HopperConfig:
    return HopperConfig(**changes).validate()



def edges(cfg: HopperConfig) -> str:
    """How ``cfg``'s kernel handles M, N, K that are not multiples of its tile."""
    if cfg.loader == "cpasync":
        return ("launch pads A and B with zeros to the block tile; stores check row < M, "
                "col < N")
    text = ("TMA zero-fills boxes past the edges (K or N is padded to a multiple of 8 only "
            "when the row pitch is not 16-byte aligned); ")
    if cfg.epilogue == "tma":
        text += ("the TMA store clips its boxes to C (an N that is not a multiple of 4 goes "
                 "through a wider output, copied back)")
    else:
        text += "stores check row < M, col < N"
    if cfg.cluster > 1:
        text += ("; with an odd number of block rows the second block of the last pair "
                 "loads the last block row again and stores nothing")
    return text


def needs(cfg: HopperConfig) -> str:
    text = "sm_90a: wgmma" + (", TMA, mbarriers" if cfg.loader == "tma" else ", cp.async")
    text += ", setmaxnreg" if cfg.regs else ""
    text += ", TMA store" if cfg.epilogue == "tma" else ""
    text += ", clusters (multicast)" if cfg.cluster > 1 else ""
    text += ", whole-tile staging" if cfg.store == "tile" else ""
    text += ", stream-K (flags between blocks)" if cfg.streamk else ""
    text += ", store threads (mbarrier hand-off)" if cfg.handoff else ""
    text += ", a table of tiles" if cfg.table else ""
    return text


def launcher16(cfg: HopperConfig):
    """The registry's ``launch(A, B, C)`` (C float32) for a 16-bit-output ``cfg``: the kernel
    writes a 16-bit C, widened exactly into C after."""
    launch = launcher(cfg)

    def launch_ab(A, B, C) -> None:
        m, n = C.shape
        out = cuda.device_array((m, n), dtype=np.float16 if cfg.out == "f16" else np.uint16)
        launch(A, B, out)
        convert.widen(out, C)
        launch_ab.keep = out
    return launch_ab


def checker16(name: str, cfg: HopperConfig):
    """``check(m, n, k, seed=None)`` for a 16-bit-output kernel: fresh inputs, its 16-bit C
    poisoned with NaN, float64 reference, the elementwise bound with the output's rounding
    (unit 2⁻¹¹ for FP16, 2⁻⁸ for BF16) added."""
    def check(m: int, n: int, k: int, *, seed: int | None = None):
        from lab import accuracy
        from lab.kernels import KernelUnavailable, runnable

        ok, why = runnable(name)
        if not ok:
            raise KernelUnavailable(why)
        seed = accuracy.new_seed() if seed is None else seed
        f16 = cfg.kind == "f16"
        a, b = accuracy.random_inputs(m, n, k, np.float16 if f16 else np.uint16,
                                      np.random.default_rng(seed))
        a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
        poison = (np.full((m, n), np.nan, np.float16) if f16
                  else np.full((m, n), 0x7FC0, np.uint16))   # BF16 bits of a NaN
        out = cuda.to_device(poison)
        launcher(cfg)(cuda.to_device(a), cuda.to_device(b), out)
        host = out.copy_to_host()
        value = (host if cfg.kind == "f16"
                 else (host.astype(np.uint32) << 16).view(np.float32)).astype(np.float64)
        unit = 2.0 ** -11 if cfg.out == "f16" else 2.0 ** -8
        factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=unit)
        bound = factor * (np.abs(a64) @ np.abs(b64)) + k * 2.0 ** -149 + 2.0 ** -24
        return accuracy.judge(value, a64 @ b64, bound, kernel=name, shape=(m, n, k),
                              dtype_name="float16" if cfg.kind == "f16" else "bfloat16",
                              factor=factor, seed=seed)
    return check

