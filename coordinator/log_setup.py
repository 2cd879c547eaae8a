"""structlog: JSON lines when stderr is not a terminal, readable output when it is.

Warnings and errors are rate-limited per event name (RateLimiter): a hostile or broken client that
makes the server warn on every request must not flood the log or spend the loop on writing it.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Callable

import structlog

LIMITED_LEVELS = frozenset({"warning", "warn", "error", "exception", "critical"})


class RateLimiter:
    """A structlog processor: at most `burst` lines of one event name and level per `window` seconds.

    Lines past that are dropped and counted; the first line of the event in a later window carries
    `suppressed`: how many were dropped before it. Info and debug lines pass untouched. The state is one
    small entry per (event name, level): event names are fixed strings, so it stays bounded."""

    def __init__(self, burst: int = 20, window: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.window = window
        self.clock = clock
        self._state: dict[tuple[Any, str], list] = {}  # key -> [window start, lines in it, dropped]

    def __call__(self, logger: Any, method_name: str, event_dict: dict) -> dict:
        if method_name not in LIMITED_LEVELS:
            return event_dict
        key = (event_dict.get("event"), method_name)
        now = self.clock()
        state = self._state.get(key)
        if state is None or now - state[0] >= self.window:
            if state is not None and state[2]:
                event_dict["suppressed"] = state[2]
            self._state[key] = [now, 1, 0]
            return event_dict
        if state[1] < self.burst:
            state[1] += 1
            return event_dict
        state[2] += 1
        raise structlog.DropEvent


def configure_logging(level: str = "INFO", json: bool | None = None) -> None:
    if json is None:
        json = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            RateLimiter(),
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
