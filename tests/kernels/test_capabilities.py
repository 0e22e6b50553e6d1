"""Compute capabilities: each kernel's ``min_cc`` is proved with ptxas, and a device below it is
refused with one line before anything is launched.

Offline (any machine): every kernel's PTX, compiled for the oldest capability it claims, is
assembled by the pinned ptxas for each architecture it claims among sm_75, sm_80, sm_86, sm_89
and sm_90 (sm_90a for code built for Hopper alone). The claim is tight: the same PTX with its
``.target`` lowered to the architecture below is refused by ptxas, which names the instruction
(``mma.sync … m16n8k16``, ``cp.async``, ``wgmma``); for the plain FP32 kernels it is the
toolkit that stops at sm_75. What ptxas says is :func:`lab.compiler.capability`'s facts:
committed in ``lab/facts/checks.json`` for the current sources, else compiled and assembled now.
:func:`lab.kernels.runnable` is tested by faking the device's capability.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lab
from lab import compiler, device, kernels
from lab.compiler import CAPABILITY_ARCHS as ARCHS
from lab.compiler import claims, sm
from lab.kernels import TOOLKIT_MIN_CC, KernelUnavailable, runnable

NAMES = list(lab.REGISTRY)


def _arch(spec, cc) -> str:
    return sm(spec.target(cc))


@pytest.fixture(scope="module")
def facts():
    compiler.prefetch(NAMES, kind="capability")
    return {name: compiler.capability(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_ptx_assembles_for_every_claimed_architecture(facts, name):
    spec = lab.get_spec(name)
    fact = facts[name]
    assert fact["target"] == _arch(spec, spec.min_cc)
    assert fact["functions"] == len(spec.compile) > 0 and fact["declared"], fact
    assert claims(spec), f"{name} claims none of {ARCHS}"
    assert list(fact["assembles"]) == [_arch(spec, cc) for cc in claims(spec)]
    for arch, (ok, log) in fact["assembles"].items():
        assert ok, f"{name} for {arch}: {log}"


@pytest.mark.parametrize("name", [n for n in NAMES if lab.get_spec(n).min_cc > TOOLKIT_MIN_CC])
def test_the_capability_claim_is_tight(facts, name):
    """One architecture below min_cc, ptxas refuses the kernel and names the instruction."""
    spec = lab.get_spec(name)
    below = facts[name]["below"]
    assert below["arch"] == sm(max(cc for cc in ARCHS if cc < spec.min_cc))
    assert below["refused"] and all(below["refused"]), (
        f"{name} assembled for {below['arch']}, below its min_cc {spec.min_cc}")
    needs_newer = below["needs_newer"]
    assert needs_newer or below["unsupported"], below["log"]
    assert all(t >= sm(spec.min_cc) for _, t in needs_newer), needs_newer


def test_the_toolkit_stops_at_sm_75(facts):
    """The plain FP32 kernels need nothing newer than the toolkit: ptxas has no sm_70."""
    plain = [n for n in NAMES if lab.get_spec(n).min_cc == TOOLKIT_MIN_CC]
    assert plain
    for name in plain:
        below = facts[name]["below"]
        assert below["arch"] == "sm_70" and below["refused"] and all(below["refused"]), name
        assert "sm_70" in below["log"], below["log"]


# ----------------------------------------------------------------------------- runnable

@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend to be on a GPU of the capability passed to the returned function."""
    def set_cc(cc):
        monkeypatch.setattr(device, "SIMULATOR", False)
        monkeypatch.setattr(device, "GPU", True)
        monkeypatch.setattr(device, "MODE", "gpu")
        monkeypatch.setattr(kernels, "current_cc", lambda: cc)
    return set_cc


@pytest.mark.parametrize("name, cc, ok, line", [
    ("tc_fp16", (7, 5), False, "tc_fp16 needs compute capability 8.0 (mma.sync m16n8k16 FP16, "
                               "ldmatrix, cp.async); this GPU is 7.5"),
    ("tc_fp16", (8, 6), True, "tc_fp16 runs on compute capability 8.6"),
    ("tc_naive_bf16", (7, 5), False, "tc_naive_bf16 needs compute capability 8.0 "
                                     "(mma.sync m16n8k16, BF16); this GPU is 7.5"),
    ("naive", (7, 5), True, "naive runs on compute capability 7.5"),
    ("naive", (6, 1), False, "naive needs compute capability 7.5 (CUDA 13 generates no code "
                             "for older GPUs); this GPU is 6.1"),
    ("wgmma_tma_fp16", (8, 9), False, "wgmma_tma_fp16 needs compute capability 9.0"),
    ("wgmma_tma_fp16", (10, 0), False, "wgmma_tma_fp16 runs on compute capability 9.0 only"),
    ("wgmma_tma_fp16", (9, 0), True, "wgmma_tma_fp16 runs on compute capability 9.0"),
])
def test_runnable_names_the_capability(fake_gpu, name, cc, ok, line):
    fake_gpu(cc)
    got_ok, got_line = runnable(name)
    assert got_ok is ok and got_line.startswith(line), got_line
    assert runnable(name, cc) == (ok, got_line.replace("this GPU", "the GPU"))


def test_matmul_refuses_an_old_gpu_before_launching(fake_gpu, monkeypatch):
    fake_gpu((7, 5))
    launched = []
    spec = lab.get_spec("tc_fp16")
    monkeypatch.setitem(lab.REGISTRY, "tc_fp16",
                        dataclasses.replace(spec, launch=lambda *a: launched.append(a)))
    a = np.ones((8, 8), np.float16)
    with pytest.raises(KernelUnavailable, match=r"needs compute capability 8\.0 .* is 7\.5"):
        lab.matmul(a, a, kernel="tc_fp16")
    assert not launched


def test_runnable_without_a_gpu(monkeypatch):
    monkeypatch.setattr(device, "SIMULATOR", False)
    monkeypatch.setattr(device, "GPU", False)
    monkeypatch.setattr(device, "MODE", "compile")
    ok, line = runnable("naive")
    assert not ok and "no GPU" in line and "compile" in line
    monkeypatch.setattr(device, "SIMULATOR", True)
    assert runnable("naive")[0] and not runnable("tc_fp16")[0]


def test_runnable_refuses_a_malformed_capability():
    with pytest.raises(ValueError, match="major, minor"):
        runnable("naive", (9,))


def test_every_kernel_declares_a_capability_and_what_sets_it():
    for name, spec in lab.REGISTRY.items():
        assert spec.min_cc >= TOOLKIT_MIN_CC and spec.needs, name
        if spec.dtype_name != "float32":    # tensor cores: WMMA (7.x), mma.sync or wgmma (8.0+)
            wmma = spec.needs.startswith("wmma")
            assert spec.min_cc >= ((7, 5) if wmma else (8, 0)) and "mma" in spec.needs, name
        if spec.max_cc is not None:
            assert spec.max_cc == spec.min_cc and "sm_90a" in spec.needs, name
