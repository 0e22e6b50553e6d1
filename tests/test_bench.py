"""lab.bench.check: an element a kernel never wrote fails the check, named, with the seed that
replays it; a check replayed with its seed gives the same verdict."""
import numpy as np

import lab
from lab import bench
from lab.kernels import KernelSpec
from numba import cuda


@cuda.jit
def _skip_last_element(A, B, C):
    row, col = cuda.grid(2)
    m, n = C.shape
    if row < m and col < n and not (row == m - 1 and col == n - 1):
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def _launch_skip(A, B, C):
    m, n = C.shape
    _skip_last_element[((m + 7) // 8, (n + 7) // 8), (8, 8)](A, B, C)


def test_check_catches_unwritten_element(monkeypatch):
    spec = KernelSpec("skip_last", "plants an unwritten element", np.float32, _launch_skip)
    monkeypatch.setitem(lab.REGISTRY, "skip_last", spec)
    verdict = bench.check("skip_last", 9, 10, 11)
    assert not verdict.passed
    assert verdict.nonfinite == 1 and "never written" in verdict.reason
    assert f"replay with seed={verdict.seed}" in verdict.line()


def test_check_keeps_its_seed_and_replays(rng):
    first = bench.check("naive", 5, 6, 7)
    again = bench.check("naive", 5, 6, 7, seed=first.seed)
    assert first.seed is not None and again.seed == first.seed
    assert again.err_over_bound == first.err_over_bound and again.as_dict() == first.as_dict()
