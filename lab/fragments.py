"""A NumPy model of the ``mma.sync.m16n8k16`` fragments and of ``ldmatrix``: which lane holds what.

A tensor-core instruction is issued by a whole warp, and its operands are spread over the 32
lanes' registers. For ``m16n8k16`` with 16-bit inputs and FP32 accumulators (PTX ISA, "Matrix
fragments for mma.m16n8k16"), with ``group = lane // 4`` and ``pair = lane % 4``:

* A (16×16, row-major): 4 registers of two 16-bit values each. Register ``r`` holds row
  ``group + 8·(r % 2)``, columns ``2·pair + 8·(r // 2)`` and the one after it.
* B (16×8, "col": indexed [k, n]): 2 registers. Register ``r`` holds column ``n = group``,
  rows ``k = 2·pair + 8·r`` and the one after it.
* C and D (16×8, FP32): 4 registers of one value. Register ``r`` holds row
  ``group + 8·(r // 2)``, column ``2·pair + r % 2``.

Every lane therefore holds 8 of A's 256 values, 4 of B's 128 and 4 of C's 128. In each packed
register the lower-indexed value sits in the low 16 bits.

``ldmatrix`` (``m8n8``, ``.x1/.x2/.x4``) reads one to four 8×8 matrices of 16-bit values from
shared memory: lane ``l`` supplies the address of row ``l % 8`` of matrix ``l // 8``, and
register ``m`` of lane ``l`` receives row ``l // 4``, columns ``2·(l % 4)`` and ``+1`` of matrix
``m`` — exactly an A-fragment register. With ``.trans`` it receives *column* ``l // 4``, rows
``2·(l % 4)`` and ``+1``: exactly a B-fragment register when the matrix in shared memory is
stored with k along its rows.

Everything here is plain NumPy, runs everywhere, and is the reference the GPU tests compare the
intrinsics of :mod:`lab.ptx` against.
"""
from __future__ import annotations

import numpy as np

WARP = 32
M, N, K = 16, 8, 16


# ----------------------------------------------------------------------------- coordinates

