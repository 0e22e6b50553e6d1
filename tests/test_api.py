"""lab.matmul (lab.api): float32 out of the output's shape; bad input, an unknown kernel, a
GPU-only kernel under the simulator and a product the simulator cannot finish are refused,
named, before anything is launched."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lab
from lab import api, bench, device
from lab.kernels import KernelSpec, KernelUnavailable


def _inputs(rng, m=9, n=7, k=5):
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    return a, b


def test_matmul_returns_float32_of_the_output_shape(rng):
    a, b = _inputs(rng, 3, 5, 2)
    out = lab.matmul(a, b, kernel="naive")
    assert out.dtype == np.float32 and out.shape == (3, 5)


GOOD = np.ones((3, 4), np.float32)
GOOD_B = np.ones((4, 5), np.float32)


@pytest.mark.parametrize("a, b, exc, words", [
    ([[1.0]], GOOD_B, TypeError, "A must be a numpy.ndarray"),
    (GOOD, "x", TypeError, "B must be a numpy.ndarray"),
    (np.ones(3, np.float32), GOOD_B, ValueError, "A must be 2-dimensional"),
    (GOOD, np.ones((4, 5, 1), np.float32), ValueError, "B must be 2-dimensional"),
    (GOOD, np.ones((3, 5), np.float32), ValueError, "inner dimensions differ"),
    (GOOD.astype(np.float64), GOOD_B, ValueError, "takes float32 inputs"),
    (GOOD, GOOD_B.astype(np.int32), ValueError, "B is int32"),
    (np.ones((4, 3), np.float32).T, GOOD_B, ValueError, "A is not C-contiguous"),
    (np.ones((0, 4), np.float32), GOOD_B, ValueError, "empty dimension"),
    (GOOD, np.ones((4, 0), np.float32), ValueError, "empty dimension"),
])
def test_bad_input_is_named(a, b, exc, words, monkeypatch):
    launched = []
    spec = lab.get_spec("naive")
    monkeypatch.setitem(lab.REGISTRY, "naive", KernelSpec(
        "naive", spec.title, spec.dtype, lambda *x: launched.append(x)))
    with pytest.raises(exc, match=words):
        lab.matmul(a, b, kernel="naive")
    assert not launched, "nothing may be launched for bad input"


def test_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        lab.matmul(GOOD, GOOD_B, kernel="nope")


def _spy(monkeypatch, name):
    launched = []
    spec = lab.get_spec(name)
    monkeypatch.setitem(lab.REGISTRY, name, dataclasses.replace(
        spec, launch=lambda *x: launched.append(x)))
    return launched


@pytest.mark.skipif(not device.SIMULATOR, reason="the simulator's refusal")
@pytest.mark.parametrize("name", [n for n, s in lab.REGISTRY.items() if not s.simulator])
def test_gpu_only_kernel_in_the_simulator_is_refused_clearly(monkeypatch, name):
    launched = _spy(monkeypatch, name)
    spec = lab.get_spec(name)
    a = bench.to_format(np.ones((4, 4), np.float32), spec.dtype)
    with pytest.raises(KernelUnavailable, match=rf"^{name} needs a GPU: the CUDA simulator cannot run "):
        lab.matmul(a, a, kernel=name)
    assert issubclass(KernelUnavailable, RuntimeError) and not launched


def test_big_endian_input_is_named(monkeypatch):
    launched = _spy(monkeypatch, "naive")
    a = np.ones((3, 4), dtype=">f4")
    b = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"A is big-endian \(>f4\), not this machine's byte order"):
        lab.matmul(a, b, kernel="naive")
    with pytest.raises(ValueError, match="B is big-endian"):
        lab.matmul(np.ones((3, 4), np.float32), np.ones((4, 2), ">f4"), kernel="naive")
    assert not launched


def test_masked_array_is_refused(monkeypatch):
    launched = _spy(monkeypatch, "naive")
    a = np.ma.masked_array(np.ones((3, 4), np.float32), mask=np.eye(3, 4, dtype=bool))
    with pytest.raises(TypeError, match="A is a numpy.ma.MaskedArray: its mask would be ignored"):
        lab.matmul(a, np.ones((4, 2), np.float32), kernel="naive")
    assert not launched


@pytest.mark.skipif(not device.SIMULATOR, reason="the size limit is the simulator's")
def test_a_product_the_simulator_cannot_finish_is_refused_before_launch(monkeypatch):
    from numba import cuda

    monkeypatch.setattr(cuda, "to_device", lambda *a, **k: pytest.fail("copied to the device"))
    a = np.ones((1024, 1024), dtype=np.float32)
    with pytest.raises(ValueError, match=r"1024x1024x1024 is too large for the CUDA simulator: "
                       r"1,073,741,824 multiply-adds.*at most 16,777,216 \(256x256x256\)"):
        lab.matmul(a, a)
    limit = round(api.SIMULATOR_MAX_PRODUCT ** (1 / 3))
    with pytest.raises(ValueError, match="too large"):
        lab.matmul(np.ones((limit + 1, limit), np.float32), np.ones((limit, limit), np.float32))
