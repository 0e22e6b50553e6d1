"""The committed compiler facts (lab/facts/compiler.json) are current and are what the pinned
toolchain produces, so the book prints the same registers and instruction counts everywhere; so
are the facts the tests conclude from compiling offline (lab/facts/checks.json), which spare a
fresh clone's test run minutes of compiling."""
from __future__ import annotations

import json
import re

import pytest

from lab import compiler, workers
from lab.kernels import REGISTRY, TEACHING

RECORD = "LAB_FACTS=record python -m lab compile"


@pytest.fixture(scope="module")
def facts():
    return json.loads(compiler.FACTS_FILE.read_text())


def test_facts_match_the_sources(facts):
    assert facts["source_digest"] == compiler.source_digest(), (
        "lab/facts/compiler.json was recorded from other kernel sources; record it again: "
        + RECORD)


def test_facts_come_from_the_pinned_toolchain(facts):
    pins = compiler.pinned_toolchain()
    assert None not in pins.values(), f"requirements.txt must pin every compiler: {pins}"
    assert facts["toolchain"] == pins, (
        f"recorded with {facts['toolchain']}, requirements.txt pins {pins}: " + RECORD)


def _unpinned() -> dict:
    """Compilers installed here at versions other than the pins (a GPU image's own numba, say)."""
    pins, here = compiler.pinned_toolchain(), compiler.toolchain()
    return {d: here[d] for d in pins if here[d] != pins[d]}


def test_every_registered_kernel_has_facts(facts):
    missing = [n for n, s in REGISTRY.items()
               if s.compile and f"report:{n}" not in facts["entries"]]
    assert not missing, f"no committed facts for {missing}: " + RECORD


def test_every_twin_and_extra_kernel_has_facts(facts):
    """A reader's GPU image may lack the nvcc wheel: the twins' facts must come from the file."""
    from lab import twins

    want = [f"twin:{n}" for n in twins.TWINS] + [f"report:{n}" for n in TEACHING]
    missing = [k for k in want if k not in facts["entries"]]
    assert not missing, f"no committed facts for {missing}: " + RECORD


def test_a_stored_report_equals_a_fresh_compile(monkeypatch):
    """The stored facts are what compiling now gives (the cheapest kernel, compiled live)."""
    if _unpinned():
        pytest.skip(f"compilers here differ from requirements.txt's pins: {_unpinned()}; "
                    "a fresh compile would not be the pinned toolchain's")
    stored = compiler.stored("report", "naive")
    assert stored is not None
    monkeypatch.setenv("LAB_CACHE_DIR", "off")
    fresh = compiler._compute("report", ["naive"])["naive"]
    keys = ("registers", "spill_stores", "stack_bytes", "shared_bytes", "instructions",
            "mix", "loop_mix", "sass")
    fresh = [dict(d, sass=compiler.compact_sass(d["sass"])) for d in fresh]
    assert [{k: d[k] for k in keys} for d in stored] == [{k: d[k] for k in keys} for d in fresh]


def test_stale_facts_are_not_used(monkeypatch):
    monkeypatch.setattr(compiler, "source_digest", lambda: "not-the-recorded-sources")
    assert compiler.stored("report", "naive") is None


# ----------------------------------------------------------------------------- the tests' facts
#
# lab/facts/checks.json: each kernel's ptxas verdicts (tests/kernels/test_capabilities.py) and
# the answers of the test files' compile workers, recorded by the same command.

@pytest.fixture(scope="module")
def checks():
    return json.loads(compiler.CHECKS_FILE.read_text())


def test_checks_match_the_sources(checks):
    assert checks["source_digest"] == compiler.source_digest(), (
        "lab/facts/checks.json was recorded from other kernel sources (the tests would compile "
        "its facts again, minutes of a cold run); record it again: " + RECORD)
    assert checks["toolchain"] == compiler.pinned_toolchain(), (
        f"recorded with {checks['toolchain']}, requirements.txt pins "
        f"{compiler.pinned_toolchain()}: " + RECORD)


