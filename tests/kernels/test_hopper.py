"""Hopper: the intrinsics of lab.hopper and the kernels of lab.kernels.wgmma.

* Any machine, no GPU (run in a subprocess with ``LAB_DEVICE=compile``: real numba-cuda): each
  intrinsic, in a small probe kernel, assembles for ``sm_90a`` and its SASS holds the instruction
  it should (HGMMA, UTMALDG, SYNCS, SETMAXREG, …); every Hopper rung and every configuration of
  the experiment's sweep assembles, holds HGMMA, and spills nothing; ``setmaxnreg`` is not
  ignored by ptxas; the TMA-store rungs hold UTMASTG and no STG, the cluster rungs multicast
  (UTMALDG.2D.MULTICAST) and meet at cluster barriers.
* Any machine: Python models of the mbarrier protocols (ping-pong; clusters with multicast and
  cluster-wide empty barriers, every wgmma wait depth) in random interleavings: no deadlock,
  no slot overwritten while read.
* Any machine: NumPy models of the layouts — what cp.async and TMA write is what the wgmma
  descriptors read; descriptor encoding; the accumulator layout covers the tile once; bad
  configurations, tensor maps and inputs raise clear errors before anything is launched.
* On a Hopper GPU: one wgmma (each N, FP16 and BF16) against float64; a TMA box (swizzled,
  zero-filled past the edges) against the NumPy model; every rung on odd and round shapes.
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np
import pytest

import lab  # noqa: F401  (device decided first)
from lab import bench, compiler, device, hopper
from lab.kernels import wgmma as K


def _is_hopper() -> bool:
    if not device.GPU:
        return False
    from numba import cuda
    return cuda.get_current_device().compute_capability[0] == 9


hopper_gpu = pytest.mark.skipif(not _is_hopper(), reason="needs a Hopper GPU (sm_90a)")

# ----------------------------------------------------------------------------- probes
# Defined on every machine; compiled offline by the worker below, run on a Hopper GPU.

from numba import cuda, float32, int32, uint8, uint16, uint32, uint64  # noqa: E402


def wgmma_probe(kind: str, n: int):
    """One warpgroup: A (64×64, K-major) and B (64×n, MN-major) stored by ordinary stores in
    the 128B-swizzled layouts, then 4 wgmma k-steps; raw accumulators out (128 × n/2)."""
    regs = n // 2
    b_base = 64 * hopper.SWIZZLE_BYTES          # A takes 8 KB
    mma = hopper.wgmma(kind, n)

    @cuda.jit
    def probe(a_words, b_words, out, b_lbo, b_sbo):
        smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
        half = cuda.shared.array(0, dtype=uint16, alignment=1024)
        tid = cuda.threadIdx.x
        for i in range(tid, a_words.shape[0], 128):     # pre-swizzled on the host
            half[i] = a_words[i]
        for i in range(tid, b_words.shape[0], 128):
            half[b_base // 2 + i] = b_words[i]
        hopper.fence_proxy_async()
        cuda.syncthreads()
        base = hopper.shared_address(smem)
        acc = cuda.local.array(regs, float32)
        hopper.wgmma_fence()
        for ks in range(4):
            da = hopper.smem_desc(base + uint32(32 * ks), 16, 1024)
            db = hopper.smem_desc(base + uint32(b_base + ks * 16 * hopper.SWIZZLE_BYTES),
                                  b_lbo, b_sbo)
            mma(acc, 0, da, db, int32(ks > 0))
        hopper.wgmma_commit()
        hopper.wgmma_wait(0)
        for i in range(regs):
            out[tid, i] = acc[i]
    return probe


@cuda.jit
def tma_probe(tensor_map, out, col, row):
    """One TMA box (64 rows × 64 16-bit columns) at (row, col) into shared memory, copied out
    as the raw 8 KB the copy engine wrote."""
    smem = cuda.shared.array(0, dtype=uint8, alignment=1024)
    half = cuda.shared.array(0, dtype=uint16, alignment=1024)
    bar = cuda.shared.array(1, dtype=uint64)
    tid = cuda.threadIdx.x
    b = hopper.shared_address(bar)
    if tid == 0:
        hopper.mbar_init(b, 1)
        hopper.fence_barrier_init()
    cuda.syncthreads()
    if tid == 0:
        hopper.prefetch_tensormap(hopper.global_address(tensor_map))
        hopper.mbar_expect_tx(b, 8192)
        hopper.tma_load_2d(hopper.shared_address(smem), hopper.global_address(tensor_map),
                           col, row, b)
    hopper.mbar_wait(b, 0)
    for i in range(tid, 4096, cuda.blockDim.x):
        out[i] = half[i]


def _setmaxnreg_kernel():
    @cuda.jit(**({} if hopper.SIMULATOR else {"launch_bounds": (256, 1)}))
    def probe(out):
        if cuda.threadIdx.x < 128:
            hopper.setmaxnreg_dec(40)
        else:
            hopper.setmaxnreg_inc(232)
            out[cuda.threadIdx.x] = 1.0
    return probe


@cuda.jit
def arrive_probe(out):
    bar = cuda.shared.array(1, dtype=uint64)
    b = hopper.shared_address(bar)
    if cuda.threadIdx.x == 0:
        hopper.mbar_init(b, 32)
    cuda.syncthreads()
    hopper.mbar_arrive(b)
    hopper.mbar_wait(b, 0)
    out[cuda.threadIdx.x] = 1.0


def _offline_worker() -> dict:
    """Compile the probes and every FP16 rung for sm_90a; SASS facts as a dict."""
    facts = {}
    probes = {
        "wgmma_f16_n64": (wgmma_probe("f16", 64),
                          "void(uint16[::1], uint16[::1], float32[:, ::1], int32, int32)"),
        "wgmma_bf16_n256": (wgmma_probe("bf16", 256),
                            "void(uint16[::1], uint16[::1], float32[:, ::1], int32, int32)"),
        "tma": (tma_probe, "void(uint64[::1], uint16[::1], int32, int32)"),
        "setmaxnreg": (_setmaxnreg_kernel(), "void(float32[::1])"),
        "arrive": (arrive_probe, "void(float32[::1])"),
    }
    for rung, cfg in K.RUNG_CONFIGS.items():
        probes[rung] = (K.kernel_for(cfg), K.signature(cfg))
    for label, cfg in K.SWEEP_CONFIGS.items():
        probes["sweep: " + label] = (K.kernel_for(cfg), K.signature(cfg))
    from lab.experiments._hopper_study import study

    sleeping = study(K.RUNG_CONFIGS["wgmma_grid128"], sleep=True)
    probes["sleeping waits"] = (K.kernel_for(sleeping), K.signature(sleeping))
    counted = replace(K.RUNG_CONFIGS["wgmma_grid128"], counters=True)
    probes["slot counters"] = (K.kernel_for(counted), K.signature(counted))
    stepped = replace(counted, steps=True)
    probes["descriptor steps"] = (K.kernel_for(stepped), K.signature(stepped))
    evicting = study(K.RUNG_CONFIGS["wgmma_uniform"], c_evict=True)
    probes["C evict-first"] = (K.kernel_for(evicting), K.signature(evicting))
    for name, (kernel, sig) in probes.items():
        r = compiler.compile_function(
            getattr(kernel, "py_func", kernel), sig, kernel=name, cc=(9, 0, "a"),
            launch_bounds=getattr(kernel, "targetoptions", {}).get("launch_bounds"))
        sass_ops = r.sass
        facts[name] = {"mix": r.mix, "registers": r.registers,
                       "spills": r.spill_stores + r.spill_loads, "stack": r.stack_bytes,
                       "warnings": r.warnings, "target": ".target sm_90a" in r.ptx,
                       "hgmma": [ln.split("HGMMA.")[1].split()[0] for ln in sass_ops.splitlines()
                                 if "HGMMA." in ln][:1],
                       "tnspB": "tnspB" in sass_ops,
                       "multicast": sass_ops.count("UTMALDG.2D.MULTICAST"),
                       "nanosleep": sass_ops.count("NANOSLEEP.SYNCS"),
                       "cache_hint": r.ptx.count(".L2::cache_hint"),
                       "bar_sync": sass_ops.count("BAR.SYNC"),
                       "tma_store": sass_ops.count("UTMASTG"),
                       "div64": r.ptx.count("div.s64") + r.ptx.count("rem.s64"),
                       "loop_mix": r.loop_mix}
    return facts


@pytest.fixture(scope="module")
def offline(offline_worker):
    if device.MODE in ("gpu", "compile"):
        return _offline_worker()
    return offline_worker(__file__, "--worker")


# ----------------------------------------------------------------------------- offline SASS

def test_wgmma_assembles_for_sm90a(offline):
    for name, shape in (("wgmma_f16_n64", "64x64x16"), ("wgmma_bf16_n256", "64x256x16")):
        f = offline[name]
        assert f["target"], f"{name}: PTX not for sm_90a"
        assert f["mix"].get("HGMMA") == 4, f"{name}: expected 4 HGMMA, got {f['mix']}"
        assert f["hgmma"][0].startswith(shape), f["hgmma"]
        assert f["tnspB"], f"{name}: B should be read transposed (MN-major)"
        assert f["mix"].get("WARPGROUP", 0) >= 2      # wgmma.fence (ARRIVE) and wait (DEPBAR)
        assert f["spills"] == 0 and f["stack"] == 0


def test_tma_and_mbarrier_assemble(offline):
    mix = offline["tma"]["mix"]
    assert mix.get("UTMALDG") == 1, mix
    assert mix.get("SYNCS", 0) >= 3, mix          # init, arrive.expect_tx, try_wait
    assert mix.get("UTMACCTL") == 1, mix      # prefetch.tensormap
    assert offline["arrive"]["mix"].get("SYNCS", 0) >= 2


def test_lab_compile_builds_sm90a_for_hopper_kernels():
    """``python -m lab compile`` (lab.compiler.report) uses the spec's target, sm_90a."""
    from lab import compiler
    assert lab.get_spec("wgmma_pingpong_fp16").target(compiler.ARCH) == (9, 0, "a")
    r = compiler.report("wgmma_pingpong_fp16")[0]
    assert r.mix.get("HGMMA") == 8 and r.spill_stores == 0     # wgmma's SASS: sm_90a only


