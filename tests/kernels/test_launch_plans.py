"""Every registered launcher that needs a GPU, called without one: what it would launch.

28 of the registered kernels run only on a GPU (inline PTX the simulator cannot run; wgmma and
TMA on sm_90a alone), so no CPU test ran their launch code — a launcher that pads K to half a
tile, pads N to 4 instead of 8 (a TMA row pitch must be a multiple of 16 bytes) or never
launches the last row of tiles passed. Here each registered ``launch(A, B, C)`` runs under the
simulator with its kernels replaced by a recorder (``kernel[grid, block, stream, shared](...)``
records, launches nothing) and the GPU-only calls around them stubbed (compiling for the
context, the shared-memory opt-in, the tensor maps, which are recorded too, and the SM count).
Each recorded plan is then checked against the shape:

* padded operands: every dimension the kernel walks in tiles rounded up to its tile, and no
  further; TMA operands with 16-byte row pitches; tensor-map boxes of the kernel's tile;
* the grid: every C tile owned by exactly one block — or one step of one persistent block,
  cluster rank, or ping-pong warpgroup — following the kernel's own tile order
  (:func:`lab.kernels.wgmma.order.tile_order`);
* the launch's threads and dynamic shared memory; split-K slices that cover K once; the
  kernels around the product (zeroing, reduction, a copy back from a wider output).

Shapes: the kernel's check shapes on a GPU (:func:`lab.kernels.shapes_for`) and TMA edge shapes
(N and K 4 past a multiple of 8, odd tile rows for clusters of two).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import lab
from lab import device
from lab.kernels import k07_tensor_core as k07
from lab.kernels import k08_tc_pipeline as k08
from lab.kernels import wgmma
from lab.kernels.wgmma import fp8
from lab.kernels import fused_epilogue
from lab.kernels import splitk
from lab.kernels import small_m
from lab.kernels import shapes_for

pytestmark = pytest.mark.skipif(not device.SIMULATOR, reason="plans are recorded in the "
                                "simulator (on a GPU the kernels themselves are checked)")

GPU_ONLY = [name for name, spec in lab.REGISTRY.items() if not spec.simulator]
#: SM counts a persistent launch is planned for: fewer than the tiles (several steps per
#: block) and the H200's.
SM_COUNTS = (3, 132)
#: Kernels launched around a product, not the product itself.
HELPERS = {"pad_kernel", "zero_kernel", "reduce_kernel", "_transpose",
           "widen_bf16", "widen_f16"}


#: The pad kernel (also the copy of a padded C back into C's columns).
PADS = ("pad_kernel",)


def _memory(x) -> tuple:
    """Where a (simulated) device array's bytes are, whatever dtype it is seen as."""
    ary = np.asarray(getattr(x, "_ary", x))
    return ary.__array_interface__["data"][0], ary.nbytes


