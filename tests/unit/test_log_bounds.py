"""Log lines stay bounded: warnings and errors rate-limited per event name, long values cut (issue 13, defect 7)."""

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


def test_long_values_are_cut_and_short_ones_kept() -> None:
    from coordinator.log_setup import MAX_EXCEPTION_CHARS, MAX_VALUE_CHARS, truncate_values

    group = "g" * 45_000_000
    out = truncate_values(None, "info", {"event": "rebalance", "group": group, "members": 3, "ok": True,
                                         "ids": ["m" * 2000], "exception": "x" * 100_000, "short": "abc"})
    assert out["group"] == "g" * MAX_VALUE_CHARS + f"... ({45_000_000 - MAX_VALUE_CHARS} more chars)"
    assert len(out["ids"]) < MAX_VALUE_CHARS + 40 and out["ids"].startswith("['mmm")
    assert out["exception"].startswith("x" * MAX_EXCEPTION_CHARS) and len(out["exception"]) < MAX_EXCEPTION_CHARS + 40
    assert (out["members"], out["ok"], out["short"], out["event"]) == (3, True, "abc", "rebalance")
