"""``lab.gemm(A, B, out=None)``: the face a user calls — any device array, the kernel picked for
the GPU, the dtype and the shape, launched through cached launch plans (:mod:`lab.enqueue`).

Inputs: Numba device arrays, CuPy arrays, PyTorch tensors (anything with
``__cuda_array_interface__``; PyTorch's BF16 tensors are read by address, since that interface
has no BF16) and host NumPy arrays (copied to the GPU and back); FP32, FP16 or BF16, both the
same, 2-D and row-major. ``out``: FP32 or the inputs' 16-bit type; when None, the inputs' type
(as ``torch.mm`` and ``numpy.matmul`` do) or ``out_dtype``; it is allocated by the inputs'
library. Numba's BF16 is uint16 bits (as everywhere in ``lab``).

The choice (:func:`explain` says which kernel and why, for this GPU or a given capability):

* compute capability 9.0, 16-bit inputs: the persistent, warp-specialised ``wgmma`` kernel with
  its tile order read from a table (:mod:`lab.kernels.wgmma`; :data:`HOPPER_RUNG`: Hopper
  rung 18 for a 16-bit C, written by its epilogue, Hopper rung 19 for an FP32 C) on a tile of
  the menu :data:`TILES` ranked by whole waves (:func:`menu`), on as few blocks as finish in
  the same waves (:func:`balanced_blocks`); the next tiles, and stream-K when the tiles fill
  less than one wave, are timed beside it on the first call at a shape, and the winner is kept
  on disk for this GPU (:func:`tune`); M <= :data:`SMALL_M` goes to the small-M kernel first;
* 8.x, 16-bit: chapter 5's tuned ``mma.sync`` kernel (``tc_fp16`` / ``tc_bf16``), split-K for
  the same few-tile shapes (FP16);
* FP32 inputs anywhere, and 16-bit inputs on a GPU without ``mma.sync`` (7.5) or in the
  simulator: the tuned SIMT kernel (``warptile_tuned``, split-K when few tiles), 16-bit inputs
  widened to FP32 first;
* a 16-bit C from a kernel that writes FP32 goes through an FP32 workspace and one narrowing
  kernel.

Everything is checked before anything is copied or launched: a type that is not an array,
a dtype outside FP32/FP16/BF16, two different dtypes, a wrong number of dimensions, an empty
or mismatched dimension, a layout that is not row-major, an ``out`` of the wrong shape or type,
arrays on the host mixed with arrays on the device, a GPU older than compute capability 7.5.

A repeated call with the same buffers (and the same stream) replays the launch plans recorded
on its first call (``launch_cost`` results). With PyTorch or CuPy arrays and an ``out``, a
repeat is found by the ids of the three arrays and confirmed by what the recorded plans depend
on — each array's address, shape, strides and dtype, read through the library's own cheap
accessors (no ``__cuda_array_interface__`` dictionary is built) — and nothing is re-validated:
it costs the driver calls and a few attribute reads (:class:`Hot`). Anything else (a new
array, a changed address or shape, an explicit stream, a stream block) takes the checked path.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import numpy as np

from lab import convert, device, timing
from lab.lru import LRU
from lab import enqueue

from numba import cuda  # noqa: E402  (after lab.device)

#: Oldest compute capability ``lab.gemm`` runs on (the toolkit's; see lab.kernels).
MIN_CC = (7, 5)
#: A shape whose output tiles fill less than this share of the SMs, with K at least
#: :data:`LONG_K` times the tile's k-step, goes to split-K. On the H200 (``suite`` results)
#: the ``wgmma`` kernel stays within a few percent of cuBLAS down to 112 tiles of 128x256,
#: while split-K on ``mma.sync`` reached 0.2-0.6 of it: split only below a quarter of the SMs.
FEW_TILES = 0.25
LONG_K = 8
#: ... and only a skinny product (M or N at most this): a small square stays unsplit.
SKINNY = 256
#: Split factors timed against each other (and the heuristic's) on the first few-tile call.
SPLIT_CANDIDATES = (2, 4, 8, 16)
#: Calls timed per candidate when tuning.
TUNE_CALLS = 10
#: The H200's SM count, assumed when a choice is explained for a capability without a GPU.
SM_DEFAULT = 132
DTYPES = ("float32", "float16", "bfloat16")
#: Recorded calls kept (by buffers and stream), and fast paths (by the ids of the arrays).
CALLS_KEPT = 256
#: Shapes whose tuned choice is kept; launchers and workspaces kept.
TUNED_KEPT = 256
LAUNCHERS_KEPT = 64
WORKSPACES_KEPT = 16
#: M at or below which 16-bit inputs on compute capability 8.0+ go to the small-M kernel
#: (:mod:`lab.kernels.small_m`); ``LAB_GEMM_SMALL_M=0`` in the environment turns it off
#: (the choice falls back to split-K on 128-row tiles), to compare the two. Its partial tiles
#: are added by 16-byte loads from L2 with several slices in flight, on 128- or 64-column
#: tiles (both timed), so the whole decode range M <= 128 goes there; on 9.0 the stream-K
#: wgmma kernel (16-bit C) and, above 64 rows, the unsplit wgmma kernel are timed beside it.
SMALL_M = 128
SMALL_M_ON = os.environ.get("LAB_GEMM_SMALL_M", "1").strip() not in ("0", "off", "no")


class GemmError(ValueError):
    """Input ``lab.gemm`` refuses, with the operand and the problem."""


# ----------------------------------------------------------------------------- operands

@dataclass
class Operand:
    """What ``lab.gemm`` knows of one array: its library, address, shape, strides and type."""
    label: str
    family: str           # "torch", "cupy", "numba", "cai" (other device array), "numpy"
    obj: object
    shape: tuple
    strides: tuple        # bytes
    dtype: str            # "float32", "float16", "bfloat16"
    ptr: int = 0

    @property
    def host(self) -> bool:
        return self.family == "numpy"

    @property
    def itemsize(self) -> int:
        return 4 if self.dtype == "float32" else 2

    def row_major(self) -> bool:
        rows, cols = self.shape
        return (cols == 1 or self.strides[1] == self.itemsize) and \
            (rows == 1 or self.strides[0] == cols * self.itemsize)


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
        dtype = _torch_dtype(x)
        item = x.element_size()
        return Operand(label, "torch", x, tuple(x.shape), tuple(s * item for s in x.stride()),
                       dtype, int(x.data_ptr()))
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{label} is a masked array: its mask would be ignored")
        return Operand(label, "numpy", x, x.shape, x.strides, _numpy_dtype(x.dtype, "numpy"))
    cai = enqueue.array_interface(x)
    if cai is None and device.SIMULATOR and type(x).__name__ == "FakeCUDAArray":
        dt = np.dtype(x.dtype)
        return Operand(label, "numba", x, tuple(x.shape), tuple(x.strides),
                       _numpy_dtype(dt, "numba"), id(x))
    if cai is None:
        raise TypeError(f"{label} must be a device array (Numba, CuPy, PyTorch: "
                        f"__cuda_array_interface__) or a NumPy array, got {type(x).__name__}")
    family = "cupy" if module.startswith("cupy") else \
        "numba" if module.startswith("numba") else "cai"
    dt = np.dtype(cai["typestr"])
    shape = tuple(int(s) for s in cai["shape"])
    strides = enqueue._strides(shape, dt.itemsize, cai.get("strides"))
    return Operand(label, family, x, shape, strides, _numpy_dtype(dt, family),
                   int(cai["data"][0]))


def validate(A: Operand, B: Operand, out: Operand | None, out_dtype: str | None
             ) -> tuple[int, int, int, str]:
    """``(M, N, K, output dtype)``; GemmError naming the operand and the problem."""
    for x in (A, B) + ((out,) if out else ()):
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
    for x in (A, B) + ((out,) if out else ()):
        if not x.row_major():
            raise GemmError(f"{x.label} is not row-major and contiguous (strides {x.strides} "
                            f"bytes for shape {x.shape}: a transposed or sliced view?); pass "
                            "a contiguous copy")
    allowed = ("float32",) if A.dtype == "float32" else ("float32", A.dtype)
    m, n, k = A.shape[0], B.shape[1], A.shape[1]
    if out is not None:
        if out.shape != (m, n):
            raise GemmError(f"out is {out.shape[0]}x{out.shape[1]}; A·B is {m}x{n}")
        if out_dtype is not None and out_dtype != out.dtype:
            raise GemmError(f"out is {out.dtype} but out_dtype says {out_dtype}")
        out_dtype = out.dtype
        if out.host != A.host:
            raise GemmError("out and A must both be on the host or both on the GPU")
    out_dtype = out_dtype or A.dtype
    if out_dtype not in allowed:
        raise GemmError(f"a {A.dtype} product can be written as {' or '.join(allowed)}, "
                        f"not {out_dtype}")
    if A.host != B.host:
        raise GemmError("A and B must both be on the host or both on the GPU "
                        f"(A: {A.family}, B: {B.family})")
    return m, n, k, out_dtype


# ----------------------------------------------------------------------------- the choice

@dataclass(frozen=True)
class Choice:
    """What :func:`explain` says was picked: the kernel (a registered name), how it is run, and why."""
    kernel: str
    m: int
    n: int
    k: int
    dtype: str
    out_dtype: str
    cc: tuple | None
    why: tuple = field(default=())
    splits: int = 1
    bn: int = 0                # tile width of the small-M kernel (0: the kernel's own)
    bm: int = 0                # its tile rows when not chosen by M (0: by M)
    blocks: int = 0            # stream-K's block count when capped (0: one per SM)
    fixup: str = ""            # stream-K's fix-up when not the kernel's own (the finisher's)
    widen: bool = False        # 16-bit inputs widened to FP32 for a SIMT kernel
    narrow: bool = False       # FP32 workspace narrowed to the 16-bit C
    native_out: bool = False   # the kernel writes the 16-bit C itself
    candidates: tuple = ()     # other choices timed against this one on the first call
    tuned: str = ""            # what the first call's timing found

    def __str__(self) -> str:
        how = [self.kernel + (f" (split-K, {self.splits} slices)" if self.splits > 1 else "")
               + (f" ({f'{self.bm}-row, ' if self.bm else ''}{self.bn}-column tiles)"
                  if self.bn else "") + (f" (on {self.blocks} blocks)" if self.blocks else "")
               + (f" (fix-up {self.fixup})" if self.fixup else "")]
        if self.widen:
            how.append(f"inputs widened {self.dtype} -> float32 first")
        if self.narrow:
            how.append(f"float32 result narrowed to {self.out_dtype} after")
        if self.native_out:
            how.append(f"{self.out_dtype} written by the kernel's epilogue")
        if self.candidates:
            how.append(f"{len(self.candidates) + 1} candidates timed on the first call")
        if self.tuned:
            how.append(self.tuned)
        return (f"{self.m}x{self.n}x{self.k} {self.dtype} -> {self.out_dtype}: "
                + "; ".join(how) + "\n  because " + "; ".join(self.why))


def _device_cc() -> tuple | None:
    from lab.kernels import current_cc

    return current_cc()


def _sm_count() -> int:
    if not device.GPU:
        return SM_DEFAULT
    from lab.kernels import wgmma
    return wgmma.host._sm_count()


#: The Hopper rungs ``lab.gemm`` runs (chapter 7): for a 16-bit C rung 11 (16-bit C staged a
#: whole tile at a time, a grid of 128 blocks: 1.016 of ``torch.mm`` at 8192³ FP16, 0.988 at
#: 4096³ in ``hopper_past``); for an FP32 C rung 7 (a whole FP32 tile does not fit beside the
#: stages); for M <= 128, and below one wave of tiles, the first call also times chapter 7's
#: rung 12, stream-K, which spreads the k-slices of a few tiles over every SM (a wgmma split-K).
#: Hopper, 16-bit inputs: rung 18's kernel (tile table; a 16-bit C written by its epilogue) and
#: rung 19's (the FP32 C's), on a tile of :data:`TILES`.
HOPPER_RUNG = {"f16": "wgmma_table", "f32": "wgmma_handoff_table"}
HOPPER_STREAMK = "wgmma_streamk"
#: The tile menu (rows × columns of C per block; two consumer warpgroups of 64 rows), each with
#: as many stages as fit beside its staging, and a prior: the share of the 128×256 tile's
#: rate a tile keeps when every SM is busy (a narrower tile reads more A per multiply-add and
#: issues smaller wgmma). The heuristic ranks the tiles by waves × tile area / prior; the
#: first call at a shape times the best few (:data:`MENU_TIMED`) and keeps the fastest.
RUNG_BN = 256                  # the rungs' own tile width (a choice's bn 0)
TILES = {(128, 256): 1.0, (128, 192): 0.95, (128, 128): 0.85, (128, 64): 0.65}
#: Tiles timed on a first call: the heuristic's two best and the next ones within this factor
#: of its estimate, at most :data:`MENU_TIMED` in all.
MENU_SLACK, MENU_TIMED = 1.3, 3


def _waves(tiles: int, sms: int) -> int:
    return -(-tiles // sms)


def balanced_blocks(tiles: int, sms: int) -> int:
    """Persistent blocks for ``tiles`` tiles on ``sms`` SMs: as few as finish in the same
    number of waves (512 tiles on 132 SMs: 4 waves either way, so 128 blocks of 4 tiles; Hopper
    rung 11's grid of 128 at 4096³ is this rule's answer there)."""
    return -(-tiles // _waves(tiles, sms))


def menu(m: int, n: int, sms: int) -> list[tuple[float, int, int]]:
    """The tiles of :data:`TILES` as ``(estimate, bm, bn)``, best first: waves × tile area /
    prior (arbitrary units: only their order and ratios matter)."""
    out = []
    for (bm, bn), prior in TILES.items():
        tiles = -(-m // bm) * -(-n // bn)
        out.append((_waves(tiles, sms) * bm * bn / prior, bm, bn))
    return sorted(out)


def _hopper_choice(rung: str, m, n, k, dtype, out_dtype, cc, why, sms=0, bn=0) -> Choice:
    """Hopper ``rung`` for this product: its registered name and how C is written (a 16-bit
    rung writes a 16-bit C itself; an FP32 rung asked for a 16-bit C goes through a workspace
    and the narrowing pass); a tile-table rung on ``bn``-column tiles (0: its own) with the
    balanced block count (:func:`balanced_blocks`) for ``sms`` SMs."""
    name = rung + ("_bf16" if dtype == "bfloat16" else "_fp16")
    wide = out_dtype == "float32"
    native = rung != HOPPER_RUNG["f32"]
    if wide and native:
        raise ValueError(f"{rung} writes a 16-bit C only")
    bn = 0 if bn == RUNG_BN else bn
    blocks = 0
    if rung in HOPPER_RUNG.values() and sms:
        bm, width = 128, bn or 256
        blocks = balanced_blocks(-(-m // bm) * -(-n // width), sms)
    return Choice(name, m, n, k, dtype, out_dtype, tuple(cc), tuple(why), bn=bn,
                  blocks=blocks, native_out=native, narrow=not native and not wide)


def _streamk(m, n, k, dtype, out_dtype, cc, sms, why) -> list[Choice]:
    """The stream-K wgmma kernel (atomic fix-up, k-slices shared over every SM) on 128×256
    and 128×128 tiles, for a 16-bit C."""
    if out_dtype == "float32":
        return []
    first = _hopper_choice(HOPPER_STREAMK, m, n, k, dtype, out_dtype, cc, why)
    return [replace(first, fixup="atomic"), replace(first, fixup="atomic", bn=128)]


def hopper_config(kernel: str, blocks: int = 0, fixup: str = "", bn: int = 0):
    """The configuration ``lab.gemm`` runs for a Hopper choice: the registered ``kernel``'s on
    ``bn``-column tiles (with as many stages as fit) when given, capped at ``blocks``
    persistent blocks, with stream-K's ``fixup`` when given."""
    from lab.kernels import get_spec

    cfg = get_spec(kernel).config
    if bn:
        cfg = cfg.tile(cfg.bm, bn)
    if blocks or fixup:
        cfg = replace(cfg, grid=blocks, fixup=fixup or cfg.fixup)
    return cfg.validate()


