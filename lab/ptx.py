"""Inline-PTX intrinsics for the tensor-core chapters: ``mma.sync``, ``ldmatrix``, ``cp.async``.

Numba has no tensor-core API, but :func:`numba.cuda.extending.intrinsic` lets a Python function
emit LLVM IR, and llvmlite's ``ir.InlineAsm`` puts one PTX instruction in that IR. Each
intrinsic below wraps exactly one instruction (or one address conversion) and is typed with
plain Numba scalars and tuples:

* :func:`shared_address` — the 32-bit shared-state-space address of a shared array's first
  byte (what CUDA C's ``__cvta_generic_to_shared`` returns); ``ldmatrix`` and ``cp.async``
  take their shared operand as such an address, and kernels add byte offsets to it.
* :func:`global_address` — the 64-bit address of an array's first byte, for ``cp.async``.
* :func:`cp_async_16`, :func:`cp_async_commit`, :func:`cp_async_wait` — ``cp.async.cg`` copies
  16 bytes global → shared without passing through registers; a thread groups its copies
  with ``commit_group`` and waits until at most ``N`` groups are still in flight.
* :func:`ldmatrix_x1` … :func:`ldmatrix_x4_trans` — one warp reads one, two or four 8×8
  matrices of 16-bit values from shared memory straight into the fragment layout of ``mma``;
  lane ``l`` supplies the address of row ``l % 8`` of matrix ``l // 8``. ``.trans`` hands out
  the transposed matrices (how a row-major B tile becomes a "col" B fragment).
* :func:`mma_f16` and :func:`mma_bf16` — ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}``:
  a warp multiplies a 16×16 A fragment (4 × b32 per lane) by a 16×8 B fragment (2 × b32) and
  adds a 16×8 FP32 accumulator (4 × f32 per lane).
* :func:`pack_b16` — two 16-bit values (float16 or bfloat16 bits as uint16) into one b32
  register, the low half first, as the fragments hold them.
* :func:`st_shared_v4_b32` — ``st.shared.v4.b32``: four b32 registers, 16 bytes, to a 16-byte
  aligned shared address (where a kernel assembles in registers what ``cp.async`` cannot copy).

Which lane holds which elements is modelled in NumPy in :mod:`lab.fragments`. The simulator
cannot run inline PTX: under it every intrinsic here is a stub that raises, and the kernels
that use them are registered with ``simulator=False``.
"""
from __future__ import annotations

from lab import device

SIMULATOR = device.SIMULATOR

__all__ = ["shared_address", "global_address", "cp_async_16", "cp_async_commit",
           "cp_async_wait", "ldmatrix_x1", "ldmatrix_x2", "ldmatrix_x4", "ldmatrix_x1_trans",
           "ldmatrix_x2_trans", "ldmatrix_x4_trans", "mma_f16", "mma_bf16", "pack_b16",
           "st_shared_v4_b32", "SIMULATOR"]


if SIMULATOR:
    def _stub(name):
        def stub(*args):
            raise NotImplementedError(f"lab.ptx.{name}: inline PTX needs a GPU; the CUDA "
                                      "simulator cannot run it")
        stub.__name__ = name
        return stub

    for _name in __all__[:-1]:
        globals()[_name] = _stub(_name)

