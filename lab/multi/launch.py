"""Start one worker process per GPU, watch them, always join them.

:func:`launch` writes the plan to a scratch folder, starts ``python -m lab.multi.worker`` once
per rank (rank r drives GPU r), and waits. When one rank fails or the deadline passes, the
others are stopped (terminate, then kill) and the error names the rank, its exit status and the
end of its traceback. Rank 0 writes the results; the launcher returns them.

NVLink multicast stays off, as on the course's machines: ``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` and ``NVSHMEM_DISABLE_NVLS=1`` are set for the workers
unless the environment already sets them.
"""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Environment the workers always get (kept where the machine already sets them).
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
ROOT = Path(__file__).resolve().parents[2]


def missing(world: int = 2) -> str | None:
    """Why ``world`` ranks cannot run here (no PyTorch, no NCCL, too few GPUs), or None."""
    from lab import device

    count = device._driver_device_count()
    if count < world:
        return (f"needs {world} GPUs on one host (one process each, NCCL between them); this "
                f"machine has {count}")
    if importlib.util.find_spec("torch") is None:
        return "needs PyTorch with CUDA and NCCL (torch.distributed) for the communication"
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_nccl_available():
        return "needs PyTorch built with NCCL (torch.distributed.is_nccl_available() is False)"
    return None


def free_port() -> int:
    """A TCP port on this host that nothing listens on now (for the rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    end = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text()[-chars:].strip()
    except OSError:
        return "(no traceback written)"


def launch(plan: dict, *, world: int = 2, timeout_s: float = 1500.0) -> dict:
    """Run ``plan`` (see :mod:`lab.multi.worker`) on ``world`` GPUs; rank 0's results dict."""
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world size must be a positive int, got {world!r}")
    why = missing(world)
    if why:
        raise RuntimeError(why)
    env = dict(os.environ)
    for key, value in NO_MULTICAST.items():
        env.setdefault(key, value)
    env.pop("LAB_DEVICE", None)
    with tempfile.TemporaryDirectory(prefix="lab-multi-") as scratch:
        scratch = Path(scratch)
        (scratch / "plan.json").write_text(json.dumps(plan))
        port = free_port()
        procs = []
        try:
            for rank in range(world):
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "lab.multi.worker", "--rank", str(rank),
                     "--world", str(world), "--port", str(port), "--dir", str(scratch)],
                    env=env, cwd=str(ROOT)))
            deadline = time.monotonic() + timeout_s
            failed = None
            while any(p.poll() is None for p in procs):
                failed = next((r for r, p in enumerate(procs)
                               if p.poll() not in (None, 0)), None)
                if failed is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            if failed is None:
                failed = next((r for r, p in enumerate(procs) if p.poll() not in (None, 0)),
                              None)
        finally:
            _stop(procs)
        if failed is not None:
            raise RuntimeError(f"rank {failed} exited with status {procs[failed].returncode}:\n"
                               + _tail(scratch / f"rank{failed}.err"))
        if any(p.returncode != 0 for p in procs):
            raise RuntimeError(f"the workers did not finish within {timeout_s:.0f} s "
                               "(stopped)")
        out = scratch / "result.json"
        if not out.exists():
            raise RuntimeError("rank 0 finished without writing its results")
        return json.loads(out.read_text())
