"""Split-K (chapter 6.1): more blocks for a product with few output tiles and a long K.

What changed since the tuned kernels (``warptile_tuned``, ``tc_fp16``): the grid gains a third
(FP32) or second (tensor cores) dimension, ``s`` slices of K. Block ``(tile, z)`` runs the same
main loop over ``K[z·chunk : (z+1)·chunk]`` only (the factories' ``k_range`` hook) and ends with
a *partial* tile. Two ways to add the partials:

* **two-pass** — each block stores its partial tile in a workspace ``W[z]`` (s × M × N float32)
  and a second kernel, :func:`reduce_kernel`, adds ``W[0] + W[1] + … + W[s−1]`` in that order for
  every element: ``2·s·M·N·4`` more bytes moved (written, read back), one more launch, and the
  same bits on every run.
* **atomic** — C is zeroed and each block adds its partial tile into C with ``atomic.add``: no
  workspace and no second pass, but the additions into one element happen in whichever order the
  blocks finish. From three partials on, floating-point addition is not associative
  (``(a + b) + c ≠ a + (b + c)`` in the last bit), so the bits of C can change from one run to
  the next. With two partials they cannot: ``0 + a + b`` and ``0 + b + a`` round the same.

The split factor is a request: K is cut into ``s`` chunks of whole k-tiles (BK), and when
``⌈K/BK⌉`` is not a multiple of ``s`` the last chunk is shorter, or fewer chunks are used so
that none is empty (:func:`k_slices`). A split factor below 1 is refused before anything runs.

Stream-K, the other cure for too few tiles, is not built here: it needs a persistent kernel
that walks a contiguous run of (tile, k-iteration) pairs across tile boundaries, and either
atomics (then the same non-determinism) or blocks that wait on flags set by other blocks — a
spin-wait that deadlocks unless every block it waits for is resident, which nothing in Numba
guarantees. Our factories compute one tile per block; the chapter models Stream-K instead.

Registered: ``warptile_tuned_splitk`` and ``warptile_tuned_splitk_atomic`` (FP32, simulator too),
``tc_fp16_splitk`` and ``tc_fp16_splitk_atomic`` (FP16 tensor cores, GPU only), each launching
with :data:`DEFAULT_SPLITS` slices of K.
"""
from __future__ import annotations

from numba import cuda, float32, int32
import numpy as np

from lab import device
from lab import enqueue
from lab.kernels import KernelSpec
from lab.kernels import k04_vectorized as k04
from lab.kernels import k08_tc_pipeline as k08
from lab.kernels.fused_epilogue import FP32_CONFIG, TC_CONFIG, Tail
from lab.lru import LRU

#: Slices of K of the registered kernels' ``launch(A, B, C)``.
DEFAULT_SPLITS = 4
#: The extra kernel argument: (chunk of K per slice, workspace s×M×N).
X_TYPE = "Tuple((int32, float32[:, :, ::1]))"
SIG_FP32 = f"void(float32[:, ::1], float32[:, ::1], float32[:, ::1], {X_TYPE})"
SIG_TC = f"void(float16[:, ::1], float16[:, ::1], float32[:, ::1], {X_TYPE})"
MODES = ("two_pass", "atomic")


