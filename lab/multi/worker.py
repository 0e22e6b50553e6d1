"""One rank of a multi-GPU run: ``python -m lab.multi.worker --rank R --world P --port PORT
--dir DIR`` (started by :mod:`lab.multi.launch`, never by hand).

Rank r binds GPU r for Numba and PyTorch, joins the NCCL process group, and runs the plan in
``DIR/plan.json`` with the other ranks, in this order:

1. **checks** — every scheme at each odd check shape and input type, the gathered C against
   float64 on rank 0 (outputs poisoned with NaN first); any failure stops the run before timing;
2. **bandwidth** — all-gather, all-reduce, reduce-scatter and broadcast over a range of sizes;
3. **one GPU** — rank 0 alone runs the whole product (the others wait), per size and type;
4. **schemes** — each scheme three times over: whole, arithmetic only (``do_comm=False``) and
   communication only (``do_compute=False``); and the ``add_`` SUMMA pays per panel.

Timing: warm-up calls, then per repetition a barrier and a device synchronisation, CUDA events
around the call on each rank; a repetition's time is the slowest rank's. Rank 0 writes
``DIR/result.json`` (rows and parameters); every rank writes its traceback to
``DIR/rank<R>.err`` before exiting non-zero; the process group is always destroyed.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import traceback
from pathlib import Path

import numpy as np

#: busbw / algbw of each collective over P ranks (the nccl-tests convention).
BUS_FACTOR = {"all_gather": lambda p: (p - 1) / p, "reduce_scatter": lambda p: (p - 1) / p,
              "all_reduce": lambda p: 2 * (p - 1) / p, "broadcast": lambda p: 1.0}


class Rank:
    """This process's rank: torch, the process group and the timing helpers."""

    def __init__(self, rank: int, world: int, port: int, timeout_s: float):
        import os

        import lab  # noqa: F401  (decides the device mode before numba.cuda is imported)
        from lab import device

        if not device.GPU:
            raise RuntimeError(f"a multi-GPU worker needs a GPU; this process runs in mode "
                               f"{device.MODE!r}")
        import torch
        import torch.distributed as dist
        from numba import cuda

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        cuda.select_device(rank)
        torch.cuda.set_device(rank)
        self.torch, self.dist = torch, dist
        self.rank, self.world = rank, world
        self.device = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=self.device,
                                timeout=_dt.timedelta(seconds=timeout_s))

    def close(self) -> None:
        if self.dist.is_initialized():
            self.dist.destroy_process_group()

    def say(self, text: str) -> None:
        if self.rank == 0:
            print(f"[multi_gpu] {text}", flush=True)

    def sync(self) -> None:
        self.dist.barrier()
        self.torch.cuda.synchronize()

    def time(self, fn, warmup: int, repeats: int, *, alone: bool = False) -> list[float]:
        """ms per call of ``fn`` (each repetition: the slowest rank's). ``alone``: rank 0 runs
        ``fn``, the others only keep step."""
        torch = self.torch
        runs = self.rank == 0 or not alone
        for _ in range(warmup):
            if runs:
                fn()
        samples = []
        for _ in range(repeats):
            self.sync()
            if runs:
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                stop.record()
                stop.synchronize()
                samples.append(start.elapsed_time(stop))
            else:
                samples.append(0.0)
        t = torch.tensor(samples, dtype=torch.float64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()


def _timed(samples: list[float]) -> dict:
    return {"median_ms": float(np.median(samples)), "min_ms": float(min(samples)),
            "max_ms": float(max(samples))}


def _tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def _inputs(rank: Rank, m: int, n: int, k: int, dtype: str, seed: int):
    """The same A and B on every rank (one seed), uniform in (-1, 1), made on the GPU."""
    torch = rank.torch
    gen = torch.Generator(device=rank.device)
    gen.manual_seed(seed)
    a = (torch.rand((m, k), generator=gen, device=rank.device) * 2 - 1).to(getattr(torch, dtype))
    b = (torch.rand((k, n), generator=gen, device=rank.device) * 2 - 1).to(getattr(torch, dtype))
    return a, b


def checks(rank: Rank, plan: dict) -> list[dict]:
    """Every scheme at the check shapes; rank 0 compares with float64. Raises on a failure."""
    from lab.multi import schemes
    from lab.multi.nccl import NcclComm

    rows, bad = [], []
    for dtype, kernel in plan["kernels"].items():
        comm = NcclComm(kernel)
        for m, n, k in plan["check_shapes"]:
            rng = np.random.default_rng(plan["seed"] + m + n + k)
            A = rng.uniform(-1, 1, (m, k)).astype(dtype)
            B = rng.uniform(-1, 1, (k, n)).astype(dtype)
            a = rank.torch.from_numpy(A).to(rank.device)
            b = rank.torch.from_numpy(B).to(rank.device)
            for scheme in plan["schemes"]:
                mine = schemes.prepare(comm, scheme, a, b, chunks=plan["chunks"],
                                       panels_per_rank=plan["panels_per_rank"])
                schemes.RUN[scheme](comm, mine)
                rank.torch.cuda.synchronize()
                view = schemes.host_view(mine, lambda t: t.cpu().numpy())
                views = [None] * rank.world
                rank.dist.all_gather_object(views, view)
                if rank.rank == 0:
                    v = schemes.check(scheme, views, A, B, kernel=kernel)
                    rank.say(v.line())
                    rows.append({"part": "check", "scheme": scheme, "kernel": kernel,
                                 "dtype": dtype, "m": m, "n": n, "k": k,
                                 "world": rank.world, "rel_frobenius": v.rel_frobenius,
                                 "max_err_over_max_entry": v.max_err_over_max_entry,
                                 "err_over_bound": v.err_over_bound, "passed": v.passed})
                    if not v.passed:
                        bad.append(v.line())
    failed = [bad]
    rank.dist.broadcast_object_list(failed, src=0)
    if failed[0]:
        raise AssertionError("checks failed before timing:\n" + "\n".join(failed[0]))
    return rows


def bandwidth(rank: Rank, plan: dict) -> list[dict]:
    """Each collective over the plan's sizes (bytes of the whole buffer), FP32 elements."""
    torch, dist, P = rank.torch, rank.dist, rank.world
    rows = []
    for nbytes in plan["bandwidth_bytes"]:
        count = nbytes // 4 // P * P
        whole = torch.zeros(count, dtype=torch.float32, device=rank.device)
        piece = torch.zeros(count // P, dtype=torch.float32, device=rank.device)
        ops = {"all_gather": lambda: dist.all_gather_into_tensor(whole, piece),
               "all_reduce": lambda: dist.all_reduce(whole),
               "reduce_scatter": lambda: dist.reduce_scatter_tensor(piece, whole),
               "broadcast": lambda: dist.broadcast(whole, 0)}
        for name, op in ops.items():
            t = _timed(rank.time(op, plan["warmup"], plan["repeats"]))
            alg = count * 4 / (t["median_ms"] * 1e-3) / 1e9
            rows.append({"part": "bandwidth", "what": name, "bytes": count * 4, "world": P,
                         **t, "algbw_gbps": alg, "busbw_gbps": alg * BUS_FACTOR[name](P)})
            rank.say(f"{name:<15} {count * 4 / 2**20:8.0f} MiB  {t['median_ms']:8.3f} ms  "
                     f"busbw {rows[-1]['busbw_gbps']:.0f} GB/s")
        del whole, piece
    return rows


def products(rank: Rank, plan: dict) -> list[dict]:
    """One GPU, then every scheme (whole, arithmetic only, communication only) per size."""
    from lab.multi import schemes
    from lab.multi.nccl import NcclComm

    from lab import compiler
    from lab.kernels import get_spec

    torch, P = rank.torch, rank.world
    sms = torch.cuda.get_device_properties(rank.device).multi_processor_count
    rows = []
    for dtype, kernel in plan["kernels"].items():
        comm = NcclComm(kernel)
        tile = get_spec(kernel).tile
        for size in plan["sizes"]:
            m = n = k = size
            reps = plan["repeats"]
            warm = plan["warmup"] if size < plan["few_repeats_from"] else 1
            names = plan["schemes"] if size <= plan["max_size_all"].get(dtype, size) \
                else plan["big_schemes"]
            a, b = _inputs(rank, m, n, k, dtype, plan["seed"] + size)
            c = torch.empty((m, n), dtype=torch.float32, device=rank.device) \
                if rank.rank == 0 else None
            one = _timed(rank.time(lambda: comm.matmul(a, b, c), warm, reps, alone=True))
            del c
            base = {"dtype": dtype, "kernel": kernel, "m": m, "n": n, "k": k, "world": P}
            rows.append({"part": "one_gpu", "scheme": "one_gpu", **base, **one,
                         "tflops": _tflops(m, n, k, one["median_ms"]),
                         "tflops_per_gpu": _tflops(m, n, k, one["median_ms"])})
            rank.say(f"{dtype} n={size} one GPU {one['median_ms']:.3f} ms "
                     f"({rows[-1]['tflops']:.0f} TFLOP/s)")
            w = schemes.split(n, P)[0][1]
            x = torch.zeros((m, w), dtype=torch.float32, device=rank.device)
            y = torch.zeros_like(x)
            add = _timed(rank.time(lambda: x.add_(y), warm, reps))
            rows.append({"part": "add", "dtype": "float32", "m": m, "n": w, "world": P, **add,
                         "bytes": 3 * 4 * m * w})
            del x, y
            chunks = schemes.overlap_chunks(m, w, tile, sms, plan["chunks"],
                                            blocks_per_sm=compiler.resident_blocks(kernel))
            for scheme in names:
                mine = schemes.prepare(comm, scheme, a, b, chunks=chunks,
                                       panels_per_rank=plan["panels_per_rank"],
                                       row_tile=tile[0])
                run = schemes.RUN[scheme]
                whole = _timed(rank.time(lambda: run(comm, mine), warm, reps))
                comm.do_comm = False
                compute = _timed(rank.time(lambda: run(comm, mine), warm, reps))
                comm.do_comm, comm.do_compute = True, False
                talk = _timed(rank.time(lambda: run(comm, mine), warm, reps))
                comm.do_compute = True
                speedup = one["median_ms"] / whole["median_ms"]
                rows.append({
                    "part": "scheme", "scheme": scheme, **base, **whole,
                    "tflops": _tflops(m, n, k, whole["median_ms"]),
                    "tflops_per_gpu": _tflops(m, n, k, whole["median_ms"]) / P,
                    "speedup": speedup, "efficiency": speedup / P,
                    "compute_ms": compute["median_ms"], "comm_ms": talk["median_ms"],
                    "exposed_comm_ms": max(0.0, whole["median_ms"] - compute["median_ms"]),
                    "comm_share": min(1.0, talk["median_ms"] / whole["median_ms"]),
                    "chunks": len(mine.chunks) if scheme == "column_overlap" else chunks,
                    "panels_per_rank": plan["panels_per_rank"]})
                rank.say(f"{dtype} n={size} {scheme:<19} {whole['median_ms']:9.3f} ms  "
                         f"×{speedup:.2f} of one GPU  (compute {compute['median_ms']:.3f}, "
                         f"comm alone {talk['median_ms']:.3f})")
                del mine
                torch.cuda.empty_cache()
            del a, b
            torch.cuda.empty_cache()
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.multi.worker")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True)
    args = p.parse_args(argv)
    scratch = Path(args.dir)
    plan = json.loads((scratch / "plan.json").read_text())
    rank = None
    try:
        rank = Rank(args.rank, args.world, args.port, plan["nccl_timeout_s"])
        rank.say(f"{args.world} ranks up; checking every scheme first")
        rows = checks(rank, plan)
        rank.say("bandwidth of the collectives")
        rows += bandwidth(rank, plan)
        rank.say("one GPU, then the schemes")
        rows += products(rank, plan)
        rank.sync()
        if rank.rank == 0:
            from lab import device

            out = {"rows": rows, "provenance": device.provenance(),
                   "torch": rank.torch.__version__,
                   "nccl": ".".join(map(str, rank.torch.cuda.nccl.version()))}
            (scratch / "result.json").write_text(json.dumps(out))
        return 0
    except BaseException:  # noqa: BLE001 - written for the launcher, then exit non-zero
        (scratch / f"rank{args.rank}.err").write_text(traceback.format_exc())
        traceback.print_exc()
        return 1
    finally:
        if rank is not None:
            rank.close()


if __name__ == "__main__":
    sys.exit(main())
