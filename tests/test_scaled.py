"""lab.scaled.scaled_gemm: FP8 codes with per-tensor or block scales. Everything it refuses,
before any copy or launch, with the operand and the problem named; the kernel each format,
scaling and C goes to; the whole host path (codes uploaded, scales shaped, C copied back) with
the kernel replaced by the float64 product of the dequantised operands. The kernels themselves
are checked on a GPU (``lab check``); the simulator cannot run them."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from lab import device, fp8, operands
from lab import scaled as S
from lab.dispatch import GemmError

M, N, K = 5, 140, 300            # past one 128-block in N and K


def _operands(fmt="e4m3", blocks=False, seed=0):
    rng = np.random.default_rng(seed)
    a, bt = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    block = (fp8.ACT_BLOCK, fp8.WEIGHT_BLOCK) if blocks else (None, None)
    ca, sa = fp8.quantize(a, fmt, block[0])
    cb, sb = fp8.quantize(bt, fmt, block[1])
    return ca, cb, sa, sb


def _refused(match, *args, **kw):
    with pytest.raises(GemmError, match=match):
        S.scaled_gemm(*args, **kw)


def test_uint8_codes_need_their_format_named():
    ca, cb, sa, sb = _operands()
    _refused(r"A holds uint8 codes: say which format with fmt='e4m3'", ca, cb,
             scale_a=sa, scale_b=sb)


def test_what_is_not_fp8_is_refused():
    ca, cb, sa, sb = _operands()
    _refused(r"A is float16; scaled_gemm takes FP8 codes", ca.astype(np.float16), cb,
             scale_a=sa, scale_b=sb, fmt="e4m3")


def test_two_formats_or_a_format_that_contradicts_the_type_are_refused():
    ca, cb, sa, sb = _operands()
    a8 = ca.view(ml_dtypes.float8_e4m3fn)
    _refused(r"A is float8_e4m3fn but fmt says e5m2", a8, cb, scale_a=sa, scale_b=sb,
             fmt="e5m2")
    b5 = fp8.encode(np.zeros((N, K)), "e5m2").view(ml_dtypes.float8_e5m2)
    _refused(r"A holds e4m3 codes but Bt e5m2", a8, b5, scale_a=sa, scale_b=sb)


@pytest.mark.parametrize("which, bad, match", [
    ("Bt", lambda cb: cb[:, :-1].copy(),
     r"Bt is B transposed, N×K, so its rows must hold K = 300"),
    ("Bt", lambda cb: cb.T, r"Bt is not a packed row-major array"),
    ("A", lambda ca: ca[:, ::2], r"A is not a packed row-major array"),
    ("A", lambda ca: ca.reshape(1, M, K), r"A must be 2-D"),
    ("A", lambda ca: ca[:0], r"A has an empty dimension"),
])
def test_shapes_and_layouts_are_checked(which, bad, match):
    ca, cb, sa, sb = _operands()
    args = {"A": ca, "Bt": cb}
    args[which] = bad(args[which])
    _refused(match, args["A"], args["Bt"], scale_a=sa, scale_b=sb, fmt="e4m3")


def test_out_is_checked():
    ca, cb, sa, sb = _operands()
    kw = dict(scale_a=sa, scale_b=sb, fmt="e4m3")
    _refused(r"out has shape \(5, 139\); the product is \(5, 140\)", ca, cb,
             np.zeros((M, N - 1), np.float32), **kw)
    _refused(r"out is float16; an FP8 product is written as bfloat16 or float32", ca, cb,
             np.zeros((M, N), np.float16), **kw)
    _refused(r"out is float32 but out_dtype says bfloat16", ca, cb,
             np.zeros((M, N), np.float32), out_dtype="bfloat16", **kw)
    _refused(r"out_dtype is float16", ca, cb, out_dtype="float16", **kw)


def test_block_scales_of_the_wrong_shape_name_both_shapes_wanted():
    ca, cb, sa, sb = _operands(blocks=True)
    assert sa.shape == (M, 3) and sb.shape == (2, 3)
    _refused(r"scale_b has shape \(3, 2\): .* \(5, 3\) for A and .* \(2, 3\) for Bt", ca, cb,
             scale_a=sa, scale_b=sb.T.copy(), fmt="e4m3")
    _refused(r"scales are float32", ca, cb, scale_a=sa.astype(np.float64), scale_b=sb,
             fmt="e4m3")


@pytest.mark.parametrize("value, where", [(np.nan, "scale_a[1, 2]"), (0.0, "scale_a[1, 2]"),
                                          (-1.0, "scale_a[1, 2]"), (np.inf, "scale_a[1, 2]")])
def test_a_scale_that_is_not_finite_and_positive_is_named(value, where):
    ca, cb, sa, sb = _operands(blocks=True)
    sa[1, 2] = value
    _refused(rf"{re_escape(where)} = .*: scales must be finite and above zero", ca, cb,
             scale_a=sa, scale_b=sb, fmt="e4m3")
    _refused(r"scale_b\[0, 0\] = 0.0", ca, cb, scale_a=1.0, scale_b=0.0, fmt="e4m3")


def re_escape(text):
    import re
    return re.escape(text)


def test_each_format_scaling_and_output_goes_to_its_kernel():
    assert S.choose("e4m3", "tensor", "bfloat16", False) == "fp8_e4m3_tile"
    assert S.choose("e4m3", "tensor", "float32", False) == "fp8_e4m3"
    assert S.choose("e4m3", "tensor", "float32", True) == "fp8_e4m3_promote"
    assert S.choose("e4m3", "block", "bfloat16", False) == "fp8_e4m3_block"
    assert S.choose("e5m2", "tensor", "float32", False) == "fp8_e5m2"
    with pytest.raises(GemmError, match=r"no FP8 kernel for e5m2 with block scales, a "
                                         r"bfloat16 C: there are e4m3 with tensor scales"):
        S.choose("e5m2", "block", "bfloat16", False)
    with pytest.raises(GemmError, match=r"no FP8 kernel for e4m3 with block scales, a float32"):
        S.choose("e4m3", "block", "float32", False)
    from lab.kernels import get_spec
    for name in S.KERNELS.values():
        assert get_spec(name).config.fp8


@pytest.mark.skipif(device.GPU, reason="the refusal without a GPU")
def test_without_a_hopper_gpu_a_valid_call_is_refused_by_name():
    ca, cb, sa, sb = _operands()
    _refused(r"fp8_e4m3_tile uses wgmma and runs on a GPU of compute capability 9.0", ca, cb,
             scale_a=sa, scale_b=sb, fmt="e4m3")


def test_scales_on_the_gpu_are_read_only_when_asked(monkeypatch):
    from numba import cuda

    ca, cb, sa, sb = _operands()
    da, db = cuda.to_device(ca), cuda.to_device(cb)
    bad = cuda.to_device(np.array([[np.nan]], np.float32))
    _refused(r"scale_a\[0, 0\] = nan", da, db, scale_a=bad, scale_b=cuda.to_device(sb),
             fmt="e4m3")
    monkeypatch.setattr(operands, "host_values", lambda x: pytest.fail("a scale was copied"))
    monkeypatch.setattr(device, "GPU", False)
    _refused(r"uses wgmma", da, db, scale_a=bad, scale_b=cuda.to_device(sb), fmt="e4m3",
             check_scales=False)
    _refused(r"scale_a is on the GPU but A is on the host", ca, cb,
             scale_a=cuda.to_device(sa), scale_b=sb, fmt="e4m3")


@pytest.mark.parametrize("blocks, out_dtype", [(False, "bfloat16"), (False, "float32"),
                                               (True, "bfloat16")])
def test_the_host_path_around_the_kernel(monkeypatch, blocks, out_dtype):
    """Host codes uploaded as uint8, scales as (1, 1) or block arrays, C written by the
    kernel in its own format and copied back into a new array of A's kind."""
    import lab.kernels as registry
    from lab.kernels import wgmma

    ca, cb, sa, sb = _operands(blocks=blocks, seed=3)
    seen = {}

    def launcher(cfg):
        def launch(A, Bt, C, a_scales, b_scales):
            seen.update(cfg=cfg, shapes=(A.shape, Bt.shape, C.shape, a_scales.shape,
                                         b_scales.shape), dtypes=(A.dtype, C.dtype))
            ref = fp8.reference(A.copy_to_host(), Bt.copy_to_host(), a_scales.copy_to_host(),
                                b_scales.copy_to_host(), blocks=blocks)
            host = fp8.bf16_bits(ref) if C.dtype == np.uint16 else ref.astype(np.float32)
            C.copy_to_device(host)
        return launch

    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(registry, "runnable", lambda name, cc=None: (True, ""))
    monkeypatch.setattr(wgmma, "launcher", launcher)
    monkeypatch.setattr(S, "_LAUNCHERS", S.LRU(4))
    scale_a = sa if blocks else float(sa[0, 0])
    got = S.scaled_gemm(ca, cb, scale_a=scale_a, scale_b=sb, fmt="e4m3", out_dtype=out_dtype)
    want = fp8.reference(ca, cb, sa, sb, blocks=blocks)
    assert seen["shapes"][:3] == ((M, K), (N, K), (M, N)) and seen["dtypes"][0] == np.uint8
    assert seen["shapes"][3:] == ((((M, 3), (2, 3)) if blocks else ((1, 1), (1, 1))))
    assert seen["cfg"].scales == ("block" if blocks else "tensor")
    assert got.shape == (M, N) and got.dtype.name == out_dtype
    err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert err < (2 ** -8 if out_dtype == "bfloat16" else 1e-6)