def test_every_registered_kernel_has_capability_facts(checks):
    missing = [n for n, s in REGISTRY.items()
               if s.compile and f"capability:{n}" not in checks["entries"]]
    assert not missing, f"no committed capability facts for {missing}: " + RECORD


def test_every_worker_answer_is_current():
    if _unpinned():
        pytest.skip(f"compilers here differ from requirements.txt's pins: {_unpinned()}; "
                    "the workers' keys name the toolchain")
    stale = [f"{rel} {flag}" for rel, flag in workers.WORKERS
             if workers.committed(workers.ROOT / rel, flag) is None]
    assert not stale, (f"lab/facts/checks.json has no answer of {stale} for the current kernel "
                       "sources and worker code; record it again: " + RECORD)


def test_the_recorded_workers_are_those_the_suite_calls():
    called = set()
    for path in (workers.ROOT / "tests").rglob("test_*.py"):
        rel = path.relative_to(workers.ROOT).as_posix()
        called |= {(rel, flag) for flag in
                   re.findall(r'offline_worker\(__file__, "([^"]+)"\)', path.read_text())}
    assert called == set(workers.WORKERS)


def test_a_stored_capability_equals_a_fresh_one(monkeypatch):
    """The stored verdicts are what compiling and assembling now gives (two cheap kernels: a
    plain FP32 one, refused by the toolkit below sm_75, and one refused by ptxas below sm_80)."""
    if _unpinned():
        pytest.skip(f"compilers here differ from requirements.txt's pins: {_unpinned()}")
    names = ["naive", "tc_naive_bf16"]
    stored = {n: compiler.stored("capability", n) for n in names}
    assert None not in stored.values(), f"no current capability facts of {names}: " + RECORD
    monkeypatch.setenv("LAB_CACHE_DIR", "off")
    assert stored == compiler._compute("capability", names)


def test_stale_checks_are_not_used(monkeypatch):
    monkeypatch.setattr(compiler, "source_digest", lambda: "not-the-recorded-sources")
    assert compiler.stored("capability", "naive") is None
    rel, flag = workers.WORKERS[0]
    assert workers.committed(workers.ROOT / rel, flag) is None


@pytest.mark.parametrize("recording", [True, False])
def test_the_record_command_records_the_checks(monkeypatch, capsys, recording):
    """``LAB_FACTS=record python -m lab compile`` records lab/facts/checks.json too (every
    kernel's capability facts, every worker); without LAB_FACTS it compiles neither."""
    from lab import tables, twins
    from lab.__main__ import main

    done = []
    monkeypatch.setattr(compiler, "table", lambda names: [])
    monkeypatch.setattr(tables, "render", lambda rows: "")
    monkeypatch.setattr(compiler, "prefetch", lambda names, kind="report", jobs=2:
                        done.append((kind, len(names))))
    monkeypatch.setattr(compiler, "wgmma_probe", dict)
    monkeypatch.setattr(twins, "compile_report", lambda name: None)
    monkeypatch.setattr(workers, "record_all", lambda: done.append("workers") or [])
    monkeypatch.setenv("LAB_FACTS", "record" if recording else "")
    assert main(["compile"]) == 0
    compiled = sum(1 for s in REGISTRY.values() if s.compile)
    checks = [("capability", compiled), "workers"]
    assert done == [("report", len(TEACHING))] + (checks if recording else [])


def test_the_gpu_check_record_is_of_this_kernel_code():
    """A GPU ran ``python -m lab check --record`` on the kernel code as it is (docstrings and
    comments aside: :func:`lab.compiler.code_digest`): every GPU-only kernel that runs there
    twice at every shape (:mod:`lab.gpu_checks`). A change of code lands with a fresh record."""
    from lab import gpu_checks

    assert not gpu_checks.problems()
