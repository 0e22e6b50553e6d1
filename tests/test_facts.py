"""The committed compiler facts (lab/facts/compiler.json) are current and are what the pinned
toolchain produces, so the book prints the same registers and instruction counts everywhere."""
from __future__ import annotations

import json

import pytest

from lab import compiler
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
