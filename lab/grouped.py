"""``lab.grouped_gemm``: a mixture-of-experts layer's products, every expert in one launch.

Expert e multiplies the rows routed to it by its weights ``B[e]`` (B is ``[E, K, N]``). The
routed rows come in one of two layouts:

* ``offsets=`` (contiguous): A is ``[T, K]``, expert e's rows ``offsets[e] : offsets[e+1]``
  (``E + 1`` non-decreasing integers from 0 to T); C is ``[T, N]``.
* ``counts=`` (masked): A is ``[E, M_max, K]``, expert e's first ``counts[e]`` rows valid;
  C is ``[E, M_max, N]``, rows past a count left as they were in ``out`` (zeros in a new one).

Inputs as ``lab.gemm`` takes them (Numba, CuPy or PyTorch device arrays, or host NumPy arrays;
FP32, FP16 or BF16, both the same, row-major); ``out`` FP32 or the inputs' type. Two kernels:

* on a GPU of compute capability 9.x, with 16-bit inputs and output, K a multiple of 64 and N
  of 8: chapter 7's persistent Hopper kernel walking the groups (:func:`hopper_config`,
  :func:`tile_config`; :mod:`lab.kernels.wgmma.order`'s ``group_order``);
* elsewhere the teaching kernel of :mod:`lab.kernels.grouped` (FP32 arithmetic; 16-bit inputs
  widened first, a 16-bit C narrowed after), which runs in the simulator and on any GPU.

Everything is checked before anything is copied or launched, with the operand and the problem
named: shapes and types, the layout, offsets that do not start at 0, decrease or do not end at
T, counts below 0 or above M_max, a wrong number of them. Offsets or counts on the GPU are
copied to the host for that check; ``check_bounds=False`` skips the copy (for a call captured
in a CUDA graph, whose routing changes between replays): the kernel clamps what it reads to the
buffers, so a bad routing computes wrong rows but writes nowhere outside C.

``lab.grouped_scaled_gemm`` (:func:`grouped_scaled_gemm`) is the same for FP8 with block scales,
as DeepSeek-V3's MoE layers run: A's codes with one scale per 1×128 block, each expert's weights
as stored (``Bt``: ``[E, N, K]``, B transposed) with one scale per 128×128 block, a BF16 C, on
chapter 7b's block-scaled kernel walking the groups (Hopper only).

A repeated call of the Hopper kernel with ``check_bounds=False``, PyTorch or CuPy arrays, an
``out`` and the offsets or counts on the GPU is found by the ids of its four arrays and confirmed
by what the recorded launch depends on (each array's address, shape, strides and dtype, and the
stream), as :func:`lab.gemm.gemm`'s repeats are: it costs one driver call, where the checked path
costs a few hundred microseconds of Python (the operands described, checked and wrapped as Numba
arrays, the tensor maps looked up). The kernel reads the offsets or counts when it runs, so new
values in the same buffer route the next replay. ``lab.grouped_scaled_gemm`` repeats the same
way with ``check_scales=False`` too, its scales on the GPU and confirmed like the routing (the
kernel reads their values when it runs).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lab import enqueue
from lab.convert import narrow, widen
from lab.dispatch import GemmError
from lab.lru import LRU
from lab.operands import (DTYPES, NUMBA_DT, Operand, as_numba, check_scale_values, describe,
                          fp8_format, output_dtype, refuse_overlap, refuse_unpacked,
                          scale_operand, upload_codes)

#: Grid rows a launch may have (CUDA's limit on gridDim.y).
GRID_Y_LIMIT = 65535


def _on_device(values):
    """``values`` as a Numba device array when it lives on the GPU, else None."""
    if type(values).__name__ == "FakeCUDAArray" or hasattr(values, "copy_to_host"):
        return values
    if hasattr(values, "__cuda_array_interface__"):
        from numba import cuda
        return cuda.as_cuda_array(values)
    return None


def _bounds(values, label: str, length: int, check: bool):
    """The offsets or counts on the host (a NumPy array; copied from the GPU unless ``check``
    is False, then None), after the checks of their kind and length."""
    d = _on_device(values)
    if d is not None:
        dt, shape = np.dtype(d.dtype), tuple(d.shape)
        host = d.copy_to_host() if check else None
    else:
        host = np.asarray(values)
        dt, shape = host.dtype, host.shape
    if dt.kind not in "iu":
        raise GemmError(f"{label} must be integers, got {dt}")
    if shape != (length,):
        raise GemmError(f"{label} must hold {length} values, got shape {shape}")
    return host


def validate(A: Operand, B: Operand, out: Operand | None, out_dtype: str | None,
             masked: bool) -> tuple[int, int, int, int, str]:
    """``(experts, rows of A, K, N, output dtype)``; GemmError naming the operand and the
    problem."""
    for x in (A, B) + ((out,) if out else ()):
        if x.dtype not in DTYPES:
            raise GemmError(f"{x.label} is {x.dtype}; lab.grouped_gemm takes float32, float16 "
                            "or bfloat16")
    if A.dtype != B.dtype:
        raise GemmError(f"A is {A.dtype} but B is {B.dtype}; convert one so both match")
    if len(B.shape) != 3:
        raise GemmError(f"B must be [experts, K, N], got shape {B.shape}")
    e, k, n = B.shape
    if e == 0 or k == 0 or n == 0:
        raise GemmError(f"B has an empty dimension (shape {B.shape})")
    rows = routed_rows(A, e, k, masked, "B", "values", "rows")
    shape = (e, A.shape[1], n) if masked else (A.shape[0], n)
    out_dtype = output_dtype(A, out, out_dtype)
    if out is not None and tuple(out.shape) != shape:
        raise GemmError(f"out has shape {tuple(out.shape)}; the product is {shape}")
    for x in (A, B) + ((out,) if out else ()):
        refuse_unpacked(x)
        if x.host != A.host:
            raise GemmError(f"{x.label} is {'on the host' if x.host else 'on the GPU'} but A "
                            f"is {'on the host' if A.host else 'on the GPU'}: keep them together")
    refuse_overlap(out, (A, B))
    return e, rows, k, n, out_dtype


def _layout(offsets, counts) -> tuple[bool, object]:
    """(masked, the routing array) of a call: exactly one of ``offsets`` and ``counts``."""
    if (offsets is None) == (counts is None):
        raise GemmError("pass offsets= (contiguous rows) or counts= (fixed buffers per "
                        "expert), exactly one")
    return counts is not None, counts if counts is not None else offsets


def routed_rows(A: Operand, experts: int, k: int, masked: bool, weights: str, unit: str,
                along: str) -> int:
    """The rows of A (its layout checked against the experts' ``weights``: ``[T, K]`` for
    offsets, ``[E, M_max, K]`` for counts, K as theirs); GemmError naming the problem."""
    want = 3 if masked else 2
    layout = "[experts, M_max, K] (counts=)" if masked else "[tokens, K] (offsets=)"
    if len(A.shape) != want:
        raise GemmError(f"A must be {layout}, got shape {A.shape}")
    if A.shape[-1] != k:
        raise GemmError(f"A's rows hold {A.shape[-1]} {unit} but each {weights}[e] has K = {k} "
                        f"{along}")
    if masked and A.shape[0] != experts:
        raise GemmError(f"A holds {A.shape[0]} experts' buffers but {weights} {experts} "
                        "experts' weights")
    return A.shape[0] * A.shape[1] if masked else A.shape[0]


def _check_routing(host, masked: bool, experts: int, rows: int, mmax: int) -> None:
    if host is None:
        return
    if masked:
        bad = np.flatnonzero((host < 0) | (host > mmax))
        if bad.size:
            i = int(bad[0])
            raise GemmError(f"counts[{i}] = {int(host[i])}: each expert's count must lie in "
                            f"0 … M_max = {mmax}")
        return
    if int(host[0]) != 0:
        raise GemmError(f"offsets[0] = {int(host[0])}: the first expert's rows start at row 0")
    if int(host[-1]) != rows:
        raise GemmError(f"offsets[{experts}] = {int(host[-1])}, but A has {rows} rows: the "
                        "last expert's rows must end at A's last row")
    down = np.flatnonzero(np.diff(host) < 0)
    if down.size:
        i = int(down[0])
        raise GemmError(f"offsets decrease at expert {i}: offsets[{i}] = {int(host[i])} > "
                        f"offsets[{i + 1}] = {int(host[i + 1])}")


def _fp32(d, dtype: str, shape2):
    """``d`` (a device array) as a 2-D FP32 device array: itself, or widened into a new one."""
    from numba import cuda

    d2 = d.reshape(shape2)
    if dtype == "float32":
        return d2
    wide = cuda.device_array(shape2, np.float32)
    widen(d2, wide)
    return wide


def grouped_gemm(A, B, out=None, *, offsets=None, counts=None, out_dtype=None,
                 check_bounds: bool = True):
    """C for every expert at once: ``C[rows of e] = A[rows of e] @ B[e]`` (module docstring);
    returns ``out`` (when None, a new zero-filled array of the inputs' library)."""
    from lab.kernels import grouped as kernel
    from lab.operands import dtype_name

    key = (id(A), id(B), id(out), id(offsets), id(counts), out_dtype)
    if out is not None and not check_bounds and not enqueue._STREAMS and \
            _repeat(key, A, B, out, (offsets if counts is None else counts,)):
        return out
    masked, routing = _layout(offsets, counts)
    a, b = describe(A, "A"), describe(B, "B")
    o = describe(out, "out") if out is not None else None
    experts, rows, k, n, out_dt = validate(a, b, o, dtype_name(out_dtype), masked)
    mmax = a.shape[1] if masked else 0
    host = _bounds(routing, "counts" if masked else "offsets",
                   experts + (0 if masked else 1), check_bounds)
    _check_routing(host, masked, experts, rows, mmax)
    cfg = hopper_config(a.dtype, out_dt, rows, k, n, experts, mmax, masked, routing)
    grid_rows = kernel.tile_rows(experts, rows, mmax, masked)
    if cfg is None and grid_rows > GRID_Y_LIMIT:
        raise GemmError(f"{experts} experts and {rows} rows need {grid_rows:,} tile rows; one "
                        f"launch of the teaching kernel takes at most {GRID_Y_LIMIT:,}")
    if o is not None:
        target = o.obj
    elif a.host:
        target = np.zeros((experts, mmax, n) if masked else (rows, n),
                          a.obj.dtype if out_dt == a.dtype else np.float32)
    else:
        target = _new(a, (experts, mmax, n) if masked else (rows, n), out_dt)
    t = describe(target, "out")
    da, db, dc = (_upload(x) if x.host else as_numba(x) for x in (a, b, t))
    bounds = _bounds_device(routing, host)
    if cfg is not None:
        from lab.kernels import wgmma
        launch = _LAUNCHERS.get_or_make(cfg, lambda: wgmma.grouped_launcher(cfg))
        args = (da.reshape((rows, k)), db.reshape((experts * k, n)), dc.reshape((rows, n)),
                bounds, mmax)
        if out is None or check_bounds or enqueue._STREAMS or host is not None:
            launch(*args)
        else:                           # record the launch for the repeat path
            _remember(key, launch, args, a, (A, B, out), (da, db, dc, bounds), (routing,))
    else:
        _launch(da, db, dc, out_dt, a.dtype, bounds, masked, rows, k, n, experts, mmax)
    if t.host:
        result = dc.copy_to_host()
        target[...] = result if result.dtype == target.dtype else result.view(target.dtype)
    return target


#: Rows per expert (its buffer's, or on average) up to which the Hopper kernel takes 64-row
#: tiles (one consumer warpgroup) rather than 128-row ones (two).
SMALL_GROUPS = 64
#: The Hopper grouped kernel's tiles (rows, columns): the menu that :func:`tile_config` picks
#: from and ``lab check --record`` checks.
TILES = ((64, 64), (64, 128), (64, 256), (128, 128), (128, 256))


def hopper_config(in_dt: str, out_dt: str, rows: int, k: int, n: int, experts: int, mmax: int,
                  masked: bool, routing):
    """The Hopper kernel's configuration for this call (:func:`tile_config`), or None for the
    teaching kernel: on a GPU of compute capability 9.x, 16-bit in and out, K a
    multiple of 64 (a k-slice never straddles two experts' weights), N a multiple of 8 (the
    copy engine's 16-byte rows), offsets or counts int32 or int64 (or on the host)."""
    from lab import device

    if not device.GPU or in_dt not in ("float16", "bfloat16") or out_dt != in_dt:
        return None
    if k % 64 or n % 8 or rows == 0:
        return None
    d = _on_device(routing)
    if d is not None and np.dtype(d.dtype) not in (np.int32, np.int64):
        return None
    from numba import cuda

    if cuda.get_current_device().compute_capability[0] != 9:
        return None
    return tile_config(in_dt, masked, mmax if masked else rows / experts)


def tile_config(dtype: str, masked: bool, per_group: float, tile: tuple[int, int] | None = None):
    """The Hopper grouped kernel's configuration for 16-bit ``dtype`` in and out, the layout and
    the rows per expert (its buffer's, or on average): Hopper rung 15's kernel (tiles from a
    persistent loop, whole-tile staging, a lean main loop) on ``tile`` (one of :data:`TILES`),
    by default 64 × 256 with one consumer warpgroup up to :data:`SMALL_GROUPS` rows, else
    128 × 256 with two."""
    from lab.kernels import wgmma

    bm, bn = tile or ((64, 256) if per_group <= SMALL_GROUPS else (128, 256))
    if (bm, bn) not in TILES:
        raise ValueError(f"tile {bm}x{bn} is not one of the grouped kernel's {TILES}")
    base = wgmma.for_kind(wgmma.RUNG_CONFIGS["wgmma_uniform"],
                          "bf16" if dtype == "bfloat16" else "f16")
    cfg = replace(base, grouped="counts" if masked else "offsets", grid=0,
                  consumers=bm // 64)
    return cfg.tile(bm, bn)


_LAUNCHERS = LRU(16)                    # configuration -> its (memoised) launcher
#: Repeat paths, by the ids of (A, B, out, offsets, counts) and out_dtype: (the recorded call's
#: fast path, the offsets' or counts' state when it was recorded).
_HOT = LRU(256)


def _repeat(key, A, B, out, watched) -> bool:
    """Launch the call recorded under ``key`` again, if there is one and A, B, out, the stream
    and the ``watched`` arrays (the offsets or counts; FP8's scales) read as they did when it
    was recorded; whether it did."""
    hit = _HOT.get(key)
    if hit is None:
        return False
    hot, state = hit
    if not (hot.same(A, B, out) and tuple(hot.read(x) for x in watched) == state):
        return False
    hot.launch()
    return True


def _remember(key, launch, args, a: Operand, arrays, inputs, watched) -> None:
    """Launch ``launch(*args)`` recorded as a call plan, and keep its repeat path for the
    caller's ``arrays`` (A, B, out) and ``watched`` ones (the offsets or counts; FP8's scales)
    when all are PyTorch's or all CuPy's and the launch went to the caller's current stream."""
    from lab.gemm import _hot_for

    handle = enqueue.stream_handle(None)
    cp = enqueue.record(lambda: launch(*args), inputs)
    families = {type(x).__module__.split(".")[0] for x in (*arrays, *watched)}
    if len(families) != 1:
        return
    hot = _hot_for(a, cp, arrays, handle)
    if hot is not None and hot.stream() == handle:
        _HOT[key] = (hot, tuple(hot.read(x) for x in watched))


def _upload(x: Operand):
    from numba import cuda

    arr = np.ascontiguousarray(x.obj)
    return cuda.to_device(arr.view(np.uint16) if x.dtype == "bfloat16" else arr)


def _bounds_device(values, host):
    """The offsets or counts on the GPU: the caller's device array, or the host's copied."""
    from numba import cuda

    d = _on_device(values)
    return d if d is not None else cuda.to_device(np.ascontiguousarray(host, dtype=np.int64))


def _new(like: Operand, shape, dtype: str):
    """A zero-filled C of the inputs' library (rows past a count stay zero)."""
    if like.family == "torch":
        import torch
        return torch.zeros(shape, dtype=getattr(torch, dtype), device=like.obj.device)
    if like.family == "cupy" and dtype != "bfloat16":
        import cupy
        return cupy.zeros(shape, dtype=dtype)
    from numba import cuda
    return cuda.to_device(np.zeros(shape, NUMBA_DT[dtype]))


def _launch(da, db, dc, out_dt, in_dt, bounds, masked, rows, k, n, experts, mmax) -> None:
    """Widen, launch, narrow: C's rows the kernel leaves alone keep their values (widening
    is exact, and narrowing a widened value gives it back)."""
    from numba import cuda

    from lab.kernels import grouped as kernel

    a32 = _fp32(da, in_dt, (rows, k))
    b32 = _fp32(db, in_dt, (experts * k, n))
    c = dc.reshape((rows, n))
    if out_dt == "float32":
        kernel.launch(a32, b32, c, bounds, mmax, masked)
        return
    c32 = cuda.device_array((rows, n), np.float32)
    widen(c, c32)
    kernel.launch(a32, b32, c32, bounds, mmax, masked)
    narrow(c32, c)


# ----------------------------------------------------------------------------- GPU checks

#: The groups every Hopper grouped kernel is checked on (``python -m lab check --record``):
#: (experts, K, N, rows of each expert): empty groups, one row, a tile's rows ± 1 (64 and 128),
#: N past a tile's columns and not a multiple of 64.
CHECK_CASES = ((5, 128, 136, (0, 1, 63, 65, 130)),
               (4, 192, 264, (127, 129, 0, 257)),
               (3, 64, 8, (1, 1, 1)))


#: The groups every grouped FP8 kernel is checked on: K and N multiples of 128 (the scale
#: blocks), empty groups, one row, a tile's rows ± 1, N past a tile's columns.
FP8_CHECK_CASES = ((5, 256, 384, (0, 1, 63, 65, 130)),
                   (4, 384, 256, (127, 129, 0, 257)),
                   (3, 128, 128, (1, 1, 1)))


def hopper_configs() -> list:
    """Every configuration :func:`tile_config` and :func:`fp8_tile_config` give: both
    layouts, every tile of :data:`TILES` for FP16 and BF16, of :data:`FP8_TILES` for FP8."""
    return ([tile_config(dt, masked, 0, tile) for dt in ("float16", "bfloat16")
             for masked in (False, True) for tile in TILES]
            + [fp8_tile_config(masked, 0, tile) for masked in (False, True)
               for tile in FP8_TILES])


def check_hopper(cfg, calls: int = 2, seed: int | None = None) -> tuple[dict, list[str]]:
    """The Hopper grouped kernel of ``cfg`` on :data:`CHECK_CASES`, ``calls`` times each case
    through one launcher on fresh inputs: C poisoned with NaN first; every group's rows
    against float64 within the tensor-core bound with the output's rounding; every row of no
    group (a masked buffer's rows past its count) still NaN. Returns the record entry
    (``shapes``: ``[rows, N, K]`` per case) and the lines to print for failures."""
    from numba import cuda

    from lab import accuracy
    from lab.kernels import wgmma

    if cfg.fp8:
        return check_hopper_fp8(cfg, calls, seed)
    launch = wgmma.grouped_launcher(cfg)
    f16 = cfg.kind == "f16"
    masked = cfg.grouped == "counts"
    rng = np.random.default_rng(accuracy.new_seed() if seed is None else seed)
    unit = 2.0 ** -11 if f16 else 2.0 ** -8
    bad, lines, shapes = 0, [], []
    for experts, k, n, counts in CHECK_CASES:
        counts, mmax, starts, rows, bounds = _routing_case(experts, counts, masked)
        shapes.append([rows, n, k])
        factor = accuracy.bound_factor(k, tensor_cores=True, output_unit=unit)
        for _ in range(calls):
            a, b = accuracy.random_inputs(rows, n * experts, k,
                                          np.float16 if f16 else np.uint16, rng)
            b = np.ascontiguousarray(b.reshape(k, experts, n).transpose(1, 0, 2))
            poison = np.full((rows, n), np.nan, np.float16) if f16 else \
                np.full((rows, n), 0x7FC0, np.uint16)
            dc = cuda.to_device(poison)
            launch(cuda.to_device(a), cuda.to_device(b.reshape(experts * k, n)), dc,
                   cuda.to_device(bounds), mmax if masked else 0)
            got = accuracy.to_float64(dc.copy_to_host())
            a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
            owned = np.zeros(rows, bool)
            for e in range(experts):
                r = slice(int(starts[e]), int(starts[e]) + int(counts[e]))
                owned[r] = True
                ref = a64[r] @ b64[e]
                bound = factor * (np.abs(a64[r]) @ np.abs(b64[e])) + k * 2.0 ** -149 + 2.0 ** -24
                if not np.all(np.abs(got[r] - ref) <= bound):      # (NaN fails too)
                    bad += 1
                    lines.append(f"  {cfg.label}: expert {e} ({counts[e]} rows, N={n}, K={k}) "
                                 "outside the bound")
            if not np.isnan(got[~owned]).all():
                bad += 1
                lines.append(f"  {cfg.label}: rows of no group were written (N={n}, K={k})")
    return {"shapes": shapes, "calls": calls, "passed": not bad}, lines


def _routing_case(experts: int, counts, masked: bool):
    """A check case's routing: (counts, M_max, each expert's first row, rows of A, the
    offsets or counts the kernel reads)."""
    counts = np.array(counts, np.int64)
    mmax = int(counts.max())
    starts = (np.arange(experts) * mmax if masked
              else np.concatenate([[0], np.cumsum(counts)[:-1]]))
    rows = experts * mmax if masked else int(counts.sum())
    bounds = counts if masked else np.concatenate([[0], np.cumsum(counts)])
    return counts, mmax, starts, rows, bounds


def check_hopper_fp8(cfg, calls: int = 2, seed: int | None = None) -> tuple[dict, list[str]]:
    """:func:`check_hopper` for a grouped FP8 kernel on :data:`FP8_CHECK_CASES`: block-scaled
    operands whose size changes from one scale block to the next (a wrong block's scale
    shows), C's BF16 bits poisoned with NaN, every group's rows against the float64 product of
    its dequantised operands within the FP8 bound; rows of no group still NaN."""
    from numba import cuda

    from lab import accuracy, fp8
    from lab.kernels import wgmma
    from lab.kernels.wgmma import fp8 as F

    launch = wgmma.grouped_launcher(cfg)
    masked = cfg.grouped == "counts"
    rng = np.random.default_rng(accuracy.new_seed() if seed is None else seed)
    bad, lines, shapes = 0, [], []
    for experts, k, n, counts in FP8_CHECK_CASES:
        counts, mmax, starts, rows, bounds = _routing_case(experts, counts, masked)
        shapes.append([rows, n, k])
        nb = n // 128
        for _ in range(calls):
            qa, qb, sa, sb = F.operands(rows, experts * n, k, cfg, rng)
            dc = cuda.to_device(np.full((rows, n), 0x7FC0, np.uint16))     # BF16 NaN
            launch(cuda.to_device(qa), cuda.to_device(qb), dc, cuda.to_device(bounds),
                   mmax if masked else 0, cuda.to_device(sa), cuda.to_device(sb))
            got = dc.copy_to_host()
            owned = np.zeros(rows, bool)
            for e in range(experts):
                r = slice(int(starts[e]), int(starts[e]) + int(counts[e]))
                owned[r] = True
                if counts[e] == 0:
                    continue
                verdict = F.compare(got[r], qa[r], qb[e * n:(e + 1) * n], sa[r],
                                    sb[e * nb:(e + 1) * nb], cfg, kernel=cfg.label)
                if not verdict.passed:
                    bad += 1
                    lines.append(f"  {cfg.label}: expert {e} ({counts[e]} rows, N={n}, K={k}) "
                                 f"{verdict.line()}")
            if not np.isnan(fp8.bf16_bits_to_float32(got[~owned])).all():
                bad += 1
                lines.append(f"  {cfg.label}: rows of no group were written (N={n}, K={k})")
    return {"shapes": shapes, "calls": calls, "passed": not bad}, lines


# ----------------------------------------------------------------------------- FP8

#: The grouped FP8 kernel's tiles: 128-column blocks (one B scale each), one consumer
#: warpgroup on 64 rows or two on 128; a wider tile's two sets of accumulators (the tensor
#: cores' partial sums and the promoted FP32 ones) would not fit the registers.
FP8_TILES = ((64, 128), (128, 128))
#: Scale blocks: 1×128 of A, 128×128 of each expert's Bᵀ.
SCALE_BLOCK = 128


def fp8_tile_config(masked: bool, per_group: float, tile: tuple[int, int] | None = None):
    """The grouped FP8 kernel's configuration: chapter 7b's block-scaled kernel (promotion into
    FP32 at every 128-k block, times its scales; BF16 C) walking the groups, with whole-tile
    staging, on ``tile`` (one of :data:`FP8_TILES`), by default 64 × 128 up to
    :data:`SMALL_GROUPS` rows per expert, else 128 × 128."""
    from lab.kernels.wgmma import fp8 as F

    bm, bn = tile or ((64, 128) if per_group <= SMALL_GROUPS else (128, 128))
    if (bm, bn) not in FP8_TILES:
        raise ValueError(f"tile {bm}x{bn} is not one of the grouped FP8 kernel's {FP8_TILES}")
    cfg = replace(F.CONFIGS["fp8_e4m3_block"], grouped="counts" if masked else "offsets",
                  store="tile", grid=0, consumers=bm // 64)
    return cfg.tile(bm, bn)


def validate_fp8(A: Operand, Bt: Operand, out: Operand | None, fmt, masked: bool, sa, sb):
    """``(experts, rows of A, K, N, (scale_a's operand, host values), (scale_b's …))``;
    GemmError naming the operand and the problem."""
    fa, fb = (fp8_format(A, fmt, "grouped_scaled_gemm"),
              fp8_format(Bt, fmt, "grouped_scaled_gemm"))
    if fa != fb:
        raise GemmError(f"A holds {fa} codes but Bt {fb}; both must be one format")
    if fa != "e4m3":
        raise GemmError(f"grouped_scaled_gemm runs e4m3 with block scales; {fa} has no "
                        "block-scaled kernel")
    if len(Bt.shape) != 3:
        raise GemmError(f"Bt must be [experts, N, K] (each expert's weight as stored, B "
                        f"transposed), got shape {Bt.shape}")
    e, n, k = Bt.shape
    if 0 in Bt.shape:
        raise GemmError(f"Bt has an empty dimension (shape {Bt.shape})")
    rows = routed_rows(A, e, k, masked, "Bt", "codes", "columns")
    if k % SCALE_BLOCK or n % SCALE_BLOCK:
        raise GemmError(f"K = {k} and N = {n} must be multiples of {SCALE_BLOCK}: an expert's "
                        "weights are scaled in whole 128×128 blocks")
    shape = (e, A.shape[1], n) if masked else (A.shape[0], n)
    if out is not None:
        if tuple(out.shape) != shape:
            raise GemmError(f"out has shape {tuple(out.shape)}; the product is {shape}")
        if out.dtype != "bfloat16":
            raise GemmError(f"out is {out.dtype}; the grouped FP8 kernel writes bfloat16")
    for x in (A, Bt) + ((out,) if out is not None else ()):
        refuse_unpacked(x)
        if x.host != A.host:
            raise GemmError(f"{x.label} is {'on the host' if x.host else 'on the GPU'} but A "
                            f"is {'on the host' if A.host else 'on the GPU'}: keep them together")
    refuse_overlap(out, (A, Bt))
    kb = k // SCALE_BLOCK
    wants = {"scale_a": A.shape[:-1] + (kb,), "scale_b": (e, n // SCALE_BLOCK, kb)}
    scales = []
    for label, s in (("scale_a", sa), ("scale_b", sb)):
        d, h, got = scale_operand(s, label)
        if tuple(got) != wants[label]:
            raise GemmError(f"{label} has shape {tuple(got)}: block scales are one per 1×128 "
                            f"block of A, {wants['scale_a']}, and one per 128×128 block of "
                            f"each expert's Bt, {wants['scale_b']}")
        if d is not None:
            refuse_unpacked(d)
            if A.host:
                raise GemmError(f"{label} is on the GPU but A is on the host: keep them "
                                "together")
        scales.append((d, h))
    return e, rows, k, n, scales[0], scales[1]


def grouped_scaled_gemm(A, Bt, out=None, *, scale_a, scale_b, offsets=None, counts=None,
                        fmt: str | None = None, check_bounds: bool = True,
                        check_scales: bool = True):
    """Every expert's FP8 product at once, block-scaled: ``C[rows of e] = (scale_a·A)[rows of
    e] · (scale_b[e]·Bt[e])ᵀ`` with A ``[T, K]`` (``offsets=``) or ``[E, M_max, K]``
    (``counts=``) and Bt ``[E, N, K]`` as FP8 codes (PyTorch's float8_e4m3fn, or uint8 with
    ``fmt="e4m3"``), ``scale_a`` one float32 per 1×128 block of A (``[T, K/128]`` or ``[E,
    M_max, K/128]``) and ``scale_b`` one per 128×128 block of each Bt[e] (``[E, N/128,
    K/128]``); K and N multiples of 128. Returns ``out`` (BF16; when None a new zero-filled
    array of A's library). Routing and ``check_bounds`` as :func:`grouped_gemm`; the scales'
    values are checked (finite, above zero) unless ``check_scales=False``. Hopper only."""
    from lab import device

    key = ("fp8", id(A), id(Bt), id(out), id(offsets), id(counts), id(scale_a), id(scale_b),
           fmt)
    if out is not None and not (check_bounds or check_scales or enqueue._STREAMS) and \
            _repeat(key, A, Bt, out, (offsets if counts is None else counts, scale_a, scale_b)):
        return out
    masked, routing = _layout(offsets, counts)
    a, bt = describe(A, "A"), describe(Bt, "Bt")
    o = describe(out, "out") if out is not None else None
    experts, rows, k, n, (da, ha), (db, hb) = validate_fp8(a, bt, o, fmt, masked,
                                                           scale_a, scale_b)
    mmax = a.shape[1] if masked else 0
    host = _bounds(routing, "counts" if masked else "offsets",
                   experts + (0 if masked else 1), check_bounds)
    _check_routing(host, masked, experts, rows, mmax)
    check_scale_values({"scale_a": (da, ha), "scale_b": (db, hb)}, check_scales)
    if not device.GPU:
        raise GemmError("grouped_scaled_gemm uses wgmma and runs on a GPU of compute "
                        f"capability 9.0; this session runs in {device.MODE} mode")
    from numba import cuda

    from lab import kernels

    cc = kernels.current_cc()
    if cc[0] != 9:
        raise GemmError(f"grouped_scaled_gemm needs compute capability 9.0 (wgmma, TMA); this "
                        f"GPU is {cc[0]}.{cc[1]}")
    d_route = _on_device(routing)
    if d_route is not None and np.dtype(d_route.dtype) not in (np.int32, np.int64):
        raise GemmError(f"{'counts' if masked else 'offsets'} on the GPU must be int32 or "
                        f"int64, got {np.dtype(d_route.dtype)}")
    cfg = fp8_tile_config(masked, mmax if masked else rows / experts)
    shape = (experts, mmax, n) if masked else (rows, n)
    target = out if out is not None else _new_bf16(a, shape)
    t = describe(target, "out")
    codes = [upload_codes(x) if x.host else as_numba(x, np.uint8) for x in (a, bt)]
    scales = [cuda.to_device(np.ascontiguousarray(h, np.float32)) if h is not None
              else as_numba(d, np.float32) for d, h in ((da, ha), (db, hb))]
    dc = cuda.to_device(np.zeros(shape, np.uint16)) if t.host else as_numba(t)
    from lab.kernels import wgmma

    launch = _LAUNCHERS.get_or_make(cfg, lambda: wgmma.grouped_launcher(cfg))
    kb = k // SCALE_BLOCK
    bounds = _bounds_device(routing, host)
    args = (codes[0].reshape((rows, k)), codes[1].reshape((experts * n, k)),
            dc.reshape((rows, n)), bounds, mmax, scales[0].reshape((rows, kb)),
            scales[1].reshape((experts * (n // SCALE_BLOCK), kb)))
    copied = a.host or bt.host or t.host or ha is not None or hb is not None or \
        host is not None
    if out is None or check_bounds or check_scales or enqueue._STREAMS or copied:
        launch(*args)
    else:                               # record the launch for the repeat path
        _remember(key, launch, args, a, (A, Bt, out), (*codes, *scales, dc, bounds),
                  (routing, scale_a, scale_b))
    if t.host:
        bits = dc.copy_to_host()
        target[...] = bits.view(target.dtype) if target.dtype != np.uint16 else bits
    return target


def _new_bf16(like: Operand, shape):
    """A zero-filled BF16 C of A's library (host: ml_dtypes' bfloat16, else uint16 bits)."""
    if like.family == "torch":
        import torch
        return torch.zeros(shape, dtype=torch.bfloat16, device=like.obj.device)
    if like.host:
        try:
            import ml_dtypes
            return np.zeros(shape, ml_dtypes.bfloat16)
        except ImportError:
            return np.zeros(shape, np.uint16)
    from numba import cuda
    return cuda.to_device(np.zeros(shape, np.uint16))
