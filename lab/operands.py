"""What ``lab.gemm`` checks before anything is allocated, copied or launched: each operand read
once (:func:`describe`: library, address, shape, strides, type), the call refused with the
operand and the problem named (:func:`validate`), the plan's sizes (:func:`check_size`) and the
kernels a choice names against the operands' type (:func:`check_kernels`).

Refused: a type that is not an array, a dtype outside FP32/FP16/BF16, two different dtypes, a
wrong number of dimensions, an empty or mismatched dimension, an ``out`` of the wrong shape or
type, a layout that is not row-major (a transposed view) or rows not packed one after another
(a sliced view's row pitch), arrays on the host mixed with arrays on the device, and on the
device an ``out`` that overlaps A or B (its blocks would write C while others still read the
input); at plan time a shape past what the kernels index (int32 element counts, K as an int32,
the Hopper tile table's int32 columns).

The FP8 calls (``lab.scaled``, ``lab.grouped``) share what they check of FP8 codes and scales:
:func:`fp8_format`, :func:`scale_operand`, :func:`check_scale_values`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab import device, enqueue
from lab.dispatch import GemmError

DTYPES = ("float32", "float16", "bfloat16")
#: The kernels (and their split-K workspaces) index with int32, and take M, N, K as int32.
INT32_LIMIT = 2 ** 31 - 1


@dataclass
class Operand:
    """What ``lab.gemm`` knows of one array: its library, address, shape, strides and type."""
    label: str
    family: str           # "torch", "cupy", "numba", "cai" (other device array), "numpy"
    obj: object
    shape: tuple
    strides: tuple        # bytes
    dtype: str            # "float32", "float16", "bfloat16" (else the refused type's name)
    ptr: int = 0
    itemsize: int = 0     # bytes per element, of the array's own type

    @property
    def host(self) -> bool:
        return self.family == "numpy"

    def span(self) -> tuple[int, int]:
        """The bytes ``[first, last + 1)`` the array's elements occupy."""
        lo = hi = self.ptr
        for extent, stride in zip(self.shape, self.strides):
            reach = (extent - 1) * stride
            lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
        return lo, hi + self.itemsize


_TORCH_DTYPES: dict = {}


def _torch_dtype(t) -> str:
    if not _TORCH_DTYPES:
        import torch
        _TORCH_DTYPES.update({torch.float32: "float32", torch.float16: "float16",
                              torch.bfloat16: "bfloat16"})
    return _TORCH_DTYPES.get(t.dtype, str(t.dtype).replace("torch.", ""))


def _numpy_dtype(dt: np.dtype, family: str) -> str:
    if dt == np.float32 or dt == np.float16:
        return dt.name
    if dt.name == "bfloat16" or (dt == np.uint16 and family in ("numba", "numpy")):
        return "bfloat16"             # ml_dtypes' bfloat16, or lab's uint16 bits
    return dt.name


def describe(x, label: str) -> Operand:
    """The :class:`Operand` for ``x``; TypeError for something that is not an array."""
    module = type(x).__module__
    if module.startswith("torch"):
        if x.device.type != "cuda":
            raise GemmError(f"{label} is a PyTorch tensor on {x.device}; lab.gemm takes CUDA "
                            "tensors (or host NumPy arrays)")
        item = x.element_size()
        return Operand(label, "torch", x, tuple(x.shape), tuple(s * item for s in x.stride()),
                       _torch_dtype(x), int(x.data_ptr()), item)
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{label} is a masked array: its mask would be ignored")
        return Operand(label, "numpy", x, x.shape, x.strides, _numpy_dtype(x.dtype, "numpy"),
                       0, x.itemsize)
    cai = enqueue.array_interface(x)
    if cai is None and device.SIMULATOR and type(x).__name__ == "FakeCUDAArray":
        dt = np.dtype(x.dtype)           # the simulator's array is a NumPy array: its address
        ary = getattr(x, "_ary", None)
        return Operand(label, "numba", x, tuple(x.shape), tuple(x.strides),
                       _numpy_dtype(dt, "numba"),
                       int(ary.ctypes.data) if ary is not None else id(x), dt.itemsize)
    if cai is None:
        raise TypeError(f"{label} must be a device array (Numba, CuPy, PyTorch: "
                        f"__cuda_array_interface__) or a NumPy array, got {type(x).__name__}")
    family = "cupy" if module.startswith("cupy") else \
        "numba" if module.startswith("numba") else "cai"
    dt = np.dtype(cai["typestr"])
    shape = tuple(int(s) for s in cai["shape"])
    strides = enqueue._strides(shape, dt.itemsize, cai.get("strides"))
    return Operand(label, family, x, shape, strides, _numpy_dtype(dt, family),
                   int(cai["data"][0]), dt.itemsize)


