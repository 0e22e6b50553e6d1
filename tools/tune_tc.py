"""Sweep tile configurations of the fed tensor-core kernel on this GPU, beside cuBLAS FP16.

    python tools/tune_tc.py [--quick] [--out DIR]

The sweep is the experiment ``tc_tune`` (:mod:`lab.experiments.tc_tune`); ``--out DIR`` also
saves it as ``DIR/<gpu>/tc_tune.json``, as ``python -m lab measure tc_tune`` does.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.__main__ import tune  # noqa: E402

if __name__ == "__main__":
    sys.exit(tune("tc_tune", sys.argv[1:]))