def test_sleeping_waits_sleep_and_the_rungs_poll(offline):
    """``sleep``: each wait loop (producer: empty stages; consumers: full stages) sleeps on
    the barrier (NANOSLEEP.SYNCS with the hint) between polls; the rungs only poll."""
    f = offline["sleeping waits"]
    assert f["nanosleep"] >= 2, f["nanosleep"]
    assert f["spills"] == 0 and f["mix"].get("HGMMA") == offline["wgmma_grid128"]["mix"]["HGMMA"]
    assert all(offline[rung]["nanosleep"] == 0 for rung in K.RUNG_CONFIGS)


def test_slot_counters_shorten_the_main_loop(offline):
    """``counters``: the consumers' main loop (the hottest loop) keeps its four HGMMA and
    loses the per-k-slice division by the stage count (the wide multiplies of a division by 3)."""
    rung, counted = offline["wgmma_grid128"]["loop_mix"], offline["slot counters"]["loop_mix"]
    assert counted.get("HGMMA") == rung.get("HGMMA") == 4
    assert sum(counted.values()) < 0.75 * sum(rung.values()), (counted, rung)
    # chapter 7 (*What is left at 4096³*) quotes these counts for the pinned toolchain
    assert (sum(rung.values()), sum(counted.values())) == (138, 82), (rung, counted)
    assert counted.get("UIMAD", 0) <= 1 < rung.get("UIMAD", 0)
    assert offline["slot counters"]["spills"] == 0


def test_descriptor_steps_shorten_the_main_loop_again(offline):
    """``steps``: the k-slice's two descriptors are built once and each wgmma's is a constant
    added to their low word: the mask-shift-OR per wgmma goes (82 → 67 per k-slice), the four
    HGMMA stay, no spills."""
    counted, stepped = offline["slot counters"]["loop_mix"], offline["descriptor steps"]["loop_mix"]
    assert stepped.get("HGMMA") == 4
    assert (sum(counted.values()), sum(stepped.values())) == (82, 67), (counted, stepped)
    assert stepped.get("ULOP3", 0) + stepped.get("LOP3", 0) < (counted.get("ULOP3", 0)
                                                                 + counted.get("LOP3", 0))
    assert offline["descriptor steps"]["spills"] == 0


