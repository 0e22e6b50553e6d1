"""Fused epilogues (lab.kernels.fused_epilogue) under the simulator: float64 references of the
whole epilogue, poisoned outputs, odd and tile-crossing shapes, wrong epilogues caught, bad
operands refused before any launch."""
import numpy as np
import pytest

import lab
from lab import bench, device
from lab.kernels import KernelUnavailable, get_spec
from lab.kernels import fused_epilogue as epi

NAME = "warptile_tuned_epilogue"
#: Beside the shapes past the tile edges, which tests/kernels/test_kernels.py checks through the same
#: bench.check (a registered epilogue kernel is checked whole, by its spec's check).
SHAPES = [(37, 29, 45)]

pytestmark = pytest.mark.skipif(not device.SIMULATOR and not device.GPU,
                                reason="needs the simulator or a GPU")


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_whole_epilogue_matches_float64(shape):
    verdict = bench.check(NAME, *shape)          # GELU(0.75·AB − 0.5·C + bias)
    assert verdict.passed, verdict.line()
    assert "gelu" in verdict.kernel


@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
def test_each_activation_with_and_without_c_and_bias(activation):
    for use_c, use_bias in ((True, True), (False, True), (True, False)):
        v = epi.check(NAME, 37, 29, 45, activation=activation, use_c=use_c, use_bias=use_bias,
                      seed=11)
        assert v.passed, v.line()


def test_identity_launch_is_the_plain_product():
    """lab.matmul on the registered name computes A·B (the identity epilogue); bench.check on
    the name checks the whole epilogue instead (the spec's own check)."""
    if not lab.kernels.runnable(NAME)[0]:
        pytest.skip(lab.kernels.runnable(NAME)[1])
    a, b = bench.random_inputs(37, 29, 45, get_spec(NAME).dtype)
    v = bench.compare(lab.matmul(a, b, kernel=NAME), a, b, kernel=NAME)
    assert v.passed, v.line()


def _operands(seed=3, shape=(37, 29, 45)):
    m, n, k = shape
    return epi.operands(m, n, k, np.float32, np.random.default_rng(seed))


def test_a_missing_bias_fails_the_check():
    a, b, c, bias = _operands()
    out = epi.run(NAME, a, b, C=c, alpha=0.75, beta=-0.5, activation="relu")   # no bias
    v = epi.compare(out, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5, activation="relu")
    assert not v.passed and "bound" in v.reason


def test_a_wrong_activation_or_scale_fails_the_check():
    a, b, c, bias = _operands()
    out = epi.run(NAME, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5, activation="relu")
    assert epi.compare(out, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5,
                       activation="relu").passed
    assert not epi.compare(out, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5,
                           activation="gelu").passed
    assert not epi.compare(out, a, b, C=c, bias=bias, alpha=0.75, beta=0.5,
                           activation="relu").passed


def test_the_bound_catches_a_small_bias_in_the_output():
    a, b, c, bias = _operands(shape=(16, 16, 8))
    ref = epi.reference(a, b, C=c, bias=bias, alpha=0.75, beta=-0.5, activation="gelu")
    good = ref.astype(np.float32)
    assert epi.compare(good, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5,
                       activation="gelu").passed
    biased = (ref * (1 + 2e-5)).astype(np.float32)
    assert not epi.compare(biased, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5,
                           activation="gelu").passed


def test_unwritten_elements_fail():
    a, b, c, bias = _operands()
    out = epi.reference(a, b, C=c, bias=bias, alpha=0.75, beta=-0.5).astype(np.float32)
    out[5, 7] = np.nan
    v = epi.compare(out, a, b, C=c, bias=bias, alpha=0.75, beta=-0.5)
    assert not v.passed and v.nonfinite == 1


def test_beta_zero_does_not_read_c():
    """As in BLAS: with β = 0, C is not read, so NaNs in it cannot reach D."""
    a, b, c, bias = _operands()
    c[:] = np.nan
    out = epi.run(NAME, a, b, C=c, bias=bias, beta=0.0, activation="relu")
    assert epi.compare(out, a, b, bias=bias, activation="relu").passed


@pytest.mark.parametrize("kwargs, match", [
    ({"beta": 0.5}, "beta=0.5 scales C, but no C was given"),
    ({"bias": np.zeros(28, np.float32)}, "bias must be a vector of N = 29"),
    ({"bias": np.zeros((1, 29), np.float32)}, "bias must be a vector of N = 29"),
    ({"bias": np.zeros(29, np.float64)}, "bias must be float32"),
    ({"C": np.zeros((29, 37), np.float32), "beta": 1.0}, "C must be M×N = 37×29"),
    ({"C": np.zeros((29, 37), np.float32).T, "beta": 1.0}, "C is not C-contiguous"),
    ({"activation": "tanh"}, "unknown activation 'tanh'"),
    ({"alpha": float("nan")}, "alpha must be finite"),
])
def test_bad_operands_are_refused_before_any_launch(kwargs, match, monkeypatch):
    a, b, _, _ = _operands()

    def no_launch(*args, **kw):
        raise AssertionError("launched")
    monkeypatch.setitem(epi.FUSED, NAME, no_launch)
    with pytest.raises(ValueError, match=match):
        epi.run(NAME, a, b, **kwargs)


def test_bad_scalars_and_names():
    a, b, _, _ = _operands()
    with pytest.raises(TypeError, match="alpha must be a real number"):
        epi.run(NAME, a, b, alpha="2")
    with pytest.raises(ValueError, match="not a fused-epilogue kernel"):
        epi.run("warptile_tuned", a, b)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        epi.run(NAME, a, b[:-1].copy())


def test_tensor_core_variant_is_registered_gpu_only():
    spec = get_spec("tc_fp16_epilogue")
    assert not spec.simulator and spec.min_cc >= (8, 0) and spec.check is not None
    if device.SIMULATOR:
        a, b = bench.random_inputs(9, 9, 9, np.float16, np.random.default_rng(1))
        with pytest.raises(KernelUnavailable, match="needs a GPU"):
            epi.run("tc_fp16_epilogue", a, b)


def test_model_counts_the_round_trip():
    s = epi.saved_bytes(4096, 4096)
    assert s["saved"] == 2 * 4096 * 4096 * 4
    assert s["unfused"] - s["fused"] == s["saved"]
    assert epi.saved_bytes(8, 8, c=False)["fused"] == 8 * 4 + 8 * 8 * 4


def test_epilogue_region_is_the_device_function():
    from lab import page

    code = page.source_of(epi, "epilogue")
    assert "def finish(acc, row, col, X)" in code and "def gelu" in code


def test_unfused_elementwise_pass_gives_the_same_result():
    from numba import cuda

    a, b, c, bias = _operands()
    m, n = a.shape[0], b.shape[1]
    p = cuda.to_device(np.full((m, n), np.nan, np.float32))
    get_spec("warptile_tuned").launch(cuda.to_device(a), cuda.to_device(b), p)
    d = cuda.to_device(np.full((m, n), np.nan, np.float32))
    epi.launch_elementwise(p, d, C=cuda.to_device(c), bias=cuda.to_device(bias), alpha=0.75,
                           beta=-0.5, activation="gelu")
    v = epi.compare(d.copy_to_host(), a, b, C=c, bias=bias, alpha=0.75, beta=-0.5,
                    activation="gelu")
    assert v.passed, v.line()
