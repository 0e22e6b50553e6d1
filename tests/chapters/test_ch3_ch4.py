"""Chapters 3–4: register patches and the FP32 climb (simulator + offline compiler facts)."""
import numpy as np
import pytest

import lab
from lab import bench, device

PATCH = ["patch1", "patch2", "patch4", "patch8", "block128"]
CH4 = ["vectorized", "vectorized_spread", "pipelined", "warptile", "warptile_128x64",
       "warptile_bk16", "warptile_tuned"]


def test_registered_in_ladder_order():
    names = list(lab.REGISTRY)
    for a, b in zip(PATCH + CH4, (PATCH + CH4)[1:]):
        assert names.index(a) < names.index(b)
    assert lab.get_spec("warptile").chapter == "4" and lab.get_spec("patch4").chapter == "3"


def test_round_check_shape_takes_the_fast_path():
    """The round shape every chapter-4 kernel is checked on (tests/kernels/test_kernels.py) is a tile
    multiple, so the unchecked 16-byte kernel runs, over two block rows and two k-tiles."""
    from lab.kernels.k04_vectorized import tiles_fit
    for name in CH4:
        spec = lab.get_spec(name)
        cfg = spec.config
        assert spec.tile == (cfg.BM, cfg.BN, cfg.BK)
        round_shapes = [s for s in bench.shapes_for(spec, gpu=False) if tiles_fit(cfg, *s)]
        assert any(m >= 2 * cfg.BM and k >= 2 * cfg.BK for m, _, k in round_shapes), name
        assert any(not tiles_fit(cfg, *s) and s != (1, 1, 1)
                   for s in bench.shapes_for(spec, gpu=False)), name


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


def _v4_kernel():
    """A kernel that moves row 2 of a 4x4 float32 array to row 1 with one 16-byte load and
    store, and writes -1 to the last element through shared memory."""
    from numba import cuda, float32

    from lab.vector import ld_global_v4, st_global_v4, st_shared_f32

    @cuda.jit
    def move(x):
        s = cuda.shared.array((4, 4), dtype=float32)
        a, b, c, d = ld_global_v4(x, 8)
        st_global_v4(x, 4, a, b, c, d)
        st_shared_f32(s, 15, float32(-1.0))
        cuda.syncthreads()
        x[3, 3] = s[3, 3]
    return move


def test_vector_fallbacks_move_four_floats():
    """Under the simulator the 16-byte intrinsics are plain Python; on a GPU, real PTX."""
    from lab import device
    from lab.vector import ld_global_v4, st_global_v4, st_shared_f32
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    if device.GPU:
        from numba import cuda
        d_x = cuda.to_device(x)
        _v4_kernel()[1, 1](d_x)
        y = d_x.copy_to_host()
        assert list(y[1]) == [8, 9, 10, 11] and y[3, 3] == -1
        return
    assert ld_global_v4(x, 8) == (8, 9, 10, 11)
    st_global_v4(x, 4, 1, 2, 3, 4)
    assert list(x[1]) == [1, 2, 3, 4]
    st_shared_f32(x, 15, -1)
    assert x[3, 3] == -1


def test_occupancy_rules():
    from lab.model import occupancy
    assert occupancy(256, 128, 16640)["blocks_per_sm"] == 2
    assert occupancy(256, 168, 16384)["blocks_per_sm"] == 1
    assert occupancy(256, 102, 16384)["blocks_per_sm"] == 2          # patch8, uint32 indices
    assert occupancy(256, 62, 8192)["blocks_per_sm"] == 4            # patch4
    assert occupancy(256, 24, 2048)["blocks_per_sm"] == 8         # warp limit (64 warps)
    assert occupancy(256, 24, 2048)["limited_by"] == "warps"


# ---------------------------------------------------------------- offline compiler facts

FACT_KERNELS = ["patch1", "patch4", "patch8", "block128", "vectorized", "pipelined", "warptile",
                "lab.kernels.k03_registers:int32_patch8"]


@pytest.fixture(scope="module")
def facts():
    from lab import compiler
    compiler.prefetch(FACT_KERNELS)
    return {name: [dict(r.summary(), mix=r.mix, loop_mix=r.loop_mix)
                   for r in compiler.report(name)] for name in FACT_KERNELS}


def test_patches_live_in_registers(facts):
    for name in ("patch1", "patch4", "patch8", "block128"):
        s = facts[name][0]
        assert s["stack_bytes"] == 0 and s["spill_stores"] == 0, s
    # uint32 indices: an 8x8 patch fits two 256-thread blocks per SM (<= 128 registers)
    for name in ("patch8", "block128"):
        assert 64 < facts[name][0]["registers"] <= 128, facts[name][0]


def test_uint32_indices_clean_the_patch_loops(facts):
    """The multiply-add loops are mostly FFMA; signed indices (the first version) were not."""
    assert facts["patch8"][0]["loop_ffma_share"] >= 0.7, facts["patch8"][0]
    assert facts["block128"][0]["loop_ffma_share"] >= 0.7, facts["block128"][0]
    assert facts["patch4"][0]["loop_ffma_share"] >= 0.5, facts["patch4"][0]
    p1 = facts["patch1"][0]["loop_mix"]
    assert p1.get("FFMA", 0) >= 16, p1          # the whole BK = 16 tile in one trip
    assert "SEL" not in facts["patch8"][0]["loop_mix"], facts["patch8"][0]["loop_mix"]
    signed = facts["lab.kernels.k03_registers:int32_patch8"][0]
    assert signed["registers"] > 128 and signed["loop_ffma_share"] < 0.5, signed
    assert signed["registers"] - facts["patch8"][0]["registers"] >= 32


def test_kept_int32_measurement_matches_the_int32_build(facts):
    """patch_sweep_int32.json was measured with make_patch_int32's build: same ptxas count."""
    from lab import results
    rows = {r["kernel"]: r for r in results.rows("patch_sweep_int32")}
    signed = facts["lab.kernels.k03_registers:int32_patch8"][0]
    assert rows["patch8"]["regs_ptxas"] == signed["registers"]


def test_register_twin_is_seed_004s_shape():
    from lab import twins
    from lab.kernels.k03_registers import make_patch  # noqa: F401  (factory exists)
    t = twins.get_twin("s004_regs4")
    assert t.twin_of == "patch4" and t.block == 16 and t.block_tile == 64
    assert twins.twins_of("patch4") == ["s004_regs4"]
    assert twins.supports("s004_regs4", 4096, 4096, 4096)
    assert not twins.supports("s004_regs4", 4096, 4096, 4000)
    assert twins.TWINS["s004_tiled16"].block_tile == 16
    assert "s004_regs4" in (twins.HERE / "seed004.cu").read_text()


def test_register_twin_compiles_offline():
    from lab import twins
    try:
        rep = twins.compile_report("s004_regs4")
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"nvcc unavailable: {exc}")
    assert rep.spill_stores == 0 and rep.stack_bytes == 0
    assert rep.shared_bytes == 2 * 64 * 16 * 4
    assert rep.loop_mix.get("FFMA", 0) >= 16


def test_patch_sweep_twin_rows_need_a_gpu():
    from lab.experiments import patch_sweep
    if device.GPU:
        pytest.skip("on a GPU the twins are timed")
    assert patch_sweep.time_twins("patch4", {"patch": 4, "median_ms": 1.0}) == []


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
