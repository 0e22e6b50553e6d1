"""lab.timing without a GPU: how many input sets a rotated timing cycles through."""
from lab import timing

L2 = 60 * 2**20


def test_rotation_exceeds_twice_the_l2():
    big = 4 * 3 * 4096 * 4096                     # A, B, C of a 4096³ FP32 product: 192 MiB
    assert timing.buffer_sets(big, True, L2) == 2
    mid = 8 * 2**20                               # 8 MiB a set: 15 sets make 120 MiB, and one
    assert timing.buffer_sets(mid, True, L2) == 16
    assert timing.buffer_sets(big, False, L2) == 1


def test_tiny_products_are_capped():
    """A 9×10×7 FP32 product (892 bytes a set) would need 141,066 sets to fill 2 × L2."""
    tiny = 4 * (9 * 7 + 7 * 10 + 9 * 10)
    assert timing.buffer_sets(tiny, True, L2) == timing.MAX_BUFFER_SETS
    assert all(timing.buffer_sets(n, True, L2) <= timing.MAX_BUFFER_SETS
               for n in (1, 100, 10_000, 1_000_000))