def test_a_uniform_index_shortens_the_main_loop_again(offline):
    """``uniform`` (rungs 15 and 16): with the warpgroup index read from lane 0 the
    descriptors are built in uniform registers (no R2UR left in the loop) and the k-slice loop
    counts in 32 bits: 67 → 49 SASS instructions per k-slice, the four HGMMA stay, no spills;
    rung 16's main loop is rung 15's. Evict-first tags C's TMA stores only."""
    lean, uni = offline["wgmma_lean"]["loop_mix"], offline["wgmma_uniform"]["loop_mix"]
    # chapter 7 (*What is left at 4096³*) quotes these counts for the pinned toolchain
    assert (sum(lean.values()), sum(uni.values())) == (67, 49), (lean, uni)
    assert uni.get("HGMMA") == 4 and lean.get("R2UR", 0) >= 8 and uni.get("R2UR", 0) == 0
    assert offline["wgmma_ring_uniform"]["loop_mix"] == uni
    assert offline["wgmma_uniform"]["spills"] == offline["wgmma_ring_uniform"]["spills"] == 0
    assert offline["C evict-first"]["cache_hint"] >= 1
    assert all(offline[rung]["cache_hint"] == 0 for rung in K.RUNG_CONFIGS)


def test_store_threads_take_the_epilogue_barriers(offline):
    """``handoff`` (rung 17): the consumers' named barrier per staging box goes (rung 16: 8
    unrolled ``BAR.SYNC`` besides the block's one after the barrier inits; rung 17: that one
    alone); the TMA stores move to the store threads' loop; the main loop stays rung 16's 49
    instructions per k-slice; no spills."""
    ring, hand = offline["wgmma_ring_uniform"], offline["wgmma_handoff"]
    assert (ring["bar_sync"], hand["bar_sync"]) == (9, 1), (ring["bar_sync"], hand["bar_sync"])
    assert ring["tma_store"] == 8 and hand["tma_store"] == 1      # (a loop over the boxes)
    assert sum(hand["loop_mix"].values()) == 49 and hand["loop_mix"].get("HGMMA") == 4
    assert hand["spills"] == 0


def test_the_tile_table_takes_the_divisions_out_of_the_loop_over_tiles(offline):
    """Rungs 18 and 19 (``table``): the 64-bit divisions and remainders of ``tile_order``
    (rung 15: eight in the loops over tiles of its producer and consumers, beside the two that
    count each loop's trips; rung 17: eleven, its store threads' too) go; the two trip counts
    stay. Chapter 7 quotes these counts. Main loop: four HGMMA, no spills."""
    counts = tuple(offline[r]["div64"] for r in ("wgmma_uniform", "wgmma_table",
                                                   "wgmma_handoff", "wgmma_handoff_table"))
    assert counts == (10, 2, 13, 2), counts
    for rung in ("wgmma_table", "wgmma_handoff_table"):
        assert offline[rung]["loop_mix"].get("HGMMA") == 4 and offline[rung]["spills"] == 0


def test_setmaxnreg_is_applied(offline):
    f = offline["setmaxnreg"]
    assert f["mix"].get("USETMAXREG", 0) + f["mix"].get("SETMAXREG", 0) == 2, f["mix"]
    assert not any("C7508" in w for w in f["warnings"]), f["warnings"]