#: The Numba array type of each dtype the kernels take (BF16 as its uint16 bits).
NUMBA_DT = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def as_numba(x: Operand, dtype=None, shape=None):
    """A Numba device array over ``x``'s memory (no copy), BF16 as uint16; ``dtype`` and
    ``shape`` read that memory as another type or shape of the same bytes (FP8 codes as uint8,
    a scalar scale as (1, 1))."""
    from numba import cuda

    if x.family == "numba":                 # ml_dtypes' bfloat16: the kernels' uint16 bits
        arr = x.obj.view(np.uint16) if x.obj.dtype.name == "bfloat16" else x.obj
        arr = arr.view(dtype) if dtype is not None else arr
        return arr.reshape(shape) if shape is not None else arr
    typestr = np.dtype(dtype if dtype is not None else NUMBA_DT[x.dtype]).str
    desc = {"shape": tuple(shape or x.shape), "strides": None, "typestr": typestr,
            "data": (x.ptr, False), "version": 3}
    return cuda.from_cuda_array_interface(desc, owner=x.obj, sync=False)


def refuse_unpacked(x: Operand) -> None:
    """GemmError unless ``x`` is row-major with every dimension packed (no transposed or
    sliced view)."""
    want = x.itemsize
    for extent, stride in zip(reversed(x.shape), reversed(x.strides)):
        if extent > 1 and stride != want:
            raise GemmError(f"{x.label} is not a packed row-major array (strides {x.strides} "
                            f"bytes for shape {x.shape}: a transposed or sliced view?); pass "
                            "a contiguous copy")
        want *= extent


def dtype_name(dt) -> str | None:
    """``out_dtype`` as a name of :data:`DTYPES` (a string, a NumPy type or dtype, ml_dtypes'
    bfloat16, a PyTorch dtype); GemmError for anything else."""
    if dt is None:
        return None
    name = dt if isinstance(dt, str) else None
    if name is None and not isinstance(dt, type):
        name = getattr(dt, "name", None)           # a NumPy dtype
    if name is None:
        try:
            name = np.dtype(dt).name               # np.float32, ml_dtypes.bfloat16
        except TypeError:
            name = str(dt).replace("torch.", "")  # torch.float16
    if name not in DTYPES:
        raise GemmError(f"out_dtype must be one of {DTYPES}, got {dt!r}")
    return name


def _where(x: Operand) -> str:
    return "a host NumPy array" if x.host else f"on the GPU ({x.family})"


def _layout(x: Operand) -> None:
    rows, cols = x.shape
    if cols > 1 and x.strides[1] != x.itemsize:
        raise GemmError(f"{x.label} is not row-major: along a row its elements are "
                        f"{x.strides[1]} bytes apart, not {x.itemsize} (strides {x.strides} "
                        f"bytes for shape {x.shape}: a transposed view?); pass a row-major "
                        "copy")
    if rows > 1 and x.strides[0] != cols * x.itemsize:
        raise GemmError(f"{x.label}'s rows are {x.strides[0]} bytes apart, not the "
                        f"{cols * x.itemsize} of its {cols} columns (a row pitch of a sliced "
                        "view?): the kernels read rows packed one after another; pass a "
                        "contiguous copy")