else:
    from llvmlite import ir
    from numba import types
    from numba.core.errors import RequireLiteralValue
    from numba.cuda.extending import intrinsic

    _I32 = ir.IntType(32)
    _I64 = ir.IntType(64)
    _F32 = ir.FloatType()

    def _asm(builder, ret, args, text, constraints, side_effect=True):
        fnty = ir.FunctionType(ret, [a.type for a in args])
        return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=side_effect),
                            args)

    def _data_pointer(context, builder, array_type, array_value):
        return context.make_array(array_type)(context, builder, value=array_value).data

    # ------------------------------------------------------------------ addresses

    @intrinsic
    def shared_address(typingctx, array):
        """uint32 address, in the shared state space, of a shared array's first element.

        LLVM ``addrspacecast`` to address space 3 then ``ptrtoint`` to 32 bits: the same
        conversion as CUDA C's ``__cvta_generic_to_shared`` (``cvta.to.shared``), which the
        compiler removes when it can see the array was shared all along.
        """
        if not isinstance(array, types.Array):
            return None

        def codegen(context, builder, sig, args):
            ptr = _data_pointer(context, builder, sig.args[0], args[0])
            shared_ptr = builder.addrspacecast(ptr, ptr.type.pointee.as_pointer(3))
            return builder.ptrtoint(shared_ptr, _I32)

        return types.uint32(array), codegen

    @intrinsic
    def global_address(typingctx, array):
        """int64 (generic = global) address of a device array's first element."""
        if not isinstance(array, types.Array):
            return None

        def codegen(context, builder, sig, args):
            ptr = _data_pointer(context, builder, sig.args[0], args[0])
            return builder.ptrtoint(ptr, _I64)

        return types.int64(array), codegen

    # ------------------------------------------------------------------ cp.async

    @intrinsic
    def cp_async_16(typingctx, dst_shared, src_global):
        """``cp.async.cg.shared.global [dst], [src], 16`` — 16 bytes, bypassing L1.

        ``dst_shared``: uint32 shared address (16-byte aligned); ``src_global``: int64 address
        (16-byte aligned). The copy is asynchronous: it lands after a later
        :func:`cp_async_wait` covering its group (and a barrier, for other threads to see it).
        """
        if not (isinstance(dst_shared, types.Integer) and isinstance(src_global, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            dst = context.cast(builder, args[0], sig.args[0], types.uint32)
            src = context.cast(builder, args[1], sig.args[1], types.int64)
            _asm(builder, ir.VoidType(), [dst, src],
                 "cp.async.cg.shared.global [$0], [$1], 16;", "r,l,~{memory}")
            return context.get_dummy_value()

        return types.void(dst_shared, src_global), codegen

    @intrinsic
    def cp_async_commit(typingctx):
        """``cp.async.commit_group`` — close the group of this thread's copies issued so far."""
        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [], "cp.async.commit_group;", "~{memory}")
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def cp_async_wait(typingctx, pending):
        """``cp.async.wait_group N`` — wait until at most ``N`` committed groups are in flight.

        ``N`` must be a compile-time constant (a literal or a module-level int).
        """
        if not isinstance(pending, types.IntegerLiteral):
            raise RequireLiteralValue("cp_async_wait needs a constant number of groups")
        n = int(pending.literal_value)

        def codegen(context, builder, sig, args):
            _asm(builder, ir.VoidType(), [], f"cp.async.wait_group {n};", "~{memory}")
            return context.get_dummy_value()

        return types.void(pending), codegen

    # ------------------------------------------------------------------ ldmatrix

    def _ldmatrix(count: int, trans: bool):
        suffix = ".trans" if trans else ""
        outs = ", ".join(f"${i}" for i in range(count))
        text = (f"ldmatrix.sync.aligned.m8n8.x{count}{suffix}.shared.b16 "
                f"{{{outs}}}, [${count}];")
        constraints = ",".join(["=r"] * count) + ",r,~{memory}"

        def impl(typingctx, address):
            if not isinstance(address, types.Integer):
                return None
            ret = types.uint32 if count == 1 else types.UniTuple(types.uint32, count)

            def codegen(context, builder, sig, args):
                addr = context.cast(builder, args[0], sig.args[0], types.uint32)
                if count == 1:
                    return _asm(builder, _I32, [addr], text, constraints)
                res = _asm(builder, ir.LiteralStructType([_I32] * count), [addr], text,
                           constraints)
                vals = [builder.extract_value(res, i) for i in range(count)]
                return context.make_tuple(builder, sig.return_type, vals)

            return ret(address), codegen

        impl.__name__ = f"ldmatrix_x{count}{'_trans' if trans else ''}"
        impl.__doc__ = (f"``{text.split(' {')[0]}`` — {count} 8×8 b16 matri"
                        f"{'x' if count == 1 else 'ces'} from shared memory"
                        f"{', transposed' if trans else ''}; returns "
                        f"{'one uint32' if count == 1 else f'{count} uint32 (one per matrix)'}."
                        " Lane l gives the uint32 shared address of row l % 8 of matrix l // 8"
                        " (rows 16-byte aligned).")
        return intrinsic(impl)

    ldmatrix_x1 = _ldmatrix(1, False)
    ldmatrix_x2 = _ldmatrix(2, False)
    ldmatrix_x4 = _ldmatrix(4, False)
    ldmatrix_x1_trans = _ldmatrix(1, True)
    ldmatrix_x2_trans = _ldmatrix(2, True)
    ldmatrix_x4_trans = _ldmatrix(4, True)

    # ------------------------------------------------------------------ mma.sync

    def _mma(kind: str):
        # region: mma_instruction
        text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
                "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
        constraints = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
        # endregion: mma_instruction

        def impl(typingctx, a, b, c):
            ok = (isinstance(a, types.UniTuple) and a.count == 4
                  and isinstance(a.dtype, types.Integer)
                  and isinstance(b, types.UniTuple) and b.count == 2
                  and isinstance(b.dtype, types.Integer)
                  and isinstance(c, types.BaseTuple) and len(c) == 4)
            if not ok:
                return None
            ret = types.UniTuple(types.float32, 4)

            def codegen(context, builder, sig, args):
                ta, tb, tc = sig.args
                regs = [context.cast(builder, builder.extract_value(args[0], i), ta.dtype,
                                     types.uint32) for i in range(4)]
                regs += [context.cast(builder, builder.extract_value(args[1], i), tb.dtype,
                                      types.uint32) for i in range(2)]
                regs += [context.cast(builder, builder.extract_value(args[2], i), tc[i],
                                      types.float32) for i in range(4)]
                res = _asm(builder, ir.LiteralStructType([_F32] * 4), regs, text, constraints,
                           side_effect=False)
                vals = [builder.extract_value(res, i) for i in range(4)]
                return context.make_tuple(builder, sig.return_type, vals)

            return ret(a, b, c), codegen

        impl.__name__ = f"mma_{kind}"
        impl.__doc__ = (f"``mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32``: "
                        "``d = a @ b + c`` for one warp. ``a``: 4 uint32 (8 packed "
                        f"{kind} values of the 16×16 A tile), ``b``: 2 uint32 (4 values of the "
                        "16×8 B tile), ``c``: 4 float32 of the 16×8 accumulator; returns the "
                        "new 4 float32. Layouts: :mod:`lab.fragments`.")
        return intrinsic(impl)

    mma_f16 = _mma("f16")
    mma_bf16 = _mma("bf16")

    # ------------------------------------------------------------------ packing

    @intrinsic
    def pack_b16(typingctx, low, high):
        """One uint32 from two 16-bit values (float16, or bfloat16 bits as uint16): low first."""
        def is16(t):
            return t == types.float16 or (isinstance(t, types.Integer) and t.bitwidth == 16)

        if not (is16(low) and is16(high)):
            return None

        def codegen(context, builder, sig, args):
            lo, hi = (builder.zext(builder.bitcast(v, ir.IntType(16)), _I32) for v in args)
            return builder.or_(lo, builder.shl(hi, ir.Constant(_I32, 16)))

        return types.uint32(low, high), codegen

    # ------------------------------------------------------------------ shared stores

    @intrinsic
    def st_shared_v4_b32(typingctx, address, a, b, c, d):
        """``st.shared.v4.b32 [address], {a, b, c, d}`` — 16 bytes (four uint32) at a 16-byte
        aligned uint32 shared address."""
        if not all(isinstance(t, types.Integer) for t in (address, a, b, c, d)):
            return None

        def codegen(context, builder, sig, args):
            vals = [context.cast(builder, v, t, types.uint32)
                    for v, t in zip(args, sig.args)]
            _asm(builder, ir.VoidType(), vals, "st.shared.v4.b32 [$0], {$1, $2, $3, $4};",
                 "r,r,r,r,r,~{memory}")
            return context.get_dummy_value()

        return types.void(address, a, b, c, d), codegen
