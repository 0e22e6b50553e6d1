"""A one-shot target for the external tools (``ncu``, ``compute-sanitizer``): launch one
registered kernel, twin or baseline on fresh inputs, then exit. Not an experiment itself.

``python -m lab.experiments._target NAME M N K [LAUNCHES]``
"""
from __future__ import annotations

import sys

import numpy as np


def main(argv) -> int:
    import lab
    from lab import bench, twins
    from numba import cuda

    name, m, n, k = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    launches = int(argv[4]) if len(argv) > 4 else 1
    a, b = bench.random_inputs(m, n, k, np.float32, np.random.default_rng(0))
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    run = ((lambda: twins.launch(name, d_a, d_b, d_c)) if name in twins.TWINS
           else (lambda: lab.get_spec(name).launch(d_a, d_b, d_c)))
    for _ in range(launches):
        run()
    cuda.synchronize()
    out = d_c.copy_to_host()
    verdict = bench.compare(out, a.astype(np.float64) @ b.astype(np.float64), kernel=name,
                            shape=(m, n, k))
    print(verdict.line())
    return 0 if verdict.passed else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