def ceil(x: int, t: int) -> int:
    return -(-x // t)


def round_up(x: int, t: int) -> int:
    return ceil(x, t) * t


@dataclass
class Launch:
    name: str
    grid: tuple
    block: tuple
    shared: int
    args: tuple
    cluster: int = 1


@dataclass
class TensorMap:
    array: object
    box: tuple
    dtype_name: str | None


class Plan:
    """What one call of a launcher asked for: launches in order, tensor maps by token."""

    def __init__(self):
        self.launches: list[Launch] = []
        self.maps: dict[int, TensorMap] = {}

    def main(self) -> Launch:
        mains = [ln for ln in self.launches if ln.name not in HELPERS]
        assert len(mains) == 1, f"expected one product launch, got {self.launches}"
        return mains[0]

    def helpers(self, name: str) -> list[Launch]:
        return [ln for ln in self.launches if ln.name == name]


def _dims(d) -> tuple:
    return tuple(getattr(d, a) for a in ("x", "y", "z")) if hasattr(d, "x") else tuple(d)


@pytest.fixture
def recorder(monkeypatch):
    """``plan(name, m, n, k, sm_count=132) -> Plan``: the registered launcher of ``name``
    called on M×N×K device operands, everything it launches recorded instead of run."""
    from numba.cuda.simulator import kernel as sim

    current: list[Plan] = []
    original = sim.FakeCUDAKernel.__call__

    def call(self, *args):
        if self._device or sim._kernel_context:
            return original(self, *args)
        current[-1].launches.append(Launch(self.fn.__name__, _dims(self.grid_dim),
                                           _dims(self.block_dim), self.dynshared_size, args))
        return None

    def tensor_map(array, box_rows, box_cols=64, *, dtype_name=None):
        token = np.zeros(16, np.uint64)
        token[0] = len(current[-1].maps) + 1
        current[-1].maps[int(token[0])] = TensorMap(array, (box_rows, box_cols), dtype_name)
        return token

    def launch_cluster(kernel, signature, blocks, threads, shared, args, cluster):
        current[-1].launches.append(Launch(kernel.fn.__name__, (blocks, 1, 1),
                                           (threads, 1, 1), shared, tuple(args), cluster))

    sms = {"count": 132}
    monkeypatch.setattr(sim.FakeCUDAKernel, "__call__", call)
    monkeypatch.setattr(k08, "_allow_shared", lambda *a, **k: None)
    monkeypatch.setattr(wgmma.host, "require_hopper", lambda: None)
    monkeypatch.setattr(wgmma.host, "_sm_count", lambda: sms["count"])
    monkeypatch.setattr(wgmma.host.hopper, "allow_dynamic_shared", lambda *a, **k: None)
    monkeypatch.setattr(wgmma.host.hopper, "tensor_map_2d", tensor_map)
    monkeypatch.setattr(wgmma.host.hopper, "launch_cluster", launch_cluster)
    monkeypatch.setattr(wgmma.host.hopper, "max_active_clusters",
                        lambda kernel, sig, threads, shared, cluster: sms["count"] // cluster)

    def plan(name: str, m: int, n: int, k: int, sm_count: int = 132, config=None) -> Plan:
        from numba import cuda

        spec = lab.get_spec(name)
        sms["count"] = sm_count
        current.append(Plan())
        a = cuda.device_array((m, k), dtype=spec.dtype)
        b = cuda.device_array((k, n), dtype=spec.dtype)
        c = cuda.device_array((m, n), dtype=np.float32)
        (wgmma.launcher16(config) if config else spec.launch)(a, b, c)
        current[-1].operands = (a, b, c)
        return current[-1]

    return plan


def plan_shapes(name: str) -> list[tuple[int, int, int]]:
    spec = lab.get_spec(name)
    bm, bn, bk = spec.tile
    return list(dict.fromkeys(shapes_for(spec, gpu=True) + [
        (bm, bn + 4, bk + 4), (2 * bm + 1, 8, 12), (3 * bm, bn, bk), (3 * bm + 5, 2 * bn + 4, 4),
        (bm - 1, 1, 2 * bk - 4)]))


# ----------------------------------------------------------------------------- checks by family

def _owners(tiles: list[tuple[int, int]], tiles_m: int, tiles_n: int) -> None:
    """Every (tile row, tile column) of a tiles_m × tiles_n grid owned exactly once."""
    assert all(0 <= r < tiles_m and 0 <= c < tiles_n for r, c in tiles), \
        f"a block owns a tile outside the {tiles_m}×{tiles_n} grid of C tiles"
    missing = {(r, c) for r in range(tiles_m) for c in range(tiles_n)} - set(tiles)
    assert not missing, (f"{len(missing)} of {tiles_m * tiles_n} C tiles are never computed "
                         f"(e.g. tile row {max(missing)[0]}, column {max(missing)[1]})")
    assert len(tiles) == len(set(tiles)), "a C tile is computed twice"


def _padded(x, shape: tuple, what: str) -> None:
    assert tuple(x.shape) == shape, f"{what} is {tuple(x.shape)}, the tile says {shape}"


def _check_naive(p: Plan, m: int, n: int, k: int) -> None:
    t = k07.TILE
    a, b, C = p.main().args
    _padded(a, (round_up(m, t), round_up(k, t)), "padded A")
    _padded(b, (round_up(k, t), round_up(n, t)), "padded B")
    assert C is p.operands[2]
    ln = p.main()
    assert ln.block == (32 * k07.WARPS, 1, 1)
    tiles_m, tiles_n = a.shape[0] // t, b.shape[1] // t
    warps = ln.grid[0] * k07.WARPS           # warp w owns tile w (row-major), if w < tiles
    assert warps - tiles_m * tiles_n < k07.WARPS, "a whole block of idle warps"
    _owners([divmod(w, tiles_n) for w in range(min(warps, tiles_m * tiles_n))], ceil(m, t),
            ceil(n, t))


def _tc_config(name: str):
    if name in k08.RUNG_CONFIGS:
        return k08.RUNG_CONFIGS[name]
    return splitk.TC_CONFIG if name in splitk.SPLIT else fused_epilogue.TC_CONFIG


def _check_tc(name: str, p: Plan, m: int, n: int, k: int) -> None:
    """k08's tensor-core kernels (and the split-K and fused-epilogue launches built on them):
    A and B padded to the block tile, one block per tile in the grouped order."""
    cfg = _tc_config(name)
    ln = p.main()
    a, b, C = ln.args[:3]
    _padded(a, (round_up(m, cfg.bm), round_up(k, cfg.bk)), "padded A")
    _padded(b, (round_up(k, cfg.bk), round_up(n, cfg.bn)), "padded B")
    assert C is p.operands[2]
    assert ln.block == (cfg.threads, 1, 1) and ln.shared == cfg.shared_bytes
    tiles_m, tiles_n = a.shape[0] // cfg.bm, b.shape[1] // cfg.bn
    order = wgmma.order.tile_order(cfg.group_m)      # tc_body's block order is the same formula
    _owners([order(pid, tiles_m, tiles_n) for pid in range(ln.grid[0])], ceil(m, cfg.bm),
            ceil(n, cfg.bn))
    if name in splitk.SPLIT:
        chunk, slices = int(ln.args[3][0]), ln.grid[1]
        kp = a.shape[1]
        assert chunk % cfg.bk == 0 and (slices - 1) * chunk < kp <= slices * chunk, \
            f"{slices} slices of {chunk} do not cover K = {kp} once"
        assert slices <= lab.get_spec(name).launch.splits
        mode = lab.get_spec(name).launch.mode
        around = p.helpers("zero_kernel" if mode == "atomic" else "reduce_kernel")
        assert len(around) == 1
        first = p.launches.index(around[0]) < p.launches.index(ln)
        assert first == (mode == "atomic"), "C zeroed after the product, or reduced before"
        assert around[0].grid[:2] == (ceil(n, 32), ceil(m, 8)) and around[0].block[:2] == (32, 8)
    else:
        assert len(ln.grid) == 1 or ln.grid[1:] == (1, 1)


def _check_hopper(name: str, p: Plan, m: int, n: int, k: int, sm_count: int,
                  cfg=None) -> None:
    cfg = cfg or lab.get_spec(name).config
    bk = wgmma.BK
    ln = p.main()
    assert ln.block[0] == cfg.threads and ln.shared == cfg.shared_bytes
    order = wgmma.order.tile_order(cfg.group_m)
    if cfg.loader == "cpasync":
        a, b, C = ln.args
        _padded(a, (round_up(m, cfg.bm), round_up(k, bk)), "padded A")
        _padded(b, (round_up(k, bk), round_up(n, cfg.bn)), "padded B")
        tiles_m, tiles_n = a.shape[0] // cfg.bm, b.shape[1] // cfg.bn
        _owners([order(i, tiles_m, tiles_n) for i in range(ln.grid[0])], ceil(m, cfg.bm),
                ceil(n, cfg.bn))
        return
    map_a, map_b = (p.maps[int(x[0])] for x in ln.args[:2])
    a, b = map_a.array, map_b.array
    kp = int(ln.args[4] if cfg.producer else ln.args[3])
    assert map_a.box == (cfg.bm, 64) and map_b.box == (bk, 64), "tensor-map boxes"
    for what, x in (("A", a), ("B", b)):
        assert x.shape[1] * x.dtype.itemsize % 16 == 0, \
            f"{what}'s row pitch, {x.shape[1]} × {x.dtype.itemsize} bytes, is not a multiple " \
            "of 16 bytes (TMA's rule)"
    _padded(a, (m, kp), "A as TMA reads it")
    _padded(b, (kp, b.shape[1]), "B as TMA reads it")
    assert k <= kp < k + 8 and n <= b.shape[1] < n + 8, "K or N padded past the next 8"
    tiles_m, tiles_n = ceil(m, cfg.bm), ceil(n, cfg.bn)
    if not cfg.producer:
        C = ln.args[2]
        assert C is p.operands[2]
        blocks = ln.grid[0]
        _owners([order(i, tiles_m, tiles_n) for i in range(blocks)], tiles_m, tiles_n)
        return
    map_c, out = ln.args[2], ln.args[3]
    if cfg.epilogue == "tma":
        mc = p.maps[int(map_c[0])]
        per = 16 // wgmma.OUT_BYTES[cfg.out]
        assert mc.array is out and mc.box == (64, cfg.epi_cols)
        assert out.shape[0] == m and out.shape[1] % per == 0 and n <= out.shape[1] < n + per
        copies = [c for c in p.launches[p.launches.index(ln) + 1:] if c.name in PADS]
        c = p.operands[2]
        if cfg.out != "f32":                   # a 16-bit C, widened into the float32 C after
            widen = p.helpers("widen_f16" if cfg.out == "f16" else "widen_bf16")
            assert len(widen) == 1 and p.launches.index(widen[0]) > p.launches.index(ln)
            assert widen[0].grid[0] * 32 >= n and widen[0].grid[1] * 8 >= m, "widening misses C"
            c = widen[0].args[0]
        if out is c:
            assert not copies
        else:
            assert len(copies) == 1, "one copy back of C's columns"
            src, dst = copies[0].args
            assert _memory(src) == _memory(out) and _memory(dst) == _memory(c)
            gx, gy = copies[0].grid[:2]
            bx, by = copies[0].block[:2]
            assert gx * bx >= dst.shape[1] and gy * by >= m, "the copy back misses part of C"
    else:
        assert out is p.operands[2]
    if cfg.streamk:
        _check_streamk(cfg, ln, tiles_m, tiles_n, ceil(kp, bk), sm_count)
    else:
        _check_schedule(cfg, ln, tiles_m, tiles_n, sm_count)


def _check_streamk(cfg, ln: Launch, tiles_m: int, tiles_n: int, k_tiles: int,
                   sm_count: int) -> None:
    """Stream-K (the kernel's ``streamk_plan``): every SM takes part, however few the tiles
    (at most one block per k-slice); block b walks whole tiles b, b + blocks, … through the
    whole waves; the k-slices of the tiles left are cut into one contiguous share per block,
    the shares covering them exactly once; a workspace slot and a flag per consumer
    warpgroup and block."""
    order = wgmma.order.tile_order(cfg.group_m)
    units = tiles_m * tiles_n
    blocks = ln.grid[0]
    assert blocks == min(sm_count, units * k_tiles, cfg.grid or sm_count), \
        "stream-K leaves SMs idle (or passes its cap)"
    dp = units // blocks * blocks
    owned = [order(u, tiles_m, tiles_n) for b in range(blocks) for u in range(b, dp, blocks)]
    sk = (units - dp) * k_tiles
    shares = [(b * sk // blocks, (b + 1) * sk // blocks) for b in range(blocks)]
    assert shares[0][0] == 0 and shares[-1][1] == sk
    assert all(shares[i][1] == shares[i + 1][0] for i in range(blocks - 1))
    owned += [order(dp + t, tiles_m, tiles_n) for t in range(units - dp)]
    _owners(owned, tiles_m, tiles_n)
    work, flags = ln.args[5], ln.args[6]
    assert tuple(flags.shape) == (cfg.flag_words(blocks),)
    assert tuple(work.shape) == (blocks * cfg.consumers * (cfg.mt * cfg.bn // 2), 128)
    assert units - dp < blocks, "a shared tile's slot or counter past the workspace"


def _check_schedule(cfg, ln: Launch, tiles_m: int, tiles_n: int, sm_count: int) -> None:
    """The specialized kernel's schedule (build_ws): units of CLUSTER tile rows in one tile
    column, block b (rank b % CLUSTER) walks units b // CLUSTER, + step, …; a row past M
    stores nothing."""
    order = wgmma.order.tile_order(cfg.group_m)
    cluster = cfg.cluster
    assert ln.cluster == cluster and ln.grid[0] % cluster == 0
    units_m = ceil(tiles_m, cluster)
    units = units_m * tiles_n
    blocks = ln.grid[0]
    step = blocks // cluster if cfg.persistent else units
    if cfg.persistent:
        assert blocks <= sm_count, "more persistent blocks than SMs"
    owned = []
    for block in range(blocks):
        rank = block % cluster
        for unit in range(block // cluster, units, step):
            unit_m, block_n = order(unit, units_m, tiles_n)
            if unit_m * cluster + rank < tiles_m:
                owned.append((unit_m * cluster + rank, block_n))
    _owners(owned, tiles_m, tiles_n)


def _check_fp8(name: str, p: Plan, m: int, n: int, k: int, sm_count: int) -> None:
    """The FP8 kernels: B transposed on the GPU first (the FP8 wgmma reads Bᵀ), A and Bᵀ with K
    padded to 16 bytes and boxes of the tile's rows × 128 one-byte k, the scales in the
    configuration's shapes, C through TMA stores of 128-byte rows (a BF16 result widened into
    C after), and the persistent schedule of the specialized kernel."""
    cfg = fp8.CONFIGS[name]
    ln = p.main()
    assert ln.block[0] == cfg.threads and ln.shared == cfg.shared_bytes
    flips = p.helpers("_transpose")
    assert len(flips) == 1 and p.launches.index(flips[0]) < p.launches.index(ln)
    src, bt = flips[0].args
    assert src is p.operands[1] and tuple(bt.shape) == (n, k)
    assert flips[0].grid[0] * 32 >= n and flips[0].grid[1] * 8 >= k, "the transpose misses B"
    map_a, map_b, map_c = (p.maps[int(x[0])] for x in ln.args[:3])
    out, kp, sa, sb = ln.args[3:]
    assert kp == round_up(k, 16)
    assert (map_a.box, map_b.box) == ((cfg.bm, 128), (cfg.bn // cfg.cluster, 128)), \
        "tensor-map boxes (a cluster's blocks load Bᵀ's rows half each)"
    assert map_a.dtype_name == map_b.dtype_name == "uint8"
    _padded(map_a.array, (m, kp), "A as TMA reads it")
    _padded(map_b.array, (n, kp), "Bᵀ as TMA reads it")
    assert (tuple(sa.shape), tuple(sb.shape)) == wgmma.scale_shapes(cfg, m, n, k)
    per = 16 // wgmma.OUT_BYTES[cfg.out]
    assert map_c.array is out and map_c.box == (64, cfg.epi_cols)
    assert out.shape[0] == m and out.shape[1] % per == 0 and n <= out.shape[1] < n + per
    widen = p.helpers("widen_bf16")
    assert len(widen) == (cfg.out == "bf16")
    if widen:
        assert p.launches.index(widen[0]) > p.launches.index(ln)
        assert widen[0].grid[0] * 32 >= n and widen[0].grid[1] * 8 >= m, "the widening misses C"
    _check_schedule(cfg, ln, ceil(m, cfg.bm), ceil(n, cfg.bn), sm_count)


def _check_shuffle(p: Plan, m: int, n: int, k: int) -> None:
    ln = p.main()
    assert ln.block == (32, 32, 1)
    gx, gy = ln.grid[:2]                        # block (x, y) owns the 32×32 tile (y, x)
    _owners([(y, x) for y in range(gy) for x in range(gx)], ceil(m, 32), ceil(n, 32))


def _check_small_m(name: str, p: Plan, m: int, n: int, k: int) -> None:
    """The small-M kernel: A's rows not padded (only K, to whole k-tiles); B padded only with
    A's K, else read in place (the caller's own B, with the shared memory of that kernel);
    one block per C tile of the M-sized tile, column panels' blocks neighbours; K split into
    slices that cover it once, no more than the launcher's factor."""
    cfg = small_m.config_for(m, "bf16" if name.endswith("bf16") else "f16")
    ln = p.main()
    a, b, C, W, T, chunk = ln.args
    kp = round_up(k, small_m.BK)
    _padded(a, (m, kp), "A (rows never padded)")
    in_place = small_m.in_place(n, k)
    if kp != k:
        _padded(b, (kp, round_up(n, 8)), "padded B")
        assert len(p.helpers("pad_kernel")) == 2, "A and B padded to whole k-tiles"
    else:
        assert b is p.operands[1] and not p.helpers("pad_kernel"), \
            "an operand copied although K needs no padding"
    assert C is p.operands[2]
    assert ln.block == (cfg.threads, 1, 1) and ln.shared == small_m.shared_bytes(cfg, in_place)
    blocks_m, blocks_n = ceil(m, cfg.bm), ceil(n, cfg.bn)
    assert ln.grid[0] == blocks_m * blocks_n, "not one block per C tile"
    _owners([(pid % blocks_m, pid // blocks_m) for pid in range(ln.grid[0])], blocks_m, blocks_n)
    chunk, slices = int(chunk), ln.grid[1]
    assert chunk % small_m.BK == 0 and (slices - 1) * chunk < kp <= slices * chunk, \
        f"{slices} slices of {chunk} do not cover K = {kp} once"
    assert slices <= lab.get_spec(name).launch.splits
    assert T.shape[0] >= ln.grid[0], "a tile without its ticket counter"
    if slices > 1:                  # one partial per slice, rows padded to whole tiles' lines
        assert W.shape[:2] == (slices, m) and W.shape[2] >= n and W.shape[2] % 128 == 0


def check_plan(name: str, p: Plan, m: int, n: int, k: int, sm_count: int) -> None:
    if name.startswith("tc_naive"):
        _check_naive(p, m, n, k)
    elif name.startswith("wgmma_"):
        _check_hopper(name, p, m, n, k, sm_count)
    elif name in fp8.CONFIGS:
        _check_fp8(name, p, m, n, k, sm_count)
    elif name == "tiled32_shuffle":
        _check_shuffle(p, m, n, k)
    elif name.startswith("tc_small_m"):
        _check_small_m(name, p, m, n, k)
    else:
        _check_tc(name, p, m, n, k)


# ----------------------------------------------------------------------------- the tests

def test_every_gpu_only_kernel_has_a_plan_check():
    """28 kernels at the time of writing; a new GPU-only kernel must be checked here too."""
    families = ("tc_naive", "wgmma_", "tiled32_shuffle", "tc_small_m")
    for name in GPU_ONLY:
        assert name.startswith(families) or name in k08.RUNG_CONFIGS or name in splitk.SPLIT \
            or name == "tc_fp16_epilogue" or name in fp8.CONFIGS, \
            f"no plan check for GPU-only kernel {name!r}"


@pytest.mark.parametrize("name", GPU_ONLY)
def test_the_registered_launch_plan_covers_the_shape(name, recorder):
    for m, n, k in plan_shapes(name):
        for sms in (SM_COUNTS if name.startswith("wgmma_") or name in fp8.CONFIGS else (132,)):
            p = recorder(name, m, n, k, sm_count=sms)
            try:
                check_plan(name, p, m, n, k, sms)
            except AssertionError as exc:
                raise AssertionError(f"{name} at {m}x{n}x{k} ({sms} SMs): {exc}") from None


@pytest.mark.parametrize("grid,trace,fixup,bn", [
    (64, False, "finisher", 256), (32, True, "finisher", 256), (0, True, "atomic", 256),
    (96, False, "atomic", 256), (0, False, "atomic", 128), (96, False, "atomic", 64)])
def test_stream_k_on_fewer_blocks_and_traced(recorder, grid, trace, fixup, bn):
    """Stream-K capped at ``grid`` blocks (lab.gemm times 96 and 64 at decode shapes), the
    traced kernel (experiment streamk_trace), either fix-up and the narrower tiles lab.gemm
    times: the same schedule on the blocks launched, the flags with room for the trace, the
    workspace one slot per warpgroup and block (the atomic fix-up's slot per shared tile fits:
    fewer shared tiles than blocks)."""
    from lab.experiments._hopper_study import study

    cfg = study(lab.get_spec("wgmma_streamk_fp16").config, grid=grid, trace=trace,
                fixup=fixup, bn=bn, stages={256: 3, 128: 6, 64: 8}[bn])
    for m, n, k in [(128, 4096, 14336), (1, 1, 1), (2049, 8200, 520), (97, 4100, 3000)]:
        p = recorder("wgmma_streamk_fp16", m, n, k, config=cfg)
        _check_hopper("wgmma_streamk_fp16", p, m, n, k, 132, cfg)
        if grid:
            assert p.main().grid[0] <= grid


# ----------------------------------------------------------------------------- check shapes

def test_check_shapes_are_ragged_in_each_dimension_alone():
    """For every kernel, a check shape ragged in M only, in N only and in K only (K = BK+1),
    on the simulator too; for a split-K launch one whose last slice is partial."""
    for name, spec in lab.REGISTRY.items():
        tile = spec.tile
        shapes = shapes_for(spec, gpu=False)
        for axis in (i for i in range(3) if tile[i] > 1):     # (a 1-wide tile has no tail)
            assert any(s[axis] % tile[axis] and all(s[i] % tile[i] == 0 for i in range(3)
                                                     if i != axis) for s in shapes), (name, axis)
        assert any(s[2] == tile[2] + 1 and s[0] % tile[0] == 0 == s[1] % tile[1]
                   for s in shapes) or tile[2] == 1, name
        splits = getattr(spec.launch, "splits", 1)
        if splits > 1:
            def partial(k):
                chunk, _ = splitk.k_slices(k, tile[2], splits)
                return ceil(k, tile[2]) % (chunk // tile[2]) != 0
            assert any(partial(s[2]) for s in shapes), name
