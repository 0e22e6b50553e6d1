"""lab.model: the seeds' formulas."""
import pytest

from lab import model


def test_model_matches_the_seeds_formulas():
    assert model.flops(2, 3, 4) == 48
    assert model.naive_intensity(4) == 0.25 and model.naive_intensity(2) == 0.5
    assert model.ideal_intensity(1024, 1024, 1024) == pytest.approx(1024 / 6)
    assert model.tile_intensity(32) == 8 and model.tile_intensity(16) == 4
    assert model.smem_intensity(8) == 2 and model.smem_intensity(1) == 0.25
    assert model.ideal_intensity(1, 4096, 4096, 2) == pytest.approx(1.0, rel=1e-3)
