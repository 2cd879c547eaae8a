"""Recovery without a restart: re-take partitions whose PostgreSQL log broke.

When PostgreSQL goes away, a partition's log fails every waiting write (clients get retriable
errors, never a success) and refuses more. The supervisor notices, unloads the partition and opens
it again from the committed rows at the same epoch -- retrying with exponential back-off while
PostgreSQL stays away. A fenced log is not retried: another node took the partition, so it is
dropped here (`lost`), and the Reconciler sees the new owner at its next refresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from coordinator.cluster.partition_hooks import PartitionHooks, PartitionKey
from storage.pg.errors import FencedError

log = structlog.get_logger(__name__)

CHECK_SECONDS = 0.1
FIRST_BACKOFF_SECONDS = 0.1
MAX_BACKOFF_SECONDS = 5.0


class LogSupervisor:
    def __init__(self, hooks: PartitionHooks, clock: Callable[[], float] = time.monotonic) -> None:
        self.hooks = hooks
        self.clock = clock
        self._backoff: dict[PartitionKey, tuple[float, float]] = {}  # key -> (next try, delay)
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            try:
                await self.check()
            except Exception:
                log.exception("cluster.supervisor.failed")

    async def check(self) -> None:
        """One round: drop fenced partitions, re-take broken and pending ones whose back-off passed."""
        for key, owned in self.hooks.broken():
            if isinstance(owned.log.failed, FencedError):
                self.hooks.lost(*key)
            elif key not in self._backoff:
                log.warning("cluster.partition.log_broken", topic_id=str(key[0]), partition=key[1],
                            error=repr(owned.log.failed))
        now = self.clock()
        for key in {*self.hooks.pending, *(key for key, _ in self.hooks.broken())}:
            due, delay = self._backoff.get(key, (now, FIRST_BACKOFF_SECONDS))
            if due > now:
                continue
            if await self.hooks.retake(key):
                self._backoff.pop(key, None)
                log.info("cluster.partition.recovered", topic_id=str(key[0]), partition=key[1])
            else:
                self._backoff[key] = (self.clock() + delay, min(delay * 2, MAX_BACKOFF_SECONDS))
        for key in [k for k in self._backoff if k not in self.hooks.pending and k not in self.hooks.owned]:
            del self._backoff[key]  # given up or lost meanwhile
