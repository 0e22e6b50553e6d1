"""Chapters 3–4: register patches and the FP32 climb (simulator + offline compiler facts)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lab
from lab import bench, device

PATCH = ["patch1", "patch2", "patch4", "patch8", "block128"]
CH4 = ["vectorized", "vectorized_spread", "pipelined", "warptile", "warptile_128x64",
       "warptile_bk16"]


def test_registered_in_ladder_order():
    names = list(lab.REGISTRY)
    for a, b in zip(PATCH + CH4, (PATCH + CH4)[1:]):
        assert names.index(a) < names.index(b)
    assert lab.get_spec("warptile").chapter == 4 and lab.get_spec("patch4").chapter == 3


@pytest.mark.parametrize("name", PATCH)
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 5), (33, 20, 19)])
def test_patch_kernels_odd_shapes(name, shape):
    v = bench.check(name, *shape)
    assert v.passed, v.line()


@pytest.mark.parametrize("name", CH4)
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 5), (40, 9, 21)])
def test_ch4_edge_path(name, shape):
    v = bench.check(name, *shape)
    assert v.passed, v.line()


@pytest.mark.parametrize("name", CH4)
def test_ch4_fast_path(name):
    """Tile-multiple shapes take the unchecked 16-byte kernel (two k-tiles at least)."""
    from lab.kernels.k04_vectorized import tiles_fit
    cfg = lab.get_spec(name).launch.config
    shape = (cfg.BM, cfg.BN, 2 * cfg.BK)
    assert tiles_fit(cfg, *shape)
    v = bench.check(name, *shape)
    assert v.passed, v.line()


def test_fast_path_writes_every_element_of_two_blocks():
    a, b = bench.random_inputs(128, 256, 24, np.float32, np.random.default_rng(1))
    out = lab.matmul(a, b, kernel="warptile")
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


def test_config_validation_names_the_problem():
    from lab.kernels.k04_vectorized import Config
    with pytest.raises(ValueError, match="WM must equal"):
        Config(BM=128, BN=128, WM=64, WN=64, LM=8, TM=8, TN=8).validate()
    with pytest.raises(ValueError, match="layout"):
        Config(layout="diagonal").validate()
    assert Config().threads == 256 and Config(layout="spread").threads == 256


def test_sweep_configs_are_valid_and_fit():
    from lab.kernels.k06_warptile import sweep_configs
    cfgs = sweep_configs()
    assert len(cfgs) >= 10
    for c in cfgs:
        c.validate()
        assert c.shared_bytes <= 48 * 1024 and 64 <= c.threads <= 512


def test_vector_fallbacks_move_four_floats():
    from lab.vector import ld_global_v4, st_global_v4, st_shared_f32
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert ld_global_v4(x, 8) == (8, 9, 10, 11)
    st_global_v4(x, 4, 1, 2, 3, 4)
    assert list(x[1]) == [1, 2, 3, 4]
    st_shared_f32(x, 15, -1)
    assert x[3, 3] == -1


def test_occupancy_rules():
    from lab.experiments.patch_sweep import occupancy
    assert occupancy(128, 16640, 256)["blocks_per_sm"] == 2
    assert occupancy(168, 16384, 256)["blocks_per_sm"] == 1
    assert occupancy(24, 2048, 256)["blocks_per_sm"] == 8         # warp limit (64 warps)
    assert occupancy(24, 2048, 256)["limited_by"] == "warps"


# ---------------------------------------------------------------- offline compiler facts

_FACTS_SCRIPT = r"""
import json, sys
from lab import compiler
out = {}
for name in sys.argv[1:]:
    reps = compiler.report(name)
    out[name] = [dict(r.summary(), mix=r.mix, loop_mix=r.loop_mix) for r in reps]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def facts():
    env = dict(os.environ, LAB_DEVICE="compile")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    names = ["patch8", "block128", "vectorized", "pipelined", "warptile"]
    run = subprocess.run([sys.executable, "-c", _FACTS_SCRIPT, *names], env=env,
                         capture_output=True, text=True, timeout=300)
    if run.returncode:
        pytest.fail(f"offline compile failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout)


def test_patches_live_in_registers(facts):
    for name in ("patch8", "block128"):
        s = facts[name][0]
        assert s["stack_bytes"] == 0 and s["spill_stores"] == 0, s
        assert s["registers"] > 128, "an 8x8 patch costs more than half the register budget"


def test_ch4_inner_loop_is_ffma_and_lds128(facts):
    for name in ("vectorized", "pipelined", "warptile"):
        fast, edges = facts[name]
        for s in (fast, edges):
            assert s["stack_bytes"] == 0 and s["spill_stores"] == 0, (name, s)
            assert s["loop_ffma_share"] >= 0.9, (name, s)
            loop = s["loop_mix"]
            assert loop.get("LDS.128", 0) == 16 and "LDS" not in loop, (name, loop)
            assert not any(op.startswith(("LDL", "STL")) for op in loop), (name, loop)
        # the fast kernel fits two 256-thread blocks per SM (≤ 128 registers)
        assert fast["registers"] <= 128, (name, fast)
        assert fast["mix"].get("LDG.128", 0) >= 2 and fast["mix"].get("STG.128", 0) >= 16
        assert fast["mix"].get("STS.128", 0) >= 2
