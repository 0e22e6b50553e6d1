"""Messages that name the right thing: a missing row names the file it was looked for in, and
lab.gemm in compile-only mode says why it cannot run instead of a driver error."""
from __future__ import annotations

import numpy as np
import pytest

import lab
from lab import device
from lab.chapters.ch7 import s5_past


@pytest.mark.parametrize("experiment", ["hopper_table", "hopper_past"])
def test_a_missing_row_names_the_file_it_was_looked_for_in(experiment):
    data = {"experiment": experiment, "rows": []}
    for call, what in ((lambda: s5_past.summary("nope", "float16", 4096, data), "summary"),
                       (lambda: s5_past.profile("nope", data), "profile"),
                       (lambda: s5_past.trace("nope", "float16", data), "trace")):
        with pytest.raises(KeyError, match=f"{experiment}.json has no {what} row for nope"):
            call()


def test_gemm_in_compile_only_mode_says_so(monkeypatch):
    monkeypatch.setattr(device, "MODE", "compile")
    monkeypatch.setattr(device, "SIMULATOR", False)
    monkeypatch.setattr(device, "GPU", False)
    a, b = np.ones((4, 3), np.float16), np.ones((3, 2), np.float16)
    with pytest.raises(lab.gemm.GemmError, match="LAB_DEVICE=compile.*launches nothing"):
        lab.gemm(a, b)
    with pytest.raises(lab.gemm.GemmError, match="inner dimensions"):   # inputs checked first
        lab.gemm(a, a)
