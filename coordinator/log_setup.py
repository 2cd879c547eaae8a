"""structlog: JSON lines when stderr is not a terminal, readable output when it is.

Warnings and errors are rate-limited per event name (RateLimiter): a hostile or broken client that
makes the server warn on every request must not flood the log or spend the loop on writing it. And no
value is written whole past a bound (truncate_values): a log line quotes client strings (group ids,
topic names, reasons) that can be megabytes long.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import structlog
from structlog.typing import EventDict

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

    def __call__(self, logger: Any, method_name: str, event_dict: EventDict) -> EventDict:
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


MAX_VALUE_CHARS = 1024  # a field of a log line; a client's group id can be 32,767 bytes, a flexible one more
MAX_EXCEPTION_CHARS = 16384  # a formatted traceback, whose last line may quote a client's value


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more chars)"


def truncate_values(logger: Any, method_name: str, event_dict: EventDict) -> EventDict:
    """A structlog processor: every value is written at most MAX_VALUE_CHARS long (its repr, for
    what is not a string or a number), a traceback at most MAX_EXCEPTION_CHARS."""
    for key, value in event_dict.items():
        if value.__class__ in (int, float, bool) or value is None:
            continue
        text = value if isinstance(value, str) else repr(value)
        limit = MAX_EXCEPTION_CHARS if key == "exception" else MAX_VALUE_CHARS
        if len(text) > limit:
            event_dict[key] = _shortened(text, limit)
    return event_dict


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
            truncate_values,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
