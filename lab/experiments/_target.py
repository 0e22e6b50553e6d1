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
    is_twin = name in twins.TWINS
    dtype = np.float32 if is_twin else lab.get_spec(name).dtype
    dtype_name = "float32" if is_twin else lab.get_spec(name).dtype_name
    a, b = bench.random_inputs(m, n, k, dtype, np.random.default_rng(0))
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    run = ((lambda: twins.launch(name, d_a, d_b, d_c)) if is_twin
           else (lambda: lab.get_spec(name).launch(d_a, d_b, d_c)))
    for _ in range(launches):
        run()
    cuda.synchronize()
    out = d_c.copy_to_host()
    verdict = bench.compare(out, a, b, kernel=name, dtype_name=dtype_name)
    print(verdict.line())
    return 0 if verdict.passed else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
