"""Default shape buckets: hand-listed sizes and picks."""

from skillax.engine.buckets import Buckets, powers_of_two, powers_of_two_and_halves


def test_default_sizes():
    assert powers_of_two(16, 100) == (16, 32, 64, 128)
    assert powers_of_two_and_halves(16, 100) == (16, 24, 32, 48, 64, 96, 128)
    b = Buckets()
    assert b.prompt[:8] == (16, 24, 32, 48, 64, 96, 128, 192)
    assert b.pick("prompt", 300) == 384 and b.pick("prompt", 385) == 512 and b.pick("prompt", 16) == 16
    assert b.pick("new_tokens", 33) == 64 and b.pick("cache", 416) == 512
