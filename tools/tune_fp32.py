"""Tune the warp-tiled FP32 kernel on this GPU: one table, fastest first, beside cuBLAS FP32.

    python tools/tune_fp32.py [--quick] [--out DIR]

The sweep is the experiment ``fp32_tune`` (:mod:`lab.experiments.fp32_tune`); ``--out DIR``
also saves it as ``DIR/<gpu>/fp32_tune.json``, as ``python -m lab measure fp32_tune`` does.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.__main__ import tune  # noqa: E402

if __name__ == "__main__":
    sys.exit(tune("fp32_tune", sys.argv[1:]))