def k_slices(k: int, bk: int, splits) -> tuple[int, int]:
    """``(chunk, slices)``: the elements of K per slice (a multiple of ``bk``) and how many
    slices that makes — ``splits`` or fewer, none empty. ValueError for a factor below 1."""
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)):
        raise TypeError(f"split factor must be an int, got {type(splits).__name__}")
    if splits < 1:
        raise ValueError(f"split factor must be >= 1, got {splits}")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"K must be a positive int, got {k!r}")
    tiles = -(-k // bk)
    per = -(-tiles // min(int(splits), tiles))
    return per * bk, -(-tiles // per)


# region: split_tail
@cuda.jit(device=True, inline="always")
def k_range(k_total, split, X):
    """Slice ``split`` of K: [split·chunk, min(K, (split+1)·chunk))."""
    lo = int32(split * X[0])
    return lo, int32(min(k_total, lo + X[0]))


@cuda.jit(device=True, inline="always")
def store_partial(C, row, col, v, split, X):
    """Two-pass: the partial sum goes to this slice's page of the workspace."""
    X[1][split, row, col] = v


@cuda.jit(device=True, inline="always")
def store4_partial(C, row, col, v0, v1, v2, v3, split, X):
    W = X[1]
    W[split, row, col] = v0
    W[split, row, col + int32(1)] = v1
    W[split, row, col + int32(2)] = v2
    W[split, row, col + int32(3)] = v3


@cuda.jit(device=True, inline="always")
def store_atomic(C, row, col, v, split, X):
    """Atomic: add the partial sum into C, in whatever order the blocks get here."""
    cuda.atomic.add(C, (row, col), v)


@cuda.jit(device=True, inline="always")
def store4_atomic(C, row, col, v0, v1, v2, v3, split, X):
    cuda.atomic.add(C, (row, col), v0)
    cuda.atomic.add(C, (row, col + int32(1)), v1)
    cuda.atomic.add(C, (row, col + int32(2)), v2)
    cuda.atomic.add(C, (row, col + int32(3)), v3)
# endregion: split_tail


TAILS = {"two_pass": Tail(store_partial, store4_partial, k_range),
         "atomic": Tail(store_atomic, store4_atomic, k_range)}


# region: reduce
@cuda.jit
def reduce_kernel(W, C):
    """C[i, j] = W[0, i, j] + W[1, i, j] + … in that order: the same bits on every run."""
    j, i = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = float32(0.0)
        for z in range(W.shape[0]):
            acc += W[z, i, j]
        C[i, j] = acc
# endregion: reduce


@cuda.jit
def zero_kernel(C):
    j, i = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = float32(0.0)


def _elementwise_grid(m: int, n: int) -> tuple:
    return ((n + 31) // 32, (m + 7) // 8), (32, 8)


_KERNELS = LRU(64)


def fp32_kernels(mode: str, cfg: k04.Config = FP32_CONFIG):
    """(fast, edges) split-K kernels of the warp-tiled FP32 design (cached)."""
    def make():
        tail = TAILS[_mode(mode)]
        return (k04.make_gemm(cfg, EDGES=False, tail=tail),
                k04.make_gemm(cfg, EDGES=True, tail=tail))
    return _KERNELS.get_or_make(("fp32", mode, cfg), make)


def tc_kernel(mode: str, cfg: k08.TileConfig = TC_CONFIG):
    """The split-K tensor-core kernel of ``cfg``'s design (cached)."""
    return _KERNELS.get_or_make(("tc", mode, cfg),
                                lambda: k08.build(cfg, tail=TAILS[_mode(mode)]))


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown split-K mode {mode!r}; known: {', '.join(MODES)}")
    return mode


#: Two-pass workspaces kept (by context and shape), as a library keeps its workspace.
_WORKSPACE = LRU(4)
_DUMMY = LRU(8)


def _context_key():
    return "sim" if device.SIMULATOR else id(cuda.current_context())


def workspace(splits: int, m: int, n: int):
    """The two-pass workspace (s × M × N float32), kept between calls of the same shape (as a
    library keeps its workspace), so a timed call does not allocate."""
    if splits * m * n > k04.INT32_LIMIT:
        raise ValueError(f"the workspace would have {splits * m * n} elements; these kernels "
                         f"index with int32 (at most {k04.INT32_LIMIT})")
    return _WORKSPACE.get_or_make((_context_key(), splits, m, n),
                                  lambda: cuda.device_array((splits, m, n), dtype=np.float32))


def _dummy():
    return _DUMMY.get_or_make(_context_key(),
                              lambda: cuda.to_device(np.zeros((1, 1, 1), np.float32)))


def _finish(mode: str, C, chunk: int, splits: int, run) -> None:
    """Around the split kernel ``run(X)``: zero C first (atomic) or reduce after (two-pass)."""
    m, n = C.shape
    grid, block = _elementwise_grid(m, n)
    if mode == "atomic":
        enqueue.launch(zero_kernel, None, grid, block, 0, (C,))
        run((np.int32(chunk), _dummy()))
    else:
        W = workspace(splits, m, n)
        run((np.int32(chunk), W))
        enqueue.launch(reduce_kernel, None, grid, block, 0, (W, C))


# region: launch_fp32
def launch_fp32(A, B, C, *, splits: int = DEFAULT_SPLITS, mode: str = "two_pass",
                cfg: k04.Config = FP32_CONFIG) -> None:
    """C = A·B by split-K with the warp-tiled FP32 kernel (device arrays): a grid of
    (N/BN, M/BM, slices) blocks, then the reduction (two-pass) or nothing (atomic)."""
    mode = _mode(mode)
    m, n = C.shape
    k = A.shape[1]
    chunk, slices = k_slices(k, cfg.BK, splits)
    k04.check_int32(A, B, C)
    fast, edges = fp32_kernels(mode, cfg)
    kernel = fast if k04.tiles_fit(cfg, m, n, k) else edges
    grid = ((n + cfg.BN - 1) // cfg.BN, (m + cfg.BM - 1) // cfg.BM, slices)
    _finish(mode, C, chunk, slices,
            lambda X: enqueue.launch(kernel, SIG_FP32, grid, cfg.threads, 0, (A, B, C, X)))
# endregion: launch_fp32


def launch_tc(A, B, C, *, splits: int = DEFAULT_SPLITS, mode: str = "two_pass",
              cfg: k08.TileConfig = TC_CONFIG) -> None:
    """C = A·B by split-K with the tensor-core kernel (FP16 A, B; FP32 C; device arrays);
    A and B are padded to the block tile as for ``tc_fp16``."""
    from lab.kernels.k07_tensor_core import pad_inputs

    mode = _mode(mode)
    k_slices(A.shape[1], cfg.bk, splits)                  # refuse a bad factor before any copy
    kernel = tc_kernel(mode, cfg)
    a, b = pad_inputs(A, B, cfg.bm, cfg.bn, cfg.bk)
    chunk, slices = k_slices(a.shape[1], cfg.bk, splits)
    k08._allow_shared(kernel, cfg, SIG_TC)
    blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
    _finish(mode, C, chunk, slices,
            lambda X: enqueue.launch(kernel, SIG_TC, (blocks, slices), cfg.threads,
                                    cfg.shared_bytes, (a, b, C, X)))


#: Registered name -> (launch, mode).
SPLIT = {"warptile_tuned_splitk": (launch_fp32, "two_pass"),
         "warptile_tuned_splitk_atomic": (launch_fp32, "atomic"),
         "tc_fp16_splitk": (launch_tc, "two_pass"),
         "tc_fp16_splitk_atomic": (launch_tc, "atomic")}


def launcher(name: str, splits: int = DEFAULT_SPLITS):
    """``launch(A, B, C)`` of registered split-K kernel ``name`` with ``splits`` slices; a bad
    factor is refused here, before anything is launched."""
    if name not in SPLIT:
        raise ValueError(f"{name!r} is not a split-K kernel; known: {', '.join(SPLIT)}")
    k_slices(1, 1, splits)
    fn, mode = SPLIT[name]

    def launch(A, B, C):
        fn(A, B, C, splits=splits, mode=mode)
    launch.splits = splits
    launch.mode = mode
    return enqueue.memo(launch)     # a repeated call replays its launch plans (lab.enqueue)


def extra_bytes(m: int, n: int, splits: int, mode: str) -> int:
    """DRAM bytes split-K adds to the unsplit kernel: the two-pass workspace written and read
    back (2·s·M·N·4) plus C written by the reduction instead of the GEMM (0 extra); atomics
    read-modify-write C once per slice in L2 (s·M·N·4 at L2, C zeroed first: M·N·4 to DRAM)."""
    if mode == "two_pass":
        return 2 * splits * m * n * 4
    return m * n * 4


def _spec(name: str) -> KernelSpec:
    fn, mode = SPLIT[name]
    tc = fn is launch_tc
    how = ("partials to a workspace, then a reduction kernel" if mode == "two_pass"
           else "partials added into C with atomic.add")
    base = "tc_fp16" if tc else "warptile_tuned"
    if tc:
        kernel = tc_kernel(mode)
        return KernelSpec(name, f"{base}, split-K ({DEFAULT_SPLITS} slices): {how}",
                          np.float16, launcher(name), simulator=False, chapter="6.1",
                          compile=((kernel, SIG_TC),), edges=k08.EDGES,
                          tile=(TC_CONFIG.bm, TC_CONFIG.bn, TC_CONFIG.bk), min_cc=(8, 0),
                          needs="mma.sync m16n8k16 FP16, ldmatrix, cp.async")
    fast, edges = fp32_kernels(mode)
    return KernelSpec(name, f"{base}, split-K ({DEFAULT_SPLITS} slices): {how}", np.float32,
                      launcher(name), chapter="6.1",
                      compile=((fast, SIG_FP32), (edges, SIG_FP32)), edges=k04.EDGES_NOTE,
                      tile=(FP32_CONFIG.BM, FP32_CONFIG.BN, FP32_CONFIG.BK))


SPECS = [_spec(name) for name in SPLIT]

__all__ = ["k_slices", "launch_fp32", "launch_tc", "launcher", "reduce_kernel", "extra_bytes",
           "DEFAULT_SPLITS", "SPECS"]
