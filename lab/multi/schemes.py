"""Five ways to spread one product ``C = A·B`` over ``P`` GPUs, as the code one rank runs.

Every scheme is a plain function ``scheme(comm, mine)``: ``comm`` is the rank's
:class:`lab.multi.comm.Comm` (NCCL on GPUs, a thread-and-barrier simulation on CI) and ``mine``
the rank's :class:`Local` buffers, laid out by :func:`prepare`. Nothing in a scheme knows which
of the two it runs on.

* ``column`` — A on every rank, B cut by columns: rank r computes its column block of C. No
  communication; C stays in pieces.
* ``column_gather`` — the same, then an all-gather so every rank holds all of C.
* ``column_overlap`` — the same result, but C's rows are done in chunks and each finished chunk
  is all-gathered while the next one multiplies (the "collective matmul" idea).
* ``row_allreduce`` — A cut by columns, B by rows: each rank's product is a *partial* C over its
  share of K; an all-reduce sums the partials on every rank.
* ``row_reduce_scatter`` — the same partials, summed by a reduce-scatter: rank r ends with
  row block r of C.
* ``summa`` — SUMMA on a 1 × P grid: A and B both cut by columns (nothing replicated); for
  each k-panel its owner broadcasts the panel of A, every rank multiplies it by the matching
  rows of its B block and adds into its C block. The broadcast of the next panel is posted
  before the current panel multiplies.

Uneven shapes: a dimension is cut into balanced pieces (:func:`split`); collectives need equal
pieces, so a column block of B is zero-padded to the widest block and row blocks of a partial C
to whole multiples of P. The padding is never part of the assembled C (:func:`assemble`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.model import waves

#: The schemes in the order the chapter presents them.
SCHEMES = ("column", "column_gather", "column_overlap", "row_allreduce", "row_reduce_scatter",
           "summa")
#: Which schemes leave the whole C on every rank (the others leave one block per rank).
FULL_C_ON_EVERY_RANK = ("column_gather", "column_overlap", "row_allreduce")
#: Row chunks of ``column_overlap`` and k-panels per rank of ``summa`` unless told otherwise.
CHUNKS = 4
PANELS_PER_RANK = 2


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` cut into ``parts`` contiguous ranges whose sizes differ by at most one (the first
    ``n % parts`` get the extra one): ``split(45, 2) == [(0, 23), (23, 45)]``."""
    if parts < 1:
        raise ValueError(f"cannot split into {parts} parts")
    base, extra = divmod(n, parts)
    out, start = [], 0
    for p in range(parts):
        size = base + (p < extra)
        out.append((start, start + size))
        start += size
    return out


