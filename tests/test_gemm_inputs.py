"""lab.gemm's input checks (lab.operands): each bad input refused before anything is allocated,
copied or launched, with the operand and the problem named; and what is valid accepted."""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

import lab
from lab import device
from lab.accuracy import random_inputs, to_float64
from numba import cuda

GM = sys.modules["lab.gemm"]
GemmError = lab.gemm.GemmError


class DeviceLike:
    """A device array as far as lab.gemm can tell (``__cuda_array_interface__``), no memory."""

    def __init__(self, ptr, shape, typestr="<f2", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides,
                                         "version": 3}


def _no_launch(monkeypatch):
    def launched(*args):
        raise AssertionError("launched")
    monkeypatch.setattr(GM, "run", launched)
    monkeypatch.setattr(GM, "_host", launched)


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("which", ["A", "B", "out"])
def test_a_sliced_view_is_refused_for_its_row_pitch(monkeypatch, where, which):
    _no_launch(monkeypatch)
    put = (lambda x: x) if where == "host" else cuda.to_device
    wide = put(np.zeros((8, 16), np.float16))
    ops = {"A": put(np.zeros((8, 8), np.float16)), "B": put(np.zeros((8, 8), np.float16)),
           "out": put(np.zeros((8, 8), np.float16))}
    ops[which] = wide[:, :8]                      # 8 columns, rows 32 bytes apart
    with pytest.raises(GemmError, match=rf"{which}'s rows are 32 bytes apart, not the 16 "
                                        r"of its 8 columns \(a row pitch of a sliced view"):
        lab.gemm(ops["A"], ops["B"], ops["out"])


@pytest.mark.parametrize("which", ["A", "B", "out"])
def test_a_transposed_view_is_refused_as_not_row_major(monkeypatch, which):
    _no_launch(monkeypatch)
    ops = {x: np.zeros((8, 8), np.float32) for x in ("A", "B", "out")}
    ops[which] = ops[which].T
    with pytest.raises(GemmError, match=f"{which} is not row-major: along a row its elements "
                                        "are 32 bytes apart, not 4"):
        lab.gemm(ops["A"], ops["B"], ops["out"])


def test_out_on_the_other_side_of_the_inputs_is_refused(monkeypatch):
    _no_launch(monkeypatch)
    a, b = np.zeros((4, 3), np.float16), np.zeros((3, 2), np.float16)
    with pytest.raises(GemmError, match=r"out is a host NumPy array but A and B are on the "
                                        r"GPU \(numba\)"):
        lab.gemm(cuda.to_device(a), cuda.to_device(b), np.zeros((4, 2), np.float16))
    with pytest.raises(GemmError, match=r"out is on the GPU \(numba\) but A and B are a host "
                                        "NumPy array"):
        lab.gemm(a, b, cuda.to_device(np.zeros((4, 2), np.float16)))
    with pytest.raises(GemmError, match="A is a host NumPy array but B is on the GPU"):
        lab.gemm(a, cuda.to_device(b))


def test_a_contiguous_out_of_another_type_is_named_for_its_type(monkeypatch):
    _no_launch(monkeypatch)
    a, b = np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(GemmError, match="out is float64: a float32 product can be written as "
                                        "float32$"):
        lab.gemm(a, b, np.zeros((4, 2), np.float64))
    with pytest.raises(GemmError, match="out is float64: a float16 product can be written as "
                                        "float32 or float16"):
        lab.gemm(a.astype(np.float16), b.astype(np.float16), np.zeros((4, 2), np.float64))


