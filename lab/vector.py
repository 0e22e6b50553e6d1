"""16-byte loads and stores of four float32 values, for kernels whose compiler will not vectorise.

Numba turns ``x[i]`` into one 4-byte load, and NVVM does not merge four neighbouring ones into a
16-byte access (it cannot prove the alignment). These intrinsics load or store a ``<4 x float>``
with ``align 16`` through an explicit address space, so the SASS has ``LDG.E.128`` /
``LDS.128`` / ``STS.128`` / ``STG.E.128``:

* ``ld_global_v4(arr, i)`` / ``st_global_v4(arr, i, a, b, c, d)`` — ``arr`` a C-contiguous
  global float32 array (any number of dimensions), ``i`` a flat int32 element index;
* ``ld_shared_v4(arr, i)`` / ``st_shared_v4(arr, i, a, b, c, d)`` — the same for a
  ``cuda.shared.array`` of float32;
* ``st_shared_f32(arr, i, v)`` — one 4-byte shared store at a flat index *without* Numba's
  negative-index wrap-around (which costs a compare, a select and registers per store when the
  index is a signed integer the compiler cannot prove non-negative).

The caller guarantees ``i`` is a multiple of 4 and the array's start is 16-byte aligned (true
for every ``cuda.device_array`` and every shared array of float32 whose size is a multiple of
4 … declared first); a misaligned 16-byte access is a hardware fault, not a slow path.

Under the simulator the same names are plain Python functions returning or writing four
elements, so kernels that use them still run (and are checked) there.
"""
from __future__ import annotations

from lab import device

__all__ = ["ld_global_v4", "st_global_v4", "ld_shared_v4", "st_shared_v4", "st_shared_f32"]

if device.SIMULATOR:
    def _flat(arr):
        return arr.reshape(-1) if getattr(arr, "ndim", 1) != 1 else arr

    def ld_global_v4(arr, i):
        f = _flat(arr)
        return f[i], f[i + 1], f[i + 2], f[i + 3]

    def st_global_v4(arr, i, a, b, c, d):
        f = _flat(arr)
        f[i] = a
        f[i + 1] = b
        f[i + 2] = c
        f[i + 3] = d

    ld_shared_v4 = ld_global_v4
    st_shared_v4 = st_global_v4

    def st_shared_f32(arr, i, v):
        _flat(arr)[i] = v

else:
    from llvmlite import ir
    from numba import types
    from numba.core.extending import intrinsic

    _F32X4 = ir.VectorType(ir.FloatType(), 4)
    _GLOBAL, _SHARED = 1, 3

    def _vector_pointer(context, builder, arrty, arr, index, space):
        ary = context.make_array(arrty)(context, builder, arr)
        ptr = builder.gep(ary.data, [index])
        vptr = builder.bitcast(ptr, _F32X4.as_pointer())
        return builder.addrspacecast(vptr, ir.PointerType(_F32X4, space))

    def _as_int64(builder, index, signed):
        """Widen an index to 64 bits (sign- or zero-extended, as its Numba type says)."""
        if index.type.width == 64:
            return index
        return (builder.sext if signed else builder.zext)(index, ir.IntType(64))

    def _check(arr, index):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32
                and arr.layout == "C"):
            raise TypeError(f"16-byte access needs a C-contiguous float32 array, got {arr}")
        if not isinstance(index, types.Integer):
            raise TypeError(f"16-byte access needs an integer index, got {index}")

    # region: load_v4
    def _make_load(space):
        def load(typingctx, arr, index):
            _check(arr, index)
            sig = types.UniTuple(types.float32, 4)(arr, index)

            def codegen(context, builder, sig, args):
                index = _as_int64(builder, args[1], sig.args[1].signed)
                vptr = _vector_pointer(context, builder, sig.args[0], args[0], index, space)
                vec = builder.load(vptr, align=16)
                vals = [builder.extract_element(vec, ir.Constant(ir.IntType(32), j))
                        for j in range(4)]
                return context.make_tuple(builder, sig.return_type, vals)
            return sig, codegen
        return load
    # endregion: load_v4

    def _make_store(space):
        def store(typingctx, arr, index, a, b, c, d):
            _check(arr, index)
            sig = types.void(arr, index, types.float32, types.float32, types.float32,
                             types.float32)

            def codegen(context, builder, sig, args):
                index = _as_int64(builder, args[1], sig.args[1].signed)
                vptr = _vector_pointer(context, builder, sig.args[0], args[0], index, space)
                vec = ir.Constant(_F32X4, ir.Undefined)
                for j, (v, t) in enumerate(zip(args[2:], sig.args[2:])):
                    v = context.cast(builder, v, t, types.float32)
                    vec = builder.insert_element(vec, v, ir.Constant(ir.IntType(32), j))
                builder.store(vec, vptr, align=16)
                return context.get_dummy_value()
            return sig, codegen
        return store

    def _make_scalar_store(space):
        def store(typingctx, arr, index, v):
            _check(arr, index)
            sig = types.void(arr, index, types.float32)

            def codegen(context, builder, sig, args):
                index = _as_int64(builder, args[1], sig.args[1].signed)
                ary = context.make_array(sig.args[0])(context, builder, args[0])
                ptr = builder.addrspacecast(builder.gep(ary.data, [index]),
                                            ir.PointerType(ir.FloatType(), space))
                builder.store(args[2], ptr, align=4)
                return context.get_dummy_value()
            return sig, codegen
        return store

    # numba's @intrinsic registers by function name; give each its own.
    def _named(fn, name):
        fn.__name__ = fn.__qualname__ = name
        return intrinsic(fn)

    ld_global_v4 = _named(_make_load(_GLOBAL), "ld_global_v4")
    ld_shared_v4 = _named(_make_load(_SHARED), "ld_shared_v4")
    st_global_v4 = _named(_make_store(_GLOBAL), "st_global_v4")
    st_shared_v4 = _named(_make_store(_SHARED), "st_shared_v4")
    st_shared_f32 = _named(_make_scalar_store(_SHARED), "st_shared_f32")
