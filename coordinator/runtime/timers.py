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
from collections.abc import Callable, Hashable
from typing import Any, Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now_ms(self) -> float: ...

    def wall_ms(self) -> int: ...

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable: ...

    def call_soon(self, callback: Callable[[], None]) -> None: ...


class TurnBudget:
    """How long timer firings may run back to back in one event-loop turn, shared by every
    KeyedTimers of a scheduler (one per shard: 50 shards firing in the same turn share it).

    The first firing of a turn starts the budget and asks the scheduler to call back "soon": an
    event loop runs that after every timer due in this turn (asyncio: in the next turn's ready
    queue; uvloop: in the idle phase after the timers), so the budget covers exactly one turn's
    timers. `work_clock` is real time, also under a fake scheduler (tests replace it)."""

    __slots__ = ("scheduler", "limit_s", "work_clock", "_stop_at")

    def __init__(self, scheduler: Scheduler, limit_s: float | None = None,
                 work_clock: Callable[[], float] = time.perf_counter) -> None:
        self.scheduler = scheduler
        self.limit_s = FIRING_BUDGET_S if limit_s is None else limit_s
        self.work_clock = work_clock
        self._stop_at: float | None = None

    def stop_at(self) -> float:
        """The work_clock time at which this turn's timer work should stop."""
        if self._stop_at is None:
            self._stop_at = self.work_clock() + self.limit_s
            self.scheduler.call_soon(self._next_turn)
        return self._stop_at

    def _next_turn(self) -> None:
        self._stop_at = None


