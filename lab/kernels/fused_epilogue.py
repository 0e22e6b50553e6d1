"""The fused epilogue (chapter 6.3): ``D = act(α·A·B + β·C + bias)`` in the kernel that computes
A·B.

What changed since the tuned kernels (``warptile_tuned``, chapter 4; ``tc_fp16``, chapter 5):
only the last lines, where a thread writes its finished accumulators. The main loop, the tiles, the
shared memory and the registers that hold the accumulators are the same code: the factories
:func:`lab.kernels.k04_vectorized.make_gemm` and :func:`lab.kernels.k08_tc_pipeline.build`
take a ``tail`` whose ``store`` replaces the plain store, and :func:`finish` is that store's
arithmetic — one element, with its row and column:

* ``α·acc`` — the accumulator scaled;
* ``+ β·C[row, col]`` — one more read of an M×N matrix, only when the epilogue has a C;
* ``+ bias[col]`` — a vector of N, broadcast over the rows (read from L1/L2, not HBM, after
  the first row of blocks);
* then ReLU (``max(v, 0)``) or GELU, in the tanh form cuBLASLt's GELU epilogue uses:
  ``0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))``.

Unfused, the same result takes the GEMM plus an element-wise kernel that reads the M×N product
back, reads C and the bias, and writes D: per output element 4 bytes written and re-read, on
top of what the fused kernel moves (:func:`saved_bytes`).

Which epilogue a kernel has — the activation, and whether it reads C and a bias — is a closure
constant (:class:`Epilogue`): each combination compiles to its own kernel, and the branches of
:func:`finish` that do not apply are gone from it. ``α`` and ``β`` are run-time scalars. With
``β = 0`` C is not read at all (as in BLAS: NaNs in an unread C cannot leak into D).

Registered: ``warptile_tuned_epilogue`` (FP32, simulator too) and ``tc_fp16_epilogue`` (FP16
tensor cores, GPU only). Their ``launch(A, B, C)`` is the identity epilogue (α = 1, nothing
else), so :func:`lab.matmul` still returns A·B; their ``check`` runs the whole epilogue —
α·A·B + β·C + bias, then GELU — against a float64 reference (:func:`compare`).

Edges: as the kernels they are built from (bounds-checked twin for FP32, padded operands for
tensor cores); C and the bias are read only where the store is in bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
from numba import cuda, float32, int32

from lab import device
from lab.kernels import KernelSpec
from lab.kernels import k04_vectorized as k04
from lab.kernels import k08_tc_pipeline as k08
from lab.kernels.k06_warptile import VARIANTS
from lab.lru import LRU
from lab.vector import st_global_v4

#: Activation name -> the constant the kernel branches on.
ACTIVATIONS = {"none": 0, "relu": 1, "gelu": 2}
GELU_K = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715

#: The kernels' extra argument: (C, bias, alpha, beta).
X_TYPE = "Tuple((float32[:, ::1], float32[::1], float32, float32))"
SIG_FP32 = f"void(float32[:, ::1], float32[:, ::1], float32[:, ::1], {X_TYPE})"
SIG_TC = f"void(float16[:, ::1], float16[:, ::1], float32[:, ::1], {X_TYPE})"

#: The designs fused here: our best FP32 kernel and our best tensor-core kernel.
FP32_CONFIG = VARIANTS["warptile_tuned"]
TC_CONFIG = k08.RUNG_CONFIGS["tc_fp16"]


class Tail(NamedTuple):
    """What the factories' ``tail`` hook takes (see :func:`lab.kernels.k04_vectorized.make_gemm`):
    device functions, or None for the default behaviour."""
    store: Callable | None
    store4: Callable | None
    k_range: Callable | None


@dataclass(frozen=True)
class Epilogue:
    """Which epilogue a kernel is compiled with: the activation, and whether it reads C and a
    bias (α and β are run-time values)."""
    activation: str = "none"
    bias: bool = False
    c: bool = False

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; known: "
                             f"{', '.join(ACTIVATIONS)}")

    @property
    def label(self) -> str:
        core = "α·AB" + (" + β·C" if self.c else "") + (" + bias" if self.bias else "")
        return core if self.activation == "none" else f"{self.activation}({core})"


# region: epilogue
@cuda.jit(device=True, inline="always")
def gelu(v):
    """GELU, tanh form: 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))."""
    inner = float32(GELU_K) * (v + float32(GELU_CUBIC) * v * v * v)
    return float32(0.5) * v * (float32(1.0) + math.tanh(inner))


def make_finish(ep: Epilogue):
    """The epilogue of one element, for one :class:`Epilogue` (its switches are constants)."""
    ACT, HAS_C, HAS_BIAS = ACTIVATIONS[ep.activation], ep.c, ep.bias

    @cuda.jit(device=True, inline="always")
    def finish(acc, row, col, X):
        """act(α·acc + β·C[row, col] + bias[col]); X = (C, bias, α, β)."""
        v = X[2] * acc
        if HAS_C:
            v += X[3] * X[0][row, col]
        if HAS_BIAS:
            v += X[1][col]
        if ACT == 1:
            v = max(v, float32(0.0))
        elif ACT == 2:
            v = gelu(v)
        return v

    return finish
# endregion: epilogue


def tail_for(ep: Epilogue) -> Tail:
    """The store hooks that put :func:`make_finish` between the accumulators and D."""
    finish = make_finish(ep)

    @cuda.jit(device=True, inline="always")
    def store(D, row, col, v, split, X):
        D[row, col] = finish(v, row, col, X)

    @cuda.jit(device=True, inline="always")
    def store4(D, row, col, v0, v1, v2, v3, split, X):
        st_global_v4(D, row * int32(D.shape[1]) + col, finish(v0, row, col, X),
                     finish(v1, row, col + int32(1), X), finish(v2, row, col + int32(2), X),
                     finish(v3, row, col + int32(3), X))

    return Tail(store, store4, None)


# ----------------------------------------------------------------------------- kernels

_KERNELS = LRU(64)


def fp32_kernels(ep: Epilogue, cfg: k04.Config = FP32_CONFIG):
    """(fast, edges) kernels of the warp-tiled FP32 design with epilogue ``ep`` (cached)."""
    def make():
        tail = tail_for(ep)
        return (k04.make_gemm(cfg, EDGES=False, tail=tail),
                k04.make_gemm(cfg, EDGES=True, tail=tail))
    return _KERNELS.get_or_make(("fp32", cfg, ep), make)


def tc_kernel(ep: Epilogue, cfg: k08.TileConfig = TC_CONFIG):
    """The tensor-core kernel of ``cfg``'s design with epilogue ``ep`` (cached)."""
    return _KERNELS.get_or_make(("tc", cfg, ep), lambda: k08.build(cfg, tail=tail_for(ep)))