def chunk_ranges(m: int, chunks: int, row_tile: int = 1) -> list[tuple[int, int]]:
    """``column_overlap``'s row chunks: ``m`` rows in ``chunks`` contiguous ranges of whole
    ``row_tile``-row tiles (the last range takes the ragged end), as even as :func:`split`."""
    tiles = -(-m // row_tile)
    chunks = max(1, min(chunks, tiles))
    return [(a * row_tile, min(m, b * row_tile)) for a, b in split(tiles, chunks)]


#: How many more waves than one launch ``column_overlap``'s chunks may take together.
WAVE_SLACK = 0.05


def overlap_chunks(m: int, w: int, tile: tuple, sms: int, most: int = CHUNKS,
                   blocks_per_sm: int = 1) -> int:
    """How many row chunks ``column_overlap`` should cut an M × w block of C into: the most, up
    to ``most``, whose products together take at most :data:`WAVE_SLACK` more waves of ``tile``
    blocks on ``sms`` SMs, ``blocks_per_sm`` resident on each, than one launch of the whole
    block. Every launch ends in a partly empty wave, so a bad count adds arithmetic:
    ``tc_fp16`` (two blocks per SM) at n = 4096 on two GPUs is 512 tiles of 128 × 128 per GPU,
    two waves of 264 in one launch, but four in four chunks of 128 tiles (one half-empty wave
    each): two chunks add none. One chunk (no overlap) when even two would add more."""
    whole = waves(m, w, tile[0], tile[1], sms, blocks_per_sm)
    for c in range(most, 1, -1):
        parts = chunk_ranges(m, c, tile[0])
        if len(parts) == c and sum(waves(r1 - r0, w, tile[0], tile[1], sms, blocks_per_sm)
                                   for r0, r1 in parts) <= whole * (1 + WAVE_SLACK):
            return c
    return 1


def check_problem(m: int, n: int, k: int, world: int, scheme: str | None = None) -> None:
    """ValueError, naming the problem, for a world size or shape the schemes cannot take —
    raised before any buffer is made or kernel launched."""
    if not isinstance(world, (int, np.integer)) or isinstance(world, bool) or world < 1:
        raise ValueError(f"world size must be a positive int (number of ranks), got {world!r}")
    for label, v in (("M", m), ("N", n), ("K", k)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{label} must be a positive int, got {v!r}")
        if v < world:
            raise ValueError(f"{label} = {v} is smaller than the world size {world}: some rank "
                             "would get an empty block")
    if scheme is not None and scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; known: {', '.join(SCHEMES)}")


@dataclass
class Local:
    """One rank's buffers for one scheme (which fields are set depends on the scheme)."""
    scheme: str
    m: int
    n: int
    k: int
    world: int
    rank: int
    a: object = None                # A, or this rank's columns of A
    b: object = None                # this rank's columns (zero-padded) or rows of B
    c: object = None                # this rank's block of C
    gathered: object = None         # (P, M, w): every rank's column block
    chunks: list = field(default_factory=list)      # column_overlap: (r0, r1, (P, rows, w))
    partial: object = None          # (P, rows, N): a partial C, row blocks stacked
    partial_rows: object = None     # the same buffer as (P·rows, N)
    out: object = None              # row_reduce_scatter: this rank's rows of C
    panels: list = field(default_factory=list)      # summa: (k0, k1, owner, A panel or None)
    recv: dict = field(default_factory=dict)        # summa: receive buffers by (width, parity)
    tmp: object = None              # summa: one panel's product before it is added


def prepare(comm, scheme: str, A, B, *, chunks: int = CHUNKS,
            panels_per_rank: int = PANELS_PER_RANK, row_tile: int = 1) -> Local:
    """This rank's buffers for ``scheme`` from the whole ``A`` (M×K) and ``B`` (K×N) as
    ``comm`` arrays (the experiment makes them on each GPU from one seed). Output buffers are
    poisoned with NaN (:func:`poison`), padding is zero. ``column_overlap``'s chunks are whole
    ``row_tile``-row tiles of C (:func:`chunk_ranges`)."""
    m, k = A.shape
    n = B.shape[1]
    if B.shape[0] != k:
        raise ValueError(f"inner dimensions differ: A is {m}x{k}, B is {B.shape[0]}x{n}")
    check_problem(m, n, k, comm.world, scheme)
    P, r = comm.world, comm.rank
    dt = comm.dtype_of(A)
    mine = Local(scheme, m, n, k, P, r)
    cols = split(n, P)
    w = cols[0][1] - cols[0][0]
    if scheme in ("column", "column_gather", "column_overlap", "summa"):
        c0, c1 = cols[r]
        mine.b = comm.zeros((k, w), dt)
        mine.b[:, :c1 - c0] = B[:, c0:c1]
        mine.c = comm.empty((m, w))
    if scheme in ("column", "column_gather", "column_overlap"):
        mine.a = A
    if scheme == "column_gather":
        mine.gathered = comm.empty((P, m, w))
    if scheme == "column_overlap":
        mine.chunks = [(r0, r1, comm.empty((P, r1 - r0, w)))
                       for r0, r1 in chunk_ranges(m, chunks, row_tile)]
    if scheme in ("row_allreduce", "row_reduce_scatter"):
        k0, k1 = split(k, P)[r]
        mine.a = comm.empty((m, k1 - k0), dt)
        mine.a[...] = A[:, k0:k1]
        mine.b = comm.empty((k1 - k0, n), dt)
        mine.b[...] = B[k0:k1]
        rows = -(-m // P)
        mine.partial = comm.zeros((P, rows, n))
        mine.partial_rows = mine.partial.reshape(P * rows, n)
        if scheme == "row_reduce_scatter":
            mine.out = comm.empty((rows, n))
    if scheme == "summa":
        for owner, (k0, k1) in enumerate(split(k, P)):
            for p0, p1 in split(k1 - k0, min(panels_per_rank, k1 - k0)):
                panel = None
                if owner == r:
                    panel = comm.empty((m, p1 - p0), dt)
                    panel[...] = A[:, k0 + p0:k0 + p1]
                mine.panels.append((k0 + p0, k0 + p1, owner, panel))
        for i, (k0, k1, owner, _) in enumerate(mine.panels):
            if owner != r:
                mine.recv.setdefault((k1 - k0, i % 2), comm.empty((m, k1 - k0), dt))
        mine.tmp = comm.empty((m, w))
    poison(comm, mine)
    return mine


def poison(comm, mine: Local) -> None:
    """Fill every buffer the scheme writes with NaN, so an element never written fails."""
    for x in (mine.c, mine.gathered, mine.out, mine.tmp, *mine.recv.values(),
              *(g for _, _, g in mine.chunks)):
        if x is not None:
            comm.fill_nan(x)
    if mine.partial_rows is not None:
        comm.fill_nan(mine.partial_rows[:mine.m])


# ----------------------------------------------------------------------------- the schemes

# region: column
def column(comm, mine: Local) -> None:
    """B split by columns, A everywhere: each rank's block of C, no communication."""
    comm.matmul(mine.a, mine.b, mine.c)


def column_gather(comm, mine: Local) -> None:
    """The column blocks, then one all-gather: every rank holds all of C."""
    comm.matmul(mine.a, mine.b, mine.c)
    comm.all_gather(mine.gathered, mine.c)
# endregion: column


# region: column_overlap
def column_overlap(comm, mine: Local) -> None:
    """The column blocks in row chunks: chunk j's all-gather runs (on the communication
    stream) while chunk j + 1 multiplies (on the compute stream)."""
    pending = []
    for r0, r1, gathered in mine.chunks:
        comm.matmul(mine.a[r0:r1], mine.b, mine.c[r0:r1])
        pending.append(comm.all_gather(gathered, mine.c[r0:r1], async_op=True))
    comm.wait(pending)
# endregion: column_overlap


# region: row
def row_allreduce(comm, mine: Local) -> None:
    """A by columns, B by rows: a partial C over this rank's share of K, summed everywhere."""
    comm.matmul(mine.a, mine.b, mine.partial_rows[:mine.m])
    comm.all_reduce(mine.partial)


def row_reduce_scatter(comm, mine: Local) -> None:
    """The same partial C, summed so that rank r keeps only row block r."""
    comm.matmul(mine.a, mine.b, mine.partial_rows[:mine.m])
    comm.reduce_scatter(mine.out, mine.partial)
# endregion: row


# region: summa
def summa(comm, mine: Local) -> None:
    """SUMMA on a 1 × P grid: the owner of each k-panel of A broadcasts it; every rank
    multiplies it by the same rows of its B block and adds into its C block. The next panel's
    broadcast is posted before this one multiplies, so the two overlap."""
    def post(i):
        k0, k1, owner, panel = mine.panels[i]
        buf = panel if owner == comm.rank else mine.recv[(k1 - k0, i % 2)]
        return buf, comm.broadcast(buf, owner, async_op=True)

    ahead = post(0)
    for i, (k0, k1, _, _) in enumerate(mine.panels):
        buf, handle = ahead
        if i + 1 < len(mine.panels):
            ahead = post(i + 1)
        comm.wait([handle])
        if i == 0:
            comm.matmul(buf, mine.b[k0:k1], mine.c)
        else:
            comm.matmul(buf, mine.b[k0:k1], mine.tmp)
            comm.add_(mine.c, mine.tmp)
# endregion: summa


RUN = {"column": column, "column_gather": column_gather, "column_overlap": column_overlap,
       "row_allreduce": row_allreduce, "row_reduce_scatter": row_reduce_scatter,
       "summa": summa}


# ----------------------------------------------------------------------------- checking

def host_view(mine: Local, to_host) -> dict:
    """The buffers :func:`assemble` reads, as NumPy arrays (``to_host`` converts one array)."""
    out = {}
    if mine.scheme in ("column", "summa"):
        out["c"] = to_host(mine.c)
    elif mine.scheme == "column_gather":
        out["gathered"] = to_host(mine.gathered)
    elif mine.scheme == "column_overlap":
        out["chunks"] = [(r0, r1, to_host(g)) for r0, r1, g in mine.chunks]
    elif mine.scheme == "row_allreduce":
        out["partial_rows"] = to_host(mine.partial_rows)
    else:
        out["out"] = to_host(mine.out)
    return out


def assemble(scheme: str, views: list[dict], m: int, n: int) -> list[np.ndarray]:
    """The whole C (M×N) from the ranks' :func:`host_view` s: one matrix per rank for the
    schemes that leave all of C on every rank, else one matrix joined from every rank's block.
    Padding is dropped; an element no rank supplied stays NaN."""
    P = len(views)
    cols = split(n, P)
    if scheme in ("column", "summa"):
        C = np.full((m, n), np.nan, dtype=np.float32)
        for (c0, c1), v in zip(cols, views):
            C[:, c0:c1] = v["c"][:, :c1 - c0]
        return [C]
    if scheme == "row_reduce_scatter":
        return [np.concatenate([v["out"] for v in views])[:m]]
    whole = []
    for v in views:
        C = np.full((m, n), np.nan, dtype=np.float32)
        if scheme == "column_gather":
            for p, (c0, c1) in enumerate(cols):
                C[:, c0:c1] = v["gathered"][p][:, :c1 - c0]
        elif scheme == "column_overlap":
            for r0, r1, g in v["chunks"]:
                for p, (c0, c1) in enumerate(cols):
                    C[r0:r1, c0:c1] = g[p][:, :c1 - c0]
        else:
            C[...] = v["partial_rows"][:m]
        whole.append(C)
    return whole


def check(scheme: str, views: list[dict], A: np.ndarray, B: np.ndarray, *,
          kernel: str = "?"):
    """Every assembled C of ``scheme`` against the float64 product (:func:`lab.bench.compare`);
    the worst verdict (a failing one if any fails)."""
    from lab import bench

    m, n = A.shape[0], B.shape[1]
    verdicts = [bench.compare(C, A, B, kernel=f"{scheme}/{kernel}")
                for C in assemble(scheme, views, m, n)]
    failed = [v for v in verdicts if not v.passed]
    return failed[0] if failed else max(verdicts, key=lambda v: v.err_over_bound)


# ----------------------------------------------------------------------------- simulation

def numpy_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A stand-in kernel for the simulation of 16-bit schemes (the tensor-core kernels need a
    GPU): exact products of the inputs, accumulated in float64, rounded to float32."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def kernel_matmul(kernel: str):
    """``matmul_fn`` of a registered kernel through :func:`lab.matmul` (NaN-poisoned output)."""
    import lab

    def run(a, b):
        return lab.matmul(a, b, kernel=kernel)
    run.kernel = kernel
    return run


def simulate(scheme: str, A: np.ndarray, B: np.ndarray, *, world: int = 2,
             kernel: str | None = "warptile_tuned", matmul_fn=None, comm_class=None,
             chunks: int = CHUNKS, panels_per_rank: int = PANELS_PER_RANK) -> dict:
    """Run ``scheme`` on ``world`` simulated ranks in this process and check the result.

    Inputs are checked first (shapes, world size, the kernel's dtype), before any thread starts.
    ``matmul_fn(a, b)`` replaces the kernel (e.g. :func:`numpy_matmul` for FP16). Returns the
    ranks' views, the assembled C(s) and the verdict of :func:`check`.
    """
    from lab.api import validate
    from lab.kernels import get_spec
    from lab.multi.comm import SimComm, run_ranks

    if not isinstance(A, np.ndarray) or not isinstance(B, np.ndarray):
        raise TypeError("simulate takes numpy arrays A and B")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A and B must be 2-D with A.shape[1] == B.shape[0]; got {A.shape} "
                         f"and {B.shape}")
    check_problem(A.shape[0], B.shape[1], A.shape[1], world, scheme)
    if matmul_fn is None:
        validate(A, B, get_spec(kernel))
        matmul_fn = kernel_matmul(kernel)
        label = kernel
    else:
        label = getattr(matmul_fn, "__name__", "matmul_fn")
    comm_class = comm_class or SimComm

    def body(comm):
        mine = prepare(comm, scheme, A, B, chunks=chunks, panels_per_rank=panels_per_rank)
        RUN[scheme](comm, mine)
        return host_view(mine, np.asarray)

    views = run_ranks(world, body, matmul_fn, comm_class=comm_class)
    return {"views": views, "C": assemble(scheme, views, A.shape[0], B.shape[1]),
            "verdict": check(scheme, views, A, B, kernel=label)}
