"""The communicator the schemes talk to, and its in-process simulation.

A scheme (:mod:`lab.multi.schemes`) is the code *one* rank runs. Everything it does to memory or
to the other ranks goes through a :class:`Comm`:

* memory: ``empty``, ``zeros``, ``fill_nan``, ``add_`` (``dst += src``);
* arithmetic: ``matmul(a, b, out)`` — ``out = a @ b`` through one of our registered kernels;
* collectives, each optionally asynchronous (``async_op=True`` returns a handle for ``wait``):
  ``all_gather(out, inp)`` (``out`` stacks every rank's ``inp``: shape ``(world, *inp.shape)``),
  ``all_reduce(buf)`` (sum, in place), ``reduce_scatter(out, inp)`` (``inp`` is
  ``(world, *out.shape)``; rank r gets the sum of every rank's ``inp[r]``) and
  ``broadcast(buf, src)``.

Two implementations: :class:`SimComm` here (NumPy arrays, one Python thread per rank, collectives
meet at a barrier; kernels run one at a time, in Numba's simulator where there is no GPU) and
:class:`lab.multi.nccl.NcclComm` (CUDA tensors, NCCL through ``torch.distributed``). The same
scheme code runs on both.

``do_compute`` and ``do_comm`` switch the two halves off: a scheme run with ``do_compute=False``
times its communication alone, one with ``do_comm=False`` its arithmetic alone — how the
experiment splits a scheme's time into computing and communicating.
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np


class Comm:
    """What a scheme may ask of its rank (see the module docstring). Subclasses implement the
    underscored methods; the public ones honour ``do_compute`` / ``do_comm``."""

    rank: int
    world: int
    do_compute: bool = True
    do_comm: bool = True

    # memory ------------------------------------------------------------------------------
    def empty(self, shape, dtype: str = "float32"):
        raise NotImplementedError

    def zeros(self, shape, dtype: str = "float32"):
        raise NotImplementedError

    def fill_nan(self, x) -> None:
        raise NotImplementedError

    def dtype_of(self, x) -> str:
        """The element type of one of this rank's arrays, as a NumPy name (``"float16"``)."""
        raise NotImplementedError

    # arithmetic --------------------------------------------------------------------------
    def matmul(self, a, b, out) -> None:
        """``out = a @ b`` (float32 ``out``) through the rank's kernel."""
        if self.do_compute:
            self._matmul(a, b, out)

    def add_(self, dst, src) -> None:
        """``dst += src`` (the accumulation our overwrite-only kernels cannot do)."""
        if self.do_compute:
            self._add(dst, src)

    # collectives -------------------------------------------------------------------------
    def all_gather(self, out, inp, async_op: bool = False):
        return self._maybe(self._all_gather, out, inp, async_op=async_op)

    def all_reduce(self, buf, async_op: bool = False):
        return self._maybe(self._all_reduce, buf, async_op=async_op)

    def reduce_scatter(self, out, inp, async_op: bool = False):
        return self._maybe(self._reduce_scatter, out, inp, async_op=async_op)

    def broadcast(self, buf, src: int, async_op: bool = False):
        return self._maybe(self._broadcast, buf, src, async_op=async_op)

    def wait(self, handles: Sequence) -> None:
        """Make what follows wait for the asynchronous collectives ``handles``."""
        for h in handles:
            if h is not None:
                h.wait()

    def _maybe(self, op, *args, async_op: bool):
        if not self.do_comm:
            return None
        return op(*args, async_op=async_op)

    def _matmul(self, a, b, out):
        raise NotImplementedError

    def _add(self, dst, src):
        raise NotImplementedError


# ----------------------------------------------------------------------------- simulation

class _Done:
    """The handle of a simulated collective: it completed when it was called."""

    def wait(self) -> None:
        return None


class SimWorld:
    """The meeting point of ``world`` simulated ranks (threads of one process)."""

    def __init__(self, world: int, timeout_s: float = 600.0):
        self.world = world
        self.barrier = threading.Barrier(world, timeout=timeout_s)
        self.slots: list = [None] * world
        self.kernel_lock = threading.Lock()


class SimComm(Comm):
    """Rank ``rank`` of a :class:`SimWorld`: NumPy arrays, collectives by exchange at a barrier,
    kernels through ``matmul_fn(a, b) -> float32 array`` one at a time (the CUDA simulator is
    not safe to enter from two threads at once)."""

    def __init__(self, rank: int, world: SimWorld, matmul_fn: Callable):
        self.rank, self.world, self._world = rank, world.world, world
        self._matmul_fn = matmul_fn

    def empty(self, shape, dtype: str = "float32"):
        return np.empty(shape, dtype=np.dtype(dtype))

    def zeros(self, shape, dtype: str = "float32"):
        return np.zeros(shape, dtype=np.dtype(dtype))

    def fill_nan(self, x) -> None:
        x[...] = np.nan

    def dtype_of(self, x) -> str:
        return np.dtype(x.dtype).name

    def _matmul(self, a, b, out) -> None:
        with self._world.kernel_lock:
            out[...] = self._matmul_fn(np.ascontiguousarray(a), np.ascontiguousarray(b))

    def _add(self, dst, src) -> None:
        dst += src

    def _exchange(self, value) -> list:
        """Every rank's ``value`` (a copy), in rank order."""
        w = self._world
        w.slots[self.rank] = np.array(value, copy=True)
        w.barrier.wait()
        got = list(w.slots)
        w.barrier.wait()          # nobody refills the slots before everyone has read them
        return got

    def _all_gather(self, out, inp, async_op=False):
        for r, piece in enumerate(self._exchange(inp)):
            out[r] = piece
        return _Done() if async_op else None

    def _all_reduce(self, buf, async_op=False):
        parts = self._exchange(buf)
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        buf[...] = total
        return _Done() if async_op else None

    def _reduce_scatter(self, out, inp, async_op=False):
        parts = self._exchange(inp)
        total = parts[0][self.rank].copy()
        for p in parts[1:]:
            total += p[self.rank]
        out[...] = total
        return _Done() if async_op else None

    def _broadcast(self, buf, src, async_op=False):
        parts = self._exchange(buf)
        buf[...] = parts[src]
        return _Done() if async_op else None


def run_ranks(world: int, body: Callable, matmul_fn: Callable, *,
              comm_class: type = SimComm, timeout_s: float = 600.0) -> list:
    """Run ``body(comm)`` once per rank, each rank a thread with its own :class:`SimComm`
    (``comm_class``); return the ranks' results in rank order. An exception on any rank breaks
    the barrier for the others and is raised here (the first one, with its rank)."""
    sim = SimWorld(world, timeout_s)
    results: list = [None] * world
    errors: list = []
    broken: list = []

    def one(rank: int) -> None:
        try:
            results[rank] = body(comm_class(rank, sim, matmul_fn))
        except threading.BrokenBarrierError:
            broken.append(rank)                    # another rank failed first, or a timeout
        except BaseException as exc:               # noqa: BLE001 - re-raised below
            errors.append((rank, exc))
            sim.barrier.abort()

    threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        rank, exc = errors[0]
        raise RuntimeError(f"simulated rank {rank} failed: {type(exc).__name__}: {exc}") from exc
    if broken:
        raise RuntimeError(f"simulated rank(s) {sorted(broken)} waited {timeout_s:.0f} s at a "
                           "collective the other ranks never reached")
    return results