# ----------------------------------------------------------------------------- operands

def _is_real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _describe(x) -> str:
    return f"{np.dtype(x.dtype).name} array of shape {tuple(x.shape)}"


def _contiguous(x) -> bool:
    test = getattr(x, "is_c_contiguous", None)
    return test() if callable(test) else bool(x.flags.c_contiguous)


def resolve(m: int, n: int, *, C=None, bias=None, alpha=1.0, beta=0.0,
            activation: str = "none") -> Epilogue:
    """The :class:`Epilogue` a call asks for, after checking its operands (host or device
    arrays); ValueError/TypeError naming the problem, before anything is launched.

    ``beta != 0`` needs a C of shape (M, N); with ``beta == 0`` a C is accepted and not read.
    ``bias`` is a vector of N. Both float32 and C-contiguous; α and β finite real numbers.
    """
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
    for label, v in (("alpha", alpha), ("beta", beta)):
        if not _is_real(v):
            raise TypeError(f"{label} must be a real number, got {type(v).__name__}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{label} must be finite, got {v!r}")
    if beta != 0 and C is None:
        raise ValueError(f"beta={beta!r} scales C, but no C was given (pass C=, or beta=0)")
    for label, x, shape in (("C", C, (m, n)), ("bias", bias, (n,))):
        if x is None:
            continue
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"{label} must be an array, got {type(x).__name__}")
        if tuple(x.shape) != shape:
            what = f"a vector of N = {n}" if label == "bias" else f"M×N = {m}×{n}"
            raise ValueError(f"{label} must be {what}; got {_describe(x)}")
        if np.dtype(x.dtype) != np.float32:
            raise ValueError(f"{label} must be float32; got {_describe(x)}")
        if not _contiguous(x):
            raise ValueError(f"{label} is not C-contiguous")
    return Epilogue(activation, bias is not None, C is not None and beta != 0)


_DUMMY = LRU(8)


def _dummies():
    """1×1 and length-1 float32 device arrays standing in for an absent C or bias."""
    key = id(cuda.current_context()) if not device.SIMULATOR else "sim"
    return _DUMMY.get_or_make(key, lambda: (cuda.to_device(np.zeros((1, 1), np.float32)),
                                            cuda.to_device(np.zeros(1, np.float32))))


