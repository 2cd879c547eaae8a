"""A latency histogram cheap enough for hot paths: power-of-two microsecond buckets, bumped in place.

Bucket b counts durations below 2**b µs (and at least 2**(b-1) µs); the last bucket takes everything
longer. The metrics endpoint reads `counts`, `total` and `bounds()` (as a Prometheus histogram).
"""

from __future__ import annotations

BUCKETS = 27  # the last finite bound is 2**25 µs, ~33.5 s


def bucket_of(seconds: float) -> int:
    return min(int(seconds * 1_000_000).bit_length(), BUCKETS - 1)


def bounds() -> list[float]:
    """The upper bound, in seconds, of every bucket but the last (+Inf)."""
    return [(1 << b) / 1_000_000 for b in range(BUCKETS - 1)]


class Histogram:
    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * BUCKETS
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[min(int(seconds * 1_000_000).bit_length(), BUCKETS - 1)] += 1
        self.total += seconds
