"""Split-K (lab.kernels.splitk) under the simulator: two-pass and atomic, against float64,
on odd shapes and split factors that do not divide K; bad factors refused before any launch."""
import numpy as np
import pytest

from lab import bench, device
from lab.kernels import get_spec
from lab.kernels import splitk as sk

NAMES = ("warptile_tuned_splitk", "warptile_tuned_splitk_atomic")
#: Beyond the registry's check shapes (``bench.shapes_for``: a partial last slice among them),
#: on which ``tests/kernels/test_kernels.py`` checks every registered kernel, these two too.
SHAPES = [(37, 29, 45)]

pytestmark = pytest.mark.skipif(not device.SIMULATOR and not device.GPU,
                                reason="needs the simulator or a GPU")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_registered_split_kernels_match_float64(name, shape):
    v = bench.check(name, *shape)
    assert v.passed, v.line()


@pytest.mark.parametrize("name", NAMES)
def test_the_registry_check_reaches_a_partial_last_slice(name):
    """The registry's check (``tests/kernels/test_kernels.py``) runs both kernels under the
    simulator, on a shape whose k-steps the slices do not divide."""
    spec = get_spec(name)
    bk, splits = spec.tile[2], spec.launch.splits
    assert spec.simulator and splits > 1
    assert any((-(-k // bk)) % (sk.k_slices(k, bk, splits)[0] // bk)
               for _, _, k in bench.shapes_for(spec, gpu=False))


def _run(mode, a, b, splits):
    from numba import cuda

    m, n = a.shape[0], b.shape[1]
    d_c = cuda.to_device(np.full((m, n), np.nan, np.float32))   # poisoned
    sk.launch_fp32(cuda.to_device(a), cuda.to_device(b), d_c, splits=splits, mode=mode)
    return d_c.copy_to_host()


@pytest.mark.parametrize("mode", sk.MODES)
@pytest.mark.parametrize("splits", [1, 2, 4, 5, 7, 100])
def test_split_factors_that_do_not_divide_k(mode, splits):
    """K = 45 is 6 k-tiles of 8 (the last one short): 4 → 3 slices of 16, 5 → 3, 7 → 6 of
    8, 100 → 6: every slice non-empty, every element written exactly once (two-pass) or
    summed from zero (atomic)."""
    a, b = bench.random_inputs(37, 29, 45, np.float32, np.random.default_rng(splits))
    v = bench.compare(_run(mode, a, b, splits), a, b, kernel=f"splitk_{mode}_{splits}")
    assert v.passed, v.line()


def test_plan_cuts_whole_k_tiles_and_leaves_none_empty():
    assert sk.k_slices(45, 8, 4) == (16, 3)
    assert sk.k_slices(45, 8, 7) == (8, 6)
    assert sk.k_slices(45, 8, 100) == (8, 6)
    assert sk.k_slices(1, 8, 4) == (8, 1)
    assert sk.k_slices(16384, 64, 8) == (2048, 8)
    for k in range(1, 70):
        for s in range(1, 10):
            chunk, slices = sk.k_slices(k, 8, s)
            assert chunk % 8 == 0 and 1 <= slices <= s
            assert (slices - 1) * chunk < k <= slices * chunk


@pytest.mark.parametrize("bad, err, match", [
    (0, ValueError, "split factor must be >= 1, got 0"),
    (-3, ValueError, "split factor must be >= 1, got -3"),
    (2.0, TypeError, "split factor must be an int"),
    (True, TypeError, "split factor must be an int"),
])
def test_bad_split_factor_is_refused_before_any_launch(bad, err, match, monkeypatch):
    def no_launch(*args, **kw):
        raise AssertionError("launched")
    monkeypatch.setattr(sk, "_finish", no_launch)
    a, b = bench.random_inputs(9, 9, 9, np.float32, np.random.default_rng(0))
    from numba import cuda

    with pytest.raises(err, match=match):
        sk.launch_fp32(cuda.to_device(a), cuda.to_device(b),
                       cuda.device_array((9, 9), np.float32), splits=bad)
    with pytest.raises(err, match=match):
        sk.launcher("warptile_tuned_splitk", bad)


def test_unknown_mode_and_name():
    with pytest.raises(ValueError, match="unknown split-K mode 'ring'"):
        sk.fp32_kernels("ring")
    with pytest.raises(ValueError, match="not a split-K kernel"):
        sk.launcher("warptile_tuned")


def test_two_pass_is_bitwise_repeatable():
    a, b = bench.random_inputs(37, 29, 45, np.float32, np.random.default_rng(5))
    first = _run("two_pass", a, b, 5)
    again = _run("two_pass", a, b, 5)
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32))


def test_extra_bytes_model():
    assert sk.extra_bytes(512, 512, 8, "two_pass") == 2 * 8 * 512 * 512 * 4
    assert sk.extra_bytes(512, 512, 8, "atomic") == 512 * 512 * 4


def test_tensor_core_split_kernels_are_gpu_only():
    for name in ("tc_fp16_splitk", "tc_fp16_splitk_atomic"):
        spec = get_spec(name)
        assert not spec.simulator and spec.min_cc >= (8, 0)
