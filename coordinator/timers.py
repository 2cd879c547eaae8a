"""Keyed timers ("purgatory") over an injectable clock.

Kafka's new coordinator keeps its delayed operations in a timer keyed by string
(EventBasedCoordinatorTimer): scheduling a key replaces the operation already under it,
and an operation whose entry was replaced or cancelled is ignored when it fires. This is
the same, over a `Scheduler` so that unit tests drive time with `FakeScheduler.advance`
instead of sleeping, and the server uses the event loop (`LoopScheduler`).

Time is in milliseconds: `now_ms()` is monotonic (deadlines), `wall_ms()` is epoch time
(Kafka's currentStateTimestamp). Many shards share one scheduler; each shard owns its own
`KeyedTimers`, so a shard's keys never collide with another's.

The session timer of a member is not rescheduled per heartbeat: the heartbeat moves a
deadline stored on the member and the one armed timer re-arms itself at the new deadline
when it fires early (see rebalance.Rebalancer.touch_session).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Any, Callable, Hashable, Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now_ms(self) -> float: ...

    def wall_ms(self) -> int: ...

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable: ...


class LoopScheduler:
    """Timers on an asyncio event loop; monotonic time is the loop's clock."""

    __slots__ = ("loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def now_ms(self) -> float:
        return self.loop.time() * 1000.0

    def wall_ms(self) -> int:
        return int(time.time() * 1000)

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable:
        return self.loop.call_at(when_ms / 1000.0, callback, *args)


class _FakeHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeScheduler:
    """A manual clock for tests: nothing runs until `advance` moves time past it."""

    def __init__(self, start_ms: float = 0.0, wall_base_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._wall_base = wall_base_ms - int(start_ms)
        self._heap: list[tuple[float, int, _FakeHandle, Callable[..., None], tuple]] = []
        self._seq = itertools.count()

    def now_ms(self) -> float:
        return self._now

    def wall_ms(self) -> int:
        return self._wall_base + int(self._now)

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable:
        handle = _FakeHandle()
        heapq.heappush(self._heap, (when_ms, next(self._seq), handle, callback, args))
        return handle

    def advance(self, delta_ms: float = 0.0) -> None:
        """Move time forward, running every timer due by then in deadline order."""
        target = self._now + delta_ms
        while self._heap and self._heap[0][0] <= target:
            when, _seq, handle, callback, args = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self._now = max(self._now, when)
            callback(*args)
        self._now = target

    def pending(self) -> int:
        return sum(1 for entry in self._heap if not entry[2].cancelled)


class _Entry:
    __slots__ = ("when", "callback", "handle")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.handle: Cancellable | None = None


class KeyedTimers:
    """At most one pending operation per key; a replaced or cancelled one never runs."""

    __slots__ = ("scheduler", "_entries", "on_error")

    def __init__(self, scheduler: Scheduler, on_error: Callable[[Hashable, BaseException], None] | None = None) -> None:
        self.scheduler = scheduler
        self._entries: dict[Hashable, _Entry] = {}
        self.on_error = on_error

    def schedule(self, key: Hashable, delay_ms: float, callback: Callable[[], Any]) -> None:
        self.schedule_at(key, self.scheduler.now_ms() + max(delay_ms, 0.0), callback)

    def schedule_at(self, key: Hashable, when_ms: float, callback: Callable[[], Any]) -> None:
        old = self._entries.get(key)
        if old is not None and old.handle is not None:
            old.handle.cancel()
        entry = _Entry(when_ms, callback)
        self._entries[key] = entry
        # arguments, not a closure: a session timer lives for a whole session timeout, and every
        # object it keeps alive is one more for the cyclic GC's full collections to walk
        entry.handle = self.scheduler.call_at_ms(when_ms, self._fire, key, entry)

    def cancel(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None and entry.handle is not None:
            entry.handle.cancel()

    def deadline(self, key: Hashable) -> float | None:
        entry = self._entries.get(key)
        return None if entry is None else entry.when

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def cancel_all(self) -> None:
        for entry in self._entries.values():
            if entry.handle is not None:
                entry.handle.cancel()
        self._entries.clear()

    def _fire(self, key: Hashable, entry: _Entry) -> None:
        if self._entries.get(key) is not entry:
            return  # replaced or cancelled after the loop had already queued it: stale
        del self._entries[key]
        try:
            entry.callback()
        except Exception as exc:  # a timer must never take the event loop down
            if self.on_error is None:
                raise
            self.on_error(key, exc)
