"""Recovery without a restart: a partition whose PostgreSQL log broke is unloaded and taken again.

When PostgreSQL goes away (or the commit outcome is unknown), a partition's log fails every waiting
write -- clients get retriable errors, never a success -- and refuses more. The supervisor notices,
unloads the partition (`lost`) and tells the Reconciler to forget it (`forget`): its next round
takes the partition again (a new epoch, a fresh replica of the committed rows), retrying at every
round while PostgreSQL stays away. A fenced log goes the same way, and then the next round sees the
other owner and leaves the partition to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from coordinator.cluster.partition_hooks import PartitionHooks, PartitionKey

log = structlog.get_logger(__name__)

CHECK_SECONDS = 0.1


class LogSupervisor:
    def __init__(self, hooks: PartitionHooks, forget: Callable[[PartitionKey], None]) -> None:
        self.hooks = hooks
        self.forget = forget
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
                self.check()
            except Exception:
                log.exception("cluster.supervisor.failed")

    def check(self) -> int:
        """Unload and forget every owned partition whose log broke; returns how many."""
        broken = self.hooks.broken()
        for key, owned in broken:
            log.warning("cluster.partition.log_broken", topic=owned.topic.name, partition=key[1], epoch=owned.epoch,
                        error=repr(owned.log.failed))
            self.hooks.lost(*key)
            self.forget(key)
        return len(broken)
