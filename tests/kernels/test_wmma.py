"""The WMMA rung (:mod:`lab.kernels.k07_wmma`, :mod:`lab.wmma`): the six kernels registered to
run under the simulator's cooperative stand-ins (so ``tests/kernels/test_kernels.py`` checks them
against float64 past every tile edge, and on a GPU through the real instructions), on odd
shapes, the stand-ins' own semantics, the FP16-accumulator bound, the PTX text, and the
committed H200 run."""
from __future__ import annotations

import numpy as np
import pytest

import lab
from lab import accuracy, device, results, wmma
from lab.kernels import get_spec, k07_wmma

NAMES = [f"wmma_{shape}_{acc}" for shape in wmma.SHAPES for acc in wmma.ACCUMULATORS]


def test_six_kernels_registered_in_chapter_5():
    from lab.kernels import REGISTRY

    assert [n for n in REGISTRY if n.startswith("wmma_")] == NAMES
    for name in NAMES:
        spec = get_spec(name)
        assert spec.chapter == "5" and spec.dtype == np.float16 and spec.simulator
        assert spec.tile == (*wmma.SHAPES[name.split("_")[1]],)


@pytest.mark.parametrize("name", ["wmma_m16n16k16_f32", "wmma_m8n32k16_f16"])
def test_odd_shapes_and_every_element_written(name):
    for m, n, k in ((1, 1, 1), (3, 37, 5), (33, 7, 17)):
        a, b = accuracy.random_inputs(m, n, k, np.float16, np.random.default_rng(m + n + k))
        out = lab.matmul(a, b, kernel=name)
        assert out.shape == (m, n) and np.isfinite(out).all()
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(out, want, rtol=0, atol=2e-3 * max(1.0, np.abs(want).max()))


def test_bad_input_is_refused_before_any_launch():
    a = np.ones((4, 5), np.float16)
    with pytest.raises(ValueError, match="inner dimensions|dimension"):
        lab.matmul(a, np.ones((6, 3), np.float16), kernel="wmma_m16n16k16_f32")
    with pytest.raises((TypeError, ValueError), match="dtype|float16|float32"):
        lab.matmul(a.astype(np.float32), np.ones((5, 3), np.float32),
                   kernel="wmma_m16n16k16_f32")


def test_half_accumulator_bound_grows_with_the_steps_and_catches_a_wrong_sum():
    assert k07_wmma.half_accumulator_factor(16) < k07_wmma.half_accumulator_factor(1024)
    assert k07_wmma.half_accumulator_factor(1) > accuracy.bound_factor(1, tensor_cores=True)
    # A kernel that dropped one 16-deep step would be far outside the bound.
    rng = np.random.default_rng(3)
    a, b = accuracy.random_inputs(8, 8, 32, np.float16, rng)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    wrong = a64[:, 16:] @ b64[16:, :]
    factor = k07_wmma.half_accumulator_factor(32)
    verdict = accuracy.judge(wrong, a64 @ b64, factor * (np.abs(a64) @ np.abs(b64)),
                             kernel="planted", shape=(8, 8, 32), dtype_name="float16",
                             factor=factor)
    assert not verdict.passed


def test_ptx_text_of_each_operation():
    assert wmma.instruction("load_a", "m16n16k16") == (
        "wmma.load.a.sync.aligned.row.m16n16k16.f16 {$0, $1, $2, $3, $4, $5, $6, $7}, [$8], $9;")
    assert wmma.instruction("mma", "m32n8k16", "f16").startswith(
        "wmma.mma.sync.aligned.row.row.m32n8k16.f16.f16 {$0, $1, $2, $3}, {$4,")
    assert wmma.instruction("store_d", "m8n32k16") == (
        "wmma.store.d.sync.aligned.row.m8n32k16.f32 [$0], {$1, $2, $3, $4, $5, $6, $7, $8}, $9;")
    with pytest.raises(ValueError, match="shape"):
        wmma.ops("m16n8k16")
    with pytest.raises(ValueError, match="accumulator"):
        wmma.ops("m16n16k16", "bf16")


@pytest.mark.skipif(not device.SIMULATOR, reason="the stand-ins exist under the simulator")
def test_stand_ins_compute_one_tile_cooperatively():
    """One warp: load, mma (accumulating twice) and store through the stand-ins give A·B + A·B."""
    from numba import cuda

    op = wmma.ops("m32n8k16", "f32")

    @cuda.jit
    def one_tile(A, B, C):
        acc = op.zero_c()
        a = op.load_a(A, 0, 16)
        b = op.load_b(B, 0, 8)
        acc = op.mma(a, b, acc)
        acc = op.mma(a, b, acc)
        op.store_d(C, 0, 8, acc)

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (32, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    c = np.full((32, 8), np.nan, np.float32)
    one_tile[1, 32](a, b, c)
    np.testing.assert_allclose(c, 2 * (a.astype(np.float64) @ b.astype(np.float64)),
                               rtol=1e-6, atol=1e-6)


def test_committed_run_checked_every_kernel_and_timed_them_beside_mma_sync():
    data = results.load("wmma", gpu=results.REFERENCE_GPU)
    checks = [r for r in data["rows"] if r["part"] == "check"]
    assert {r["kernel"] for r in checks} == set(NAMES) and all(r["passed"] for r in checks)
    for name in NAMES:
        shapes = {(r["m"], r["n"], r["k"]) for r in checks if r["kernel"] == name}
        assert (1, 1, 1) in shapes and (1000, 1030, 999) in shapes and len(shapes) >= 14
    timed = {r["kernel"] for r in data["rows"] if r["part"] == "timing"}
    assert timed == {*NAMES, "tc_naive_fp16", "tc_fp16", "cublas_fp16"}
    assert data["parameters"]["failed"] == []