def _x(ep: Epilogue, C, bias, alpha, beta) -> tuple:
    c_dummy, b_dummy = _dummies()
    return (C if ep.c else c_dummy, bias if ep.bias else b_dummy, np.float32(alpha),
            np.float32(beta))


# region: launch_fp32
def launch_fp32(A, B, D, *, C=None, bias=None, alpha=1.0, beta=0.0, activation="none",
                cfg: k04.Config = FP32_CONFIG) -> None:
    """D = act(α·A·B + β·C + bias) with the warp-tiled FP32 kernel (device arrays)."""
    m, n = D.shape
    ep = resolve(m, n, C=C, bias=bias, alpha=alpha, beta=beta, activation=activation)
    k04.check_int32(A, B, D)
    fast, edges = fp32_kernels(ep, cfg)
    kernel = fast if k04.tiles_fit(cfg, m, n, A.shape[1]) else edges
    grid = ((n + cfg.BN - 1) // cfg.BN, (m + cfg.BM - 1) // cfg.BM)
    kernel[grid, cfg.threads](A, B, D, _x(ep, C, bias, alpha, beta))
# endregion: launch_fp32


def launch_tc(A, B, D, *, C=None, bias=None, alpha=1.0, beta=0.0, activation="none",
              cfg: k08.TileConfig = TC_CONFIG) -> None:
    """D = act(α·A·B + β·C + bias) with the tensor-core kernel (FP16 A and B, FP32 C, bias, D;
    device arrays). A and B are padded to the block tile as for ``tc_fp16``."""
    from lab.kernels.k07_tensor_core import pad_inputs

    m, n = D.shape
    ep = resolve(m, n, C=C, bias=bias, alpha=alpha, beta=beta, activation=activation)
    kernel = tc_kernel(ep, cfg)
    a, b = pad_inputs(A, B, cfg.bm, cfg.bn, cfg.bk)
    k08._allow_shared(kernel, cfg, SIG_TC)
    blocks = (a.shape[0] // cfg.bm) * (b.shape[1] // cfg.bn)
    kernel[blocks, cfg.threads, 0, cfg.shared_bytes](a, b, D, _x(ep, C, bias, alpha, beta))


# region: unfused
def make_elementwise(ep: Epilogue):
    """The unfused epilogue: a second kernel that reads the product P back and writes
    D[i, j] = finish(P[i, j]) — the same :func:`make_finish`, one thread per element."""
    finish = make_finish(ep)

    @cuda.jit
    def elementwise(P, D, X):
        j, i = cuda.grid(2)
        if i < D.shape[0] and j < D.shape[1]:
            D[i, j] = finish(P[i, j], i, j, X)

    return elementwise
# endregion: unfused


def launch_elementwise(P, D, *, C=None, bias=None, alpha=1.0, beta=0.0,
                       activation="none") -> None:
    """D = act(α·P + β·C + bias) element by element (device arrays; P and D are M×N float32)."""
    m, n = D.shape
    if tuple(P.shape) != (m, n):
        raise ValueError(f"P must be {m}×{n} like D; got shape {tuple(P.shape)}")
    ep = resolve(m, n, C=C, bias=bias, alpha=alpha, beta=beta, activation=activation)
    kernel = _KERNELS.get_or_make(("elementwise", ep), lambda: make_elementwise(ep))
    kernel[((n + 31) // 32, (m + 7) // 8), (32, 8)](P, D, _x(ep, C, bias, alpha, beta))


#: Registered kernel name -> its fused launch.
FUSED = {"warptile_tuned_epilogue": launch_fp32, "tc_fp16_epilogue": launch_tc}


# ----------------------------------------------------------------------------- reference, check

def activate(v: np.ndarray, activation: str) -> np.ndarray:
    """The activation in float64 (the reference's)."""
    if activation == "relu":
        return np.maximum(v, 0.0)
    if activation == "gelu":
        return 0.5 * v * (1.0 + np.tanh(GELU_K * (v + GELU_CUBIC * v ** 3)))
    return v


def reference(a, b, *, C=None, bias=None, alpha=1.0, beta=0.0, activation="none") -> np.ndarray:
    """act(α·A·B + β·C + bias) in float64 from the exact values the kernel was given."""
    from lab.accuracy import to_float64

    v = alpha * (to_float64(a) @ to_float64(b))
    if C is not None and beta != 0:
        v = v + beta * np.asarray(C, np.float64)
    if bias is not None:
        v = v + np.asarray(bias, np.float64)[None, :]
    return activate(v, activation)


#: Lipschitz constant of GELU (max |GELU'(v)| ≈ 1.129) and the unit roundoff of the epilogue's
#: FP32 arithmetic.
GELU_LIPSCHITZ = 1.13
UNIT = 2.0 ** -24


def compare(out, a, b, *, C=None, bias=None, alpha=1.0, beta=0.0, activation="none",
            kernel: str = "?", seed: int | None = None, tensor_cores: bool | None = None):
    """Compare a fused kernel's output with :func:`reference`, elementwise against a bound that
    extends :mod:`lab.accuracy`'s product bound through the epilogue; a
    :class:`lab.accuracy.CheckResult`.

    With ``E`` the product's bound (``accuracy.bound_factor(K)·(|A|·|B|)``) and
    ``S = |α|·(|A|·|B|) + |β·C| + |bias|``, the value before the activation is off by at most
    ``|α|·E + 4u·S`` (the product's error scaled, plus one rounding for each of the scale, the
    add of β·C and the add of the bias, and one for luck). ReLU does not add to it; GELU
    multiplies it by its Lipschitz constant 1.13 and adds ``16u·|v|`` for its own evaluation
    (tanh and five roundings). NaN, infinity or an unwritten element always fails.
    """
    from lab import accuracy

    a_shape, b_shape = np.shape(a), np.shape(b)
    m, k = a_shape
    n = b_shape[1]
    shape = (m, n, k)
    dtype_name = "bfloat16" if a.dtype == np.uint16 else a.dtype.name
    if tensor_cores is None:
        tensor_cores = a.dtype.itemsize == 2
    factor = accuracy.bound_factor(k, tensor_cores=tensor_cores)
    out = np.asarray(out)
    if out.shape != (m, n):
        return accuracy.CheckResult(kernel, shape, dtype_name, math.inf, math.inf, math.inf,
                                 factor, -1, False, f"output shape {out.shape} != {(m, n)}",
                                 seed)
    out64 = out.astype(np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out64)))
    if nonfinite:
        return accuracy.CheckResult(kernel, shape, dtype_name, math.inf, math.inf, math.inf,
                                 factor, nonfinite, False,
                                 f"{nonfinite} element(s) NaN/inf or never written", seed)
    a64, b64 = accuracy.to_float64(a), accuracy.to_float64(b)
    absprod = np.abs(a64) @ np.abs(b64)
    s = abs(alpha) * absprod
    if C is not None and beta != 0:
        s = s + abs(beta) * np.abs(np.asarray(C, np.float64))
    if bias is not None:
        s = s + np.abs(np.asarray(bias, np.float64))[None, :]
    pre = abs(alpha) * (factor * absprod + k * 2.0 ** -149) + 4 * UNIT * s
    ref = reference(a, b, C=C, bias=bias, alpha=alpha, beta=beta, activation=activation)
    if activation == "gelu":
        v = reference(a, b, C=C, bias=bias, alpha=alpha, beta=beta)
        bound = GELU_LIPSCHITZ * pre + 16 * UNIT * np.abs(v) + 2.0 ** -126
    else:
        bound = pre + 2.0 ** -149
    diff = np.abs(out64 - ref)
    ratio = float(np.max(diff / bound))
    ref_norm, ref_max = float(np.linalg.norm(ref)), float(np.max(np.abs(ref)))
    err_norm = float(np.linalg.norm(diff))
    rel = err_norm / ref_norm if ref_norm > 0 else err_norm
    mx = float(np.max(diff)) / ref_max if ref_max > 0 else float(np.max(diff))
    passed = ratio <= 1.0
    reason = "" if passed else f"error {ratio:.1f}x the epilogue's bound"
    return accuracy.CheckResult(kernel, shape, dtype_name, rel, mx, ratio, factor, 0, passed,
                             reason, seed)


#: The epilogue :func:`check` runs by default: all of it.
CHECK_ALPHA, CHECK_BETA = 0.75, -0.5


def operands(m: int, n: int, k: int, dtype, rng: np.random.Generator):
    """Random A, B (the kernel's dtype), C (M×N) and bias (N), all uniform(−1, 1)."""
    from lab import accuracy

    a, b = accuracy.random_inputs(m, n, k, dtype, rng)
    c = rng.uniform(-1.0, 1.0, size=(m, n)).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    return a, b, c, bias


def run(name: str, a, b, *, C=None, bias=None, alpha=1.0, beta=0.0,
        activation="none") -> np.ndarray:
    """Host arrays in, host D out, through registered fused kernel ``name``: operands are
    checked (A and B as :func:`lab.matmul` checks them, C and bias by :func:`resolve`) and the
    kernel's availability here, before anything is copied or launched; D starts as NaN."""
    from lab.kernels import KernelUnavailable, get_spec, runnable, validate

    if name not in FUSED:
        raise ValueError(f"{name!r} is not a fused-epilogue kernel; known: {', '.join(FUSED)}")
    spec = get_spec(name)
    m, n, _ = validate(a, b, spec)
    resolve(m, n, C=C, bias=bias, alpha=alpha, beta=beta, activation=activation)
    ok, why = runnable(spec)
    if not ok:
        raise KernelUnavailable(why)
    d = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    FUSED[name](cuda.to_device(a), cuda.to_device(b), d,
                C=None if C is None else cuda.to_device(C),
                bias=None if bias is None else cuda.to_device(bias),
                alpha=alpha, beta=beta, activation=activation)
    return d.copy_to_host()


def check(name: str, m: int, n: int, k: int, *, seed: int | None = None,
          activation: str = "gelu", alpha: float = CHECK_ALPHA, beta: float = CHECK_BETA,
          use_c: bool = True, use_bias: bool = True):
    """Run fused kernel ``name`` once on fresh random operands (from ``seed``) with the whole
    epilogue — by default GELU(0.75·A·B − 0.5·C + bias) — and compare with float64."""
    from lab import accuracy
    from lab.kernels import get_spec

    spec = get_spec(name)
    seed = accuracy.new_seed() if seed is None else seed
    a, b, c, bias = operands(m, n, k, spec.dtype, np.random.default_rng(seed))
    c = c if use_c else None
    bias = bias if use_bias else None
    beta = beta if use_c else 0.0
    out = run(name, a, b, C=c, bias=bias, alpha=alpha, beta=beta, activation=activation)
    ep = Epilogue(activation, use_bias, use_c)
    return compare(out, a, b, C=c, bias=bias, alpha=alpha, beta=beta, activation=activation,
                   kernel=f"{name}[{ep.label}]", seed=seed)


# ----------------------------------------------------------------------------- the model

def saved_bytes(m: int, n: int, *, c: bool = True, out_bytes: int = 4) -> dict:
    """DRAM bytes of the epilogue, fused against unfused (GEMM writes A·B, an element-wise
    kernel reads it back with C and the bias and writes D). The bias (N values) is counted
    once. Returns ``fused``, ``unfused`` and ``saved`` (= the product's write and re-read)."""
    e = out_bytes
    common = (m * n * 4 if c else 0) + n * 4 + m * n * e   # read C, read bias, write D
    return {"fused": common, "unfused": common + 2 * m * n * 4, "saved": 2 * m * n * 4}


# ----------------------------------------------------------------------------- registration

def _identity(launch):
    def identity(A, B, C):
        """The identity epilogue (α = 1, no C, no bias, no activation): plain A·B."""
        launch(A, B, C)
    return identity


_FP32_FULL = Epilogue("gelu", bias=True, c=True)
_fast, _edges = fp32_kernels(_FP32_FULL)
_tc_full = tc_kernel(_FP32_FULL)

SPECS = [
    KernelSpec("warptile_tuned_epilogue",
               "warptile_tuned + fused epilogue act(α·AB + β·C + bias)", np.float32,
               _identity(launch_fp32), chapter="6.3",
               compile=((_fast, SIG_FP32), (_edges, SIG_FP32)), edges=k04.EDGES_NOTE,
               tile=(FP32_CONFIG.BM, FP32_CONFIG.BN, FP32_CONFIG.BK), config=FP32_CONFIG,
               check=lambda m, n, k, seed=None: check("warptile_tuned_epilogue", m, n, k,
                                                      seed=seed)),
    KernelSpec("tc_fp16_epilogue", "tc_fp16 + fused epilogue act(α·AB + β·C + bias)",
               np.float16, _identity(launch_tc), simulator=False, chapter="6.3",
               compile=((_tc_full, SIG_TC),), edges=k08.EDGES,
               tile=(TC_CONFIG.bm, TC_CONFIG.bn, TC_CONFIG.bk), min_cc=(8, 0),
               needs="mma.sync m16n8k16 FP16, ldmatrix, cp.async", config=TC_CONFIG,
               check=lambda m, n, k, seed=None: check("tc_fp16_epilogue", m, n, k, seed=seed)),
]

__all__ = ["Epilogue", "Tail", "ACTIVATIONS", "make_finish", "tail_for", "launch_fp32",
           "launch_tc", "resolve", "reference", "compare", "check", "run", "saved_bytes",
           "SPECS"]
