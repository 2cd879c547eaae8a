"""The server's offsets machinery: durable log, loading, periodic expiry and staging checks.

App builds one of these; `start()` opens every __consumer_offsets partition log (tail
recovery) and starts loading them in the background -- the server accepts connections
meanwhile, groups of a loading partition answer COORDINATOR_LOAD_IN_PROGRESS -- and
arms the periodic tasks: offset expiry every offsets.retention.check.interval.ms, and
the staging check (on each retention check, or every offsets.staging.check.interval.ms
when that is set). `stop()` waits for loading, flushes and closes the logs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from coordinator.groups.settings import GroupSettings
from coordinator.runtime.coordinator import GroupCoordinator
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.loader import load_all
from coordinator.runtime.staging import check_all

log = structlog.get_logger("coordinator.offsets.manager")


class OffsetsRuntime:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.durable = DurableLog(config.log_dirs, flush_policy=config.offsets_log_flush_policy,
                                  flush_interval_ms=config.log_flush_interval_ms,
                                  segment_bytes=config.offsets_topic_segment_bytes,
                                  max_batch_bytes=config.message_max_bytes)
        partitions = range(config.offsets_topic_num_partitions)
        self.coordinator = GroupCoordinator(GroupSettings.from_config(config), record_log=self.durable,
                                            owned=partitions)
        self.loading: asyncio.Task | None = None
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        for partition in sorted(self.coordinator.owned or ()):
            self.durable.open_partition(partition)
        shards = self.coordinator.owned_shards()
        snapshot_root = self.config.offsets_snapshot_dir or self.config.log_dirs
        self.loading = asyncio.ensure_future(
            load_all(shards, self.durable, snapshot_root, self.config.offsets_load_buffer_size))
        retention_every = self.config.offsets_retention_check_interval_ms
        staging_every = self.config.offsets_staging_check_interval_ms
        self._tasks.append(asyncio.ensure_future(self._every(retention_every, self._retention_check,
                                                             staging_every == 0)))
        if staging_every:
            self._tasks.append(asyncio.ensure_future(self._every(staging_every, self._staging_check)))

    async def _every(self, interval_ms: int, action, *args: Any) -> None:
        if self.loading is not None:
            await asyncio.shield(self.loading)
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await action(*args)
            except Exception:
                log.exception("periodic offsets task failed", task=action.__name__)

    async def _retention_check(self, with_staging: bool = False) -> None:
        self.coordinator.expire_offsets()
        if with_staging:
            await self._staging_check()

    async def _staging_check(self) -> None:
        await check_all(self.coordinator, self.durable)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.loading is not None and not self.loading.done():
            self.loading.cancel()
            await asyncio.gather(self.loading, return_exceptions=True)
        await self.durable.close()