class LoopScheduler:
    """Timers on an asyncio event loop; monotonic time is the loop's clock."""

    __slots__ = ("loop", "turn_budget")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.turn_budget = TurnBudget(self)

    def now_ms(self) -> float:
        return self.loop.time() * 1000.0

    def wall_ms(self) -> int:
        return int(time.time() * 1000)

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable:
        return self.loop.call_at(when_ms / 1000.0, callback, *args)

    def call_soon(self, callback: Callable[[], None]) -> None:
        self.loop.call_soon(callback)


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
        self._heap: list[tuple[float, int, _FakeHandle, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self.turn_budget = TurnBudget(self)

    def now_ms(self) -> float:
        return self._now

    def wall_ms(self) -> int:
        return self._wall_base + int(self._now)

    def call_at_ms(self, when_ms: float, callback: Callable[..., None], *args: Any) -> Cancellable:
        handle = _FakeHandle()
        heapq.heappush(self._heap, (when_ms, next(self._seq), handle, callback, args))
        return handle

    def call_soon(self, callback: Callable[[], None]) -> None:
        """After whatever is due now and was scheduled before (as a loop's next turn)."""
        self.call_at_ms(self._now, callback)

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


class KeyedTimers:
    """At most one pending operation per key; a replaced or cancelled one never runs.

    One heap of `(when_ms, seq, key)` and ONE scheduler timer, armed at the earliest deadline
    (as Kafka's SystemTimer keeps its own wheel under one thread): a session timer lives for a
    whole session timeout, and one event-loop handle, bound method and args tuple per key
    were ~40% of the heartbeat CPU and most of what the cyclic GC's full collections walked.
    Heap entries hold only atomic values, so the GC untracks them. A key's live entry is the
    very tuple in `_entries`; an entry popped that is not it (replaced or cancelled) is skipped.
    Callbacks are stored per key as given, so callers that pass one bound method plus atomic
    arguments (not a closure per arm) add no GC-tracked object per key.

    What a callback returns, if not None, goes to `on_result`: a shard's timers hand it the
    records a group timer operation decided, and the shard writes them (as Kafka's runtime
    appends the CoordinatorResult of a timer's TimeoutOperation).
    """

    __slots__ = ("scheduler", "on_error", "on_result", "batch", "budget", "_entries", "_callbacks", "_args",
                 "_heap", "_seq", "_handle", "_armed_ms")

    def __init__(self, scheduler: Scheduler, on_error: Callable[[Hashable, BaseException], None] | None = None,
                 on_result: Callable[[Any], Any] | None = None) -> None:
        self.scheduler = scheduler
        self.on_error = on_error
        self.on_result = on_result
        self.batch = FIRING_BATCH
        self.budget: TurnBudget = getattr(scheduler, "turn_budget", None) or TurnBudget(scheduler)
        self._entries: dict[Hashable, tuple[float, int, Hashable]] = {}
        self._callbacks: dict[Hashable, Callable[..., Any]] = {}
        self._args: dict[Hashable, tuple[Any, ...]] = {}  # each callback's arguments
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = 0
        self._handle: Cancellable | None = None
        self._armed_ms = _NEVER  # deadline of the scheduler timer; _FIRING: none, re-armed after

    def schedule(self, key: Hashable, delay_ms: float, callback: Callable[..., Any], *args: Any) -> None:
        self.schedule_at(key, self.scheduler.now_ms() + max(delay_ms, 0.0), callback, *args)

    def schedule_at(self, key: Hashable, when_ms: float, callback: Callable[..., Any], *args: Any) -> None:
        """Run `callback(*args)` at `when_ms`, replacing what `key` had pending."""
        self._seq = seq = self._seq + 1
        entry = (when_ms, seq, key)
        self._entries[key] = entry
        self._callbacks[key] = callback
        self._args[key] = args
        heap = self._heap
        heapq.heappush(heap, entry)
        if when_ms < self._armed_ms:
            self._arm(when_ms)
        elif len(heap) > 2 * len(self._entries) + _COMPACT_SLACK and self._armed_ms != _FIRING:
            self._compact()

    def cancel(self, key: Hashable) -> None:
        if self._entries.pop(key, None) is not None:  # its heap entry goes stale
            del self._callbacks[key]
            del self._args[key]

    def deadline(self, key: Hashable) -> float | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def cancel_all(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_ms = _NEVER
        self._entries.clear()
        self._callbacks.clear()
        self._args.clear()
        self._heap.clear()

    def _arm(self, when_ms: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_ms = when_ms
        self._handle = self.scheduler.call_at_ms(when_ms, self._fire)

    def _compact(self) -> None:
        """Drop stale entries once they outnumber live ones (cancel-heavy keys like join timers)."""
        self._heap[:] = self._entries.values()
        heapq.heapify(self._heap)

    def _fire(self) -> None:
        """Run every live entry due by the armed deadline, then re-arm at the earliest left.

        The cutoff is the armed deadline, not the clock: an event loop may run a timer up to
        its clock resolution early. Entries scheduled while firing (seq above `last`) wait for
        the re-arm, so a callback that re-schedules itself at once cannot spin here. At most
        `batch` operations run per firing, and none once the scheduler's `TurnBudget` (~1 ms
        for all shards' firings in one loop turn) is spent: members that joined together have
        session timers due together (100,000 lazy re-arms every session timeout), and the rest
        wait one loop turn (the re-arm is in the past), so reads and answers go between short
        bursts instead of queueing behind one long one. At least one operation runs per firing,
        so the timers always progress.
        """
        cutoff = max(self._armed_ms, self.scheduler.now_ms())
        self._handle = None
        self._armed_ms = _FIRING
        last = self._seq
        heap, entries = self._heap, self._entries
        failure: BaseException | None = None
        deferred: list[tuple[float, int, Hashable]] = []
        budget = self.batch
        clock = self.budget.work_clock
        stop_at = self.budget.stop_at()
        on_result = self.on_result
        try:
            while budget and heap and heap[0][0] <= cutoff:
                entry = heapq.heappop(heap)
                key = entry[2]
                if entries.get(key) is not entry:
                    continue  # replaced or cancelled
                if entry[1] > last:
                    deferred.append(entry)
                    continue
                del entries[key]
                budget -= 1
                callback = self._callbacks.pop(key)
                args = self._args.pop(key)
                try:
                    result = callback(*args)
                    if result is not None and on_result is not None:
                        on_result(result)
                except Exception as exc:  # one failing timer must not stop the others, nor the loop
                    if self.on_error is not None:
                        self.on_error(key, exc)
                    elif failure is None:
                        failure = exc
                if clock() >= stop_at:
                    break
        finally:
            for entry in deferred:
                heapq.heappush(heap, entry)
            self._armed_ms = _NEVER
            while heap and entries.get(heap[0][2]) is not heap[0]:
                heapq.heappop(heap)
            if heap:
                self._arm(heap[0][0])
        if failure is not None:
            raise failure


# ~1-3 us per session-timer operation: a batch holds the loop for a few ms at most, and the turn
# budget all shards' firings for about one ms (whatever one operation costs on a loaded core)
FIRING_BATCH = 1000
FIRING_BUDGET_S = 0.001
_NEVER = float("inf")
_FIRING = float("-inf")
_COMPACT_SLACK = 1024
