"""lab.device: ``LAB_DEVICE`` takes its modes, whatever the case and spaces, and a misspelled
one stops ``import lab`` with the mode it was probably meant to be."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab import device

ROOT = Path(__file__).resolve().parents[1]


def test_a_misspelled_lab_device_is_refused():
    run = subprocess.run([sys.executable, "-c", "import lab"], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, LAB_DEVICE="simlator"))
    assert run.returncode != 0
    assert ("LAB_DEVICE='simlator' is not a device mode (did you mean 'simulator'?)"
            in run.stderr)


@pytest.mark.parametrize("value", ["simulator", "compile", " Simulator ", ""])
def test_the_lab_device_values_are_accepted(monkeypatch, value):
    monkeypatch.setenv("LAB_DEVICE", value)
    assert device.requested() == value.strip().lower()
