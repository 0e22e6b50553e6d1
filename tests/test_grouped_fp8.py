"""lab.grouped_scaled_gemm: a mixture-of-experts layer's FP8 products with block scales, every
expert in one launch. Everything it refuses, before any copy or launch, with the operand and the
problem named; the kernel's configurations and their rules; the whole host path (codes
uploaded, scales and weights seen as the kernel's 2-D arrays, C copied back) with the kernel
replaced by the float64 product of each group's dequantised operands. The kernel itself is
checked on a GPU (``lab check --record``: :func:`lab.grouped.check_hopper_fp8`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import lab
from lab import device, fp8
from lab import grouped as G
from lab.dispatch import GemmError

E, N, K = 3, 256, 384
COUNTS = (2, 0, 5)


def _operands(masked=False, seed=0):
    """A (codes), Bt (codes, [E, N, K]), their block scales, and the routing."""
    rng = np.random.default_rng(seed)
    rows = E * max(COUNTS) if masked else sum(COUNTS)
    a = rng.standard_normal((rows, K))
    bt = rng.standard_normal((E * N, K))
    ca, sa = fp8.quantize(a, "e4m3", fp8.ACT_BLOCK)
    cb, sb = fp8.quantize(bt, "e4m3", fp8.WEIGHT_BLOCK)
    cb, sb = cb.reshape(E, N, K), sb.reshape(E, N // 128, K // 128)
    if masked:
        ca, sa = ca.reshape(E, max(COUNTS), K), sa.reshape(E, max(COUNTS), K // 128)
        return ca, cb, sa, sb, {"counts": np.array(COUNTS)}
    return ca, cb, sa, sb, {"offsets": np.concatenate([[0], np.cumsum(COUNTS)])}


@pytest.fixture
def no_launch(monkeypatch):
    from lab.kernels import wgmma

    def launcher(cfg):
        raise AssertionError("a launcher was made before the input was refused")
    monkeypatch.setattr(wgmma, "grouped_launcher", launcher)


def _call(change=None, masked=False, **kw):
    ca, cb, sa, sb, route = _operands(masked)
    args = {"A": ca, "Bt": cb, "scale_a": sa, "scale_b": sb, "fmt": "e4m3", **route}
    args.update(change(args) if change else {})
    args.update(kw)
    A, Bt = args.pop("A"), args.pop("Bt")
    return lab.grouped_scaled_gemm(A, Bt, **args)


@pytest.mark.parametrize("change, problem", [
    (lambda a: {"counts": [1, 1, 1]}, "exactly one"),
    (lambda a: {"fmt": None}, r"A holds uint8 codes: say which format with fmt='e4m3'"),
    (lambda a: {"fmt": "e5m2"}, "e5m2 has no block-scaled kernel"),
    (lambda a: {"A": a["A"].astype(np.float32)}, "grouped_scaled_gemm takes FP8 codes"),
    (lambda a: {"Bt": a["Bt"][0]}, r"Bt must be \[experts, N, K\]"),
    (lambda a: {"A": a["A"][:, :256], "scale_a": a["scale_a"][:, :2]},
     "A's rows hold 256 codes but each Bt"),
    (lambda a: {"A": a["A"][:, :200].copy(), "Bt": a["Bt"][:, :, :200].copy()},
     r"K = 200 and N = 256 must be multiples of 128"),
    (lambda a: {"Bt": a["Bt"][:, :200].copy()}, r"K = 384 and N = 200"),
    (lambda a: {"scale_a": a["scale_a"][:, :2].copy()},
     r"scale_a has shape \(7, 2\): block scales are one per 1×128 block of A, \(7, 3\)"),
    (lambda a: {"scale_b": a["scale_b"][:2]}, r"scale_b has shape \(2, 2, 3\)"),
    (lambda a: {"scale_b": a["scale_b"].astype(np.float64)}, "scale_b is float64"),
    (lambda a: {"scale_a": np.where(np.arange(3) == 1, np.inf, a["scale_a"])
                .astype(np.float32)}, r"scale_a\[0, 1\] = inf: scales must be finite"),
    (lambda a: {"scale_b": -a["scale_b"]}, r"scale_b\[0, 0, 0\] = -"),
    (lambda a: {"offsets": [0, 2, 1, 7]}, "offsets decrease at expert 1"),
    (lambda a: {"offsets": [0, 2, 2, 6]}, r"offsets\[3\] = 6, but A has 7 rows"),
    (lambda a: {"out": np.zeros((7, N), np.float32)}, "out is float32; the grouped FP8"),
    (lambda a: {"out": np.zeros((7, 128), np.uint16).view(np.float16)},
     r"out has shape \(7, 128\); the product is \(7, 256\)"),
])
def test_bad_input_is_refused_before_any_launch(no_launch, change, problem):
    with pytest.raises(GemmError, match=problem):
        _call(change)


def test_the_masked_layout_is_checked_too(no_launch):
    with pytest.raises(GemmError, match=r"counts\[2\] = 6: each expert's count must lie in "
                                        r"0 … M_max = 5"):
        _call(lambda a: {"counts": [1, 0, 6]}, masked=True)
    with pytest.raises(GemmError, match="A holds 2 experts' buffers but Bt 3"):
        _call(lambda a: {"A": a["A"][:2], "scale_a": a["scale_a"][:2]}, masked=True)
    with pytest.raises(GemmError, match=r"scale_a has shape \(15, 3\)"):
        _call(lambda a: {"scale_a": a["scale_a"].reshape(15, 3)}, masked=True)


@pytest.mark.skipif(device.GPU, reason="the refusal without a GPU")
def test_without_a_hopper_gpu_a_valid_call_is_refused_by_name(no_launch):
    with pytest.raises(GemmError, match="grouped_scaled_gemm uses wgmma and runs on a GPU of "
                                        "compute capability 9.0"):
        _call()


def test_off_hopper_a_valid_call_names_the_capability(no_launch, monkeypatch):
    from lab import kernels

    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(kernels, "current_cc", lambda: (8, 9))
    with pytest.raises(GemmError, match="needs compute capability 9.0 .*this GPU is 8.9"):
        _call()


def test_the_configurations_follow_the_rows_per_expert_and_keep_the_rules():
    small = G.fp8_tile_config(True, G.SMALL_GROUPS)
    large = G.fp8_tile_config(False, G.SMALL_GROUPS + 1)
    assert (small.bm, small.bn, small.consumers, small.grouped) == (64, 128, 1, "counts")
    assert (large.bm, large.bn, large.consumers, large.grouped) == (128, 128, 2, "offsets")
    for cfg in (small, large):
        assert (cfg.kind, cfg.scales, cfg.promote, cfg.out, cfg.store) == \
            ("e4m3", "block", 128, "bf16", "tile")
        assert cfg.shared_bytes + 1024 <= 227 * 1024
    fp8_cfgs = [c for c in G.hopper_configs() if c.fp8]
    assert len(fp8_cfgs) == 2 * len(G.FP8_TILES)
    with pytest.raises(ValueError, match="FP8 with block scales"):
        replace(large, scales="tensor", promote=0).validate()
    with pytest.raises(ValueError, match="grouped"):
        replace(large, store="boxes").validate()
    with pytest.raises(ValueError, match="not one of the grouped FP8 kernel's"):
        G.fp8_tile_config(False, 1, (128, 256))


@pytest.mark.parametrize("masked", [False, True])
def test_the_host_path_around_the_kernel(monkeypatch, masked):
    """Host codes uploaded as uint8 and seen as [rows, K] and [E·N, K], the scales as
    [rows, K/128] and [E·N/128, K/128], the routing as given, C's BF16 bits copied back into a
    new array; with the kernel replaced by the float64 product of each group, the result is
    each group's product and rows of no group stay zero."""
    from lab import kernels
    from lab.kernels import wgmma

    ca, cb, sa, sb, route = _operands(masked, seed=4)
    seen = {}

    def launcher(cfg):
        def launch(A, Bt, C, groups, mmax, a_scales, b_scales):
            seen.update(cfg=cfg, mmax=mmax, shapes=(A.shape, Bt.shape, C.shape,
                                                    a_scales.shape, b_scales.shape))
            a, bt, s_a, s_b = (x.copy_to_host() for x in (A, Bt, a_scales, b_scales))
            c = C.copy_to_host().view(np.uint16)
            bounds = groups.copy_to_host()
            for e in range(E):
                lo = e * mmax if masked else bounds[e]
                hi = lo + bounds[e] if masked else bounds[e + 1]
                if hi > lo:
                    nb = N // 128
                    ref = fp8.reference(a[lo:hi], bt[e * N:(e + 1) * N], s_a[lo:hi],
                                        s_b[e * nb:(e + 1) * nb], blocks=True)
                    c[lo:hi] = fp8.bf16_bits(ref)
            C.copy_to_device(c)
        return launch

    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(kernels, "current_cc", lambda: (9, 0))
    monkeypatch.setattr(wgmma, "grouped_launcher", launcher)
    monkeypatch.setattr(G, "_LAUNCHERS", G.LRU(4))
    got = lab.grouped_scaled_gemm(ca, cb, scale_a=sa, scale_b=sb, fmt="e4m3", **route)
    rows = E * max(COUNTS) if masked else sum(COUNTS)
    assert seen["shapes"] == ((rows, K), (E * N, K), (rows, N), (rows, K // 128),
                              (E * N // 128, K // 128))
    assert seen["mmax"] == (max(COUNTS) if masked else 0)
    assert seen["cfg"].grouped == ("counts" if masked else "offsets")
    got = np.asarray(got, np.float64).reshape(rows, N)
    a2, s2 = ca.reshape(rows, K), sa.reshape(rows, K // 128)
    start = 0
    for e, count in enumerate(COUNTS):
        lo = e * max(COUNTS) if masked else start
        start += count
        want = fp8.reference(a2[lo:lo + count], cb[e], s2[lo:lo + count], sb[e], blocks=True)
        if count:
            assert np.abs(got[lo:lo + count] - want).max() <= 2 ** -7 * np.abs(want).max()
        if masked:
            assert not got[lo + count:(e + 1) * max(COUNTS)].any(), "rows past a count"


# ----------------------------------------------------------------------- the repeat path

class _Tensor:
    """What the repeat path reads of a PyTorch tensor (its module named ``torch``)."""

    def __init__(self, ptr, shape, dtype):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return tuple(int(np.prod(self.shape[i + 1:])) for i in range(len(self.shape)))


_Tensor.__module__ = "torch"


class _Checked(Exception):
    """The checked path was taken."""


@pytest.fixture
def repeat(monkeypatch):
    """A recorded contiguous FP8 call on stream 0 (A, Bt, out, offsets, scale_a, scale_b),
    the checked path raising _Checked."""
    from lab import enqueue
    from lab.gemm import Hot, _torch_state

    class Plan:
        def __init__(self):
            self.params, self.launches = 7, []
            self._direct = lambda handle, params, extra: self.launches.append(handle) or 0

    monkeypatch.setattr(G, "_HOT", lab.lru.LRU(8))
    monkeypatch.setattr(G, "describe", lambda *a: (_ for _ in ()).throw(_Checked()))
    ops = {"A": _Tensor(1 << 20, (196, 512), "float8_e4m3fn"),
           "Bt": _Tensor(2 << 20, (4, 256, 512), "float8_e4m3fn"),
           "out": _Tensor(3 << 20, (196, 256), "bfloat16"),
           "offsets": _Tensor(4 << 20, (5,), "int64"),
           "scale_a": _Tensor(5 << 20, (196, 4), "float32"),
           "scale_b": _Tensor(6 << 20, (4, 2, 4), "float32")}
    plan, stream = Plan(), {"current": 0}
    hot = Hot(_torch_state, (ops["A"], ops["Bt"], ops["out"]), enqueue.CallPlan([plan], ()),
              lambda: stream["current"], 0)
    key = ("fp8", id(ops["A"]), id(ops["Bt"]), id(ops["out"]), id(ops["offsets"]), id(None),
           id(ops["scale_a"]), id(ops["scale_b"]), None)
    G._HOT[key] = (hot, tuple(_torch_state(ops[x]) for x in ("offsets", "scale_a", "scale_b")))
    return ops, plan, stream


def _repeat_call(ops, **kw):
    args = dict(scale_a=ops["scale_a"], scale_b=ops["scale_b"], offsets=ops["offsets"],
                check_bounds=False, check_scales=False)
    args.update(kw)
    return lab.grouped_scaled_gemm(ops["A"], ops["Bt"], ops["out"], **args)


def test_an_fp8_repeat_with_the_checks_off_is_one_driver_call(repeat):
    ops, plan, _ = repeat
    assert _repeat_call(ops) is ops["out"]
    assert _repeat_call(ops) is ops["out"]
    assert plan.launches == [0, 0]


@pytest.mark.parametrize("change", ["scale_a moved", "scale_b reshaped", "offsets moved",
                                    "Bt moved", "stream", "scales checked", "bounds checked"])
def test_an_fp8_repeat_confirms_the_scales_the_routing_the_operands_and_the_stream(repeat,
                                                                                   change):
    ops, plan, stream = repeat
    kw = {}
    if change == "scale_a moved":
        ops["scale_a"].ptr += 256
    elif change == "scale_b reshaped":
        ops["scale_b"].shape = (2, 4, 4)
    elif change == "offsets moved":
        ops["offsets"].ptr += 64
    elif change == "Bt moved":
        ops["Bt"].ptr += 4096
    elif change == "stream":
        stream["current"] = 5
    elif change == "scales checked":
        kw["check_scales"] = True           # the scales are read and checked every call
    else:
        kw["check_bounds"] = True
    with pytest.raises(_Checked):
        _repeat_call(ops, **kw)
    assert plan.launches == []
