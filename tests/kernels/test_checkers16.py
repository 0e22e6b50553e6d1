"""The checks of the GPU-only 16-bit-output kernels (the small-M kernel, the Hopper rungs with a
16-bit C) can fail: run offline with the kernel replaced by a stand-in that writes the exact
product rounded to the output's type, they pass; with one element off by a few units of the
output's rounding, or one element left poisoned, they fail."""
from __future__ import annotations

import numpy as np
import pytest

from lab import accuracy
from lab.kernels import small_m, wgmma


def _write(out_host_dtype, a, b, dc, spoil):
    ref = accuracy.to_float64(a) @ accuracy.to_float64(b)
    if out_host_dtype == np.float32:
        host = ref.astype(np.float32)
    elif out_host_dtype == np.float16:
        host = ref.astype(np.float16)
    else:
        host = accuracy.to_format(ref.astype(np.float32), np.uint16)
    if spoil == "off":
        v = accuracy.to_float64(host.reshape(-1)[:1])[0]
        bad = np.array([v + 0.5 + abs(v)], np.float32)
        host.reshape(-1)[0] = (accuracy.to_format(bad, np.uint16)[0] if host.dtype == np.uint16
                               else bad[0])
    elif spoil == "unwritten":
        keep = dc.copy_to_host()
        host.reshape(-1)[-1] = keep.reshape(-1)[-1]
    dc.copy_to_device(np.ascontiguousarray(host))


@pytest.fixture
def gpu_only_runs(monkeypatch):
    import lab.kernels as K
    monkeypatch.setattr(K, "runnable", lambda name: (True, ""))


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("spoil, passes", [(None, True), ("off", False), ("unwritten", False)])
def test_small_m_check_can_fail(gpu_only_runs, monkeypatch, kind, spoil, passes):
    def fake(da, db, dc, *, splits, bn, bm=0):
        _write(dc.dtype, da.copy_to_host(), db.copy_to_host(), dc, spoil)
    monkeypatch.setattr(small_m, "launch_small", fake)
    name = f"tc_small_m_{'fp16' if kind == 'f16' else 'bf16'}"
    verdict = small_m.checker(name, kind)(17, 33, 40, seed=5)
    assert verdict.passed is passes, verdict


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("spoil, passes", [(None, True), ("off", False), ("unwritten", False)])
def test_hopper_16_bit_check_can_fail(gpu_only_runs, monkeypatch, kind, spoil, passes):
    cfg = wgmma.rungs.replace(wgmma.RUNG_CONFIGS["wgmma_grid128"], kind=kind, out=kind)

    def fake_launcher(c):
        def launch(da, db, dc):
            _write(dc.dtype, da.copy_to_host(), db.copy_to_host(), dc, spoil)
        return launch
    monkeypatch.setattr(wgmma.host, "launcher", fake_launcher)
    name = f"wgmma_grid128_{'fp16' if kind == 'f16' else 'bf16'}"
    verdict = wgmma.checker16(name, cfg)(17, 33, 40, seed=5)
    assert verdict.passed is passes, verdict
