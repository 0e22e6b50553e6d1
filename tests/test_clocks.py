"""The NVML sampler with a fake NVML, the roof at a clock, and a dry run of the clocks
experiment (simulator kernel, fake events, fake NVML)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from lab import bench, clocks, device, model, timing


class FakeNVML:
    """The pynvml functions the sampler calls; the SM clock drops from 1980 to 1700 MHz
    after ``drop_after`` reads, power in milliwatts as NVML reports it."""
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, drop_after: int = 5, fail_at: int | None = None):
        self.reads = 0
        self.drop_after = drop_after
        self.fail_at = fail_at
        self.calls = []

    def nvmlInit(self):
        self.calls.append("init")

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("handle", index)

    def nvmlDeviceGetMaxClockInfo(self, handle, which):
        assert which == self.NVML_CLOCK_SM
        return 1980

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000

    def nvmlDeviceGetClockInfo(self, handle, which):
        assert which == self.NVML_CLOCK_SM
        self.reads += 1
        if self.reads == self.fail_at:
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return 1980 if self.reads <= self.drop_after else 1700

    def nvmlDeviceGetPowerUsage(self, handle):
        return 650_500

    def nvmlDeviceGetTemperature(self, handle, which):
        assert which == self.NVML_TEMPERATURE_GPU
        return 55


def test_sampler_samples_and_marks_phases():
    nvml = FakeNVML(drop_after=3, fail_at=2)
    with clocks.Sampler(0.002, nvml=nvml) as s:
        time.sleep(0.02)
        with s.phase("tc_fp16"):
            time.sleep(0.04)
        time.sleep(0.02)
    assert nvml.calls == ["init", "shutdown"]
    assert s.max_sm_mhz == 1980 and s.power_limit_w == 700
    assert s.errors == 1                      # the failed read is a gap, not a crash
    rows = s.rows()
    assert len(rows) >= 10
    assert all(b["t_s"] >= a["t_s"] for a, b in zip(rows, rows[1:]))
    assert {r["phase"] for r in rows} == {"idle", "tc_fp16"}
    assert rows[0]["sm_mhz"] == 1980 and rows[-1]["sm_mhz"] == 1700
    assert all(r["power_w"] == 650.5 and r["temp_c"] == 55 for r in rows)
    (phase,) = s.phases
    assert phase["phase"] == "tc_fp16" and phase["end_s"] - phase["start_s"] >= 0.035
    inside = [r for r in rows if r["phase"] == "tc_fp16"]
    assert all(phase["start_s"] <= r["t_s"] <= phase["end_s"] for r in inside)


def test_a_phase_shorter_than_the_period_still_gets_a_sample():
    # a phase of a few milliseconds between two ticks 10 s apart: read once as it ends
    nvml = FakeNVML(drop_after=100)
    with clocks.Sampler(10.0, nvml=nvml) as s:
        time.sleep(0.01)                      # the thread's first tick is at the start
        for _ in range(2):
            with s.phase("short"):
                pass
    short = [r for r in s.rows() if r["phase"] == "short"]
    assert len(short) == 2                    # one per occurrence, none borrowed
    assert clocks.summary(s.samples, "short")["sm_mhz_median"] == 1980
    assert [p["phase"] for p in s.phases] == ["short", "short"]
    assert all(p["start_s"] <= r["t_s"] <= p["end_s"] for p, r in zip(s.phases, short))
    with pytest.raises(ValueError, match="no samples in phase 'never'"):
        clocks.summary(s.samples, "never")


def test_sampler_without_nvml_says_why(monkeypatch):
    monkeypatch.setattr(clocks.importlib.util, "find_spec", lambda name: None)
    assert "nvidia-ml-py" in clocks.reason()
    with pytest.raises(RuntimeError, match="nvidia-ml-py"):
        with clocks.Sampler():
            pass
    with pytest.raises(ValueError):
        clocks.Sampler(0)


def test_summary_skips_the_start():
    samples = ([{"t_s": 0.1 * i, "sm_mhz": 1980.0, "power_w": 300.0, "temp_c": 40.0,
                 "phase": "idle"} for i in range(5)]
               + [{"t_s": 1 + 0.1 * i, "sm_mhz": 1980.0 if i < 5 else 1600.0 + i,
                   "power_w": 600.0 + i, "temp_c": 50.0 + i, "kernel": "k"}
                  for i in range(20)])
    s = clocks.summary(samples, "k", skip_s=0.45)
    assert s["samples"] == 15
    assert (s["sm_mhz_min"], s["sm_mhz_max"]) == (1605, 1619)
    assert s["sm_mhz_median"] == np.median([1600.0 + i for i in range(5, 20)])
    assert s["temp_c_max"] == 69 and s["power_w_max"] == 619
    assert clocks.summary(samples, "idle")["sm_mhz_median"] == 1980
    with pytest.raises(ValueError, match="no samples"):
        clocks.summary(samples, "nothing")


def test_roofs_match_the_datasheets():
    a100 = model.DATASHEET["A100"]
    tc = clocks.roof_tflops("tensor_fp16", a100["sms"], a100["clock_mhz"], (8, 0))
    assert tc == pytest.approx(a100["tensor_tflops"], rel=2e-3)
    h200 = model.DATASHEET["H200"]
    fp32 = clocks.roof_tflops("fp32", h200["sms"], h200["clock_mhz"])
    assert fp32 == pytest.approx(h200["fp32_tflops"], rel=2e-3)
    r = clocks.roof_at("tensor_fp16", 132, 1980, 1755)
    assert r["clock_ratio"] == pytest.approx(1755 / 1980)
    assert r["roof_sampled_tflops"] / r["roof_boost_tflops"] == pytest.approx(1755 / 1980)
    with pytest.raises(ValueError, match="no FLOP-per-clock"):
        clocks.roof_tflops("fp64", 132, 1980)


@pytest.mark.skipif(device.GPU, reason="the dry run fakes events and NVML")
def test_clocks_experiment_dry_run(monkeypatch, fake_events):
    from lab import results
    from lab.experiments import clocks as exp

    monkeypatch.setattr(exp, "PROVIDERS", ("naive", "tiled8"))
    monkeypatch.setattr(exp, "UNITS", {"naive": "fp32", "tiled8": "fp32"})
    monkeypatch.setattr(exp, "CHECK_SHAPES", ((5, 3, 2),))
    for name, value in (("SIZE", 8), ("RUN_S", 0.05), ("IDLE_S", 0.02), ("GAP_S", 0.02),
                        ("CHUNK_S", 0.01), ("MIN_CHUNKS", 3), ("SKIP_S", 0.0),
                        ("WARMUP", 1)):
        monkeypatch.setattr(exp, name, value)
    monkeypatch.setattr(bench, "require_gpu", lambda what="": None)
    monkeypatch.setattr(timing, "require_gpu", lambda what="": None)
    monkeypatch.setattr(clocks, "reason", lambda: None)
    real = clocks.Sampler
    monkeypatch.setattr(clocks, "Sampler", lambda: real(0.002, nvml=FakeNVML(drop_after=8)))
    fake_events(2.0)
    prov = {**device.provenance(), "sm_count": 132, "compute_capability": "9.0"}
    monkeypatch.setattr(device, "provenance", lambda: prov)
    out = exp.run(lambda it, **kw: it)
    rows = out["rows"]
    parts = {r["part"] for r in rows}
    assert parts == {"check", "chunk", "summary", "sample"}
    summaries = {r["kernel"]: r for r in rows if r["part"] == "summary"}
    assert set(summaries) == {"naive", "tiled8", "idle"}
    s = summaries["naive"]
    assert s["repeats"] >= 3 and s["median_ms"] == 2.0 and s["max_sm_mhz"] == 1980
    assert s["roof_boost_tflops"] == pytest.approx(256 * 132 * 1980e6 / 1e12)
    assert s["of_roof_sampled"] >= s["of_roof_boost"]
    assert [p["phase"] for p in out["parameters"]["phases"]] == ["naive", "tiled8"]
    assert {r["kernel"] for r in rows if r["part"] == "sample"} >= {"idle", "naive"}
    results.validate({"schema_version": results.SCHEMA_VERSION, "experiment": "clocks",
                      "parameters": out["parameters"], "rows": rows, "command": "test",
                      "provenance": prov, "row_fields": out["row_fields"]})


# ----------------------------------------------------------------------------- chapter 9

def test_chapter9_solutions():
    from lab.chapters import ch9

    one = ch9.ex09_1()
    assert one["verdict"] == "PASS" and float(one["err_over_bound"]) <= 1
    assert "numpy_host" not in __import__("lab.providers").providers.names()
    two = ch9.ex09_2()
    assert two["implied_mhz"] == pytest.approx(989e12 / (4096 * 132) / 1e6)
    assert two["roof_at_max"] == pytest.approx(4096 * 132 * 1980e6 / 1e12)
    three = {r["n"]: r for r in ch9.ex09_3()}
    assert [n for n, r in three.items() if r["aligned_16"]] == [4096, 4104]
    assert three[4097]["row_bytes"] == 8194 and three[4097]["pad_to"] == 4104
    v = ch9.values()          # both files read: values of each, and of the two together
    assert {"tc_4096", "tc_mhz", "tc_sustained_of_short", "datasheet_mhz"} <= set(v)
    assert all(isinstance(x, str) and x for x in v.values())
