"""The communicator over NCCL: CUDA tensors from PyTorch, collectives through
``torch.distributed`` (backend ``nccl``), our kernels launched by Numba on the same GPU.

One process per GPU (:mod:`lab.multi.launch` starts them). Numba and PyTorch share the GPU's
primary context; a Numba kernel reads and writes a tensor in place through its
``__cuda_array_interface__`` (:func:`numba.cuda.as_cuda_array`, no copy). Both launch on the
legacy default stream, so kernels and PyTorch's own work (``add_``, fills) run in issue order.
NCCL runs its collectives on a stream of its own; a collective waits for the work issued before
it, and — once waited for (``async_op=False``, or ``handle.wait()``) — work issued after it waits
for the collective. That is all the overlap in ``column_overlap`` and ``summa`` relies on.
"""
from __future__ import annotations

from lab.multi.comm import Comm


class NcclComm(Comm):
    """This process's rank of the initialised default process group, computing with the
    registered kernel ``kernel``."""

    def __init__(self, kernel: str):
        import torch
        import torch.distributed as dist
        from numba import cuda

        from lab.kernels import get_spec

        if not dist.is_initialized():
            raise RuntimeError("NcclComm needs an initialised torch.distributed process group "
                               "(lab.multi.worker sets it up)")
        self.torch, self.dist, self._cuda = torch, dist, cuda
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.spec = get_spec(kernel)

    def empty(self, shape, dtype: str = "float32"):
        return self.torch.empty(shape, dtype=getattr(self.torch, dtype), device=self.device)

    def zeros(self, shape, dtype: str = "float32"):
        return self.torch.zeros(shape, dtype=getattr(self.torch, dtype), device=self.device)

    def fill_nan(self, x) -> None:
        x.fill_(float("nan"))

    def dtype_of(self, x) -> str:
        return str(x.dtype).removeprefix("torch.")

    def _array(self, t):
        if not t.is_contiguous():
            raise ValueError(f"our kernels take C-contiguous operands; got a strided view of "
                             f"shape {tuple(t.shape)}")
        return self._cuda.as_cuda_array(t)

    def _matmul(self, a, b, out) -> None:
        self.spec.launch(self._array(a), self._array(b), self._array(out))

    def _add(self, dst, src) -> None:
        dst.add_(src)

    def _all_gather(self, out, inp, async_op=False):
        return self.dist.all_gather_into_tensor(out, inp, async_op=async_op)

    def _all_reduce(self, buf, async_op=False):
        return self.dist.all_reduce(buf, async_op=async_op)

    def _reduce_scatter(self, out, inp, async_op=False):
        return self.dist.reduce_scatter_tensor(out, inp, async_op=async_op)

    def _broadcast(self, buf, src, async_op=False):
        return self.dist.broadcast(buf, src, async_op=async_op)
