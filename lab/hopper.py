"""Hopper (sm_90a) from Numba: ``wgmma``, TMA, mbarriers, ``setmaxnreg`` — and the host side.

Numba has no API for any of Hopper's new machinery, but the route of :mod:`lab.ptx` still works:
an ``@intrinsic`` emits one PTX instruction through llvmlite's ``InlineAsm``. On a device of
compute capability 9.0 numba-cuda compiles for ``sm_90a``, the target that has ``wgmma`` and
``setmaxnreg``. Device side:

* **wgmma** — :func:`wgmma_fence`, :func:`wgmma_commit`, :func:`wgmma_wait` and
  ``wgmma_m64n{N}k16_{f16,bf16}(acc, first, desc_a, desc_b, scale_d)`` (FP8:
  ``wgmma_m64n{N}k32_{e4m3,e5m2}``, 32 one-byte values per k-step, see below): one *warpgroup* (4
  consecutive warps, 128 threads) multiplies a 64×16 A tile by a 16×N B tile, both read from
  shared memory through 64-bit *matrix descriptors* (:func:`smem_desc`), and adds into N/2
  float32 accumulators per thread, ``acc[first] … acc[first + N/2 − 1]`` of a local array that
  the compiler keeps in registers (``first`` must be a constant once loops are unrolled). The instruction is asynchronous: ``wgmma_commit`` closes a
  group, ``wgmma_wait(n)`` waits until at most ``n`` groups are in flight. ``scale_d = 0``
  ignores the old accumulator (``d = a·b``), ``1`` adds to it. A is K-major (rows of A are
  contiguous in k); B is MN-major (rows of B, contiguous in n: the ``imm-trans-b = 1`` form).
  The FP8 forms (``.e4m3`` / ``.e5m2`` inputs, FP32 accumulators) have no transpose operands:
  B too is K-major — the tile of Bᵀ, N rows of contiguous k. A k-step is 32 bytes into a
  128-byte row for every input type (16 two-byte or 32 one-byte values), so the descriptors
  are the same.
* **mbarriers** — :func:`mbar_init`, :func:`mbar_arrive`, :func:`mbar_expect_tx` (arrive and
  announce how many bytes the copy engine will deliver), :func:`mbar_try_wait` (one poll of a
  phase's parity) and :func:`mbar_wait` (poll until it completes); ``_sleep`` forms of both
  pass a suspend-time hint, so the waiting thread sleeps rather than polls.
* **TMA** — :func:`tma_load_2d`: ``cp.async.bulk.tensor.2d`` copies one box of a 2-D tensor
  from global to shared memory, swizzled as the tensor map says, zero-filling what lies outside
  the tensor, and signals an mbarrier with the bytes delivered. :func:`prefetch_tensormap`.
* **Ordering and registers** — :func:`fence_proxy_async` (generic-proxy writes, e.g. from
  ``cp.async``, made visible to the async proxy that ``wgmma`` reads with),
  :func:`setmaxnreg_inc` / :func:`setmaxnreg_dec` (move registers between warpgroups).

Host side: :func:`tensor_map_2d` encodes a tensor map with the driver's
``cuTensorMapEncodeTiled`` and copies its 128 bytes into device memory (Numba cannot pass a
128-byte, 64-byte-aligned ``__grid_constant__`` parameter; a kernel gets the map's global
address instead, as a ``uint64[16]`` array argument). :func:`allow_dynamic_shared` lifts a
kernel's dynamic shared memory limit above 48 KB. ``lab.compiler.compile_function(..., cc=(9,
0, "a"))`` builds such a kernel for ``sm_90a`` offline (ptxas's report, warnings and the SASS).

NumPy twins of the layouts (:func:`swizzle_128b`, :func:`desc_fields`, :func:`k_major_offset`,
:func:`mn_major_offset`) let the tests check, without a GPU, that what TMA writes is what a
descriptor tells ``wgmma`` to read. Under the simulator every intrinsic is a stub that raises.
"""
from __future__ import annotations

import numpy as np

from lab import device
from lab.lru import LRU

SIMULATOR = device.SIMULATOR

