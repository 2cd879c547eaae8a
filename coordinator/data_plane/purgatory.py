"""Delayed fetches: a Fetch that found fewer than min_bytes waits here, without polling.

Each waiting fetch is one future plus one loop timer (max_wait_ms). The append path
calls `on_append(key, nbytes)` when bytes of a partition become readable (its high
watermark moved); every fetch watching that partition subtracts them from what it
still needs and completes when it has enough. The timer completes it otherwise.
Completion only wakes the handler, which reads the logs again and answers, as
Kafka's DelayedFetch.onComplete does. Deleting a topic wakes its watchers too.
"""

from __future__ import annotations

import asyncio
from typing import Hashable, Iterable


class DelayedFetch:
    __slots__ = ("future", "keys", "needed", "timer", "purgatory")

    def __init__(self, purgatory: "FetchPurgatory", future: asyncio.Future, keys: tuple, needed: int) -> None:
        self.purgatory = purgatory
        self.future = future
        self.keys = keys
        self.needed = needed
        self.timer: asyncio.TimerHandle | None = None

    def complete(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.purgatory._unwatch(self)
        if not self.future.done():
            self.future.set_result(None)


class FetchPurgatory:
    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[DelayedFetch]] = {}

    def park(self, keys: Iterable[Hashable], needed_bytes: int, timeout_s: float) -> asyncio.Future:
        """A future completed when `needed_bytes` more bytes arrive on `keys` or after `timeout_s`."""
        loop = asyncio.get_running_loop()
        delayed = DelayedFetch(self, loop.create_future(), tuple(dict.fromkeys(keys)), needed_bytes)
        for key in delayed.keys:
            self._watchers.setdefault(key, set()).add(delayed)
        delayed.timer = loop.call_later(max(0.0, timeout_s), delayed.complete)
        # a client that goes away cancels nothing here: the timer bounds the entry's life
        return delayed.future

    def on_append(self, key: Hashable, nbytes: int) -> None:
        watchers = self._watchers.get(key)
        if not watchers:
            return
        for delayed in list(watchers):
            delayed.needed -= nbytes
            if delayed.needed <= 0:
                delayed.complete()

    def wake(self, key: Hashable) -> None:
        for delayed in list(self._watchers.get(key, ())):
            delayed.complete()

    def waiting(self) -> int:
        return len({d for watchers in self._watchers.values() for d in watchers})

    def _unwatch(self, delayed: DelayedFetch) -> None:
        for key in delayed.keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.discard(delayed)
                if not watchers:
                    del self._watchers[key]