def a_coords(lane: int) -> list[tuple[int, int]]:
    """(row, col) of the 8 A values lane ``lane`` holds, in register order (low half first)."""
    group, pair = divmod(lane, 4)
    out = []
    for reg in range(4):
        row = group + 8 * (reg % 2)
        col = 2 * pair + 8 * (reg // 2)
        out += [(row, col), (row, col + 1)]
    return out


def b_coords(lane: int) -> list[tuple[int, int]]:
    """(k, n) of the 4 B values lane ``lane`` holds, in register order (low half first)."""
    group, pair = divmod(lane, 4)
    out = []
    for reg in range(2):
        k = 2 * pair + 8 * reg
        out += [(k, group), (k + 1, group)]
    return out


def c_coords(lane: int) -> list[tuple[int, int]]:
    """(row, col) of the 4 accumulator values lane ``lane`` holds, in register order."""
    group, pair = divmod(lane, 4)
    return [(group + 8 * (reg // 2), 2 * pair + reg % 2) for reg in range(4)]


def owner_map(operand: str) -> np.ndarray:
    """Matrix of the lane that holds each element of ``operand`` ('A', 'B' or 'C')."""
    coords, shape = {"A": (a_coords, (M, K)), "B": (b_coords, (K, N)),
                     "C": (c_coords, (M, N))}[operand.upper()]
    owner = np.full(shape, -1, dtype=np.int64)
    for lane in range(WARP):
        for r, c in coords(lane):
            owner[r, c] = lane
    return owner


def picture(operand: str) -> str:
    """Text picture: each element of ``operand`` labelled with the lane that holds it."""
    owner = owner_map(operand)
    rows, cols = owner.shape
    head = "      " + " ".join(f"{c:>3}" for c in range(cols))
    lines = [f"{operand.upper()} ({rows}×{cols}): lane holding each element", head]
    lines += [f"{r:>4}  " + " ".join(f"{v:>3}" for v in owner[r]) for r in range(rows)]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- bits

def bits16(x: np.ndarray) -> np.ndarray:
    """16-bit patterns of float16 values (uint16 input, bfloat16 bits, passes through)."""
    x = np.asarray(x)
    return x if x.dtype == np.uint16 else x.astype(np.float16).view(np.uint16)


def pack(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """uint32 registers from two 16-bit patterns, ``low`` in bits 0–15."""
    return low.astype(np.uint32) | (high.astype(np.uint32) << np.uint32(16))


def unpack(regs: np.ndarray, kind: str = "f16") -> tuple[np.ndarray, np.ndarray]:
    """Both halves of packed registers as float64 values of ``kind`` ('f16' or 'bf16')."""
    regs = np.asarray(regs, dtype=np.uint32)
    halves = [(regs & np.uint32(0xFFFF)).astype(np.uint16),
              (regs >> np.uint32(16)).astype(np.uint16)]
    return tuple(to_float64(h, kind) for h in halves)


def to_float64(bits: np.ndarray, kind: str) -> np.ndarray:
    if kind == "f16":
        return bits.view(np.float16).astype(np.float64)
    if kind == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    raise ValueError(f"kind must be 'f16' or 'bf16', got {kind!r}")


# ----------------------------------------------------------------------------- fragments

def _gather(matrix_bits: np.ndarray, coords, regs: int) -> np.ndarray:
    out = np.zeros((WARP, regs), dtype=np.uint32)
    for lane in range(WARP):
        cs = coords(lane)
        for r in range(regs):
            (r0, c0), (r1, c1) = cs[2 * r], cs[2 * r + 1]
            out[lane, r] = pack(matrix_bits[r0, c0], matrix_bits[r1, c1])
    return out


def a_fragment(a: np.ndarray) -> np.ndarray:
    """The (32, 4) uint32 registers of a 16×16 A tile (float16 values or bfloat16 bits)."""
    return _gather(bits16(a), a_coords, 4)


def b_fragment(b: np.ndarray) -> np.ndarray:
    """The (32, 2) uint32 registers of a 16×8 B tile indexed [k, n]."""
    return _gather(bits16(b), b_coords, 2)


def c_fragment(c: np.ndarray) -> np.ndarray:
    """The (32, 4) float32 registers of a 16×8 accumulator tile."""
    c = np.asarray(c, dtype=np.float32)
    return np.array([[c[r, col] for r, col in c_coords(lane)] for lane in range(WARP)],
                    dtype=np.float32)


def c_matrix(regs: np.ndarray) -> np.ndarray:
    """The 16×8 accumulator tile from its (32, 4) registers."""
    out = np.full((M, N), np.nan, dtype=np.float64)
    for lane in range(WARP):
        for reg, (r, c) in enumerate(c_coords(lane)):
            out[r, c] = regs[lane, reg]
    return out


def _unpack_tile(regs, coords, shape, kind):
    out = np.full(shape, np.nan)
    lo, hi = unpack(regs, kind)
    for lane in range(WARP):
        cs = coords(lane)
        for r in range(regs.shape[1]):
            out[cs[2 * r]] = lo[lane, r]
            out[cs[2 * r + 1]] = hi[lane, r]
    return out


def mma(a_regs: np.ndarray, b_regs: np.ndarray, c_regs: np.ndarray,
        kind: str = "f16") -> np.ndarray:
    """What ``mma.sync.m16n8k16.row.col.f32.<kind>`` returns, lane by lane: (32, 4) float64.

    The products of 16-bit values are exact in float64 and the sums nearly so; the hardware
    accumulates in FP32, so compare with a tolerance of a few FP32 ulps.
    """
    a = _unpack_tile(np.asarray(a_regs, np.uint32), a_coords, (M, K), kind)
    b = _unpack_tile(np.asarray(b_regs, np.uint32), b_coords, (K, N), kind)
    d = a @ b + c_matrix(np.asarray(c_regs, np.float64))
    return np.array([[d[r, c] for r, c in c_coords(lane)] for lane in range(WARP)])


def ldmatrix(shared_bits: np.ndarray, row_starts, count: int, trans: bool = False) -> np.ndarray:
    """What ``ldmatrix.m8n8.x<count>[.trans].b16`` returns: (32, count) uint32.

    ``shared_bits`` is shared memory as a 1-D uint16 array; ``row_starts[l]`` is the element
    index lane ``l`` points at (only lanes ``0 … 8·count − 1`` are read), each the start of
    8 consecutive 16-bit values.
    """
    mem = bits16(np.asarray(shared_bits)).ravel()
    mats = [np.stack([mem[row_starts[8 * m + r]: row_starts[8 * m + r] + 8] for r in range(8)])
            for m in range(count)]
    out = np.zeros((WARP, count), dtype=np.uint32)
    for lane in range(WARP):
        q, p = divmod(lane, 4)
        for m, mat in enumerate(mats):
            if trans:
                out[lane, m] = pack(mat[2 * p, q], mat[2 * p + 1, q])
            else:
                out[lane, m] = pack(mat[q, 2 * p], mat[q, 2 * p + 1])
    return out


# ----------------------------------------------------------------------------- banks

def wavefronts(byte_addresses, access_bytes: int = 16) -> int:
    """Shared-memory wavefronts one phase of 16-byte accesses needs (1 = conflict-free).

    Shared memory serves 128 bytes (32 banks × 4 bytes) per wavefront. ``ldmatrix`` is served
    8 rows (8 × 16 bytes) at a time; two rows whose addresses differ but fall in the same
    16-byte bank slot (``address // 16 % 8``) need separate wavefronts.
    """
    slots: dict[int, set[int]] = {}
    for addr in byte_addresses:
        slots.setdefault((addr // access_bytes) % (128 // access_bytes), set()).add(
            addr // access_bytes)
    return max(len(v) for v in slots.values())