@pytest.mark.parametrize("rung", list(K.RUNG_CONFIGS))
def test_rung_sass(offline, rung):
    cfg = K.RUNG_CONFIGS[rung]
    f = offline[rung]
    assert f["target"]
    if cfg.streamk:
        # stream-K's scalars (its share, the blocks before it, the fix-up's copy addresses)
        # and a few of the epilogue's addresses spill, around the main loop and the fix-up,
        # not in the main loop, into a small frame
        assert f["spills"] <= 704 and f["stack"] <= 112, f"{rung}: spills {f['spills']}"
    else:
        assert f["spills"] == 0 and f["stack"] == 0, f"{rung} spills or uses a stack frame"
    copies = 2 if cfg.streamk else 1    # stream-K: main loop and store for whole and shared tiles
    per_stage = cfg.mt * (K.BK // 16) * copies        # per consumer warpgroup
    assert f["mix"].get("HGMMA") == per_stage, f"{rung}: HGMMA {f['mix'].get('HGMMA')}"
    assert f["hgmma"][0].startswith(f"64x{cfg.bn}x16"), f["hgmma"]
    if cfg.loader == "cpasync":
        assert f["mix"].get("LDGSTS.128", 0) > 0 and "UTMALDG" not in f["mix"]
    else:
        assert f["mix"].get("UTMALDG", 0) >= (1 + cfg.bn // 64 // cfg.cluster) * copies
        # (stream-K's fix-up lands the partial sums in shared memory with cp.async)
        assert f["mix"].get("LDGSTS.128", 0) == (cfg.mt * cfg.bn // 8 if cfg.streamk else 0)
    if cfg.regs:
        assert f["mix"].get("USETMAXREG", 0) + f["mix"].get("SETMAXREG", 0) == 2
        assert not any("C7508" in w for w in f["warnings"]), f["warnings"]
    _epilogue_and_cluster_sass(cfg, f, rung)


def _epilogue_and_cluster_sass(cfg, f, what):
    copies = 2 if cfg.streamk else 1    # stream-K stores whole tiles and fixed-up shared ones
    boxes = cfg.mt * cfg.bn // cfg.epi_cols * copies    # TMA-store boxes per warpgroup and tile
    if cfg.epilogue == "tma":
        # (with the hand-off the store threads loop over a tile's boxes: one UTMASTG)
        assert f["mix"].get("UTMASTG") == (1 if cfg.handoff else boxes), \
            f"{what}: UTMASTG {f['mix']}"
        if cfg.streamk:       # the partial sums leave 16 bytes at a time (ACC/4 per thread)
            acc = cfg.mt * cfg.bn // 2      # and return through shared memory (cp.async, then
            # 16-byte shared loads); 4-byte global accesses only for the flags
            assert f["mix"].get("STG.128") == acc // 4, f"{what}: STG.128 {f['mix']}"
            assert f["mix"].get("LDGSTS.128") == acc // 4, f"{what}: LDGSTS.128 {f['mix']}"
            assert f["mix"].get("LDS.128") == acc // 4, f"{what}: LDS.128 {f['mix']}"
            assert "LDG.128" not in f["mix"], f"{what}: LDG.128 {f['mix']}"
            assert f["mix"].get("STG") == 2 and f["mix"].get("LDG") == 2, \
                f"{what}: 4-byte global accesses {f['mix']}"
        else:
            assert "STG" not in f["mix"], f"{what}: C should leave only through TMA stores"
        # two stores per 8 columns and thread: 8-byte (two float32) or 4-byte (two 16-bit)
        store = "STS.64" if cfg.out == "f32" else "STS"
        assert f["mix"].get(store) == boxes * 2 * (cfg.epi_cols // 8), \
            f"{what}: staging stores {f['mix']}"
        if cfg.out != "f32":
            assert f["mix"].get("F2FP") == boxes * 2 * (cfg.epi_cols // 8), f"{what}: F2FP"
    else:
        assert "UTMASTG" not in f["mix"]
    if cfg.cluster > 1:
        share = cfg.bn // 64 // cfg.cluster
        assert f["multicast"] == share, f"{what}: {f['multicast']} multicast TMA loads"
        assert f["mix"].get("UTMALDG") == 1 + share, f"{what}: one A box, {share} B boxes"
        assert f["mix"].get("UCGABAR_ARV") == 2 and f["mix"].get("UCGABAR_WAIT") == 2, \
            f"{what}: a cluster barrier at the start and at the end"
    else:
        assert f["multicast"] == 0 and "UCGABAR_ARV" not in f["mix"]


@pytest.mark.parametrize("label", list(K.SWEEP_CONFIGS))
def test_sweep_configs_assemble(offline, label):
    """Every configuration the experiment's sweep times assembles for sm_90a, holds its
    HGMMA, spills nothing and keeps its setmaxnreg (so a slow row is not a spill)."""
    cfg = K.SWEEP_CONFIGS[label]
    f = offline["sweep: " + label]
    assert f["target"] and f["mix"].get("HGMMA") == cfg.mt * (K.BK // 16)
    assert f["spills"] == 0 and f["stack"] == 0, f"{label} spills"
    assert f["mix"].get("USETMAXREG", 0) == 2
    assert not any("C7508" in w for w in f["warnings"]), f["warnings"]
    _epilogue_and_cluster_sass(cfg, f, label)
    if cfg.elect:
        assert f["mix"].get("ELECT", 0) >= 1


# ----------------------------------------------------------------------------- layouts (NumPy)

def _a_tile_words(a: np.ndarray) -> np.ndarray:
    """A (rows × 64 16-bit values) as the 128B-swizzled words TMA or cp.async store."""
    rows = a.shape[0]
    out = np.zeros(rows * 64, dtype=a.dtype)
    r, k = np.meshgrid(np.arange(rows), np.arange(64), indexing="ij")
    out[hopper.swizzle_128b(hopper.tma_box_offset(r, k)) // 2] = a[r, k]
    return out


def _b_tile_words(b: np.ndarray) -> np.ndarray:
    """B (64 k × n) as n/64 TMA boxes of 64 k-rows × 64 columns, each 128B-swizzled."""
    kk, n = b.shape
    out = np.zeros(kk * n, dtype=b.dtype)
    k, c = np.meshgrid(np.arange(kk), np.arange(n), indexing="ij")
    box = hopper.tma_box_offset(k, c % 64) + (c // 64) * kk * 128
    out[hopper.swizzle_128b(box) // 2] = b[k, c]
    return out


def test_k_major_descriptor_reads_what_tma_writes():
    # element (row, k) of a 128×64 A tile; the descriptor of k-step ks starts 32·ks bytes in
    for ks in range(4):
        r, kk = np.meshgrid(np.arange(128), np.arange(16), indexing="ij")
        read = hopper.swizzle_128b(32 * ks + hopper.k_major_offset(r, kk))
        written = hopper.swizzle_128b(hopper.tma_box_offset(r, 16 * ks + kk))
        assert np.array_equal(read, written)


def test_mn_major_descriptor_reads_what_tma_writes():
    lbo = K.BK * K.ROW                                     # one 64-column box of B
    for ks in range(4):
        kk, nn = np.meshgrid(np.arange(16), np.arange(256), indexing="ij")
        read = hopper.swizzle_128b(ks * 16 * K.ROW + hopper.mn_major_offset(nn, kk, lbo))
        written = hopper.swizzle_128b(hopper.tma_box_offset(16 * ks + kk, nn % 64)
                                      + (nn // 64) * lbo)
        assert np.array_equal(read, written)
        assert len(np.unique(read)) == read.size        # no two elements share a slot


def test_cpasync_copy_matches_the_tma_layout():
    """The rung-1 copy (chunk c of row r at (c ^ r % 8)·16) is the layout TMA writes."""
    r, c = np.meshgrid(np.arange(128), np.arange(8), indexing="ij")
    cp = r * 128 + ((c ^ (r % 8)) << 4)
    tma = hopper.swizzle_128b(hopper.tma_box_offset(r, 8 * c))
    assert np.array_equal(cp, tma)
    k, bc = np.meshgrid(np.arange(64), np.arange(32), indexing="ij")     # B, 256 columns
    cp_b = (bc // 8) * 8192 + k * 128 + (((bc % 8) ^ (k % 8)) << 4)
    tma_b = hopper.swizzle_128b(hopper.tma_box_offset(k, 8 * (bc % 8)) + (bc // 8) * 8192)
    assert np.array_equal(cp_b, tma_b)


def test_descriptor_encoding_round_trip():
    d = hopper.desc_value(0x1A400, 8192, 1024)
    assert hopper.desc_fields(d) == {"address": 0x1A400, "lbo": 8192, "sbo": 1024,
                                     "base_offset": 0, "swizzle": 1}
    assert hopper.desc_value(0x1A400 + 0x40000, 16, 1024) == hopper.desc_value(0x1A400, 16, 1024)


@pytest.mark.parametrize("n", hopper.WGMMA_N)
def test_accumulator_layout_covers_the_tile_once(n):
    t, i = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    rows, cols = hopper.accumulator_position(t, i)
    flat = rows * n + cols
    assert rows.max() == 63 and cols.max() == n - 1
    assert len(np.unique(flat)) == 64 * n


def test_swizzle_is_a_permutation_of_each_atom():
    offs = np.arange(0, 1024, 16)
    assert sorted(hopper.swizzle_128b(offs)) == list(offs)
    assert hopper.swizzle_128b(128 + 16) == 128     # row 1: chunk 1 ^ 1 = 0


# ----------------------------------------------------------------------------- errors

def test_tensor_map_rules():
    assert hopper.tensor_map_params((100, 72), 2, 64, 64) == {
        "dims": (72, 100), "strides": (144,), "box": (64, 64)}
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        hopper.tensor_map_params((100, 70), 2, 64, 64)
    with pytest.raises(ValueError, match="128 bytes"):
        hopper.tensor_map_params((100, 72), 2, 64, 32)
    with pytest.raises(ValueError, match="box rows"):
        hopper.tensor_map_params((100, 72), 2, 300, 64)


def test_config_validation():
    with pytest.raises(ValueError, match="bn must be"):
        K.make_config(bn=96)
    with pytest.raises(ValueError, match="accumulators"):
        K.make_config(bm=256, bn=256, consumers=1)
    with pytest.raises(ValueError, match="shared memory"):
        K.make_config(bm=256, bn=256, consumers=2, stages=8)
    with pytest.raises(ValueError, match="register file"):
        K.make_config(bm=128, bn=256, consumers=2, producer=True, regs=256)
    with pytest.raises(ValueError, match="specialized"):
        K.make_config(persistent=True)
    with pytest.raises(ValueError, match="ping-pong"):
        K.make_config(bm=128, bn=128, consumers=2, producer=True, pingpong=True)
    cfg = K.RUNG_CONFIGS["wgmma_ws"]
    assert cfg.threads == 384 and cfg.mt == 1 and cfg.stage_bytes == 48 * 1024
    pp = K.RUNG_CONFIGS["wgmma_pingpong"]
    assert pp.threads == 384 and pp.mt == 2 and pp.wg_rows == 128
    assert pp.shared_bytes == 6 * 32 * 1024
    # the hand-off counts its slots across tiles: a ring need not divide a tile's 8 boxes
    ring = K.RUNG_CONFIGS["wgmma_ring_uniform"]
    with pytest.raises(ValueError, match="a divisor"):
        replace(ring, ring=5).validate()
    assert replace(ring, handoff=True, ring=5).validate().slots == 5
    assert K.RUNG_CONFIGS["wgmma_uniform"].slots == 1          # whole-tile staging: one slot
    for bad in (dict(cluster=2, regs=224, producer_regs=56), dict(epilogue="direct")):
        with pytest.raises(ValueError, match="hand-off"):
            replace(ring, handoff=True, **bad).validate()
    # a trace (a study: lab.experiments) needs the persistent specialized kernel (stream-K or
    # not), without clusters
    from lab.experiments._hopper_study import study

    traced = study(K.RUNG_CONFIGS["wgmma_handoff"], trace=True)
    assert traced.traced and not K.RUNG_CONFIGS["wgmma_handoff"].traced
    assert "traced" in traced.label and K.signature(traced).count("[") > \
        K.signature(K.RUNG_CONFIGS["wgmma_handoff"]).count("[")   # the flags follow C
    with pytest.raises(ValueError, match="per-warp staging"):
        study(ring, handoff=True, warp_store=True)
    for bad in (K.RUNG_CONFIGS["wgmma_tma"], K.RUNG_CONFIGS["wgmma_cluster"]):
        with pytest.raises(ValueError, match="trace logs|studies are of"):
            study(bad, trace=True)


class _Barrier:
    """An mbarrier as the PTX manual describes it: a phase completes when the expected
    arrivals and the announced transaction bytes are all in; ``try_wait(parity)`` is true once
    the phase of that parity has completed (i.e. the current phase's parity differs)."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def _maybe_flip(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self, tx=0):
        self.pending -= 1
        self.tx += tx
        assert self.pending >= 0, "more arrivals than the barrier's count"
        self._maybe_flip()

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        self._maybe_flip()

    def try_wait(self, parity):
        return self.phase % 2 != parity


def _interleave(actors, rng, engine, finished, steps: int) -> bool:
    """Run ``actors`` (generators that yield wherever the hardware may switch) in a random
    interleaving; between their steps the copy engine acts (``engine()``: False when it has
    nothing to do) three times in ten. True once every actor has ended and ``finished()``;
    False after ``steps`` steps: a deadlock."""
    done = [False] * len(actors)
    for _ in range(steps):
        if all(done) and finished():
            return True
        if rng.random() < 0.3 and engine():
            continue
        i = int(rng.integers(len(actors)))
        if not done[i]:
            try:
                next(actors[i])
            except StopIteration:
                done[i] = True
    return False


def _pingpong_model(stages, k_tiles, count, rng):
    """The ping-pong protocol of ``build_ws`` (producer, two consumers, the copy engine) run in
    a random interleaving; asserts every consumer reads the k-slice it expects and the
    producer never overwrites a slot still being read."""
    full = [_Barrier(1) for _ in range(stages)]
    empty = [_Barrier(4) for _ in range(stages)]
    order = [_Barrier(1), _Barrier(1)]
    slot = [None] * stages
    reading = [None] * stages
    copies = []                                       # (slot, slice) in flight

    def wait(bar, parity):
        while not bar.try_wait(parity):
            yield

    def producer():
        for it in range(count * k_tiles):
            s = it % stages
            yield from wait(empty[s], ((it // stages) % 2) ^ 1)
            assert reading[s] is None, f"slot {s} overwritten while slice {reading[s]} is read"
            full[s].arrive(tx=1)
            copies.append((s, it))

    def consumer(cw):
        for p in range(cw, count, 2):
            if p > 0:
                yield from wait(order[cw], ((p - 1) // 2) % 2)
            it = p * k_tiles
            for kt in range(k_tiles):
                s = it % stages
                yield from wait(full[s], (it // stages) % 2)
                assert slot[s] == it, f"consumer {cw} wanted slice {it}, slot {s} holds {slot[s]}"
                reading[s] = it
                yield
                if kt > 0:
                    prev = (it - 1) % stages
                    reading[prev] = None
                    for _ in range(4):
                        empty[prev].arrive()
                it += 1
            order[1 - cw].arrive()
            yield
            prev = (it - 1) % stages
            reading[prev] = None
            for _ in range(4):
                empty[prev].arrive()
            yield                                     # the epilogue

    def deliver():                                    # the copy engine delivers one copy
        if not copies:
            return False
        s, it = copies.pop(int(rng.integers(len(copies))))
        slot[s] = it
        full[s].complete_tx(1)
        return True

    if not _interleave([producer(), consumer(0), consumer(1)], rng, deliver,
                       lambda: not copies, 200000):
        raise AssertionError(f"deadlock: stages {stages}, k_tiles {k_tiles}, tiles {count}")


@pytest.mark.parametrize("stages", [2, 3, 6])
def test_pingpong_protocol_model(stages, rng):
    for k_tiles in (1, 2, 5, 9):
        for count in (1, 2, 3, 6):
            _pingpong_model(stages, k_tiles, count, rng)


def _handoff_model(slots, groups, tiles, rng):
    """The hand-off of ``HopperConfig.handoff`` (one consumer warpgroup): four warps fill
    staging slots in turn (counted across tiles), each arriving on the slot's *filled*
    barrier; the store thread waits for it, commits the slot's stores as a bulk group and,
    once every slot has been used, waits until all but the newest ``slots - 1`` groups have
    been read before arriving on the next slot's *freed* barrier. The copy engine reads the
    committed groups in any order. Asserts the store thread finds each slot written by all
    four warps for the box it expects, and that no warp writes a slot a store is still
    reading (the copy engine would read a box of the wrong tile)."""
    filled = [_Barrier(4) for _ in range(slots)]
    freed = [_Barrier(1) for _ in range(slots)]
    written = [[None] * 4 for _ in range(slots)]          # box each warp last wrote there
    pending = {}                                          # group -> (slot, box) being read
    total = tiles * groups

    def wait(bar, parity):
        while not bar.try_wait(parity):
            yield

    def warp(w):
        slot, phase = 0, 0
        for e in range(total):
            yield from wait(freed[slot], phase ^ 1)
            assert all(s != slot for s, _ in pending.values()), \
                f"warp {w} writes slot {slot} while a store reads it"
            written[slot][w] = e
            yield
            filled[slot].arrive()
            slot, phase = (slot + 1) % slots, phase ^ (slot + 1 == slots)

    def store():
        slot, phase, warm = 0, 0, False
        for e in range(total):
            yield from wait(filled[slot], phase)
            assert written[slot] == [e] * 4, f"box {e}: slot {slot} holds {written[slot]}"
            pending[e] = (slot, e)
            slot, phase = (slot + 1) % slots, phase ^ (slot + 1 == slots)
            warm = warm or slot == 0
            if warm:                                      # bulk_wait_read(slots - 1)
                while any(g <= e - (slots - 1) for g in pending):
                    yield
                freed[slot].arrive()
        while pending:                                    # bulk_wait(0)
            yield

    def read():                                       # the copy engine reads one group
        if not pending:
            return False
        slot, box = pending.pop(list(pending)[int(rng.integers(len(pending)))])
        assert written[slot] == [box] * 4, f"box {box} overwritten before it was read"
        return True

    if not _interleave([store()] + [warp(w) for w in range(4)], rng, read, lambda: True,
                       400000):
        raise AssertionError(f"deadlock: slots {slots}, groups {groups}, tiles {tiles}")


@pytest.mark.parametrize("slots", [1, 2, 4, 5])
def test_handoff_protocol_model(slots, rng):
    for groups in (1, 4, 8):                  # slots' worth of C per tile (tile staging: 1)
        for tiles in (1, 2, 5):
            _handoff_model(slots, groups, tiles, rng)


def _cluster_model(stages, k_tiles, units, depth, rng, cluster=2, consumers=2):
    """The cluster protocol of ``build_ws`` with ``cluster`` blocks: each block's producer
    expects the whole stage on its own full barrier, loads its A box and multicasts its share
    of B to every block; every consumer warp releases a stage to the empty barrier of every
    block (4 warps × consumers × cluster arrivals a phase). The copy engine delivers in any
    order, multicast bytes may land before the receiving block's expect. Asserts each consumer
    reads the slice it expects and no copy lands in a slot a consumer still reads."""
    warps = 4
    full = [[_Barrier(1) for _ in range(stages)] for _ in range(cluster)]
    empty = [[_Barrier(warps * consumers * cluster) for _ in range(stages)]
             for _ in range(cluster)]
    parts = ["A"] + [f"B{r}" for r in range(cluster)]
    slot = [[dict.fromkeys(parts) for _ in range(stages)] for _ in range(cluster)]
    reading = [[set() for _ in range(stages)] for _ in range(cluster)]
    copies = []                                       # (block, slot, part, slice) in flight

    def wait(bar, parity):
        while not bar.try_wait(parity):
            yield

    def producer(r):
        for it in range(units * k_tiles):
            s = it % stages
            yield from wait(empty[r][s], ((it // stages) % 2) ^ 1)
            full[r][s].arrive(tx=len(parts))
            copies.append((r, s, "A", it))
            for dst in range(cluster):
                copies.append((dst, s, f"B{r}", it))
            yield

    def release(r, cw, it):
        s = it % stages
        reading[r][s].discard(cw)
        for dst in range(cluster):
            for _ in range(warps):
                empty[dst][s].arrive()

    def consumer(r, cw):
        it = 0
        for _ in range(units):
            for kt in range(k_tiles):
                s = it % stages
                yield from wait(full[r][s], (it // stages) % 2)
                assert all(slot[r][s][p] == it for p in parts), \
                    f"block {r} consumer {cw} wanted slice {it}, slot {s} holds {slot[r][s]}"
                reading[r][s].add(cw)
                yield
                if kt >= depth:
                    release(r, cw, it - depth)
                it += 1
            for d in range(depth, 0, -1):
                if k_tiles >= d:
                    release(r, cw, it - d)
            yield                                     # the epilogue

    actors = [producer(r) for r in range(cluster)]
    actors += [consumer(r, cw) for r in range(cluster) for cw in range(consumers)]

    def deliver():
        if not copies:
            return False
        r, s, part, it = copies.pop(int(rng.integers(len(copies))))
        assert not reading[r][s], f"slice {it} lands in block {r} slot {s} while it is read"
        slot[r][s][part] = it
        full[r][s].complete_tx(1)
        return True

    if _interleave(actors, rng, deliver, lambda: not copies, 400000):
        for r in range(cluster):                  # every phase of every barrier completed
            assert all(b.pending == b.count and b.tx == 0 for b in full[r])
        return
    raise AssertionError(f"deadlock: stages {stages}, k_tiles {k_tiles}, units {units}, "
                         f"depth {depth}")


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_cluster_protocol_model(depth, rng):
    for stages in (3, 4):
        for k_tiles in (1, 2, 5):
            for units in (1, 3):
                _cluster_model(stages, k_tiles, units, depth, rng)
    _cluster_model(4, 3, 2, depth, rng, cluster=1)      # the same code path without a cluster


def _tma_store_box_offsets():
    """Byte offset, in one 64×32 float32 staging box, of the 8-byte store of each (thread,
    column block jj, half) — the address ``store_tile_tma`` computes."""
    t, jj, half = np.meshgrid(np.arange(128), np.arange(4), np.arange(2), indexing="ij")
    warp, lane = t // 32, t % 32
    r = 16 * warp + lane // 4 + 8 * half
    c = 8 * jj + 2 * (lane % 4)
    offset = r * hopper.SWIZZLE_BYTES + c * 4
    return r, c, offset ^ ((r % 8) << 4)


def test_tma_store_staging_matches_the_swizzle_and_has_no_bank_conflicts():
    r, c, addr = _tma_store_box_offsets()
    # what TMA with CU_TENSOR_MAP_SWIZZLE_128B reads for element (r, c) of a 32-wide f32 box
    want = hopper.swizzle_128b(hopper.tma_box_offset(r, c, box_cols=K.EPI_COLS, elem=4))
    assert np.array_equal(addr, want)
    words = np.concatenate([addr.ravel() // 4, addr.ravel() // 4 + 1])
    assert np.unique(words).size == 64 * 32            # every element of the box exactly once
    # one warp's 8-byte stores (fixed jj, half): 256 bytes, so 2 wavefronts at best
    for jj in range(4):
        for half in range(2):
            a = addr[:32, jj, half]
            banks = np.concatenate([(a // 4) % 32, (a // 4 + 1) % 32])
            assert np.bincount(banks, minlength=32).max() == 2


def test_stage_counts_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="shared memory"):
        K.make_config(bm=128, bn=256, stages=5, consumers=2, producer=True, regs=232,
                      persistent=True)
    with pytest.raises(ValueError, match="cluster"):
        K.make_config(bm=128, bn=128, stages=6, consumers=2, producer=True, regs=232,
                      persistent=True, pingpong=True, cluster=2)
    with pytest.raises(ValueError, match="register file"):
        K.make_config(bm=128, bn=256, stages=4, consumers=2, producer=True, regs=240,
                      producer_regs=40, persistent=True)
    cfg = K.RUNG_CONFIGS["wgmma_cluster"]
    assert cfg.shared_bytes + 1024 <= K.MAX_SHARED
    assert "TMA store" in K.edges(cfg) and "clips" in K.edges(cfg)


def test_registered_and_bad_input_rejected_before_launch():
    from lab.api import matmul
    names = [n for n in lab.REGISTRY if n.startswith("wgmma_")]
    assert len(names) == 2 * len(K.RUNG_CONFIGS)
    assert lab.get_spec("wgmma_pingpong_fp16").target((9, 0)) == (9, 0, "a")
    for name in names:
        spec = lab.get_spec(name)
        number = K.LADDER[name.rsplit("_", 1)[0]].number
        assert spec.chapter == ("7.1" if number <= 8 else "7.2") and not spec.simulator
    a = np.ones((4, 3), np.float16)
    with pytest.raises(ValueError, match="inner dimensions"):
        matmul(a, np.ones((4, 4), np.float16), kernel="wgmma_ws_fp16")
    with pytest.raises(ValueError, match="bfloat16"):
        matmul(a, np.ones((3, 4), np.float16), kernel="wgmma_ws_bf16")
    with pytest.raises(ValueError, match="float16"):
        matmul(a.astype(np.float32), np.ones((3, 4), np.float32), kernel="wgmma_tma_fp16")
    with pytest.raises(ValueError, match="empty"):
        matmul(np.ones((0, 3), np.float16), np.ones((3, 4), np.float16),
               kernel="wgmma_tma_fp16")


@pytest.mark.skipif(not device.SIMULATOR, reason="simulator only")
def test_simulator_stubs_raise():
    with pytest.raises(NotImplementedError, match="simulator"):
        hopper.wgmma_fence()
    with pytest.raises(NotImplementedError, match="simulator"):
        hopper.wgmma("f16", 256)(None, 0, 0, 0, 1)


# ----------------------------------------------------------------------------- on the GPU

@hopper_gpu
@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("n", hopper.WGMMA_N)
def test_wgmma_against_float64(kind, n, rng):
    dtype = np.float16 if kind == "f16" else np.uint16
    a, b = bench.random_inputs(64, n, 64, dtype, rng)
    aw = _a_tile_words(a.view(np.uint16))
    bw = _b_tile_words(b.view(np.uint16))
    out = cuda.to_device(np.full((128, n // 2), np.nan, np.float32))
    kernel = wgmma_probe(kind, n)
    kernel[1, 128, 0, 2 * (aw.size + bw.size)](cuda.to_device(aw), cuda.to_device(bw), out,
                                                np.int32(64 * 128), np.int32(1024))
    raw = out.copy_to_host()
    t, i = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    rows, cols = hopper.accumulator_position(t, i)
    got = np.full((64, n), np.nan)
    got[rows, cols] = raw[t, i]
    verdict = bench.compare(got, a, b, dtype_name="bfloat16" if kind == "bf16" else "float16",
                            kernel=f"wgmma m64n{n}k16 {kind}")
    assert verdict.passed, verdict.line()


@hopper_gpu
@pytest.mark.parametrize("row, col", [(0, 0), (50, 64), (-3, 40)])
def test_tma_box_swizzled_and_zero_filled(row, col, rng):
    x = rng.integers(1, 60000, size=(100, 136), dtype=np.uint16)
    d_x = cuda.to_device(x)
    tmap = hopper.tensor_map_2d(d_x, 64, 64, dtype_name="float16")
    out = cuda.to_device(np.zeros(4096, np.uint16))
    tma_probe[1, 128, 0, 8192](tmap, out, np.int32(col), np.int32(row))
    got = out.copy_to_host()
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    gr, gc = r + row, c + col
    inside = (gr >= 0) & (gr < 100) & (gc >= 0) & (gc < 136)
    want = np.zeros((64, 64), np.uint16)
    want[inside] = x[gr[inside], gc[inside]]
    assert np.array_equal(got[hopper.swizzle_128b(hopper.tma_box_offset(r, c)) // 2], want)


GPU_SHAPES = [(1, 1, 1), (17, 33, 5), (65, 1, 130), (31, 47, 70), (257, 129, 67),
              (1000, 1030, 999), (128, 256, 64), (512, 512, 512), (640, 1280, 320)]


@hopper_gpu
@pytest.mark.parametrize("name", [n for n in lab.REGISTRY if n.startswith("wgmma_")])
def test_rungs_against_float64(name):
    for m, n, k in GPU_SHAPES:
        verdict = bench.check(name, m, n, k)
        assert verdict.passed, verdict.line()


_FAKE_CHILD = """
import sys, time
for item in sys.argv[1:]:
    print("START\\t" + item, flush=True)
    if item.startswith("hang"):
        time.sleep(60)
    elif item.startswith("bad"):
        print("FAIL\\t" + item + "\\twrong numbers", flush=True)
        continue
    print("OK\\t" + item, flush=True)
"""


def test_preflight_survives_a_hang_and_goes_on():
    """The experiment's preflight: a child that hangs on one item is killed after the
    per-item limit, the item is reported, and the items after it run in a new child."""
    from lab.experiments import hopper as E

    done = []
    bad = E.preflight(["ok 1", "hang", "bad", "ok 2"], per_item_s=2, progress=done.append,
                      command=(sys.executable, "-c", _FAKE_CHILD), startup_s=30)
    assert set(bad) == {"hang", "bad"}
    assert bad["hang"].startswith("hung") and "wrong numbers" in bad["bad"]
    assert done == ["ok 1", "bad", "ok 2"]


def test_watchdog_counts_only_time_on_the_gpu():
    """The main run's watchdog: a process of a ``measure --jobs`` run that waits for its turn
    (its GPU clock stands still) is not declared hung; one whose GPU clock runs past the
    limit is, and the watchdog stops with the block."""
    import time

    from lab.experiments import hopper as E

    fired = []
    still = [0.0]
    with E.watchdog("waiting", 0.05, clock=lambda: still[0], poll_s=0.01,
                    fire=lambda: fired.append("waiting")):
        time.sleep(0.3)
    running = time.monotonic
    with E.watchdog("running", 0.05, clock=running, poll_s=0.01,
                    fire=lambda: fired.append("running")):
        time.sleep(0.3)
    assert fired == ["running"]


def test_sweep_and_rungs_named_in_the_experiment():
    from lab.experiments import hopper as E
    from lab.chapters.ch7 import common
    # the rungs past rung 8 are measured by hopper_past (beside torch.mm for a 16-bit C), not by
    # this experiment
    assert set(K.RUNG_CONFIGS) - set(common.PAST) <= set(E.RUNGS)
    assert {"wgmma_out16", "wgmma_grid128", "wgmma_lean", "wgmma_ring"} <= set(common.PAST)
    assert all(name.rsplit("_", 1)[0] in K.RUNG_CONFIGS for name in E.PREFLIGHT)
    assert all(lab.get_spec(name) for name in E.PREFLIGHT)


NEW_RUNGS = ("wgmma_tmastore", "wgmma_cluster")


@hopper_gpu
@pytest.mark.parametrize("kind", ["fp16", "bf16"])
@pytest.mark.parametrize("rung", NEW_RUNGS)
def test_new_rungs_odd_and_4097(rung, kind):
    """The TMA-store and cluster rungs: lab check's odd shapes (tile edges, N not a multiple
    of 4, an odd number of block rows for the cluster's pairs) and 4097³."""
    name = f"{rung}_{kind}"
    spec = lab.get_spec(name)
    for m, n, k in bench.shapes_for(spec, gpu=True) + [(4097, 4097, 4097), (384, 256, 64)]:
        verdict = bench.check(name, m, n, k)
        assert verdict.passed, verdict.line()


@hopper_gpu
@pytest.mark.parametrize("label", list(K.SWEEP_CONFIGS))
def test_sweep_configs_against_float64(label):
    launch = K.launcher(K.SWEEP_CONFIGS[label])
    for m, n, k in ((257, 129, 67), (1000, 1030, 999)):
        a, b = bench.random_inputs(m, n, k, np.float16)
        out = cuda.to_device(np.full((m, n), np.nan, np.float32))
        launch(cuda.to_device(a), cuda.to_device(b), out)
        verdict = bench.compare(out.copy_to_host(), a, b, kernel=label)
        assert verdict.passed, verdict.line()


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    print(json.dumps(_offline_worker()))
