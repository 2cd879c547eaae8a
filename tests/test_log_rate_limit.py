"""Warnings and errors are rate-limited per event name, so a client that triggers one on every
request cannot flood the log (issue 13, defect 7)."""

from __future__ import annotations

import pytest
import structlog

from coordinator.log_setup import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def emit(limiter: RateLimiter, level: str, event: str) -> dict | None:
    try:
        return limiter(None, level, {"event": event})
    except structlog.DropEvent:
        return None


def test_a_burst_then_dropped_lines_are_counted_on_the_next_window() -> None:
    clock = Clock()
    limiter = RateLimiter(burst=3, window=10.0, clock=clock)
    passed = [emit(limiter, "warning", "closing connection") for _ in range(10)]
    assert [p is not None for p in passed] == [True] * 3 + [False] * 7
    clock.now += 9.9
    assert emit(limiter, "warning", "closing connection") is None
    clock.now += 0.1
    assert emit(limiter, "warning", "closing connection") == {"event": "closing connection", "suppressed": 8}
    assert emit(limiter, "warning", "closing connection") == {"event": "closing connection"}


def test_events_and_levels_have_their_own_budgets_and_info_is_never_limited() -> None:
    limiter = RateLimiter(burst=1, window=10.0, clock=Clock())
    assert emit(limiter, "warning", "a") is not None
    assert emit(limiter, "warning", "a") is None
    assert emit(limiter, "warning", "b") is not None
    assert emit(limiter, "error", "a") is not None
    assert all(emit(limiter, "info", "a") is not None for _ in range(100))


@pytest.mark.parametrize("level", ["warning", "error", "exception", "critical"])
def test_every_level_from_warning_up_is_limited(level: str) -> None:
    limiter = RateLimiter(burst=1, window=10.0, clock=Clock())
    assert emit(limiter, level, "x") is not None
    assert emit(limiter, level, "x") is None