#: 128-byte swizzle: a tile row is 128 bytes (64 16-bit values); 8 rows form a 1024-byte atom.
SWIZZLE_BYTES = 128
ATOM_BYTES = 1024
#: wgmma N sizes this module provides (m64nNk16, m64nNk32).
WGMMA_N = (64, 128, 256)
#: Input types of wgmma → k per instruction (32 bytes of a 128-byte swizzled row).
WGMMA_K = {"f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32}

# ----------------------------------------------------------------------------- NumPy twins


def swizzle_128b(offset):
    """Byte offset inside a 1024-byte-aligned tile → where the 128-byte swizzle stores it.

    The 16-byte chunk index (bits 4–6) is XOR-ed with the 128-byte row index mod 8 (bits 7–9):
    the layout TMA writes with ``CU_TENSOR_MAP_SWIZZLE_128B`` and wgmma reads with swizzle
    mode 1. Works on ints and NumPy arrays.
    """
    return offset ^ (((offset >> 7) & 7) << 4)


def desc_value(address: int, lbo: int, sbo: int, swizzle: int = 1) -> int:
    """Host twin of :func:`smem_desc`: the 64-bit wgmma shared-memory matrix descriptor."""
    return (((address & 0x3FFFF) >> 4) | ((lbo >> 4) & 0x3FFF) << 16
            | ((sbo >> 4) & 0x3FFF) << 32 | (swizzle & 3) << 62)


def desc_fields(desc: int) -> dict:
    """Decode a descriptor into byte quantities (start address, LBO, SBO, swizzle mode)."""
    return {"address": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4,
            "sbo": ((desc >> 32) & 0x3FFF) << 4, "base_offset": (desc >> 49) & 7,
            "swizzle": (desc >> 62) & 3}


def k_major_offset(row, k, sbo: int = ATOM_BYTES, elem: int = 2):
    """Where a K-major 128B-swizzled descriptor says element (row, k) lives (bytes from the
    descriptor's start, before the swizzle): 8 rows of 128 bytes per atom, atoms ``sbo``
    apart; k runs along the 128-byte row (so k < 64 for 16-bit values)."""
    return (row % 8) * SWIZZLE_BYTES + (row // 8) * sbo + k * elem


def mn_major_offset(n, k, lbo: int, sbo: int = ATOM_BYTES, elem: int = 2):
    """Where an MN-major 128B-swizzled descriptor says element (n, k) lives: 64 consecutive n
    along a 128-byte row, blocks of 64 n ``lbo`` apart; 8 k-rows per atom, atoms ``sbo``
    apart."""
    per_row = SWIZZLE_BYTES // elem
    return (n % per_row) * elem + (n // per_row) * lbo + (k % 8) * SWIZZLE_BYTES + (k // 8) * sbo


def tma_box_offset(row, col, box_cols: int = 64, elem: int = 2):
    """Where TMA puts element (row, col) of one box with 128-byte rows (before the swizzle)."""
    return row * box_cols * elem + col * elem


def accumulator_position(thread, index):
    """(row, column) inside the 64×N tile of accumulator ``index`` of ``thread`` (0–127) for
    ``wgmma.m64nNk16`` with f32 accumulators: warp w owns rows 16w…16w+15; register i is in
    8-column block i // 4, row +8 when (i // 2) is odd, column +1 when i is odd."""
    thread = np.asarray(thread)
    index = np.asarray(index)
    warp, lane = thread // 32, thread % 32
    row = 16 * warp + lane // 4 + 8 * ((index // 2) % 2)
    col = 8 * (index // 4) + 2 * (lane % 4) + index % 2
    return row, col


# ----------------------------------------------------------------------------- device side

__all__ = ["wgmma_fence", "wgmma_commit", "wgmma_wait", "smem_desc", "smem_desc_lo",
           "smem_desc_join", "mbar_init", "mbar_arrive",
           "mbar_expect_tx", "mbar_try_wait", "mbar_wait", "mbar_try_wait_sleep",
           "mbar_wait_sleep", "tma_load_2d", "prefetch_tensormap",
           "fence_proxy_async", "fence_barrier_init", "setmaxnreg_inc", "setmaxnreg_dec",
           "wgmma", "shared_address", "global_address", "tma_store_2d",
           "tma_store_2d_evict_first", "bulk_commit",
           "bulk_wait", "bulk_wait_read", "st_shared_v2_f32", "named_barrier",
           "tma_load_2d_multicast", "cluster_ctarank", "cluster_nctarank", "cluster_sync",
           "mbar_arrive_cluster", "elect_one"]
__all__ += [f"wgmma_m64n{n}k{k}_{kind}" for n in WGMMA_N for kind, k in WGMMA_K.items()]
__all__ += ["st_shared_bf16x2", "st_shared_f16x2", "flag_acquire", "flag_release",
            "flag_clear", "st_global_v4_f32", "ld_shared_v4_f32", "globaltimer",
            "st_global_u64", "count_arrival", "red_global_add_v4_f32", "st_global_v2_f32"]

if SIMULATOR:
    def _stub(name):
        def stub(*args):
            raise NotImplementedError(f"lab.hopper.{name}: Hopper instructions need a GPU of "
                                      "compute capability 9.0; the CUDA simulator cannot run "
                                      "them")
        stub.__name__ = name
        return stub

    for _name in __all__:
        globals()[_name] = _stub(_name)

    def wgmma(kind, n):  # noqa: F811
        return globals().get(f"wgmma_m64n{n}k{WGMMA_K[kind]}_{kind}",
                             _stub(f"wgmma_m64n{n}k{WGMMA_K[kind]}_{kind}"))

else:
    from llvmlite import ir
    from numba import cuda, types, uint32
    from numba.core.errors import RequireLiteralValue
    from numba.cuda.extending import intrinsic

    from lab.ptx import global_address, shared_address  # noqa: F401  (re-exported)
    from lab.ptx import _F32, _I32, _I64, _asm  # the inline-asm call helper and LLVM types

    def _u32(context, builder, ty, value):
        return context.cast(builder, value, ty, types.uint32)

    def _literal(value, what):
        if not isinstance(value, types.IntegerLiteral):
            raise RequireLiteralValue(f"{what} must be a compile-time constant")
        return int(value.literal_value)

    def _simple(name, text, doc):
        """An intrinsic with no operands that emits ``text``."""
        def impl(typingctx):
            def codegen(context, builder, sig, args):
                _asm(builder, ir.VoidType(), [], text, "~{memory}")
                return context.get_dummy_value()
            return types.void(), codegen
        impl.__name__ = name
        impl.__doc__ = doc
        return intrinsic(impl)

    # ------------------------------------------------------------------ wgmma sync

    wgmma_fence = _simple("wgmma_fence", "wgmma.fence.sync.aligned;",
                          "``wgmma.fence.sync.aligned`` — order earlier register and shared "
                          "memory accesses before the wgmma that follow (once before the first "
                          "wgmma of a batch, and whenever the accumulators were touched).")
    wgmma_commit = _simple("wgmma_commit", "wgmma.commit_group.sync.aligned;",
                           "``wgmma.commit_group.sync.aligned`` — close the group of wgmma "
                           "issued so far by this warpgroup.")
    fence_proxy_async = _simple("fence_proxy_async", "fence.proxy.async.shared::cta;",
                                "``fence.proxy.async.shared::cta`` — make this thread's "
                                "generic-proxy shared-memory writes (ordinary stores, "
                                "``cp.async``, ``mbarrier.init``) visible to the async proxy "
                                "(TMA, wgmma); a barrier must follow for other threads.")
    fence_barrier_init = _simple("fence_barrier_init", "fence.mbarrier_init.release.cluster;",
                                 "``fence.mbarrier_init.release.cluster`` — publish "
                                 "``mbarrier.init`` to the copy engine.")

    @intrinsic
    def wgmma_wait(typingctx, pending):
        """``wgmma.wait_group.sync.aligned N`` — wait until at most ``N`` (a constant) wgmma
        groups of this warpgroup are still in flight; their accumulators are then final."""
        n = _literal(pending, "wgmma_wait's group count")

        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [], f"wgmma.wait_group.sync.aligned {n};", "~{memory}")
            return context.get_dummy_value()

        return types.void(pending), codegen

    # ------------------------------------------------------------------ wgmma.mma_async

    # region: wgmma_intrinsic
    def _wgmma(kind: str, n: int):
        regs = n // 2                       # f32 accumulators per thread for m64nN
        k = WGMMA_K[kind]
        outs = ", ".join(f"${i}" for i in range(regs))
        a, b, s = 2 * regs, 2 * regs + 1, 2 * regs + 2
        # 16-bit: imm-scale-a, imm-scale-b = 1, imm-trans-a = 0 (K-major), imm-trans-b = 1
        # (MN-major); FP8 has no transpose operands (both K-major)
        tail = "1, 1, 0, 1" if k == 16 else "1, 1"
        text = ("{\n.reg .pred p;\n"
                f"setp.ne.b32 p, ${s}, 0;\n"
                f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{kind}.{kind} "
                f"{{{outs}}}, ${a}, ${b}, p, {tail};\n}}")
        constraints = ",".join(["=f"] * regs + [str(i) for i in range(regs)] + ["l", "l", "r"])
        constraints += ",~{memory}"

        def impl(typingctx, acc, first, desc_a, desc_b, scale_d):
            if not (isinstance(acc, types.Array) and acc.dtype == types.float32
                    and isinstance(first, types.Integer) and isinstance(desc_a, types.Integer)
                    and isinstance(desc_b, types.Integer) and isinstance(scale_d, types.Integer)):
                return None

            def codegen(context, builder, sig, args):
                arr = context.make_array(sig.args[0])(context, builder, value=args[0])
                base = context.cast(builder, args[1], sig.args[1], types.int64)
                ptrs = [builder.gep(arr.data, [builder.add(base, ir.Constant(_I64, i))])
                        for i in range(regs)]
                old = [builder.load(p) for p in ptrs]
                da = context.cast(builder, args[2], sig.args[2], types.uint64)
                db = context.cast(builder, args[3], sig.args[3], types.uint64)
                sd = context.cast(builder, args[4], sig.args[4], types.uint32)
                res = _asm(builder, ir.LiteralStructType([_F32] * regs), old + [da, db, sd],
                           text, constraints)
                for i, p in enumerate(ptrs):
                    builder.store(builder.extract_value(res, i), p)
                return context.get_dummy_value()

            return types.void(acc, first, desc_a, desc_b, scale_d), codegen

        impl.__name__ = f"wgmma_m64n{n}k{k}_{kind}"
        impl.__doc__ = (f"``wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{kind}.{kind}``: "
                        f"acc[first:first+{regs}] (+)= A(64×{k}, K-major, desc_a) · "
                        f"B({k}×{n}, {'MN' if k == 16 else 'K'}-major, desc_b) for one "
                        "warpgroup; ``first`` must be "
                        "constant after unrolling (else acc leaves registers), ``scale_d`` 0 (overwrite) or 1 (accumulate). Asynchronous: "
                        "read the accumulators only after :func:`wgmma_wait`.")
        return intrinsic(impl)
    # endregion: wgmma_intrinsic

    for _n in WGMMA_N:
        for _kind, _k in WGMMA_K.items():
            globals()[f"wgmma_m64n{_n}k{_k}_{_kind}"] = _wgmma(_kind, _n)

    def wgmma(kind: str, n: int):
        """The ``wgmma_m64n{n}k{16|32}_{kind}`` intrinsic: those of :data:`WGMMA_N` are made
        at import, any other N (a multiple of 8 up to 256, as the instruction allows) on
        first use."""
        if kind not in WGMMA_K or n % 8 or not 8 <= n <= 256:
            raise ValueError(f"no wgmma intrinsic for kind {kind!r}, N={n}; N must be a "
                             f"multiple of 8 up to 256, the kind one of {tuple(WGMMA_K)}")
        name = f"wgmma_m64n{n}k{WGMMA_K[kind]}_{kind}"
        if name not in globals():
            globals()[name] = _wgmma(kind, n)
        return globals()[name]

    # region: smem_desc
    @cuda.jit(device=True, inline="always")
    def smem_desc_lo(address, lbo):
        """The descriptor's low word: start address and leading byte offset (each >> 4). The
        address field is 14 bits of a shared address below 256 KB, so adding ``offset >> 4``
        to this word is the descriptor of ``address + offset`` (no carry into the LBO field)."""
        return ((address & uint32(0x3FFFF)) >> uint32(4)) | (((lbo >> 4) & 0x3FFF) << 16)

    @intrinsic
    def _pack_b64(typingctx, lo, hi):
        """``mov.b64 d, {lo, hi}``: two 32-bit words as one 64-bit value. Opaque to LLVM, so
        an addition to ``lo`` stays a 32-bit addition (it would otherwise widen it to 64 bits,
        with a carry into ``hi``)."""
        def codegen(context, builder, sig, args):
            return _asm(builder, _I64, [_u32(context, builder, sig.args[0], args[0]),
                                        _u32(context, builder, sig.args[1], args[1])],
                        "mov.b64 $0, {$1, $2};", "=l,r,r", side_effect=False)
        return types.uint64(lo, hi), codegen

    @cuda.jit(device=True, inline="always")
    def smem_desc_join(lo, sbo):
        """The 64-bit descriptor from its low word and a constant high word: the stride byte
        offset (>> 4) and swizzle mode 1 (128-byte swizzle, bit 62)."""
        return _pack_b64(lo, ((sbo >> 4) & 0x3FFF) | (1 << 30))

    @cuda.jit(device=True, inline="always")
    def smem_desc(address, lbo, sbo):
        """64-bit wgmma matrix descriptor for a 128B-swizzled operand at shared ``address``
        (1024-byte-aligned atoms; +32 bytes per 16-deep k-step inside a K-major row): start
        address, leading and stride byte offsets (each stored >> 4), swizzle mode 1."""
        return smem_desc_join(smem_desc_lo(address, lbo), sbo)
    # endregion: smem_desc

    # ------------------------------------------------------------------ mbarrier

    @intrinsic
    def mbar_init(typingctx, bar, count):
        """``mbarrier.init.shared::cta.b64 [bar], count`` — one thread, before any use."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u32(context, builder, sig.args[0], args[0]),
                                          _u32(context, builder, sig.args[1], args[1])],
                 "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}")
            return context.get_dummy_value()
        return types.void(bar, count), codegen

    @intrinsic
    def mbar_arrive(typingctx, bar):
        """``mbarrier.arrive.shared::cta.b64`` — count this thread's arrival."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u32(context, builder, sig.args[0], args[0])],
                 "{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [$0];\n}",
                 "r,~{memory}")
            return context.get_dummy_value()
        return types.void(bar), codegen

    @intrinsic
    def mbar_expect_tx(typingctx, bar, nbytes):
        """``mbarrier.arrive.expect_tx.shared::cta.b64`` — arrive, and make the current phase
        also wait for ``nbytes`` bytes of asynchronous copies (TMA) to land."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u32(context, builder, sig.args[0], args[0]),
                                          _u32(context, builder, sig.args[1], args[1])],
                 "{\n.reg .b64 state;\n"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 state, [$0], $1;\n}",
                 "r,r,~{memory}")
            return context.get_dummy_value()
        return types.void(bar, nbytes), codegen

    def _try_wait(name: str, hint: str):
        """``mbarrier.try_wait.parity.shared::cta.b64`` with the suspend-time operand ``hint``
        ("" for none): 1 once the phase of the given parity (0 or 1) has completed, else 0."""
        def try_wait(typingctx, bar, parity):
            def codegen(context, builder, sig, args):
                return _asm(builder, _I32, [_u32(context, builder, sig.args[0], args[0]),
                                            _u32(context, builder, sig.args[1], args[1])],
                            "{\n.reg .pred p;\n"
                            f"mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2{hint};\n"
                            "selp.u32 $0, 1, 0, p;\n}", "=r,r,r,~{memory}")
            return types.uint32(bar, parity), codegen
        try_wait.__name__ = try_wait.__qualname__ = name
        return intrinsic(try_wait)

    #: One poll, after a bounded, hardware-chosen wait.
    mbar_try_wait = _try_wait("mbar_try_wait", "")
    #: With a suspend-time hint of 10 ms: the thread sleeps until the phase completes (or the
    #: hint's time passes), so a waiting warp issues few instructions.
    mbar_try_wait_sleep = _try_wait("mbar_try_wait_sleep", ", 10000000")

    @cuda.jit(device=True, inline="always")
    def mbar_wait(bar, parity):
        """Poll ``bar`` until the phase of ``parity`` has completed."""
        while mbar_try_wait(bar, parity) == 0:
            pass

    @cuda.jit(device=True, inline="always")
    def mbar_wait_sleep(bar, parity):
        """:func:`mbar_wait` with the suspend-time hint (:func:`mbar_try_wait_sleep`)."""
        while mbar_try_wait_sleep(bar, parity) == 0:
            pass

    # ------------------------------------------------------------------ TMA

    @intrinsic
    def tma_load_2d(typingctx, dst, tensor_map, col, row, bar):
        """``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes``:
        the box whose first element is (``row``, ``col``) of the tensor described by the map at
        global address ``tensor_map`` into shared ``dst`` (1024-byte aligned for the 128B
        swizzle); ``bar`` receives the bytes. Out-of-bounds elements arrive as zeros."""
        def codegen(context, builder, sig, args):
            ops = [_u32(context, builder, sig.args[0], args[0]),
                   context.cast(builder, args[1], sig.args[1], types.uint64),
                   context.cast(builder, args[2], sig.args[2], types.int32),
                   context.cast(builder, args[3], sig.args[3], types.int32),
                   _u32(context, builder, sig.args[4], args[4])]
            _asm(builder, ir.VoidType(), ops,
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
                 "r,l,r,r,r,~{memory}")
            return context.get_dummy_value()
        return types.void(dst, tensor_map, col, row, bar), codegen

    @intrinsic
    def prefetch_tensormap(typingctx, tensor_map):
        """``prefetch.tensormap [addr]`` — bring a tensor map into the cache ahead of use."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(),
                 [context.cast(builder, args[0], sig.args[0], types.uint64)],
                 "prefetch.tensormap [$0];", "l,~{memory}")
            return context.get_dummy_value()
        return types.void(tensor_map), codegen

    # ------------------------------------------------------------------ TMA store

    def _tma_store(name, text, doc):
        """A TMA store intrinsic ``name(src, tensor_map, col, row)`` that emits ``text``."""
        def impl(typingctx, src, tensor_map, col, row):
            def codegen(context, builder, sig, args):
                ops = [_u32(context, builder, sig.args[0], args[0]),
                       context.cast(builder, args[1], sig.args[1], types.uint64),
                       context.cast(builder, args[2], sig.args[2], types.int32),
                       context.cast(builder, args[3], sig.args[3], types.int32)]
                _asm(builder, ir.VoidType(), ops, text, "r,l,r,r,~{memory}")
                return context.get_dummy_value()
            return types.void(src, tensor_map, col, row), codegen
        impl.__name__ = name
        impl.__doc__ = doc
        return intrinsic(impl)

    tma_store_2d = _tma_store(
        "tma_store_2d",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$0];",
        """``cp.async.bulk.tensor.2d.global.shared::cta.bulk_group``: shared ``src`` (one box,
        laid out as the map says: 1024-byte aligned for the 128B swizzle) → the box of the
        tensor whose first element is (``row``, ``col``). Elements outside the tensor are not
        written (the copy engine clips the box). Asynchronous: the writing threads need
        :func:`fence_proxy_async` and a barrier before it; :func:`bulk_commit` closes a group,
        :func:`bulk_wait_read` says when ``src`` may be reused.""")

    tma_store_2d_evict_first = _tma_store(
        "tma_store_2d_evict_first",
        "{ .reg .b64 p; createpolicy.fractional.L2::evict_first.b64 p, 1.0; "
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint "
        "[$1, {$2, $3}], [$0], p; }",
        """:func:`tma_store_2d` with an L2 cache policy of *evict first*
        (``createpolicy.fractional.L2::evict_first``, ``.L2::cache_hint``): the lines it
        writes are the first L2 gives up, before the lines that loads brought in.""")

    bulk_commit = _simple("bulk_commit", "cp.async.bulk.commit_group;",
                          "``cp.async.bulk.commit_group`` — close the group of bulk copies "
                          "(TMA stores) issued so far by this thread.")

    def _bulk_wait(read: bool):
        suffix = ".read" if read else ""

        def impl(typingctx, pending):
            n = _literal(pending, "the bulk group count")

            def codegen(context, builder, sig, args):
                _asm(builder, ir.VoidType(), [], f"cp.async.bulk.wait_group{suffix} {n};",
                     "~{memory}")
                return context.get_dummy_value()
            return types.void(pending), codegen
        impl.__name__ = "bulk_wait_read" if read else "bulk_wait"
        impl.__doc__ = (f"``cp.async.bulk.wait_group{suffix} N`` — wait until at most N (a "
                        "constant) bulk groups of this thread are pending"
                        + (" *reading shared memory* (their sources may be overwritten)"
                           if read else " (their writes are done)") + ".")
        return intrinsic(impl)

    bulk_wait = _bulk_wait(False)
    bulk_wait_read = _bulk_wait(True)

    def _u64(context, builder, ty, value):
        return context.cast(builder, value, ty, types.uint64)

    def _store_f32(name: str, text: str, doc: str, count: int = 2, wide: bool = False):
        """An intrinsic ``name(address, x, y)`` (``count`` 4: ``x, y, z, w``) storing float32
        values as ``text`` says, at a 32-bit shared-window address (``wide``: a 64-bit global
        one)."""
        def codegen(context, builder, sig, args):
            ops = [(_u64 if wide else _u32)(context, builder, sig.args[0], args[0])]
            ops += [context.cast(builder, v, t, types.float32)
                    for v, t in zip(args[1:], sig.args[1:])]
            _asm(builder, ir.VoidType(), ops, text,
                 ("l" if wide else "r") + ",f" * count + ",~{memory}")
            return context.get_dummy_value()

        if count == 2:
            def impl(typingctx, address, x, y):
                return types.void(address, x, y), codegen
        else:
            def impl(typingctx, address, x, y, z, w):
                return types.void(address, x, y, z, w), codegen
        impl.__name__ = name
        impl.__doc__ = doc
        return intrinsic(impl)

    st_shared_v2_f32 = _store_f32(
        "st_shared_v2_f32", "st.shared.v2.f32 [$0], {$1, $2};",
        "``st.shared.v2.f32 [address], {x, y}`` — 8 bytes at an 8-byte aligned shared address.")
    st_shared_bf16x2 = _store_f32(
        "st_shared_bf16x2",
        "{\n.reg .b32 t;\ncvt.rn.bf16x2.f32 t, $2, $1;\nst.shared.b32 [$0], t;\n}",
        "``cvt.rn.bf16x2.f32`` + ``st.shared.b32``: ``x`` and ``y`` rounded to BF16 (to nearest "
        "even), stored as 4 bytes at a 4-byte aligned shared address, ``x`` first.")
    st_shared_f16x2 = _store_f32(
        "st_shared_f16x2",
        "{\n.reg .b32 t;\ncvt.rn.f16x2.f32 t, $2, $1;\nst.shared.b32 [$0], t;\n}",
        "``cvt.rn.f16x2.f32`` + ``st.shared.b32``: ``x`` and ``y`` rounded to FP16 (to nearest "
        "even), stored as 4 bytes at a 4-byte aligned shared address, ``x`` first.")

    # ------------------------------------------------------------------ flags between blocks

    @intrinsic
    def count_arrival(typingctx, address):
        """``atom.acq_rel.gpu.global.add.s32 old, [address], 1`` — add one to an int32 counter
        in global memory and return what it held, acquiring what earlier arrivals released."""
        def codegen(context, builder, sig, args):
            return _asm(builder, _I32, [_u64(context, builder, sig.args[0], args[0])],
                        "atom.acq_rel.gpu.global.add.s32 $0, [$1], 1;", "=r,l,~{memory}")
        return types.int32(address), codegen


    @intrinsic
    def flag_acquire(typingctx, address):
        """``ld.acquire.gpu.global.s32`` — an int32 flag in global memory, read with acquire
        semantics at GPU scope: what its writer stored before releasing it is visible after."""
        def codegen(context, builder, sig, args):
            return _asm(builder, _I32, [_u64(context, builder, sig.args[0], args[0])],
                        "ld.acquire.gpu.global.s32 $0, [$1];", "=r,l,~{memory}")
        return types.int32(address), codegen

    @intrinsic
    def flag_release(typingctx, address):
        """``st.release.gpu.global.s32 [address], 1`` — set a flag, releasing (at GPU scope)
        every write this thread has made or seen (a barrier before it: the warpgroup's)."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u64(context, builder, sig.args[0], args[0])],
                 "st.release.gpu.global.s32 [$0], 1;", "l,~{memory}")
            return context.get_dummy_value()
        return types.void(address), codegen

    @intrinsic
    def flag_clear(typingctx, address):
        """``st.relaxed.gpu.global.s32 [address], 0`` — clear a flag (its one reader, after
        reading it, so the next launch finds it clear)."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u64(context, builder, sig.args[0], args[0])],
                 "st.relaxed.gpu.global.s32 [$0], 0;", "l,~{memory}")
            return context.get_dummy_value()
        return types.void(address), codegen

    @intrinsic
    def ld_shared_v4_f32(typingctx, address):
        """``ld.shared.v4.f32`` — four float32 (16 bytes, 16-byte aligned) from the shared
        memory at ``address`` (a uint32 shared-window address), as a tuple."""
        def codegen(context, builder, sig, args):
            addr = context.cast(builder, args[0], sig.args[0], types.uint32)
            res = _asm(builder, ir.LiteralStructType([_F32] * 4), [addr],
                       "ld.shared.v4.f32 {$0, $1, $2, $3}, [$4];",
                       "=f,=f,=f,=f,r,~{memory}")
            vals = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, sig.return_type, vals)
        return types.UniTuple(types.float32, 4)(address), codegen

    st_global_v4_f32 = _store_f32(
        "st_global_v4_f32", "st.global.v4.f32 [$0], {$1, $2, $3, $4};",
        "``st.global.v4.f32 [address], {x, y, z, w}`` — 16 bytes (16-byte aligned address).",
        4, wide=True)
    st_global_v2_f32 = _store_f32(
        "st_global_v2_f32", "st.global.v2.f32 [$0], {$1, $2};",
        "``st.global.v2.f32 [address], {x, y}`` — 8 bytes (8-byte aligned address).",
        wide=True)
    red_global_add_v4_f32 = _store_f32(
        "red_global_add_v4_f32", "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};",
        "``red.global.add.v4.f32 [address], {x, y, z, w}`` — add four float32 to the 16 bytes "
        "at ``address`` (16-byte aligned) where they live, in L2 (sm_90), with nothing "
        "returned: a relaxed atomic at GPU scope, so several blocks may add to the same 16 "
        "bytes.", 4, wide=True)

    @intrinsic
    def globaltimer(typingctx):
        """``mov.u64 %globaltimer`` — the GPU's global nanosecond timer (one clock for every
        SM, so events of different blocks can be put on one time axis)."""
        def codegen(context, builder, sig, args):
            return _asm(builder, _I64, [], "mov.u64 $0, %globaltimer;", "=l")
        return types.uint64(), codegen

    @intrinsic
    def st_global_u64(typingctx, address, value):
        """``st.global.u64 [address], value`` — 8 bytes at an 8-byte aligned global address."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u64(context, builder, sig.args[0], args[0]),
                                          _u64(context, builder, sig.args[1], args[1])],
                 "st.global.u64 [$0], $1;", "l,l,~{memory}")
            return context.get_dummy_value()
        return types.void(address, value), codegen

    @intrinsic
    def named_barrier(typingctx, bar_id, count):
        """``bar.sync id, count`` — a barrier for ``count`` threads (a constant multiple of 32:
        whole warps) under hardware barrier ``id`` (1–15; 0 is ``syncthreads``)."""
        c = _literal(count, "the barrier's thread count")
        if c % 32 or not 32 <= c <= 1024:
            raise ValueError(f"named_barrier: the count must be a multiple of 32, got {c}")

        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u32(context, builder, sig.args[0], args[0])],
                 f"bar.sync $0, {c};", "r,~{memory}")
            return context.get_dummy_value()
        return types.void(bar_id, count), codegen

    # ------------------------------------------------------------------ clusters

    @intrinsic
    def tma_load_2d_multicast(typingctx, dst, tensor_map, col, row, bar, cta_mask):
        """:func:`tma_load_2d` to every CTA of the cluster whose bit is set in ``cta_mask``:
        the box lands at the same shared offset ``dst`` in each, and each one's mbarrier at
        offset ``bar`` receives the bytes."""
        def codegen(context, builder, sig, args):
            ops = [_u32(context, builder, sig.args[0], args[0]),
                   context.cast(builder, args[1], sig.args[1], types.uint64),
                   context.cast(builder, args[2], sig.args[2], types.int32),
                   context.cast(builder, args[3], sig.args[3], types.int32),
                   _u32(context, builder, sig.args[4], args[4]),
                   context.cast(builder, args[5], sig.args[5], types.uint16)]
            _asm(builder, ir.VoidType(), ops,
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes.multicast::cluster"
                 " [$0], [$1, {$2, $3}], [$4], $5;",
                 "r,l,r,r,r,h,~{memory}")
            return context.get_dummy_value()
        return types.void(dst, tensor_map, col, row, bar, cta_mask), codegen

    def _special(name, register, doc):
        def impl(typingctx):
            def codegen(context, builder, sig, args):
                return _asm(builder, _I32, [], f"mov.u32 $0, {register};", "=r")
            return types.uint32(), codegen
        impl.__name__ = name
        impl.__doc__ = doc
        return intrinsic(impl)

    cluster_ctarank = _special("cluster_ctarank", "%cluster_ctarank",
                               "This block's rank in its cluster (0 … cluster size − 1).")
    cluster_nctarank = _special("cluster_nctarank", "%cluster_nctarank",
                                "The number of blocks in this block's cluster (1 when the "
                                "kernel was launched without clusters).")
    cluster_sync = _simple("cluster_sync",
                           "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;",
                           "``barrier.cluster.arrive.release`` + ``barrier.cluster.wait."
                           "acquire`` — every (non-exited) thread of every block of the "
                           "cluster: after it, the other blocks' earlier shared-memory writes "
                           "and mbarrier inits are visible, and none has exited.")

    @intrinsic
    def mbar_arrive_cluster(typingctx, bar, cta):
        """Arrive on the mbarrier at shared offset ``bar`` *of block ``cta``* of the cluster
        (``mapa`` turns the offset into that block's address). Default semantics (release,
        CTA scope): ``.release.cluster`` would put a GPU-wide memory barrier (``MEMBAR.ALL.GPU``)
        before every arrive; what the arrive orders here — this warpgroup's wgmma reads of the
        stage, already complete — needs none."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [_u32(context, builder, sig.args[0], args[0]),
                                          _u32(context, builder, sig.args[1], args[1])],
                 "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
                 "r,r,~{memory}")
            return context.get_dummy_value()
        return types.void(bar, cta), codegen

    @intrinsic
    def elect_one(typingctx):
        """``elect.sync`` over the full warp: 1 in exactly one lane (the lowest active), 0 in
        the others; every lane of the warp must execute it."""
        def codegen(context, builder, sig, args):
            return _asm(builder, _I32, [],
                        "{\n.reg .pred p;\nelect.sync _|p, 0xffffffff;\n"
                        "selp.u32 $0, 1, 0, p;\n}", "=r,~{memory}")
        return types.uint32(), codegen

    # ------------------------------------------------------------------ registers

    def _setmaxnreg(direction: str):
        def impl(typingctx, count):
            n = _literal(count, "setmaxnreg's register count")
            if n % 8 or not 24 <= n <= 256:
                raise ValueError(f"setmaxnreg needs a multiple of 8 in 24…256, got {n}")

            def codegen(context, builder, sig, args):
                _asm(builder, ir.VoidType(), [],
                     f"setmaxnreg.{direction}.sync.aligned.u32 {n};", "~{memory}")
                return context.get_dummy_value()
            return types.void(count), codegen
        impl.__name__ = f"setmaxnreg_{direction}"
        impl.__doc__ = (f"``setmaxnreg.{direction}.sync.aligned.u32 N`` — every thread of the "
                        f"warpgroup {'raises' if direction == 'inc' else 'lowers'} its register "
                        "limit to N (a constant multiple of 8). Needs a register cap at entry "
                        "(launch bounds with one block per SM).")
        return intrinsic(impl)

    setmaxnreg_inc = _setmaxnreg("inc")
    setmaxnreg_dec = _setmaxnreg("dec")


