"""The GPU check record (lab.gpu_checks): what it refuses to record, what it finds missing for
the current sources, and ``python -m lab check --record`` driven on a faked GPU."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

import lab
from lab import __main__ as cli
from lab import bench, device, gpu_checks, kernels
from lab.experiments import suite

DIGEST = "d" * 64


def _entry(shapes=3, calls=2, passed=True):
    return {"shapes": [[i + 1, 2, 3] for i in range(shapes)], "calls": calls, "passed": passed}


def _complete(cc=(9, 0)) -> dict:
    """A record entry for every GPU-only kernel that runs at ``cc``, each at all its shapes,
    and for every Hopper grouped kernel."""
    return {**{name: _entry(shapes) for name, shapes in gpu_checks.gpu_only(cc).items()},
            **{name: _entry() for name in gpu_checks.grouped_names(cc)}}


@pytest.mark.parametrize("checked, problem", [
    ({}, "nothing was checked"),
    ({"a": _entry(), "b": _entry(passed=False)}, r"1 kernel\(s\) failed their checks \(b\)"),
    ({"a": _entry(calls=1)}, "a called fewer than 2 times a shape"),
])
def test_a_record_says_the_sources_passed(tmp_path, checked, problem):
    with pytest.raises(ValueError, match=problem):
        gpu_checks.record("fake-gpu", (9, 0), checked, {}, digest=DIGEST,
                          path=tmp_path / "gpu_checks.json")
    assert not (tmp_path / "gpu_checks.json").exists()


def test_records_are_kept_per_gpu_readable_by_all(tmp_path):
    path = tmp_path / "gpu_checks.json"
    gpu_checks.record("gpu-a", (9, 0), {"k": _entry()}, {"old": "too old"}, digest=DIGEST,
                      path=path)
    gpu_checks.record("gpu-b", (8, 0), {"k": _entry()}, {}, digest=DIGEST, path=path)
    data = gpu_checks.load(path)
    assert sorted(data["records"]) == ["gpu-a", "gpu-b"]
    assert data["records"]["gpu-a"]["skipped"] == {"old": "too old"}
    assert data["records"]["gpu-b"]["compute_capability"] == "8.0"
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_a_damaged_file_is_named(tmp_path):
    path = tmp_path / "gpu_checks.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="gpu_checks.json is not JSON"):
        gpu_checks.load(path)


def test_the_gpu_only_kernels_are_those_the_simulator_cannot_run():
    hopper = gpu_checks.gpu_only((9, 0))
    ampere = gpu_checks.gpu_only((8, 0))
    assert hopper and set(ampere) < set(hopper)
    assert all(not kernels.get_spec(n).simulator for n in hopper)
    assert "naive" not in hopper and "tc_fp16" in ampere
    assert not any(kernels.get_spec(n).max_cc for n in ampere)      # no sm_90a kernel on 8.0


def _data(gpu="h200", digest=DIGEST, checked=None, cc="9.0"):
    return {"records": {gpu: {"code_digest": digest, "compute_capability": cc,
                              "date": "2026-12-06T00:00:00+00:00", "calls_per_shape": 2,
                              "checked": _complete() if checked is None else checked,
                              "skipped": {}}}}


def test_a_complete_record_of_these_sources_has_no_problem():
    assert gpu_checks.problems(_data(), DIGEST) == []


@pytest.mark.parametrize("fault, problem", [
    ("no record", "no GPU check record"),
    ("other sources", "are of other kernel sources than these"),
    ("kernel missing", "runs there but is not in the record"),
    ("one call", "not passed 2 calls a shape"),
    ("failed", "not passed 2 calls a shape"),
    ("shape missing", "checked at"),
    ("grouped missing", "not passed 2 calls a routing"),
    ("grouped failed", "not passed 2 calls a routing"),
])
def test_each_gap_in_the_record_is_named(fault, problem):
    checked = _complete()
    name = next(iter(checked))
    data = _data(checked=checked)
    digest = DIGEST
    if fault == "no record":
        data = {"records": {}}
    elif fault == "other sources":
        digest = "e" * 64
    elif fault == "kernel missing":
        del checked[name]
    elif fault == "one call":
        checked[name]["calls"] = 1
    elif fault == "failed":
        checked[name]["passed"] = False
    elif fault == "grouped missing":
        del checked[gpu_checks.grouped_names((9, 0))[0]]
    elif fault == "grouped failed":
        checked[gpu_checks.grouped_names((9, 0))[-1]]["passed"] = False
    else:
        checked[name]["shapes"].pop()
    found = gpu_checks.problems(data, digest)
    assert len(found) == 1 and problem in found[0], found


@pytest.fixture
def hopper(monkeypatch, tmp_path):
    """A faked compute capability 9.0 GPU whose registry is two GPU-only kernels; every check
    is counted (and fails where ``fail`` says); the record goes to a temporary file."""
    names = list(gpu_checks.gpu_only((9, 0)))[:2]
    monkeypatch.setattr(device, "SIMULATOR", False)
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(device, "MODE", "gpu")
    monkeypatch.setattr(device, "describe", lambda: "fake H100")
    monkeypatch.setattr(device, "gpu_slug", lambda name=None: "fake-h100")
    monkeypatch.setattr(kernels, "current_cc", lambda: (9, 0))
    monkeypatch.setattr(lab, "REGISTRY", {n: kernels.REGISTRY[n] for n in names})
    monkeypatch.setattr(gpu_checks, "PATH", tmp_path / "gpu_checks.json")
    monkeypatch.setattr(suite, "variant_count", lambda: 1)
    monkeypatch.setattr(suite, "check_variant", lambda i: (0, {"lab.gemm variant v": _entry()}))
    monkeypatch.setattr(gpu_checks, "grouped_names", lambda cc: ["lab.grouped_gemm g"])
    monkeypatch.setattr(gpu_checks, "check_grouped",
                        lambda i: (0, {"lab.grouped_gemm g": _entry()}))
    calls, fail = [], set()

    def check(name, m, n, k, seed=None):
        calls.append((name, m, n, k))
        bad = (name, m, n, k, calls.count((name, m, n, k))) in fail
        return SimpleNamespace(passed=not bad, line=lambda: f"{name} {m}x{n}x{k}")

    monkeypatch.setattr(bench, "check", check)
    return SimpleNamespace(names=names, calls=calls, fail=fail, path=tmp_path / "gpu_checks.json")


def test_check_record_calls_every_shape_twice_and_writes_what_passed(hopper, capsys):
    assert cli.main(["check", "--record"]) == 0
    for name in hopper.names:
        shapes = kernels.shapes_for(kernels.get_spec(name), gpu=True)
        for m, n, k in shapes:
            assert hopper.calls.count((name, m, n, k)) == 2
    record = json.loads(hopper.path.read_text())["records"]["fake-h100"]
    assert record["code_digest"] == lab.compiler.code_digest()
    assert record["source_digest"] == lab.compiler.source_digest()
    assert set(record["checked"]) == {*hopper.names, "lab.gemm variant v", "lab.grouped_gemm g"}
    assert "recorded in" in capsys.readouterr().out


def test_a_fault_on_the_second_call_records_nothing(hopper, capsys):
    name = hopper.names[0]
    m, n, k = kernels.shapes_for(kernels.get_spec(name), gpu=True)[-1]
    hopper.fail.add((name, m, n, k, 2))
    assert cli.main(["check", "--record"]) == 1
    assert "nothing recorded" in capsys.readouterr().out
    assert not hopper.path.exists()


def test_check_record_refuses_without_a_gpu_and_with_names(capsys):
    assert cli.main(["check", "--record"]) != 0
    assert "with no GPU" in capsys.readouterr().err
    assert cli.main(["check", "--record", "naive"]) != 0
    assert "name no kernels" in capsys.readouterr().err


def test_check_jobs_runs_each_kernel_in_a_process_of_its_own(capsys):
    """``--jobs 2``: the kernels checked in spawned processes, each one's lines printed once
    and the verdict the same as one after another (here in the simulator)."""
    assert cli.main(["check", "--jobs", "2", "naive", "naive_swapped"]) == 0
    out = capsys.readouterr().out
    assert out.count("shapes checked") == 2 and "naive_swapped" in out
    assert "all kernels passed (2 checked)" in out


def test_the_grouped_kernels_checked_are_every_one_lab_grouped_chooses():
    names = gpu_checks.grouped_names((9, 0))
    from lab import grouped

    assert len(names) == len(set(names)) == 4 * len(grouped.TILES) + 2 * len(grouped.FP8_TILES)
    assert not gpu_checks.grouped_names((8, 0))
    assert sum("grouped (counts)" in n for n in names) == \
        2 * len(grouped.TILES) + len(grouped.FP8_TILES)
    for masked in (False, True):
        for per_group in (1, 64, 65, 4096):
            label = grouped.tile_config("bfloat16", masked, per_group).label
            assert f"lab.grouped_gemm {label}" in names
            label = grouped.fp8_tile_config(masked, per_group).label
            assert f"lab.grouped_gemm {label}" in names
