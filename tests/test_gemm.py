"""lab.gemm offline: the choice by capability, dtype and shape, refusals before any launch, and
results under the simulator (SIMT path) against float64, output poisoned with NaN first."""
from __future__ import annotations

import numpy as np
import pytest

import lab
from lab import gemm as G
from lab.accuracy import random_inputs, to_float64
from numba import cuda


def host(m, n, k, dtype=np.float16):
    return np.zeros((m, k), dtype), np.zeros((k, n), dtype)


@pytest.mark.parametrize("cc, big, small", [
    ((9, 0), "wgmma_tmastore_fp16", "tc_fp16_splitk"),
    ((8, 0), "tc_fp16", "tc_fp16_splitk"),
    ((8, 9), "tc_fp16", "tc_fp16_splitk"),
    ((7, 5), "warptile_tuned", "warptile_tuned_splitk"),
])
def test_the_kernel_follows_the_capability(cc, big, small):
    assert lab.gemm.plan(*host(4096, 4096, 4096), cc=cc).kernel == big
    choice = lab.gemm.plan(*host(1, 4096, 4096), cc=cc)
    assert choice.kernel == small and choice.splits > 1
    assert "split" in str(choice)


def test_dtype_and_output_paths():
    a, b = host(512, 512, 512, np.float32)
    assert lab.gemm.plan(a, b, cc=(9, 0)).kernel == "warptile_tuned"
    c = lab.gemm.plan(*host(2048, 2048, 2048, np.uint16), cc=(8, 0))      # BF16 bits
    assert c.kernel == "tc_bf16" and c.dtype == "bfloat16" and c.narrow
    c = lab.gemm.plan(*host(2048, 2048, 2048), cc=(7, 5))
    assert c.widen and c.narrow and "no mma.sync" in str(c)
    c = lab.gemm.plan(*host(2048, 2048, 2048), out_dtype="float32", cc=(8, 0))
    assert not c.narrow and c.out_dtype == "float32"


@pytest.mark.parametrize("args, kwargs, problem", [
    ((np.zeros((4, 3), np.float64), np.zeros((3, 2), np.float64)), {}, "float64"),
    ((np.zeros((4, 3), np.float16), np.zeros((3, 2), np.float32)), {}, "convert one"),
    ((np.zeros((4, 3), np.float32), np.zeros((5, 2), np.float32)), {}, "inner dimensions"),
    ((np.zeros((4, 3, 1), np.float32), np.zeros((3, 2), np.float32)), {}, "2-dimensional"),
    ((np.zeros((0, 3), np.float32), np.zeros((3, 2), np.float32)), {}, "empty"),
    ((np.zeros((3, 4), np.float32).T, np.zeros((3, 2), np.float32)), {}, "row-major"),
    ((np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)),
     {"out": np.zeros((4, 3), np.float32)}, "A·B is 4x2"),
    ((np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)),
     {"out_dtype": "float16"}, "written as float32"),
    ((np.zeros((4, 3), np.float16), np.zeros((3, 2), np.float16)),
     {"out_dtype": "int8"}, "out_dtype"),
])
def test_bad_input_is_refused_before_any_launch(args, kwargs, problem):
    with pytest.raises(G.GemmError, match=problem):
        lab.gemm(*args, **kwargs)


def test_not_an_array_and_an_old_gpu():
    with pytest.raises(TypeError, match="device array"):
        lab.gemm([[1.0]], [[1.0]])
    with pytest.raises(G.GemmError, match="compute capability 7.0"):
        lab.gemm.plan(*host(8, 8, 8), cc=(7, 0))


@pytest.mark.parametrize("dtype, out", [(np.float32, np.float32), (np.float16, np.float16),
                                        (np.float16, np.float32), (np.uint16, np.uint16),
                                        (np.uint16, np.float32)])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (5, 9, 7), (33, 17, 40)])
def test_results_in_the_simulator(dtype, out, m, n, k):
    a, b = random_inputs(m, n, k, dtype)
    c = cuda.to_device(np.full((m, n), np.nan, out))
    lab.gemm(cuda.to_device(a), cuda.to_device(b), c)
    got = to_float64(c.copy_to_host())
    ref = to_float64(a) @ to_float64(b)
    assert not np.isnan(got).any()
    tol = 1e-5 if out == np.float32 and dtype == np.float32 else \
        (2e-6 if out == np.float32 else 1e-2)
    assert np.abs(got - ref).max() <= tol * max(1.0, np.abs(ref).max())


def test_host_arrays_come_back_as_host_arrays():
    a, b = random_inputs(6, 5, 4, np.float16)
    c = lab.gemm(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float16 and c.shape == (6, 5)