@pytest.mark.parametrize("dtype, out_dtype, want", [
    (np.float16, np.float32, "float32"), (np.float16, np.dtype("float32"), "float32"),
    (np.float16, "float16", "float16"), (np.float16, np.float16, "float16"),
    (np.float32, np.float32, "float32"), (np.uint16, ml_dtypes.bfloat16, "bfloat16"),
    (ml_dtypes.bfloat16, np.float32, "float32"),
])
def test_out_dtype_accepts_numpy_types_and_dtypes(dtype, out_dtype, want):
    a, b = np.zeros((64, 64), dtype), np.zeros((64, 64), dtype)
    assert lab.gemm.explain(a, b, out_dtype=out_dtype, cc=(9, 0)).out_dtype == want
    a, b = random_inputs(5, 4, 3, np.uint16 if dtype is ml_dtypes.bfloat16 else dtype)
    a, b = (a.view(dtype), b.view(dtype)) if dtype is ml_dtypes.bfloat16 else (a, b)
    c = lab.gemm(a, b, out_dtype=out_dtype)
    assert c.dtype == (dtype if want == "bfloat16" else np.dtype(want))   # BF16: as given


@pytest.mark.parametrize("out_dtype", [np.float64, np.int8, "double", np.uint16])
def test_out_dtype_outside_the_three_is_refused(out_dtype):
    with pytest.raises(GemmError, match="out_dtype must be one of"):
        lab.gemm.explain(np.zeros((4, 4), np.float16), np.zeros((4, 4), np.float16),
                         out_dtype=out_dtype)


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("out", [None, "given"])
def test_ml_dtypes_bfloat16_comes_back_as_bfloat16(where, out):
    a, b = random_inputs(6, 5, 4, np.uint16)
    a, b = a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16)
    put = (lambda x: x) if where == "host" else cuda.to_device
    o = put(np.zeros((6, 5), ml_dtypes.bfloat16)) if out else None
    c = lab.gemm(put(a), put(b), o)
    assert c is o or out is None
    host = c if where == "host" else c.copy_to_host()
    assert host.dtype == ml_dtypes.bfloat16, host.dtype
    ref = to_float64(a.view(np.uint16)) @ to_float64(b.view(np.uint16))
    assert np.abs(host.astype(np.float64) - ref).max() <= 1e-2 * max(1.0, np.abs(ref).max())


def test_out_overlapping_an_input_is_refused_on_the_device(monkeypatch):
    _no_launch(monkeypatch)
    square = cuda.to_device(np.zeros((8, 8), np.float16))
    b = cuda.to_device(np.zeros((8, 8), np.float16))
    with pytest.raises(GemmError, match="out overlaps A .*pass an out of its own"):
        lab.gemm(square, b, square)
    with pytest.raises(GemmError, match="out overlaps B"):
        lab.gemm(b, square, square)
    buf = cuda.to_device(np.zeros((16, 8), np.float16))
    with pytest.raises(GemmError, match="out overlaps B"):           # rows 4-7 shared
        lab.gemm(b, buf[0:8], buf[4:12])
    a = DeviceLike(1 << 20, (64, 128))
    last = (1 << 20) + 64 * 128 * 2 - 2                                # A's last element
    with pytest.raises(GemmError, match=f"out overlaps A \\(bytes {last:#x} to "
                                        f"{last + 2:#x}\\)"):
        lab.gemm(a, DeviceLike(1 << 30, (128, 128)), DeviceLike(last, (64, 128)))


def test_out_beside_an_input_is_accepted_and_a_host_out_may_alias():
    buf = cuda.to_device(np.zeros((16, 8), np.float32))
    a, b = random_inputs(8, 8, 8, np.float32)
    buf[0:8].copy_to_device(b)
    lab.gemm(cuda.to_device(a), buf[0:8], buf[8:16])               # adjacent, not overlapping
    got = buf.copy_to_host()[8:]
    assert np.abs(got - a @ b).max() < 1e-4
    a0 = a.copy()
    assert lab.gemm(a, b, out=a) is a                  # host: computed on the GPU, copied back
    assert np.abs(a - a0 @ b).max() < 1e-4


