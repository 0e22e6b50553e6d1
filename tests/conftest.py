"""Tests run under the CUDA simulator unless a GPU is present (lab.device decides)."""
import numpy as np
import pytest

import lab  # noqa: F401  (decides simulator vs GPU before numba is imported)


@pytest.fixture
def rng():
    return np.random.default_rng()
