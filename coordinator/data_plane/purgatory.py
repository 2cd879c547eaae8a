"""Delayed fetches: a Fetch that found fewer than min_bytes waits here, without polling.

Each waiting fetch is one future plus one loop timer (max_wait_ms). The append path
calls `on_append(key, nbytes, stable_nbytes)` when bytes of a partition become readable (its high
watermark moved); every fetch watching that partition subtracts them from what it
still needs and completes when it has enough: a read_committed fetch (`committed`) counts only
`stable_nbytes`, the bytes the last stable offset moved past (Kafka's DelayedFetch reads up to the
LSO for it), so it waits for a transaction's marker rather than for its records. The timer completes it otherwise.
Completion only wakes the handler, which reads the logs again and answers, as
Kafka's DelayedFetch.onComplete does. Deleting a topic wakes its watchers too.

Answers are woken in slices: at most WAKE_SLICE partitions' worth of fetches per loop
turn (each woken fetch leaves its partitions' watch lists and reads them all again), the
rest on the next turns, so a DeleteTopics or a common max_wait that wakes thousands of
wide fetches at once does not hold the event loop for seconds. A fetch woken but not yet
answered is `finished`: appends and wakes pass over it.

A fetch whose client goes away is released at once (`DelayedFetch.release`, called when
its connection closes): its timer may run for max_wait_ms, up to 24.8 days (Kafka does not
bound a consumer's max_wait), and the waiting handler holds the whole decoded request.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable, Iterable

WAKE_SLICE = 10_000  # partitions of woken fetches answered per loop turn (~10 µs each: read, build, encode)


class DelayedFetch:
    __slots__ = ("future", "keys", "needed", "timer", "purgatory", "finished", "watching", "committed")

    def __init__(self, purgatory: FetchPurgatory, future: asyncio.Future, keys: tuple, needed: int,
                 committed: bool = False) -> None:
        self.purgatory = purgatory
        self.future = future
        self.keys = keys
        self.needed = needed
        self.committed = committed
        self.timer: asyncio.TimerHandle | None = None
        self.finished = False  # woken (answered now or in a later slice) or released
        self.watching = True  # in the watch lists of its keys

    def complete(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._stop_timer()
        self.purgatory._answer_soon(self)

    def release(self) -> None:
        """The answer is no longer wanted: leave the purgatory and cancel the future. The future may
        be cancelled already (the connection cancels the waiting handler's task first, and a task's
        cancel cancels the future it awaits): the watch lists are left all the same, else every
        released fetch stayed in them for good, and a DeleteTopics walked them all at once."""
        self.finished = True
        self._stop_timer()
        self.purgatory._unwatch(self)
        if not self.future.done():
            self.future.cancel()

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class FetchPurgatory:
    def __init__(self, wake_slice: int = WAKE_SLICE) -> None:
        self._watchers: dict[Hashable, set[DelayedFetch]] = {}
        self._ready: deque[DelayedFetch] = deque()  # woken, waiting for a later turn's slice
        self._spent = 0  # partitions of the fetches answered this turn
        self._slice = wake_slice
        self._turn_scheduled = False

    def park(self, keys: Iterable[Hashable], needed_bytes: int, timeout_s: float,
             committed: bool = False) -> DelayedFetch:
        """A DelayedFetch whose future completes when `needed_bytes` more bytes arrive on `keys`
        (below the last stable offset when `committed`) or after `timeout_s`; `release()` it if the
        answer is no longer wanted."""
        loop = asyncio.get_running_loop()
        delayed = DelayedFetch(self, loop.create_future(), tuple(dict.fromkeys(keys)), needed_bytes, committed)
        for key in delayed.keys:
            self._watchers.setdefault(key, set()).add(delayed)
        delayed.timer = loop.call_later(max(0.0, timeout_s), delayed.complete)
        return delayed

    def on_append(self, key: Hashable, nbytes: int, stable_nbytes: int | None = None) -> None:
        """`nbytes` became readable on `key`, `stable_nbytes` of them (default: all) below the LSO."""
        watchers = self._watchers.get(key)
        if not watchers:
            return
        stable = nbytes if stable_nbytes is None else stable_nbytes
        for delayed in list(watchers):
            if not delayed.finished:
                delayed.needed -= stable if delayed.committed else nbytes
                if delayed.needed <= 0:
                    delayed.complete()

    def wake(self, key: Hashable) -> None:
        for delayed in self._watchers.pop(key, ()):  # nobody watches the key any more
            delayed.complete()

    def waiting(self) -> int:
        return len({d for watchers in self._watchers.values() for d in watchers if not d.finished})

    def _answer_soon(self, delayed: DelayedFetch) -> None:
        """Wake the fetch now if this turn's slice has room and none waits before it, else later."""
        if not self._ready and self._spent < self._slice:
            self._answer(delayed)
        else:
            self._ready.append(delayed)
        if not self._turn_scheduled:
            self._turn_scheduled = True
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _answer(self, delayed: DelayedFetch) -> None:
        self._unwatch(delayed)
        if not delayed.future.done():  # not released (nor its waiter cancelled) meanwhile
            self._spent += len(delayed.keys)
            delayed.future.set_result(None)

    def _next_turn(self) -> None:
        self._turn_scheduled = False
        self._spent = 0
        ready = self._ready
        while ready and self._spent < self._slice:
            self._answer(ready.popleft())
        if ready:
            self._turn_scheduled = True
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _unwatch(self, delayed: DelayedFetch) -> None:
        if not delayed.watching:
            return
        delayed.watching = False
        for key in delayed.keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.discard(delayed)
                if not watchers:
                    del self._watchers[key]
