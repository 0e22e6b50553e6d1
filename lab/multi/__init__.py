"""One GEMM on several GPUs: schemes, communicators, the launcher and the per-GPU worker.

* :mod:`lab.multi.schemes` — the schemes (column-, row-parallel, SUMMA, overlapped), written
  once as the code one rank runs, plus the host-side assembly and check of the result;
* :mod:`lab.multi.comm` — the communicator interface and its in-process simulation (threads,
  NumPy, our kernels in Numba's simulator): what CI runs;
* :mod:`lab.multi.nccl` — the same interface over NCCL (``torch.distributed``) on CUDA tensors;
* :mod:`lab.multi.launch` / :mod:`lab.multi.worker` — one process per GPU, started, watched and
  joined by the launcher; rank 0 writes the rows.

Nothing here imports torch unless a GPU run asks for it.
"""