# ----------------------------------------------------------------------------- host side

#: Dtypes a tensor map here can describe (bfloat16 travels as uint16 bits, FP8 as uint8).
_TMA_DTYPES = {"uint8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",          # FP8 bits: bytes to TMA
               "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
               "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
               "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}


def tensor_map_params(shape, itemsize: int, box_rows: int, box_cols: int) -> dict:
    """Validate and return the arguments of ``cuTensorMapEncodeTiled`` for a row-major 2-D
    tensor of ``shape`` read in boxes of ``box_rows × box_cols`` with the 128-byte swizzle.

    Raises ValueError with the rule broken: the row pitch must be a multiple of 16 bytes, a
    box row must be exactly 128 bytes for this swizzle, a box edge at most 256.
    """
    rows, cols = (int(s) for s in shape)
    if rows < 1 or cols < 1:
        raise ValueError(f"tensor map: empty tensor {shape}")
    if (cols * itemsize) % 16:
        raise ValueError(f"tensor map: the row pitch ({cols} × {itemsize} bytes) must be a "
                         "multiple of 16 bytes; pad the columns to a multiple of "
                         f"{16 // itemsize}")
    if box_cols * itemsize != SWIZZLE_BYTES:
        raise ValueError(f"tensor map: a box row must be {SWIZZLE_BYTES} bytes for the 128B "
                         f"swizzle, got {box_cols} × {itemsize}")
    if not 1 <= box_rows <= 256:
        raise ValueError(f"tensor map: box rows must be 1…256, got {box_rows}")
    return {"dims": (cols, rows), "strides": (cols * itemsize,), "box": (box_cols, box_rows)}


_MAPS_KEPT = 64
_MAPS = LRU(_MAPS_KEPT)


def tensor_map_2d(array, box_rows: int, box_cols: int = 64, *, dtype_name: str | None = None):
    """Encode a tensor map for the C-contiguous device ``array`` (rows × cols) and return it
    as a device ``uint64[16]`` array (64-byte aligned: Numba's allocations are 256-aligned).

    Boxes are ``box_rows × box_cols`` elements (one 128-byte row each), 128B-swizzled,
    out-of-bounds elements filled with zeros. ``dtype_name`` overrides the array's dtype name
    (``"bfloat16"`` for uint16 bits).

    A map holds nothing but the address, shape, pitch, box and element type, so maps are kept
    by exactly those (and the context): a timed loop over the same buffers encodes and copies
    its maps once, not once per launch.
    """
    from cuda.bindings import driver as cu
    from numba import cuda

    name = dtype_name or np.dtype(array.dtype).name
    if name not in _TMA_DTYPES:
        raise ValueError(f"tensor map: unsupported dtype {name!r}")
    if len(array.shape) != 2 or not array.is_c_contiguous():
        raise ValueError("tensor map: the array must be 2-D and C-contiguous")
    itemsize = np.dtype(array.dtype).itemsize
    p = tensor_map_params(array.shape, itemsize, box_rows, box_cols)
    ptr = int(array.__cuda_array_interface__["data"][0])
    if ptr % 16:
        raise ValueError("tensor map: the array's address must be 16-byte aligned")
    key = (id(cuda.current_context()), ptr, tuple(array.shape), name, box_rows, box_cols)
    known = _MAPS.get(key)
    if known is not None:
        return known
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, _TMA_DTYPES[name]), 2, ptr,
        [cu.cuuint64_t(d) for d in p["dims"]], [cu.cuuint64_t(s) for s in p["strides"]],
        [cu.cuuint32_t(b) for b in p["box"]], [cu.cuuint32_t(1), cu.cuuint32_t(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: {err} (shape {array.shape}, "
                           f"box {box_rows}×{box_cols})")
    words = np.array([int(w) for w in tmap.opaque], dtype=np.uint64)
    if words.size != 16:
        raise RuntimeError(f"a CUtensorMap should be 128 bytes, got {8 * words.size}")
    _MAPS[key] = tmap_words = cuda.to_device(words)
    return tmap_words


_DYNAMIC_READY: set = set()


def allow_dynamic_shared(kernel, signature: str, nbytes: int) -> None:
    """Compile ``kernel`` for ``signature`` in this context and let it use ``nbytes`` of
    dynamic shared memory (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``; needed above
    48 KB, at most 227 KB on sm_90)."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import binding, driver

    key = (id(kernel), signature, nbytes, id(cuda.current_context()))
    if key in _DYNAMIC_READY:
        return
    if nbytes > 227 * 1024:
        raise ValueError(f"{nbytes} bytes of shared memory: sm_90 allows at most 227 KB")
    cufunc = kernel.compile(signature)._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
    cufunc.set_shared_memory_carveout(100)
    _DYNAMIC_READY.add(key)


def _launch_config(blocks: int, threads: int, shared: int, cluster: int):
    from cuda.bindings import driver as cu

    cfg = cu.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = blocks, 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
    cfg.sharedMemBytes = shared
    cfg.hStream = cu.CUstream(0)             # (an occupancy query: no launch)
    attr = cu.CUlaunchAttribute()
    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
    cfg.attrs = [attr]
    cfg.numAttrs = 1
    return cfg


def _cufunction(kernel, signature: str):
    from cuda.bindings import driver as cu

    compiled = kernel.compile(signature)
    handle = compiled._codelibrary.get_cufunc().handle
    return compiled, cu.CUfunction(int(handle))     # a CUkernel launches as a CUfunction


_MAX_CLUSTERS = LRU(64)


def max_active_clusters(kernel, signature: str, threads: int, shared: int,
                        cluster: int) -> int:
    """How many clusters of ``cluster`` blocks of this kernel the GPU holds at once
    (``cuOccupancyMaxActiveClusters``): a persistent grid of clusters should not be larger,
    since a GPC whose free SMs cannot take a whole cluster leaves them idle."""
    from cuda.bindings import driver as cu
    from numba import cuda

    def make() -> int:
        _, func = _cufunction(kernel, signature)
        cfg = _launch_config(cluster, threads, shared, cluster)
        err, count = cu.cuOccupancyMaxActiveClusters(func, cfg)
        if err != cu.CUresult.CUDA_SUCCESS or count < 1:
            raise RuntimeError(f"cuOccupancyMaxActiveClusters failed ({err}, {count}) for "
                               f"{threads} threads, {shared} bytes, clusters of {cluster}")
        return int(count)
    key = (id(kernel), signature, threads, shared, cluster, id(cuda.current_context()))
    return _MAX_CLUSTERS.get_or_make(key, make)


def launch_cluster(kernel, signature: str, blocks: int, threads: int, shared: int, args,
                   cluster: int, stream=None) -> None:
    """Launch ``kernel`` (compiled for ``signature``) on ``blocks`` blocks in clusters of
    ``cluster`` along x with ``cuLaunchKernelEx`` and ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION``
    (Numba's ``kernel[grid, block]`` has no cluster option), through the cached launch plan of
    :mod:`lab.enqueue`: the arguments are marshalled once, as Numba does (an array becomes
    meminfo, parent, size, itemsize, data, shape…, strides…), and each launch is one driver
    call on ``stream`` (default: :func:`lab.enqueue.stream`'s, else the default stream), so it
    can be captured in a CUDA graph.
    """
    from lab import enqueue

    if blocks % cluster:
        raise ValueError(f"{blocks} blocks do not make whole clusters of {cluster}")
    enqueue.launch(kernel, signature, blocks, threads, shared, tuple(args), cluster=cluster,
                  stream=stream)