def validate(A: Operand, B: Operand, out: Operand | None, out_dtype: str | None
             ) -> tuple[int, int, int, str]:
    """``(M, N, K, output dtype)``; GemmError naming the operand and the problem."""
    every = (A, B) + ((out,) if out else ())
    for x in every:
        if len(x.shape) != 2:
            raise GemmError(f"{x.label} must be 2-dimensional, got shape {x.shape}")
        if 0 in x.shape:
            raise GemmError(f"{x.label} has an empty dimension (shape {x.shape})")
    for x in (A, B):
        if x.dtype not in DTYPES:
            raise GemmError(f"{x.label} is {x.dtype}; lab.gemm takes float32, float16 or "
                            "bfloat16")
    if A.dtype != B.dtype:
        raise GemmError(f"A is {A.dtype} but B is {B.dtype}; convert one so both match")
    if A.shape[1] != B.shape[0]:
        raise GemmError(f"inner dimensions differ: A is {A.shape[0]}x{A.shape[1]}, B is "
                        f"{B.shape[0]}x{B.shape[1]}")
    out_dtype = output_dtype(A, out, out_dtype)
    for x in every:
        _layout(x)
    m, n, k = A.shape[0], B.shape[1], A.shape[1]
    if out is not None and out.shape != (m, n):
        raise GemmError(f"out is {out.shape[0]}x{out.shape[1]}; A·B is {m}x{n}")
    if A.host != B.host:
        raise GemmError(f"A is {_where(A)} but B is {_where(B)}: both on the host or both on "
                        "the GPU")
    if out is not None and out.host != A.host:
        raise GemmError(f"out is {_where(out)} but A and B are {_where(A)}: pass an out where "
                        "the inputs are (or none)")
    refuse_overlap(out, (A, B))
    return m, n, k, out_dtype


def output_dtype(A: Operand, out: Operand | None, out_dtype: str | None) -> str:
    """C's dtype: ``out``'s, else ``out_dtype``, else A's; GemmError when they disagree or a
    product of A's type cannot be written as it (FP32, or the inputs' 16-bit type)."""
    allowed = ("float32",) if A.dtype == "float32" else ("float32", A.dtype)
    if out is not None and out_dtype is not None and out_dtype != out.dtype:
        raise GemmError(f"out is {out.dtype} but out_dtype says {out_dtype}")
    out_dtype = out.dtype if out is not None else out_dtype or A.dtype
    if out_dtype not in allowed:
        raise GemmError(f"{'out is' if out is not None else 'out_dtype is'} {out_dtype}: a "
                        f"{A.dtype} product can be written as {' or '.join(allowed)}")
    return out_dtype


def refuse_overlap(out: Operand | None, inputs) -> None:
    """GemmError when ``out``, on the GPU, shares bytes with an input: the kernels would write C
    while other blocks still read it."""
    if out is None or out.host:
        return
    for x in inputs:
        (lo, hi), (olo, ohi) = x.span(), out.span()
        if lo < ohi and olo < hi:
            raise GemmError(f"out overlaps {x.label} (bytes {max(lo, olo):#x} to "
                            f"{min(hi, ohi):#x}): the kernels would write C while other "
                            f"blocks still read {x.label}; pass an out of its own")


