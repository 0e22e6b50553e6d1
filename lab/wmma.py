"""WMMA from Numba: ``wmma.load`` / ``wmma.mma`` / ``wmma.store`` as inline PTX, and stand-ins.

CUDA C reaches the tensor cores most portably through ``nvcuda::wmma``: a warp declares
*fragments*, fills them with ``load_matrix_sync``, multiplies with ``mma_sync`` and writes back
with ``store_matrix_sync``. Those are PTX's ``wmma.load.{a,b,c}``, ``wmma.mma`` and
``wmma.store.d``, and here each is one Numba intrinsic, built as :mod:`lab.ptx` builds
``mma.sync``. :func:`ops` returns the five operations for one shape and accumulator type:

* shapes (16-bit inputs): ``m16n16k16``, ``m32n8k16``, ``m8n32k16`` (:data:`SHAPES`);
* accumulators: ``f32`` (8 float32 per lane) or ``f16`` (4 registers of two halves per lane);
  A and B are 8 registers of two halves per lane whatever the shape;
* ``load_a(A, index, ldm)`` / ``load_b(B, index, ldm)`` — the whole warp loads the m×k tile of
  A (k×n of B) whose first element is ``A.flat[index]``, rows ``ldm`` elements apart (both
  row-major, as our A and B are stored). The start must be 32-byte aligned and ``ldm`` a
  multiple of 8 halves (16 bytes);
* ``zero_c()`` — an accumulator fragment of zeros; ``load_c(C, index, ldm)`` loads one;
* ``mma(a, b, c)`` — ``d = a·b + c`` for the warp's tile;
* ``store_d(D, index, ldm, d)`` — the warp writes its m×n tile (float32 or float16 array);
* :func:`syncwarp` — ``bar.warp.sync``: the warp's writes seen by all its lanes.

Every lane must execute each operation with the same arguments (``.sync.aligned``). Addresses
are generic, so the same intrinsics read and write global and shared memory.

The fragment is *opaque*: the PTX ISA does not say which lane holds which element (for
``mma.sync`` it does: :mod:`lab.fragments`). Under the simulator each operation is therefore a
plain Python function with the same semantics and a layout of its own: lane ``l`` holds the
elements ``l, l + 32, l + 64, …`` of the tile in row-major order; ``mma`` is cooperative — each
lane posts its fragments, the warp meets at a barrier, and each lane computes its elements of
``a·b + c`` (FP32 or FP16 rounding, as the accumulator type says) from everyone's. What the
GPU's fragments hold instead is measured by the ``wmma`` experiment's probe.
"""
from __future__ import annotations

from collections import namedtuple

from lab import device
from lab.lru import LRU

SIMULATOR = device.SIMULATOR

#: The three WMMA shapes for 16-bit inputs: (m, n, k).
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16)}
#: Accumulator types: registers per lane and NumPy dtype of what ``store_d`` writes.
ACCUMULATORS = {"f32": (8, "float32"), "f16": (4, "float16")}
#: Registers per lane of an A or B fragment (pairs of halves), every shape.
AB_REGISTERS = 8
#: The byte alignment ``wmma.load`` / ``wmma.store`` require of a tile's first element.
ALIGN_BYTES = 32

Ops = namedtuple("Ops", "shape acc load_a load_b load_c zero_c mma store_d")

__all__ = ["SHAPES", "ACCUMULATORS", "AB_REGISTERS", "ALIGN_BYTES", "Ops", "ops", "syncwarp",
           "instruction", "SIMULATOR"]


