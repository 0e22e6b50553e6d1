"""Tensor cores through WMMA — a warp per tile of C, opaque fragments straight from global memory.

What changed from the FP32 ladder: the arithmetic, as in :mod:`lab.kernels.k07_tensor_core`,
but through the portable interface CUDA C's ``nvcuda::wmma`` compiles to: PTX's
``wmma.load`` / ``wmma.mma`` / ``wmma.store`` (:mod:`lab.wmma`). The warp never says which lane
holds which element: it loads a whole m×16 tile of A and a 16×n tile of B into *opaque*
fragments, multiplies, and stores an m×n tile of C. Three shapes (m16n16k16, m32n8k16,
m8n32k16) and two accumulator types (FP32, or FP16 rounded after every 16-deep step) are
variants of one kernel factory, :func:`make_wmma_kernel`.

Nothing is staged or shared: a warp reads m·16 + 16·n halves per step for 2·m·n·16 FLOPs —
8 FLOP/byte for the 16×16 tile, 6.4 for the 32×8 and 8×32 ones — the same regime as rung 1
of ``mma.sync``: memory-bound.

Edges: the launch pads A and B with zeros to multiples of the tile
(:func:`lab.kernels.k07_tensor_core.pad_inputs`), which also makes the first element of every A
tile, and of every B tile but one kind, 32-byte aligned, as ``wmma.load`` requires. The exception:
m32n8k16's B tiles at odd multiples of 8 columns start 16 bytes past such a boundary (a row-major
B cannot avoid it). ptxas compiles these loads to 4-byte ``LD`` instructions, so nothing wider
depends on it, and the checks on the H200 pass; but the ISA does not promise it. A tile that
lies whole inside C, with FP32 accumulators and N a multiple of 8 (so that its first element is
32-byte aligned too), is stored straight to C; any other tile goes through the warp's own slice of shared memory and its
lanes copy the elements inside C, converting FP16 accumulators to FP32.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32, types

from lab import wmma
from lab.kernels import KernelSpec
from lab.kernels.k07_tensor_core import pad_inputs

#: Warps per block (each with its own tile; they share nothing but the block).
WARPS = 4
#: Shared arrays need an explicit 32-byte alignment on the GPU; the simulator takes none.
SHARED_ALIGN = None if wmma.SIMULATOR else wmma.ALIGN_BYTES

SIGNATURE = "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])"


def make_wmma_kernel(shape: str, acc: str):
    """The WMMA kernel for one shape (``'m16n16k16'``, ``'m32n8k16'``, ``'m8n32k16'``) and
    accumulator (``'f32'``, ``'f16'``)."""
    op = wmma.ops(shape, acc)
    zero_c, load_a, load_b, mma, store_d = op.zero_c, op.load_a, op.load_b, op.mma, op.store_d
    tm, tn, tk = wmma.SHAPES[shape]
    direct = acc == "f32"                 # FP32 tiles inside C may be stored straight to C
    stage_type = float32 if acc == "f32" else types.float16
    stage_size = WARPS * tm * tn

    # region: wmma_kernel
    @cuda.jit
    def wmma_kernel(A, B, C):
        # A: Mp×Kp, B: Kp×Np, both padded to the tile; C: M×N float32.
        tid = int32(cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
        warp = tid >> 5
        lane = tid & 31
        lda = int32(A.shape[1])
        ldb = int32(B.shape[1])
        tiles_n = ldb // tn
        if warp >= int32(A.shape[0]) // tm * tiles_n:
            return                              # a whole warp leaves together
        row = warp // tiles_n * tm
        col = warp % tiles_n * tn
        acc_frag = zero_c()
        for k0 in range(0, lda, tk):
            a = load_a(A, row * lda + k0, lda)       # m×16 tile of A
            b = load_b(B, int32(k0) * ldb + col, ldb)  # 16×n tile of B
            acc_frag = mma(a, b, acc_frag)
        # region: wmma_store
        m, n = C.shape
        if direct and row + tm <= m and col + tn <= n and n % 8 == 0:
            store_d(C, row * int32(n) + col, n, acc_frag)
        else:
            stage = cuda.shared.array(stage_size, stage_type, alignment=SHARED_ALIGN)
            base = (cuda.threadIdx.x >> 5) * (tm * tn)
            store_d(stage, base, tn, acc_frag)
            wmma.syncwarp()
            for i in range(lane, tm * tn, 32):
                r = row + i // tn
                c = col + i % tn
                if r < m and c < n:
                    C[r, c] = float32(stage[base + i])
        # endregion: wmma_store
    # endregion: wmma_kernel

    return wmma_kernel


def _launcher(kernel, tm: int, tn: int, tk: int):
    def launch(A, B, C) -> None:
        """Pad A and B to the tile; one warp per tm×tn tile of C, 4 warps per block."""
        a, b = pad_inputs(A, B, tm, tn, tk)
        warps = (a.shape[0] // tm) * (b.shape[1] // tn)
        kernel[-(-warps // WARPS), 32 * WARPS](a, b, C)
    return launch


#: FP16 accumulation rounds the accumulator to FP16 after every 16-deep step.
HALF_UNIT = 2.0 ** -11


def half_accumulator_factor(k: int) -> float:
    """The error bound's factor on |A|·|B| for FP16 accumulators: the FP32 tensor-core bound
    of :func:`lab.accuracy.bound_factor` plus one FP16 rounding per 16-deep step, grown as
    ``min(s, λ·√s)`` over the s steps (c = 2, as for any tensor-core rounding)."""
    from lab import accuracy

    steps = -(-k // 16)
    return (accuracy.bound_factor(k, tensor_cores=True)
            + accuracy.TENSOR_CORE_FACTOR * HALF_UNIT
            * min(float(steps), accuracy.LAMBDA * math.sqrt(steps)))


def make_half_check(name: str, launch):
    """A ``KernelSpec.check`` for an FP16-accumulator kernel: fresh inputs, output poisoned with
    NaN, float64 reference, and the bound of :func:`half_accumulator_factor`."""

    def check(m: int, n: int, k: int, *, seed: int | None = None):
        from lab import accuracy

        seed = accuracy.new_seed() if seed is None else seed
        a, b = accuracy.random_inputs(m, n, k, np.float16, np.random.default_rng(seed))
        d = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        launch(cuda.to_device(a), cuda.to_device(b), d)
        out = d.copy_to_host()
        a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
        factor = half_accumulator_factor(k)
        floor = -(-k // 16) * float(np.finfo(np.float16).smallest_subnormal)
        return accuracy.judge(out, a64 @ b64, factor * (np.abs(a64) @ np.abs(b64)) + floor,
                              kernel=name, shape=(m, n, k), dtype_name="float16",
                              factor=factor, seed=seed, what="the FP16-accumulator bound")

    return check


EDGES = ("launch pads A and B with zeros to the tile; edge tiles (and FP16 accumulators) are "
         "stored through shared memory, copied with row < M, col < N")

KERNELS: dict = {}
SPECS = []
for _shape, (_tm, _tn, _tk) in wmma.SHAPES.items():
    for _acc in wmma.ACCUMULATORS:
        _name = f"wmma_{_shape}_{_acc}"
        _kernel = make_wmma_kernel(_shape, _acc)
        _launch = _launcher(_kernel, _tm, _tn, _tk)
        KERNELS[_name] = _kernel
        SPECS.append(KernelSpec(
            _name, f"WMMA {_shape}, one warp per {_tm}×{_tn} tile, opaque fragments from "
            f"global (FP16 in, {'FP32' if _acc == 'f32' else 'FP16'} acc)", np.float16,
            _launch, simulator=True, chapter="5", compile=((_kernel, SIGNATURE),), edges=EDGES,
            tile=(_tm, _tn, _tk), min_cc=(7, 5), needs=f"wmma.{_shape}, FP16",
            check=make_half_check(_name, _launch) if _acc == "f16" else None))


# ----------------------------------------------------------------------------- the probe

def make_probe_kernel(shape: str):
    """One warp loads an A, a B and an FP32 C tile of ``shape`` with ``wmma.load`` and writes
    every lane's fragment registers out unchanged (A, B: 8 uint32 each; C: 8 float32) — what the
    opaque fragment holds, to compare with the documented ``mma.sync`` map."""
    op = wmma.ops(shape, "f32")
    load_a, load_b, load_c = op.load_a, op.load_b, op.load_c

    # region: wmma_probe
    @cuda.jit
    def probe(A, B, C, regs_a, regs_b, regs_c):
        lane = cuda.threadIdx.x
        a = load_a(A, 0, A.shape[1])
        b = load_b(B, 0, B.shape[1])
        c = load_c(C, 0, C.shape[1])
        for i in range(wmma.AB_REGISTERS):
            regs_a[lane, i] = a[i]
            regs_b[lane, i] = b[i]
            regs_c[lane, i] = c[i]
    # endregion: wmma_probe

    return probe


def probe_registers(shape: str) -> dict:
    """Run the probe for ``shape`` on tiles whose element (r, c) holds ``r·cols + c`` (exact
    in FP16); returns, per operand, a (32, values per lane) array of the flat indices each
    lane holds in register order (low half first)."""
    tm, tn, tk = wmma.SHAPES[shape]
    a = np.arange(tm * tk, dtype=np.float16).reshape(tm, tk)
    b = np.arange(tk * tn, dtype=np.float16).reshape(tk, tn)
    c = np.arange(tm * tn, dtype=np.float32).reshape(tm, tn)
    regs = [cuda.device_array((32, wmma.AB_REGISTERS), dtype=t)
            for t in (np.uint32, np.uint32, np.float32)]
    make_probe_kernel(shape)[1, 32](cuda.to_device(a), cuda.to_device(b), cuda.to_device(c),
                                    *regs)
    ra, rb, rc = (r.copy_to_host() for r in regs)

    def halves(r):
        lo = (r & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
        hi = (r >> np.uint32(16)).astype(np.uint16).view(np.float16)
        return np.stack([lo, hi], axis=-1).reshape(32, -1).astype(np.int64)

    return {"A": halves(ra), "B": halves(rb), "C": rc.astype(np.int64)}