def _fits(c) -> str | None:
    """Why choice ``c`` cannot index its product (None when it can)."""
    m, n, k = c.m, c.n, c.k
    if max(m, n, k) > INT32_LIMIT:
        return f"M, N and K are passed to the kernels as int32 (at most {INT32_LIMIT:,})"
    if "table" in c.kernel:
        width = c.bn or 256
        tiles = -(-m // 128) * -(-n // width)
        if tiles * width >= 2 ** 31:
            return (f"the tile table holds int32 columns: {tiles:,} tiles of 128x{width} "
                    f"need {tiles * width:,}")
    if c.kernel.startswith("wgmma_"):
        return None                        # 64-bit indices in the epilogue
    counts = {"A": m * k, "B": k * n, "C": m * n}
    if c.splits > 1:
        counts["the split-K workspace"] = c.splits * m * (-(-n // 128) * 128)
    for label, count in counts.items():
        if count > INT32_LIMIT:
            return (f"{label} would hold {count:,} elements and {c.kernel} indexes with int32 "
                    f"(at most {INT32_LIMIT:,})")
    return None


def check_size(choice):
    """``choice`` with the candidates that cannot index this product left out (the first
    that can in its place when the choice itself cannot); GemmError, the product and the
    limit named, when none can. Checked when the call is planned, before anything is
    allocated or launched."""
    from dataclasses import replace

    first = _fits(choice)
    fit = [c for c in (choice, *choice.candidates) if _fits(c) is None]
    if not fit:
        raise GemmError(f"{choice.m}x{choice.n}x{choice.k} is too large for lab.gemm: {first}")
    if len(fit) == 1 + len(choice.candidates):
        return choice
    why = choice.why + ((f"{choice.kernel} left out: {first}",) if first else ())
    return replace(fit[0], why=why, candidates=tuple(fit[1:]))


def check_kernels(choice) -> None:
    """GemmError before any launch when the choice, or a candidate, names a kernel that takes
    another input type than the operands' (a BF16 product sent to an FP16 kernel would read
    BF16 bits as FP16)."""
    from lab.kernels import get_spec

    for c in (choice, *choice.candidates):
        want = np.float32 if c.widen or c.dtype == "float32" else \
            np.float16 if c.dtype == "float16" else np.uint16
        takes = np.dtype(get_spec(c.kernel).dtype)
        if takes != want:
            raise GemmError(f"the plan for {c.dtype} inputs names {c.kernel}, which takes "
                            f"{takes.name}{' (BF16 bits)' if takes == np.uint16 else ''}: "
                            "refused before any launch")


# ----------------------------------------------------------------------------- FP8 operands

#: PyTorch's FP8 dtypes (and ml_dtypes' NumPy ones), as the formats ``lab.fp8`` names.
FP8_FORMATS = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def fp8_format(x: Operand, fmt: str | None, caller: str) -> str:
    """The FP8 format ``x`` holds: its own dtype's, or ``fmt``'s for uint8 codes; GemmError
    (naming ``caller``) for a mismatch or anything else."""
    if x.dtype in FP8_FORMATS:
        if fmt is not None and fmt != FP8_FORMATS[x.dtype]:
            raise GemmError(f"{x.label} is {x.dtype} but fmt says {fmt}")
        return FP8_FORMATS[x.dtype]
    if x.dtype == "uint8":
        if fmt not in ("e4m3", "e5m2"):
            raise GemmError(f"{x.label} holds uint8 codes: say which format with fmt='e4m3' "
                            f"or fmt='e5m2' (got fmt={fmt!r})")
        return fmt
    raise GemmError(f"{x.label} is {x.dtype}; {caller} takes FP8 codes: PyTorch's "
                    "float8_e4m3fn or float8_e5m2, or uint8 with fmt=")


def scale_operand(s, label: str) -> tuple[Operand | None, np.ndarray | None, tuple]:
    """A scale argument as (its operand on the GPU or None, its host values or None, shape):
    a number or a one-element array is a (1, 1) per-tensor scale; float32 only."""
    if isinstance(s, (int, float, np.floating, np.integer)) and not isinstance(s, bool):
        host = np.full((1, 1), float(s), np.float32)
        return None, host, (1, 1)
    x = describe(s, label)
    if x.dtype != "float32":
        raise GemmError(f"{label} is {x.dtype}; scales are float32")
    if x.host:
        host = np.asarray(s, np.float32)
        return None, host.reshape((1, 1)) if host.shape in ((), (1,)) else host, \
            (1, 1) if host.shape in ((), (1,)) else host.shape
    return x, None, (1, 1) if x.shape in ((), (1,)) else x.shape


def check_scale_values(scales: dict, check_device: bool = True) -> None:
    """GemmError unless every scale is finite and above zero (the first bad one named):
    ``scales`` maps a label to :func:`scale_operand`'s (device operand, host values); values
    on the GPU are copied to the host for it (which waits for the GPU) only when
    ``check_device``."""
    for label, (d, host) in scales.items():
        if host is None:
            if not check_device:
                continue
            host = host_values(d)
        bad = np.flatnonzero(~np.isfinite(host) | (host <= 0))
        if bad.size:
            i = np.unravel_index(int(bad[0]), host.shape)
            raise GemmError(f"{label}[{', '.join(map(str, i))}] = {host[i]}: scales must be "
                            "finite and above zero")


def host_values(x: Operand) -> np.ndarray:
    """A device operand's values on the host (float32 for PyTorch's; waits for the GPU)."""
    if x.family == "torch":
        return x.obj.detach().float().cpu().numpy()
    if x.family == "cupy":
        return x.obj.get()
    return np.asarray(x.obj.copy_to_host())


def upload_codes(x: Operand):
    """Host FP8 codes (or ml_dtypes' FP8 values) on the GPU as uint8."""
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(x.obj).view(np.uint8))
