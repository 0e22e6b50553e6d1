"""Chapter 5: the fragment model, the shared-memory swizzle, the tensor-core kernels.

The model and swizzle tests run everywhere (pure NumPy); the kernels' compiler facts are in
``tests/test_ptx.py``. The kernels need a GPU: on one, ``tests/test_kernels.py`` checks each
against float64 on shapes from its block tile.

Under the simulator the kernels' *logic* — padding, block order, cp.async addressing, the
swizzle, the pipeline's stage bookkeeping, ldmatrix addressing, the epilogue — still runs: the
tests swap the PTX intrinsics for warp-level emulations built on :mod:`lab.fragments` (the model
that ``tests/test_ptx.py`` checks the real instructions against on the GPU).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import lab
from lab import bench, device, fragments
from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS, make_config, swizzle

TC_KERNELS = ["tc_naive_fp16", "tc_naive_bf16", *RUNG_CONFIGS]


# ----------------------------------------------------------------------------- fragment model

@pytest.mark.parametrize("operand,shape,per_lane", [("A", (16, 16), 8), ("B", (16, 8), 4),
                                                   ("C", (16, 8), 4)])
def test_every_element_has_exactly_one_lane(operand, shape, per_lane):
    owner = fragments.owner_map(operand)
    assert owner.shape == shape and owner.min() == 0
    assert np.all(np.bincount(owner.ravel(), minlength=32) == per_lane)


def test_lane_zero_and_lane_five():
    assert fragments.a_coords(0) == [(0, 0), (0, 1), (8, 0), (8, 1),
                                     (0, 8), (0, 9), (8, 8), (8, 9)]
    assert fragments.b_coords(5) == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert fragments.c_coords(5) == [(1, 2), (1, 3), (9, 2), (9, 3)]


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_mma_model_is_a_times_b_plus_c(kind, rng):
    a32 = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    b32 = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    c = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    fmt = np.float16 if kind == "f16" else np.uint16
    a, b = bench.to_format(a32, fmt), bench.to_format(b32, fmt)
    d = fragments.mma(fragments.a_fragment(a), fragments.b_fragment(b),
                      fragments.c_fragment(c), kind)
    want = bench.to_float64(a) @ bench.to_float64(b) + c
    np.testing.assert_allclose(fragments.c_matrix(d), want, rtol=1e-12, atol=1e-12)


def test_ldmatrix_x4_of_a_row_major_tile_is_the_a_fragment(rng):
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    lanes = np.arange(32)
    rows = (lanes % 16) * 16 + (lanes // 16) * 8       # row lane%16, k-half lane//16
    np.testing.assert_array_equal(fragments.ldmatrix(a.ravel(), rows, 4),
                                  fragments.a_fragment(a))


def test_ldmatrix_x4_trans_of_a_k_major_tile_is_two_b_fragments(rng):
    b = rng.uniform(-1, 1, (16, 16)).astype(np.float16)   # [k, n], 16 columns = two n-tiles
    lanes = np.arange(32)
    rows = (lanes % 16) * 16 + (lanes // 16) * 8       # k row lane%16, n-half lane//16
    regs = fragments.ldmatrix(b.ravel(), rows, 4, trans=True)
    np.testing.assert_array_equal(regs[:, :2], fragments.b_fragment(b[:, :8]))
    np.testing.assert_array_equal(regs[:, 2:], fragments.b_fragment(b[:, 8:]))


def test_picture_is_deterministic_text():
    pic = fragments.picture("C").splitlines()
    assert pic[0].startswith("C (16×8)")
    assert pic[2].split()[1:] == ["0", "0", "1", "1", "2", "2", "3", "3"]


# ----------------------------------------------------------------------------- swizzle

@pytest.mark.parametrize("chunks_per_row", [2, 4, 8, 16, 32])
def test_swizzle_makes_every_ldmatrix_phase_conflict_free(chunks_per_row):
    row_bytes = 16 * chunks_per_row
    for first in range(0, 32, 8):
        for chunk in range(chunks_per_row):
            rows = range(first, first + 8)
            plain = [r * row_bytes + 16 * chunk for r in rows]
            swz = [r * row_bytes + 16 * swizzle(r, chunk, chunks_per_row) for r in rows]
            assert fragments.wavefronts(swz) == 1
            assert fragments.wavefronts(plain) == min(8, chunks_per_row)   # 2/4/8-way


@pytest.mark.parametrize("chunks_per_row", [2, 4, 8, 16])
def test_swizzle_permutes_each_row(chunks_per_row):
    for r in range(16):
        assert sorted(swizzle(r, c, chunks_per_row) for c in range(chunks_per_row)) == \
            list(range(chunks_per_row))


# ----------------------------------------------------------------------------- configs, registry

def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="warp tile must divide"):
        make_config(bm=128, wm=48)
    with pytest.raises(ValueError, match="shared memory"):
        make_config(bm=256, bn=256, bk=64, stages=4)
    with pytest.raises(ValueError, match="kind"):
        make_config(kind="fp8")


def test_registered_as_gpu_only_chapter_5():
    for name in TC_KERNELS:
        spec = lab.get_spec(name)
        assert spec.chapter == "5" and not spec.simulator and "pad" in spec.edges
        assert spec.dtype_name in ("float16", "bfloat16")
    assert lab.get_spec("tc_bf16").dtype == np.uint16


def test_wrong_dtype_is_refused_before_launch():
    a = np.ones((4, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="float16"):
        lab.matmul(a, a, kernel="tc_fp16")


# ----------------------------------------------------------------------------- simulator emulation

class WarpEmulation:
    """lab.ptx's intrinsics for the CUDA simulator, one Python thread per CUDA thread.

    Addresses are handles: array slot in the high bits, byte offset in the low bits. cp.async
    copies at once (commit and wait are no-ops). ldmatrix and mma gather the 32 lanes' operands
    at a barrier, evaluate :mod:`lab.fragments`, and hand each lane its registers.
    """

    SHARED_SHIFT, GLOBAL_SHIFT = 24, 40

    def __init__(self):
        self.lock = threading.Lock()
        self.slots: list[np.ndarray] = []
        self.ids: dict[int, int] = {}
        self.warps: dict = {}

    def _slot(self, array) -> int:
        nd = getattr(getattr(array, "_item", array), "_ary", array)
        key = (nd.__array_interface__["data"][0], nd.nbytes)   # same memory, same slot
        with self.lock:
            if key not in self.ids:
                self.ids[key] = len(self.slots)
                self.slots.append(nd)
            return self.ids[key]

    def _bytes(self, handle: int, shift: int, count: int) -> np.ndarray:
        nd = self.slots[handle >> shift]
        flat = nd.reshape(-1).view(np.uint8)
        off = handle & ((1 << shift) - 1)
        return flat[off:off + count]

    def shared_address(self, array):
        return np.uint32(self._slot(array) << self.SHARED_SHIFT)

    def global_address(self, array):
        return np.int64(self._slot(array) << self.GLOBAL_SHIFT)

    def cp_async_16(self, dst, src):
        self._bytes(int(dst), self.SHARED_SHIFT, 16)[:] = self._bytes(int(src),
                                                                      self.GLOBAL_SHIFT, 16)

    def cp_async_commit(self):
        pass

    def cp_async_wait(self, pending):
        pass

    def _collective(self, value, compute):
        """Every lane of the warp passes ``value``; the last to arrive runs ``compute(values)``
        once, for the warp, and each lane takes its own result. One lock and one wake-up per
        collective: a lane cannot reach the next collective's result before every lane has
        taken this one's, since that result needs all 32 lanes again."""
        thread = threading.current_thread()
        lane, warp = thread.thread_id % 32, thread.thread_id // 32
        key = (tuple(thread.blockIdx), warp)
        with self.lock:
            state = self.warps.get(key)
            if state is None:
                state = self.warps[key] = {"values": [None] * 32, "arrived": 0, "round": 0,
                                           "out": None, "ready": threading.Condition()}
        with state["ready"]:
            this_round = state["round"]
            state["values"][lane] = value
            state["arrived"] += 1
            if state["arrived"] == 32:
                state["out"] = compute(state["values"])
                state["arrived"] = 0
                state["round"] += 1
                state["ready"].notify_all()
            else:
                state["ready"].wait_for(lambda: state["round"] != this_round)
            return state["out"][lane]

    def _ldmatrix(self, count, trans, address):
        def compute(addresses):
            slot = addresses[0] >> self.SHARED_SHIFT
            mem = self.slots[slot].reshape(-1).view(np.uint16)
            starts = [(a - (slot << self.SHARED_SHIFT)) // 2 for a in addresses]
            return fragments.ldmatrix(mem, starts, count, trans)

        regs = self._collective(int(address), compute)
        return np.uint32(regs[0]) if count == 1 else tuple(np.uint32(r) for r in regs)

    def _mma(self, kind, a, b, c):
        def compute(ops):
            return fragments.mma(np.array([o[0] for o in ops], dtype=np.uint32),
                                 np.array([o[1] for o in ops], dtype=np.uint32),
                                 np.array([o[2] for o in ops], dtype=np.float32),
                                 kind).astype(np.float32)

        return tuple(self._collective((a, b, c), compute))

    def pack_b16(self, low, high):
        lo, hi = (int(fragments.bits16(np.asarray(v))) for v in (low, high))
        return np.uint32(lo | (hi << 16))

    def install(self, monkeypatch):
        from lab import ptx
        from numba.cuda.simulator import kernelapi

        for name in ("shared_address", "global_address", "cp_async_16", "cp_async_commit",
                     "cp_async_wait", "pack_b16"):
            monkeypatch.setattr(ptx, name, getattr(self, name))
        for count in (1, 2, 4):
            for trans in (False, True):
                monkeypatch.setattr(ptx, f"ldmatrix_x{count}{'_trans' if trans else ''}",
                                    lambda addr, c=count, t=trans: self._ldmatrix(c, t, addr))
        monkeypatch.setattr(ptx, "mma_f16", lambda a, b, c: self._mma("f16", a, b, c))
        monkeypatch.setattr(ptx, "mma_bf16", lambda a, b, c: self._mma("bf16", a, b, c))
        original = kernelapi.FakeCUDAShared.array
        monkeypatch.setattr(kernelapi.FakeCUDAShared, "array",
                            lambda self_, shape, dtype, alignment=None:
                            original(self_, shape, dtype))


def _emulated_launch(name, monkeypatch):
    """The registered launch of ``name``, its kernel's code rebuilt against the patched
    lab.ptx (a kernel binds its ``mma`` intrinsic when it is built) and k08's shared-memory
    opt-in (a driver call) skipped: the launch code under test is the registered one."""
    from lab import ptx
    from lab.kernels import k07_tensor_core as k07
    from lab.kernels import k08_tc_pipeline as k08

    if name in k08.RUNG_CONFIGS:
        cfg = k08.RUNG_CONFIGS[name]
        monkeypatch.setattr(k08.kernel_for(cfg), "fn", k08.build(cfg).fn)
        monkeypatch.setattr(k08, "_allow_shared", lambda *args: None)
    else:
        fp16 = "fp16" in name
        monkeypatch.setattr(k07.naive_fp16_kernel if fp16 else k07.naive_bf16_kernel, "fn",
                            k07.make_naive_kernel(ptx.mma_f16 if fp16 else ptx.mma_bf16).fn)
    return lab.get_spec(name).launch


#: Shapes: odd edges in every dimension, small (each warp-wide instruction is a rendezvous of 32
#: Python threads). tc_smem: 2×2 blocks, so the block order is exercised; tc_pipeline: five
#: k-slices through four stages, so the ring of stages wraps; tc_swizzle: the 64-byte-row swizzle
#: (BK 32), tc_fp16/tc_bf16 the 128-byte one (BK 64).
EMULATED = {"tc_naive_fp16": [(17, 33, 5), (20, 9, 40)],
            "tc_naive_bf16": [(17, 9, 20)],
            "tc_smem": [(65, 70, 40)],
            "tc_warp64": [(20, 17, 40)],
            "tc_pipeline": [(20, 17, 129)],
            "tc_swizzle": [(20, 17, 40)],
            "tc_fp16": [(33, 100, 65)],
            "tc_bf16": [(20, 17, 33)]}


def test_every_tensor_core_kernel_is_emulated():
    assert set(EMULATED) == set(TC_KERNELS)


@pytest.mark.skipif(not device.SIMULATOR, reason="emulation runs under the simulator")
@pytest.mark.parametrize("name", sorted(EMULATED))
def test_kernel_logic_under_emulated_intrinsics(name, monkeypatch, rng):
    from numba import cuda

    WarpEmulation().install(monkeypatch)
    launch = _emulated_launch(name, monkeypatch)
    spec = lab.get_spec(name)
    for m, n, k in EMULATED[name]:
        a, b = bench.random_inputs(m, n, k, spec.dtype, rng)
        c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        launch(cuda.to_device(a), cuda.to_device(b), c)
        verdict = bench.compare(c.copy_to_host(), a, b, dtype_name=spec.dtype_name, kernel=name)
        assert verdict.passed, verdict.line()


# ----------------------------------------------------------------------------- WMMA's fragments

def test_wmma_probe_reads_as_the_chapter_says():
    """What chapter 5 states about the H200's WMMA fragments, from the committed probe: every
    A, B and C value sits where an m16n8k16 fragment puts it (C of m8n32k16 transposed), and
    m16n16k16's A and B repeat their first eight values."""
    from lab.chapters.ch5 import s1_wmma

    rows = {(r["shape"], r["operand"][0]): r for r in s1_wmma.probe_rows()}
    assert len(rows) == 9 and all(r["matched"] == r["per_lane"] for r in rows.values())
    assert rows[("m8n32k16", "C")]["as"] == "C of Cᵀ"
    assert rows[("m16n16k16", "C")]["as"] == rows[("m32n8k16", "C")]["as"] == "C"
    maps = s1_wmma.probe_maps()
    for operand in "AB":
        held = maps[("m16n16k16", operand)]
        np.testing.assert_array_equal(held[:, 8:], held[:, :8])
    values = s1_wmma.values()
    assert values["wmma_c_turned"] == "m8n32k16" and values["wmma_a_copies"] == "2"


def test_probe_matcher_tells_a_wrong_map():
    """The matcher is not vacuous: a fragment with two lanes' values swapped matches less."""
    from lab.chapters.ch5 import s1_wmma

    held = s1_wmma.probe_maps()[("m16n16k16", "C")].copy()
    held[[0, 1]] = held[[1, 0]]
    assert s1_wmma.probe_row("m16n16k16", "C", held)["matched"] < 8


# ----------------------------------------------------------------------------- padding

@pytest.mark.parametrize("dtype", [np.float16, np.uint16, np.float32, np.uint8])
@pytest.mark.parametrize("src, dst", [((3, 5), (4, 8)), ((7, 13), (9, 16)), ((1, 1), (1, 8)),
                                      ((5, 8), (5, 8)), ((6, 7), (6, 7)), ((5, 12), (5, 9))])
def test_pad_into_copies_pads_with_zeros_and_crops(dtype, src, dst):
    """pad_into against NumPy, the destination poisoned first; the last case crops (a padded C
    copied back into C's columns)."""
    from numba import cuda
    from lab.kernels.k07_tensor_core import pad_into

    rng = np.random.default_rng(sum(src) + sum(dst))
    x = (rng.random(src) * 200).astype(dtype)
    poison = np.nan if dtype in (np.float16, np.float32) else 77
    d = cuda.to_device(np.full(dst, poison, dtype))
    pad_into(cuda.to_device(x), d)
    want = np.zeros(dst, dtype)
    rows, cols = min(src[0], dst[0]), min(src[1], dst[1])
    want[:rows, :cols] = x[:rows, :cols]
    assert d.copy_to_host().tobytes() == want.tobytes()