@pytest.mark.parametrize("shape, cc, problem", [
    ((1 << 20, 1 << 20, 64), (9, 0), "the tile table holds int32 columns"),
    ((1 << 20, 1 << 20, 64), (8, 0), "C would hold 1,099,511,627,776 elements and tc_fp16 "
                                     "indexes with int32"),
    ((4096, 4096, 1 << 20), (8, 0), "A would hold"),
    ((256, 256, 1 << 31), (9, 0), "M, N and K are passed to the kernels as int32"),
    ((1 << 17, 1 << 17, 64), None, "C would hold"),
])
def test_a_huge_shape_is_refused_when_planned(shape, cc, problem):
    m, n, k = shape
    a, b = DeviceLike(1 << 40, (m, k)), DeviceLike(1 << 44, (k, n))
    with pytest.raises(GemmError, match=f"{m}x{n}x{k} is too large for lab.gemm: {problem}"):
        lab.gemm.explain(a, b, cc=cc)


def test_a_huge_shape_is_refused_before_anything_is_allocated(monkeypatch):
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(device, "SIMULATOR", False)
    monkeypatch.setattr(GM, "_device_cc", lambda: (8, 0))
    monkeypatch.setattr(GM, "_sm_count", lambda: 132)
    monkeypatch.setattr(GM, "_allocate", lambda *a: pytest.fail("allocated"))
    _no_launch(monkeypatch)
    a, b = DeviceLike(1 << 40, (1 << 20, 64)), DeviceLike(1 << 44, (64, 1 << 20))
    with pytest.raises(GemmError, match="too large for lab.gemm: C would hold"):
        lab.gemm(a, b)


def test_a_kernel_past_its_limits_is_left_out_for_one_within_them():
    """128 x 2²⁰ x 4096: B holds 2³² elements, past the small-M kernel's int32 indices; on
    9.0 the wgmma candidates (64-bit indices) run it, on 8.0 nothing can."""
    m, n, k = 128, 1 << 20, 1 << 12
    a, b = DeviceLike(1 << 40, (m, k)), DeviceLike(1 << 44, (k, n))
    choice = lab.gemm.explain(a, b, cc=(9, 0), sms=132)
    assert choice.kernel.startswith("wgmma_") and "tc_small_m_fp16 left out: B would hold" \
        in str(choice)
    assert all(c.kernel.startswith("wgmma_") for c in choice.candidates)
    with pytest.raises(GemmError, match="B would hold 4,294,967,296 elements"):
        lab.gemm.explain(a, b, cc=(8, 0))


@pytest.mark.parametrize("dtype", [np.float16, np.uint16, np.float32])
@pytest.mark.parametrize("cc", [(7, 5), (8, 0), (8, 9), (9, 0)])
@pytest.mark.parametrize("shape", [(256, 256, 8192), (1, 4096, 4096), (4096, 4096, 4096),
                                   (129, 2048, 4096), (512, 4096, 4096)])
def test_every_kernel_a_choice_names_takes_the_operands_type(dtype, cc, shape):
    """The split-K kernel on 8.x is FP16 only: a BF16 product must not reach it (nor any
    kernel of the other type), as the choice or as a candidate."""
    from lab.kernels import get_spec
    m, n, k = shape
    choice = lab.gemm.explain(np.zeros((m, k), dtype), np.zeros((k, n), dtype), cc=cc)
    for c in (choice, *choice.candidates):
        takes = np.dtype(get_spec(c.kernel).dtype)
        assert takes == (np.float32 if c.widen else dtype), (c.kernel, takes)


def test_a_choice_naming_a_kernel_of_the_other_type_is_refused_before_launch(monkeypatch):
    _no_launch(monkeypatch)
    bad = lab.gemm.Choice("tc_fp16_splitk", 5, 4, 3, "bfloat16", "bfloat16", (8, 0),
                          splits=2, narrow=True)
    monkeypatch.setattr(GM, "choose", lambda *a: bad)
    a, b = random_inputs(5, 4, 3, np.uint16)
    with pytest.raises(GemmError, match=r"the plan for bfloat16 inputs names tc_fp16_splitk, "
                                        r"which takes float16: refused before any launch"):
        lab.gemm(cuda.to_device(a), cuda.to_device(b))