def _check(shape: str, acc: str) -> None:
    if shape not in SHAPES:
        raise ValueError(f"WMMA shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    if acc not in ACCUMULATORS:
        raise ValueError(f"WMMA accumulator must be one of {', '.join(ACCUMULATORS)}, "
                         f"got {acc!r}")


def instruction(op: str, shape: str, acc: str = "f32") -> str:
    """The PTX text of one operation (``load_a``, ``load_b``, ``load_c``, ``mma``, ``store_d``)
    with numbered operands, as the intrinsics emit it."""
    _check(shape, acc)
    nacc = ACCUMULATORS[acc][0]

    def regs(first, count):
        return "{" + ", ".join(f"${first + i}" for i in range(count)) + "}"

    if op in ("load_a", "load_b"):
        which = op[-1]
        return (f"wmma.load.{which}.sync.aligned.row.{shape}.f16 {regs(0, AB_REGISTERS)}, "
                f"[${AB_REGISTERS}], ${AB_REGISTERS + 1};")
    if op == "load_c":
        return (f"wmma.load.c.sync.aligned.row.{shape}.{acc} {regs(0, nacc)}, [${nacc}], "
                f"${nacc + 1};")
    if op == "mma":
        return (f"wmma.mma.sync.aligned.row.row.{shape}.{acc}.{acc} {regs(0, nacc)}, "
                f"{regs(nacc, AB_REGISTERS)}, {regs(nacc + AB_REGISTERS, AB_REGISTERS)}, "
                f"{regs(nacc + 2 * AB_REGISTERS, nacc)};")
    if op == "store_d":
        return (f"wmma.store.d.sync.aligned.row.{shape}.{acc} [$0], {regs(1, nacc)}, "
                f"${nacc + 1};")
    raise ValueError(f"unknown WMMA operation {op!r}")


_CACHE = LRU(32)


def ops(shape: str, acc: str = "f32") -> Ops:
    """The WMMA operations for ``shape`` (a key of :data:`SHAPES`) and accumulator ``acc``
    (``'f32'`` or ``'f16'``): intrinsics on a GPU, cooperative stand-ins under the simulator."""
    _check(shape, acc)
    return _CACHE.get_or_make((shape, acc),
                              lambda: (_simulated if SIMULATOR else _intrinsics)(shape, acc))


if SIMULATOR:
    import threading

    import numpy as np

    _LOCK = threading.Lock()
    #: Seconds a lane waits for the rest of its warp before giving up (a divergent warp).
    _TIMEOUT = 120.0

    class _Warp:
        """What one simulated warp shares: a slot per lane and a barrier of 32."""

        def __init__(self):
            self.slots = [None] * 32
            self.barrier = threading.Barrier(32, timeout=_TIMEOUT)

    def _warp():
        """This simulated thread's warp (created on first use) and lane."""
        t = threading.current_thread()
        manager = t._manager
        key = (tuple(t.blockIdx), t.thread_id // 32)
        with _LOCK:
            table = manager.__dict__.setdefault("_lab_wmma_warps", {})
            warp = table.get(key)
            if warp is None:
                warp = table[key] = _Warp()
        return warp, t.thread_id % 32

    def syncwarp():
        """Every lane of the warp waits for the others (``bar.warp.sync``)."""
        _warp()[0].barrier.wait()

    def _mine(lane, size):
        return range(lane, size, 32)

    def _simulated(shape, acc):
        m, n, k = SHAPES[shape]
        out_dtype = np.dtype(ACCUMULATORS[acc][1])

        def loader(rows, cols):
            def load(arr, index, ldm):
                flat = arr.reshape(-1)
                lane = _warp()[1]
                return tuple(float(flat[index + (p // cols) * ldm + p % cols])
                             for p in _mine(lane, rows * cols))
            return load

        def zero_c():
            return tuple(0.0 for _ in _mine(_warp()[1], m * n))

        def mma(a, b, c):
            warp, lane = _warp()
            warp.slots[lane] = (a, b, c)
            warp.barrier.wait()
            tiles = []
            for which, (rows, cols) in enumerate(((m, k), (k, n), (m, n))):
                tile = np.empty(rows * cols)
                for other in range(32):
                    tile[other::32] = warp.slots[other][which]
                tiles.append(tile.reshape(rows, cols))
            warp.barrier.wait()      # everyone has read the slots before any lane reuses them
            d = (tiles[0] @ tiles[1] + tiles[2]).astype(out_dtype).ravel()
            return tuple(float(d[p]) for p in _mine(lane, m * n))

        def store_d(arr, index, ldm, d):
            flat = arr.reshape(-1)
            lane = _warp()[1]
            for value, p in zip(d, _mine(lane, m * n)):
                flat[index + (p // n) * ldm + p % n] = value

        return Ops(shape, acc, loader(m, k), loader(k, n), loader(m, n), zero_c, mma, store_d)

else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    from lab.ptx import _F32, _I32, _I64, _asm

    @intrinsic
    def syncwarp(typingctx):
        """``bar.warp.sync 0xffffffff`` — the warp's lanes meet; their memory writes are
        ordered before what follows."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [], "bar.warp.sync 0xffffffff;", "~{memory}")
            return context.get_dummy_value()

        return types.void(), codegen

    def _address(context, builder, array_type, array, index_type, index):
        """Generic address of ``array.flat[index]`` as a 64-bit integer."""
        data = context.make_array(array_type)(context, builder, value=array).data
        idx = context.cast(builder, index, index_type, types.int64)
        return builder.ptrtoint(builder.gep(data, [idx]), _I64)

    def _intrinsics(shape, acc):
        nacc = ACCUMULATORS[acc][0]
        acc_numba = types.float32 if acc == "f32" else types.uint32
        acc_ir = _F32 if acc == "f32" else _I32
        acc_letter = "f" if acc == "f32" else "r"
        acc_array = types.float32 if acc == "f32" else types.float16
        frag_ab = types.UniTuple(types.uint32, AB_REGISTERS)
        frag_c = types.UniTuple(acc_numba, nacc)

        def loader(op, element, count, letter, ret_ir, ret_numba):
            text = instruction(op, shape, acc)
            constraints = ",".join([f"={letter}"] * count) + ",l,r,~{memory}"
            ret = types.UniTuple(ret_numba, count)

            def impl(typingctx, array, index, ldm):
                if not (isinstance(array, types.Array) and array.dtype == element
                        and isinstance(index, types.Integer)
                        and isinstance(ldm, types.Integer)):
                    return None

                def codegen(context, builder, sig, args):
                    address = _address(context, builder, sig.args[0], args[0], sig.args[1],
                                       args[1])
                    ldm_v = context.cast(builder, args[2], sig.args[2], types.int32)
                    res = _asm(builder, ir.LiteralStructType([ret_ir] * count),
                               [address, ldm_v], text, constraints)
                    vals = [builder.extract_value(res, i) for i in range(count)]
                    return context.make_tuple(builder, sig.return_type, vals)

                return ret(array, index, ldm), codegen

            impl.__name__ = f"wmma_{op}_{shape}_{acc}"
            impl.__doc__ = f"``{text}``"
            return intrinsic(impl)

        load_a = loader("load_a", types.float16, AB_REGISTERS, "r", _I32, types.uint32)
        load_b = loader("load_b", types.float16, AB_REGISTERS, "r", _I32, types.uint32)
        load_c = loader("load_c", acc_array, nacc, acc_letter, acc_ir, acc_numba)

        @intrinsic
        def zero_c(typingctx):
            def codegen(context, builder, sig, args):
                zero = ir.Constant(acc_ir, 0)
                return context.make_tuple(builder, sig.return_type, [zero] * nacc)

            return frag_c(), codegen

        mma_text = instruction("mma", shape, acc)
        mma_constraints = ",".join([f"={acc_letter}"] * nacc + ["r"] * (2 * AB_REGISTERS)
                                   + [acc_letter] * nacc)

        @intrinsic
        def mma(typingctx, a, b, c):
            if not (a == frag_ab and b == frag_ab and c == frag_c):
                return None

            def codegen(context, builder, sig, args):
                regs = [builder.extract_value(args[0], i) for i in range(AB_REGISTERS)]
                regs += [builder.extract_value(args[1], i) for i in range(AB_REGISTERS)]
                regs += [builder.extract_value(args[2], i) for i in range(nacc)]
                res = _asm(builder, ir.LiteralStructType([acc_ir] * nacc), regs, mma_text,
                           mma_constraints, side_effect=False)
                vals = [builder.extract_value(res, i) for i in range(nacc)]
                return context.make_tuple(builder, sig.return_type, vals)

            return frag_c(a, b, c), codegen

        store_text = instruction("store_d", shape, acc)
        store_constraints = "l," + ",".join([acc_letter] * nacc) + ",r,~{memory}"

        @intrinsic
        def store_d(typingctx, array, index, ldm, d):
            if not (isinstance(array, types.Array) and array.dtype == acc_array
                    and isinstance(index, types.Integer) and isinstance(ldm, types.Integer)
                    and d == frag_c):
                return None

            def codegen(context, builder, sig, args):
                address = _address(context, builder, sig.args[0], args[0], sig.args[1],
                                   args[1])
                ldm_v = context.cast(builder, args[2], sig.args[2], types.int32)
                regs = [builder.extract_value(args[3], i) for i in range(nacc)]
                _asm(builder, ir.VoidType(), [address, *regs, ldm_v], store_text,
                     store_constraints)
                return context.get_dummy_value()

            return types.void(array, index, ldm, d), codegen

        return Ops(shape, acc, load_a, load_b, load_c, zero_c, mma, store_d)