def variants() -> list:
    """The Hopper configurations ``lab.gemm`` may run that are not registered kernels (each
    FP16 and BF16, one grid each: the grid is the launch's): each output's tile-table kernel
    on every other tile of :data:`TILES`, and stream-K with the atomic fix-up on 128×256 and
    128×128 tiles — for the suite to check."""
    out = []
    for kind in ("fp16", "bf16"):
        for rung in HOPPER_RUNG.values():
            out += [hopper_config(f"{rung}_{kind}", bn=bn) for (_, bn) in TILES if bn != 256]
        streamk = f"{HOPPER_STREAMK}_{kind}"
        out += [hopper_config(streamk, fixup="atomic"),
                hopper_config(streamk, fixup="atomic", bn=128)]
    return out


#: Hopper rung numbers of :data:`HOPPER_RUNG`'s kernels (for :func:`explain`'s reasons).
_RUNG_NUMBER = {"wgmma_table": 18, "wgmma_handoff_table": 19}


def _hopper_rung(out_dtype: str) -> str:
    return HOPPER_RUNG["f32" if out_dtype == "float32" else "f16"]


def _hopper(m, n, k, dtype, out_dtype, cc, sms, why) -> Choice:
    """Compute capability 9.0, 16-bit inputs: the tile-table kernel on the menu's best tile,
    the next best timed beside it on the first call, and stream-K when the tiles fill less
    than one wave."""
    rung = _hopper_rung(out_dtype)
    ranked = menu(m, n, sms)
    best = ranked[0][0]
    timed = [(bm, bn) for i, (est, bm, bn) in enumerate(ranked)
             if i < 2 or est <= MENU_SLACK * best][:MENU_TIMED]
    bm, bn = timed[0]
    tiles = -(-m // bm) * -(-n // bn)
    blocks = balanced_blocks(tiles, sms)
    c16 = ", a 16-bit C from its epilogue" if rung == HOPPER_RUNG["f16"] else ""
    why.append(f"compute capability 9.0 has wgmma and TMA: Hopper rung {_RUNG_NUMBER[rung]}'s "
               f"kernel (persistent, warp-specialised, tile order from a table{c16}); "
               f"{bm}x{bn} tiles: {tiles} tiles in {_waves(tiles, sms)} wave(s) of {blocks} "
               f"blocks on {sms} SMs (the tile menu ranked by waves x tile area / prior)")
    first = _hopper_choice(rung, m, n, k, dtype, out_dtype, cc, why, sms, bn)
    others = [_hopper_choice(rung, m, n, k, dtype, out_dtype, cc, why, sms, w)
              for _, w in timed[1:]]
    if tiles < sms:
        others += _streamk(m, n, k, dtype, out_dtype, cc, sms, ("stream-K",))
    if others:
        why.append(", ".join(f"{c.bn or 256}-column tiles" if not c.fixup else
                             f"stream-K on {c.bn or 256}-column tiles" for c in others)
                   + " timed beside it on the first call at this shape (kept on disk)")
    return replace(first, why=tuple(why), candidates=tuple(others))


def choose(m: int, n: int, k: int, dtype: str, out_dtype: str, cc, sms: int) -> Choice:
    """The kernel for M×N×K ``dtype`` -> ``out_dtype`` on capability ``cc`` (None: simulator)
    with ``sms`` SMs, and the reasons."""
    why = []
    if cc is not None and tuple(cc) < MIN_CC:
        raise GemmError(f"this GPU is compute capability {cc[0]}.{cc[1]}; lab.gemm needs "
                        f"{MIN_CC[0]}.{MIN_CC[1]} or newer (CUDA 13 generates no code for "
                        "older GPUs)")
    sixteen = dtype != "float32"
    where = "the CUDA simulator" if cc is None else f"compute capability {cc[0]}.{cc[1]}"

    def few(bm, bn, bk):
        tiles = -(-m // bm) * -(-n // bn)
        return (tiles < FEW_TILES * sms and k >= LONG_K * bk
                and min(m, n) <= SKINNY), tiles

    def tc_tiles():
        return -(-m // 128) * -(-n // 128)

    def splits_for(tiles, bk):
        return int(max(2, min(-(-sms // tiles), 16, k // (4 * bk))))

    if sixteen and cc is not None and tuple(cc) >= (8, 0):
        fp16 = dtype == "float16"
        hopper = tuple(cc) == (9, 0)
        if m <= SMALL_M and SMALL_M_ON:
            return _small_m(m, n, k, dtype, out_dtype, tuple(cc), sms, why)
        if hopper:
            return _hopper(m, n, k, dtype, out_dtype, tuple(cc), sms, why)
        small, tiles = few(128, 128, 64)
        if small and fp16:
            s = splits_for(tc_tiles(), 64)
            why.append(f"{tiles} tiles of 128x128 would fill {tiles}/{sms} SMs and K = {k} "
                       f"is long: split K into {s} slices (mma.sync, FP32 partials reduced)")
            first = Choice("tc_fp16_splitk", m, n, k, dtype, out_dtype, tuple(cc),
                           tuple(why), splits=s, narrow=out_dtype != "float32")
            others = [replace(first, splits=f) for f in SPLIT_CANDIDATES
                      if f != s and f * 2 * 64 <= k]
            why.append("the split factor is picked by timing the candidates once, on the "
                       "first call at this shape")
            return replace(first, why=tuple(why), candidates=tuple(others))
        name = "tc_fp16" if fp16 else "tc_bf16"
        why.append(f"{where} has mma.sync (no wgmma): chapter 5's tuned kernel")
        if small:
            why.append("few tiles, but split-K here is built for FP16 only")
        return Choice(name, m, n, k, dtype, out_dtype, tuple(cc), tuple(why),
                      narrow=out_dtype != "float32")
    if sixteen:
        why.append(f"{where} has no mma.sync: 16-bit inputs widened to FP32 for the SIMT "
                   "kernel")
    else:
        why.append("FP32 inputs: the tuned SIMT kernel (FP32 FMA, no TF32 rounding)")
    small, tiles = few(64, 128, 8)
    if small:
        s = splits_for(tiles, 8)
        why.append(f"{tiles} tiles of 64x128 would fill {tiles}/{sms} SMs and K = {k} is "
                   f"long: split K into {s} slices")
        return Choice("warptile_tuned_splitk", m, n, k, dtype, out_dtype, cc, tuple(why),
                      splits=s, widen=sixteen, narrow=out_dtype != "float32")
    return Choice("warptile_tuned", m, n, k, dtype, out_dtype, cc, tuple(why), widen=sixteen,
                  narrow=out_dtype != "float32")


def _small_m(m, n, k, dtype, out_dtype, cc, sms, why) -> Choice:
    """M <= SMALL_M: the small-M kernel on 128- and 64-column tiles, each with the split
    factor that fills one wave of the SMs and half of it, timed on the first call; above 64
    rows also 64-row tiles (two tile rows: more, lighter blocks); on 9.0 the stream-K wgmma
    kernel for a 16-bit C and, above 64 rows, the unsplit wgmma kernel."""
    from lab.kernels import small_m

    kind = "f16" if dtype == "float16" else "bf16"
    name = "tc_small_m_" + ("fp16" if kind == "f16" else "bf16")
    found = []                           # (tile width, slices, tile rows: 0 = by M)
    rows = (0, 64) if m > 64 else (0,)   # above 64 rows, two 64-row tile rows too
    for bm in rows:
        for bn in small_m.WIDTHS:
            s = small_m.k_slices(k, small_m.splits_for(m, n, k, sms, kind, bn, bm))[1]
            for f in (s, max(1, s // 2)):
                f = small_m.k_slices(k, f)[1]
                if (bn, f, bm) not in found:
                    found.append((bn, f, bm))
    bn, s, _ = found[0]
    cfg = small_m.config_for(m, kind, bn)
    tiles = small_m.tiles(m, n, cfg)
    why.append(f"M = {m} <= {SMALL_M}: reading B ({2 * k * n / 1e6:.1f} MB) bounds the time "
               f"(M FLOP per byte of B, far below the ridge): {cfg.bm}-row tiles (A not "
               f"padded), {tiles} tiles of {cfg.bm}x{cfg.bn} on {sms} SMs, K split into {s} "
               "slices (one wave), the partials added by the last block of each tile in the "
               "same launch")
    if out_dtype != "float32":
        why.append(f"{out_dtype} written by the kernel itself (no narrowing pass)")
    first = Choice(name, m, n, k, dtype, out_dtype, cc, tuple(why), splits=s, bn=bn,
                   native_out=out_dtype != "float32")
    others = [replace(first, splits=f, bn=w, bm=r) for w, f, r in found[1:]]
    wgmma = []
    if tuple(cc) == (9, 0):
        if m > 64:
            wgmma.append("the tile-table wgmma kernel")
            others += [_hopper_choice(_hopper_rung(out_dtype), m, n, k, dtype, out_dtype, cc,
                                      ("the wgmma kernel, unsplit",), sms, bn)
                       for bn in (128, 64)]
        if out_dtype != "float32":
            wgmma.append("the stream-K wgmma kernel")
            others += _streamk(m, n, k, dtype, out_dtype, cc, sms,
                               ("the wgmma kernel, k-slices shared over the SMs",))
    if others:
        why.append("tiles and split factors " + ", ".join(
            f"{r or cfg.bm}x{w}/{f}" for w, f, r in found)
            + "".join(f" and {w}" for w in wgmma)
            + " timed once, on the first call at this shape")
    return replace(first, why=tuple(why), candidates=tuple(others))


_TUNED = LRU(TUNED_KEPT)


def _shape_key(choice: Choice) -> tuple:
    return (choice.m, choice.n, choice.k, choice.dtype, choice.out_dtype, choice.cc)


#: The fields of a choice that the tuning cache on disk keeps (the rest follow from the shape).
_TUNED_FIELDS = ("kernel", "splits", "bn", "bm", "blocks", "fixup")


def _disk_key(choice: Choice) -> str:
    """The tuning cache's name for ``choice``'s shape on this GPU (its name, SM count and
    capability); lab.compiler's cache adds the code-generating sources and the toolchain."""
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return "|".join(map(str, (name, _sm_count(), choice.cc, *_shape_key(choice)[:5])))


def _from_disk(choice: Choice) -> Choice | None:
    """The candidate a previous process's first call picked at this shape, if the cache on
    disk names one of today's candidates (else None: time them again)."""
    from lab import compiler

    kept = compiler.recall("tune", _disk_key(choice))
    if not isinstance(kept, dict):
        return None
    for cand in (replace(choice, candidates=()), *choice.candidates):
        if all(getattr(cand, f) == kept.get(f) for f in _TUNED_FIELDS):
            return replace(cand, why=choice.why, candidates=(),
                           tuned=f"{kept.get('tuned', '')} (kept on disk)")
    return None


def tune(choice: Choice, a, b, c, handle: int = 0) -> Choice:
    """The fastest of ``choice`` and its candidates at this shape (one pair of CUDA events
    around :data:`TUNE_CALLS` replays of each one's recorded launch plans, by
    :func:`lab.timing.event_samples`, after the recording call and as many replays as make a
    call of several launches one CUDA graph: the driver calls alone, so that the GPU's time
    decides, not the launcher's Python or a graph's capture), remembered per shape in this
    process and on disk for this GPU, sources and toolchain (as cuBLASLt's heuristics and
    Triton's autotuning cache do); ``c`` is overwritten (the caller runs the winner after)."""
    from lab import compiler

    key = _shape_key(choice)
    known = _TUNED.get(key)
    if known is not None:
        return known
    if not choice.candidates or not device.GPU:
        return choice
    best = _from_disk(choice)
    if best is not None:
        _TUNED[key] = best
        return best
    times = []
    for cand in (replace(choice, candidates=()), *choice.candidates):
        with enqueue.stream(handle):       # the first call records its plans, the timed
            cp = enqueue.record(lambda: run(cand, a, b, c), (a, b, c))   # ones replay them
        ms = timing.event_samples(lambda i: cp.launch(handle), warmup=enqueue.GRAPH_AFTER,
                                  repeats=1, batch=TUNE_CALLS, stream=handle)[0]
        times.append((ms, cand))
    ms, best = min(times, key=lambda t: t[0])
    label = "first call timed: " + ", ".join(f"{_label(c)} {1e3 * ms:.1f} us"
                                             for ms, c in times)
    best = replace(best, why=choice.why, candidates=(), tuned=label)
    _TUNED[key] = best
    compiler.remember("tune", _disk_key(choice),
                      dict({f: getattr(best, f) for f in _TUNED_FIELDS}, tuned=label))
    return best


def _label(c: Choice) -> str:
    """A candidate in a few characters: kernel, tile, split factor, blocks, fix-up."""
    return (f"{c.kernel}{f'/{c.bm or chr(77)}x{c.bn}' if c.bn else ''}"
            f"{'/' + str(c.splits) if c.splits > 1 else ''}"
            f"{f'/{c.blocks} blocks' if c.blocks else ''}{'/' + c.fixup if c.fixup else ''}")


def explain(A, B, out=None, *, out_dtype: str | None = None, cc=None, sms: int | None = None
         ) -> Choice:
    """Which kernel :func:`gemm` runs for these operands, and why (nothing is launched).
    ``cc`` asks for another GPU's capability (e.g. ``(8, 0)``), ``sms`` its SM count."""
    a, b = describe(A, "A"), describe(B, "B")
    o = describe(out, "out") if out is not None else None
    m, n, k, odt = validate(a, b, o, _dtype_name(out_dtype))
    if cc is None:
        cc = _device_cc()
    choice = choose(m, n, k, a.dtype, odt, cc, sms or (_sm_count() if device.GPU else
                                                        SM_DEFAULT))
    return _TUNED.get(_shape_key(choice), choice)


def _dtype_name(dt) -> str | None:
    if dt is None:
        return None
    name = getattr(dt, "name", None) or str(dt).replace("torch.", "")
    if name not in DTYPES:
        raise GemmError(f"out_dtype must be one of {DTYPES}, got {dt!r}")
    return name


_WORK = LRU(WORKSPACES_KEPT)


def _workspace(key, shape, dtype):
    from numba import cuda

    return _WORK.get_or_make((key, shape, np.dtype(dtype).str),
                             lambda: cuda.device_array(shape, dtype=dtype))


_SMALL = LRU(LAUNCHERS_KEPT)
_HOPPER = LRU(LAUNCHERS_KEPT)


def _launcher(choice: Choice):
    from lab.kernels import get_spec, splitk, wgmma

    if choice.kernel.startswith("tc_small_m"):
        from lab.kernels import small_m

        key = (choice.splits, choice.bn or 128, choice.bm)
        return _SMALL.get_or_make(key, lambda: small_m.launcher(*key))
    if choice.kernel.startswith("wgmma_"):
        # the kernel itself, not the registry's launcher (which widens a 16-bit C)
        cfg = hopper_config(choice.kernel, choice.blocks, choice.fixup, choice.bn)
        return _HOPPER.get_or_make(cfg, lambda: wgmma.launcher(cfg))
    if choice.splits > 1:
        return splitk.launcher(choice.kernel, choice.splits)
    return get_spec(choice.kernel).launch


def run(choice: Choice, a, b, c) -> None:
    """Launch ``choice`` on Numba device arrays ``a``, ``b`` (BF16 as uint16) into ``c``."""
    launch = _launcher(choice)
    if choice.widen:
        wa = _workspace("A", a.shape, np.float32)
        wb = _workspace("B", b.shape, np.float32)
        convert.widen(a, wa)
        convert.widen(b, wb)
        a, b = wa, wb
    if choice.narrow:
        wc = _workspace("C", c.shape, np.float32)
        launch(a, b, wc)
        convert.narrow(wc, c)
    else:
        launch(a, b, c)


# ----------------------------------------------------------------------------- the face

_NUMBA_DT = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def _as_numba(x: Operand):
    """A Numba device array over ``x``'s memory (no copy), BF16 as uint16."""
    from numba import cuda

    if x.family == "numba":
        return x.obj
    desc = {"shape": x.shape, "strides": None, "typestr": np.dtype(_NUMBA_DT[x.dtype]).str,
            "data": (x.ptr, False), "version": 3}
    return cuda.from_cuda_array_interface(desc, owner=x.obj, sync=False)


def _allocate(like: Operand, m: int, n: int, dtype: str):
    if like.family == "torch":
        import torch
        return torch.empty((m, n), dtype=getattr(torch, dtype), device=like.obj.device)
    if like.family == "cupy" and dtype != "bfloat16":
        import cupy
        return cupy.empty((m, n), dtype=dtype)
    from numba import cuda
    return cuda.device_array((m, n), dtype=_NUMBA_DT[dtype])


def _stream_of(a: Operand, stream):
    if stream is not None or enqueue._STREAMS:
        return enqueue.stream_handle(stream)
    if a.family == "torch":
        import torch
        try:                            # the raw handle, without building a Stream object
            return int(torch._C._cuda_getCurrentRawStream(a.obj.device.index))
        except (AttributeError, TypeError):
            return int(torch.cuda.current_stream(a.obj.device).cuda_stream)
    if a.family == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    return 0


_CALLS = LRU(CALLS_KEPT)
_SHAPES = LRU(CALLS_KEPT)


def _fast_key(A, B, out, out_dtype, stream):
    """A cheap key for the cached call (PyTorch tensors: address, shape, strides, dtype)."""
    key = []
    for x in (A, B, out):
        if x is None:
            key.append(None)
        elif type(x).__module__.startswith("torch"):
            key.append((x.data_ptr(), x.shape, x.stride(), x.dtype))
        else:
            return None
    return (*key, out_dtype, stream)


# region: hot_path
class Hot:
    """A repeated call's fast path: what the recorded call plan depends on in each operand
    (address, shape, strides, dtype, read by the library's cheap accessors), how to read the
    caller's current stream, and the launch: the driver call itself for a call of one kernel,
    else the call plan (which becomes one CUDA graph at its second replay)."""

    __slots__ = ("state", "call", "params", "recorded", "stream", "read")

    def __init__(self, read, arrays, recorded, stream):
        self.read = read
        self.state = tuple(read(x) for x in arrays)
        self.recorded = recorded
        only = recorded.plans[0] if len(recorded.plans) == 1 else None
        self.call = only._direct if only is not None else None
        self.params = only.params if only is not None else None
        self.stream = stream

    def same(self, A, B, out) -> bool:
        read, (a, b, o) = self.read, self.state
        return read(A) == a and read(B) == b and read(out) == o

    def launch(self) -> None:
        handle = self.stream()
        if self.call is None:
            self.recorded.launch(handle)
            return
        err = self.call(handle, self.params, None)
        if err:
            raise RuntimeError(f"launching a recorded lab.gemm call failed: {err}")


def _torch_state(x):
    return (x.data_ptr(), x.shape, x.stride(), x.dtype)


def _cupy_state(x):
    return (x.data.ptr, x.shape, x.strides, x.dtype)


def _hot_for(a: Operand, cp, arrays) -> Hot | None:
    """The :class:`Hot` path of call plan ``cp`` for ``arrays`` (A, B, out) of ``a``'s library
    (PyTorch or CuPy; None for others, which take the checked path every call)."""
    if a.family == "torch":
        import torch
        get, index = torch._C._cuda_getCurrentRawStream, a.obj.device.index
        return Hot(_torch_state, arrays, cp, lambda: get(index))
    if a.family == "cupy":
        import cupy
        current = cupy.cuda.get_current_stream
        return Hot(_cupy_state, arrays, cp, lambda: current().ptr)
    return None


_HOT = LRU(CALLS_KEPT)
# endregion: hot_path


def gemm(A, B, out=None, *, out_dtype=None, stream=None):
    """C = A·B on the GPU, the kernel picked as :func:`explain` says; returns ``out`` (allocated by
    A's library when None: a torch tensor for torch inputs, a CuPy array for CuPy, a Numba
    device array for Numba, a NumPy array for NumPy). Asynchronous on the stream (default:
    :func:`lab.enqueue.stream`'s, else PyTorch's or CuPy's current stream for their arrays, else
    the default stream), except for host arrays."""
    given = out is not None
    if given and stream is None:                   # a repeat: ids, then what the call plan reads
        hot = _HOT.get((id(A), id(B), id(out), out_dtype))
        if hot is not None and not enqueue._STREAMS and hot.same(A, B, out):
            hot.launch()
            return out
    odt = _dtype_name(out_dtype)
    if device.GPU and stream is None and not enqueue._STREAMS:
        if out is None:                     # PyTorch: allocate as the last call did
            shape = _SHAPES.get(_fast_key(A, B, None, odt, None))
            if shape is not None:
                import torch
                out = torch.empty(shape[:2], dtype=getattr(torch, shape[2]), device=A.device)
        key = _fast_key(A, B, out, odt, None) if out is not None else None
        if key is not None:
            cp = _CALLS.get(key)
            if cp is not None:
                cp.launch(_stream_of(cp.result, None))
                enqueue.STATS["call_hits"] += 1
                return out
    a, b = describe(A, "A"), describe(B, "B")
    o = describe(out, "out") if out is not None else None
    m, n, k, odt = validate(a, b, o, odt)
    cc = _device_cc()
    if device.GPU and cc is None:
        raise GemmError(f"no GPU (device mode {device.MODE!r})")
    choice = choose(m, n, k, a.dtype, odt, cc, _sm_count())
    if device.SIMULATOR:
        from lab.api import fits_simulator
        fits_simulator(m, n, k)
    if a.host:
        return _host(a, b, o, choice)
    if o is None:
        out = _allocate(a, m, n, odt)
        o = describe(out, "out")
    handle = _stream_of(a, stream)
    key = (a.ptr, a.shape, a.strides, a.dtype, b.ptr, b.shape, b.strides, b.dtype,
           o.ptr, o.shape, o.strides, o.dtype, handle)
    cp = _CALLS.get(key)
    if cp is not None and device.GPU:
        cp.launch(handle)
        enqueue.STATS["call_hits"] += 1
        return out
    na, nb, nc = _as_numba(a), _as_numba(b), _as_numba(o)
    if device.SIMULATOR or not device.GPU:
        run(choice, na, nb, nc)
        return out
    choice = tune(choice, na, nb, nc, handle)
    with enqueue.stream(handle):
        cp = enqueue.record(lambda: run(choice, na, nb, nc), (na, nb, nc))
    cp.result = a
    cp.choice = choice
    _CALLS[key] = cp
    if given and stream is None and o.family == a.family == b.family:
        hot = _hot_for(a, cp, (A, B, out))
        if hot is not None:
            _HOT[(id(A), id(B), id(out), out_dtype)] = hot
    asked = _dtype_name(out_dtype)          # the fast path's key: as the caller asked
    fast = _fast_key(A, B, out, asked, None) if stream is None else None
    if fast is not None:
        _CALLS[fast] = cp
        _SHAPES[_fast_key(A, B, None, asked, None)] = (m, n, odt)
    return out


def _host(a: Operand, b: Operand, o: Operand | None, choice: Choice):
    from numba import cuda

    def up(x: Operand):
        arr = x.obj.view(np.uint16) if x.dtype == "bfloat16" else x.obj
        return cuda.to_device(np.ascontiguousarray(arr))

    da, db = up(a), up(b)
    dc = cuda.device_array((choice.m, choice.n), dtype=_NUMBA_DT[choice.out_dtype])
    run(choice, da, db, dc)
    result = dc.copy_to_host()
    if o is not None:
        o.obj[...] = result.view(o.obj.dtype) if choice.out_dtype == "bfloat16" else result
        return o.obj
    if choice.out_dtype == "bfloat16" and a.obj.dtype.name == "bfloat16":
        return result.view(a.obj.dtype)
    return result


def call_plan(A, B, out):
    """The recorded :class:`lab.enqueue.CallPlan` of a previous ``gemm(A, B, out)`` (its
    kernels and kept buffers), or None."""
    a, b, o = describe(A, "A"), describe(B, "B"), describe(out, "out")
    for key, cp in _CALLS.items():
        if key[:12] == (a.ptr, a.shape, a.strides, a.dtype, b.ptr, b.shape, b.strides,
                        b.dtype, o.ptr, o.shape, o.strides, o.dtype):
            return cp
    return None


def graph(A, B, out, repeats: int = 1) -> "enqueue.Graph":
    """A CUDA graph of ``repeats`` calls of ``gemm(A, B, out)`` (see :class:`lab.enqueue.Graph`):
    ``.launch()`` replays them with one driver call."""
    return enqueue.Graph(lambda: gemm(A, B, out), repeats)


def graph_of(fn, repeats: int = 1) -> "enqueue.Graph":
    """A CUDA graph of ``repeats`` runs of ``fn``, a function of ``gemm`` calls (e.g. one call
    on each of several buffer sets in turn); ``.launch()`` replays them."""
    return enqueue.Graph(fn, repeats)


gemm.explain = explain
gemm.graph_of = graph_of
gemm.graph = graph
gemm.call_plan = call_plan
gemm.GemmError = GemmError
gemm.Choice = Choice
gemm.variants = variants
gemm.hopper_config = hopper_config
