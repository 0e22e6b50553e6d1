"""lab.listing: a closure-built kernel listed as its constants compile it (``python -m lab show``).

The folding is checked on small closures written here (plain Python: the listing reads source
and closures, nothing compiles), then on the Hopper rungs through the command line.
"""
from __future__ import annotations

import ast
import textwrap

import pytest

from lab import listing as L


def _build(HANDOFF: bool, STAGES: int, KIND: str):
    def helper(x):
        """Doubles x.

        More words that the listing leaves out."""
        return 2 * x

    def unused(x):
        return x

    def other(x):
        if STAGES > 3:
            return x + 1
        return x - 1

    def kernel(a, tid):
        # set up
        if HANDOFF:
            a = helper(a)                  # the hand-off
        else:
            a = other(a)
        if KIND == "f16":
            b = 1
        elif KIND == "bf16":
            b = 2
        else:
            b = 3
        if tid == 0 or (HANDOFF and tid < 32):
            a += 1
        c = 5 if STAGES == 4 else 6
        if STAGES == 9:
            a = unused(a)
        return a + b + c
    return kernel


def _body(text: str, name: str) -> str:
    """The listed function ``name`` (from its ``def`` to the next blank line)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"def {name}("))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "\n".join(lines[start:end])


def test_decided_branches_are_kept_alone_and_dedented():
    text = L.listing(_build(True, 4, "bf16"), package=__name__)
    body = _body(text, "kernel")
    assert "    a = helper(a)                  # the hand-off" in body
    assert "other(" not in body and "else:" not in body
    assert "    b = 2" in body and "b = 1" not in body and "b = 3" not in body
    assert "if tid == 0 or tid < 32:" in body        # HANDOFF decided, tid not
    assert "    c = 5" in body                       # the conditional expression decided
    assert "unused" not in text                      # a branch never taken calls nothing
    ast.parse(textwrap.dedent(body))                 # still Python


def test_an_undecided_chain_keeps_its_shape_and_a_false_first_test_promotes_the_elif():
    text = L.listing(_build(False, 3, "bf16"), package=__name__)
    body = _body(text, "kernel")
    assert "    a = other(a)" in body and "helper" not in text
    assert "if tid == 0:" in body                    # ``HANDOFF and …`` is false: dropped
    assert "    c = 6" in body
    other = _body(text, "other")
    assert "return x - 1" in other and "x + 1" not in other


def test_a_decided_return_ends_its_block():
    text = L.listing(_build(False, 5, "f16"), package=__name__)
    other = _body(text, "other")
    assert other.splitlines()[-1].strip() == "return x + 1"
    assert "x - 1" not in other


def test_called_functions_are_listed_once_after_their_caller_with_a_short_docstring():
    text = L.listing(_build(True, 4, "f16"), package=__name__)
    assert text.index("def kernel(") < text.index("def helper(")
    assert text.count("def helper(") == 1
    assert '"""Doubles x. …"""' in text and "More words" not in text
    assert "HANDOFF" not in text                     # decided everywhere: nothing reads it
    assert L.listing(_build(True, 4, "f16"), package=__name__) == text   # one listing a build


def test_region_markers_are_left_out():
    def build(FLAG):
        def k(x):
            # region: part
            if FLAG:
                x += 1
            # endregion: part
            return x
        return k
    text = L.listing(build(True), package=__name__)
    assert "region" not in text and "x += 1" in text


@pytest.mark.parametrize("kernel, most", [("wgmma_table", 250), ("wgmma_handoff_table", 320)])
def test_a_hopper_rung_reads_in_one_listing(kernel, most, capsys):
    from lab.__main__ import main

    assert main(["show", kernel]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert len(lines) <= most, f"{kernel}: {len(lines)} lines"
    assert "def ws_body(" in text and "def table_tile(" in text
    assert "tile_coords" not in text          # rung 18 reads its tiles from the table
    assert "streamk_consumer" not in text     # stream-K is not this rung's
    assert "if HANDOFF" not in text and "if TABLE" not in text


def test_show_parent_is_the_change_of_one_rung(capsys):
    from lab.__main__ import main

    assert main(["show", "wgmma_table", "--parent"]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith("--- wgmma_uniform_fp16\n+++ wgmma_table_fp16\n")
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert any("table[2 * unit]" in ln for ln in added)
    assert any("def tile_coords(" in ln for ln in removed)


def test_show_refuses_what_it_cannot_show(capsys):
    from lab.__main__ import main

    assert main(["show", "nope"]) == 2
    assert "unknown kernel 'nope'" in capsys.readouterr().err
    assert main(["show", "naive", "--parent"]) == 2
    assert "not a Hopper rung" in capsys.readouterr().err


def test_every_registered_kernel_lists_as_python():
    """``lab show`` works for every registered kernel, and what it prints (the folded source of
    the kernel and every device function it reaches) is still Python."""
    import lab

    for name, spec in lab.REGISTRY.items():
        text = L.listing(spec.compile[0][0])
        assert "def " in text, name
        ast.parse("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))
