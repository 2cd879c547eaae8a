"""The server's offsets machinery: durable log, loading, periodic expiry and staging checks.

App builds one of these; `start()` opens every __consumer_offsets partition log (tail
recovery) and starts loading them in the background -- the server accepts connections
meanwhile, groups of a loading partition answer COORDINATOR_LOAD_IN_PROGRESS -- and
arms the periodic tasks: offset expiry every offsets.retention.check.interval.ms, and
the staging check (on each retention check, or every offsets.staging.check.interval.ms
when that is set). `stop()` waits for loading, flushes and closes the logs.

Cluster mode (`take_all=False`) owns no partition at start; ownership changes at run time,
as Kafka's GroupMetadataManager loads and unloads offsets partitions on leader election:
`take(partition, log)` (immigration: the shard LOADING, replay of the log, ACTIVE),
`give_up(partition)` (emigration: the writes in flight settle, then the shard unloads --
its groups and timers go, waiting joins/syncs get NOT_COORDINATOR -- and the log closes) and
`lost(partition)` (fenced or the lease lapsed: the same at once, nothing waited for).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

import structlog

from coordinator.completion import Completion
from coordinator.groups.settings import GroupSettings
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.journal import Write
from coordinator.runtime.loader import LoadStats, load_all, load_logged
from coordinator.runtime.shard import ShardState
from coordinator.runtime.staging import check_all
from primitives.histogram import Histogram
from storage.log_protocol import PartitionLogProtocol

if TYPE_CHECKING:
    from coordinator.config import Config

log = structlog.get_logger("coordinator.offsets.manager")


class OffsetsRuntime:
    def __init__(self, config: Config, take_all: bool = True) -> None:
        """`take_all`: local mode, every partition is ours from the start; else none until `take`."""
        self.config = config
        self.durable = DurableLog(config.log_dirs, flush_policy=config.offsets_log_flush_policy,
                                  flush_interval_ms=config.log_flush_interval_ms,
                                  segment_bytes=config.offsets_topic_segment_bytes,
                                  max_batch_bytes=config.message_max_bytes)
        partitions = range(config.offsets_topic_num_partitions) if take_all else ()
        self.coordinator = GroupCoordinator(GroupSettings.from_config(config), record_log=self.durable,
                                            owned=partitions)
        self.loading: asyncio.Task[list[LoadStats]] | None = None
        self.loads: dict[int, asyncio.Task[LoadStats]] = {}  # partition -> its load after `take`, while it runs
        self._tasks: list[asyncio.Task[None]] = []
        self.load_seconds = Histogram()  # how long each partition took to load (the metrics endpoint)
        #: told when partitions finished loading (the app: orphaned transactional offsets are looked for then)
        self.on_loaded: Callable[[], None] | None = None

    @property
    def snapshot_root(self) -> str:
        return self.config.offsets_snapshot_dir or self.config.log_dirs

    async def start(self) -> None:
        self.durable.open_partitions(sorted(self.coordinator.owned or ()))
        shards = self.coordinator.owned_shards()
        self.loading = asyncio.ensure_future(
            load_all(shards, self.durable, self.snapshot_root, self.config.offsets_load_buffer_size))
        self.loading.add_done_callback(self._all_loaded)
        retention_every = self.config.offsets_retention_check_interval_ms
        staging_every = self.config.offsets_staging_check_interval_ms
        self._tasks.append(asyncio.ensure_future(self._every(retention_every, self._retention_check,
                                                             staging_every == 0)))
        if staging_every:
            self._tasks.append(asyncio.ensure_future(self._every(staging_every, self._staging_check)))

    async def _every(self, interval_ms: int, action: Callable[..., Awaitable[object]], *args: object) -> None:
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

    # --- ownership at run time (cluster mode) -------------------------------------------

    async def take(self, partition: int, plog: PartitionLogProtocol) -> None:
        """Own `partition` with its opened log: the shard is LOADING (its groups answer
        COORDINATOR_LOAD_IN_PROGRESS) until the load, started here in the background, makes
        it ACTIVE and re-arms the members' session timers (loader.on_loaded)."""
        await self._cancel_load(partition)
        shard = self.coordinator.shards.get(partition)
        if shard is not None and shard.state is not ShardState.UNLOADED:  # taken again, never given up
            self.coordinator.unload(partition)
        old = self.durable.detach(partition)
        if old is not None and old is not plog:
            await old.close()
        self.durable.attach(partition, plog)
        shard = self.coordinator.take(partition)
        self.loads[partition] = task = asyncio.ensure_future(
            load_logged(shard, self.durable, self.snapshot_root, self.config.offsets_load_buffer_size))
        task.add_done_callback(partial(self._loaded, partition))

    def _loaded(self, partition: int, task: asyncio.Task[LoadStats]) -> None:
        if self.loads.get(partition) is task:
            del self.loads[partition]
        if not task.cancelled() and task.exception() is None:
            self._timed(task.result())

    def _all_loaded(self, task: asyncio.Task[list[LoadStats]]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._timed(*task.result())

    def _timed(self, *loads: LoadStats) -> None:
        for stats in loads:
            if "ms" in stats:  # loaded (not failed, not unloaded meanwhile)
                self.load_seconds.observe(stats["ms"] / 1000)
        if self.on_loaded is not None:
            self.on_loaded()

    async def give_up(self, partition: int) -> None:
        """Hand `partition` off: the writes already made settle (durable or failed), then the
        shard unloads (NOT_COORDINATOR after) and the log is flushed and closed."""
        await self._cancel_load(partition)
        shard = self.coordinator.shards.get(partition)
        if shard is not None and shard.state is ShardState.ACTIVE:
            writes = shard.inflight.writes()  # every write of the shard until it settles
            self.durable.flush_queued()
            await _settled(writes)
        self.coordinator.unload(partition)
        await self.durable.close_partition(partition)

    def lost(self, partition: int) -> None:
        """`partition` is no longer ours (fenced, or our lease lapsed): unload now; writes in
        flight fail with NOT_COORDINATOR; the log is closed in the background."""
        load = self.loads.pop(partition, None)
        if load is not None:
            load.cancel()
        self.coordinator.unload(partition)
        plog = self.durable.detach(partition)
        if plog is not None:
            closing = asyncio.ensure_future(plog.close())
            closing.add_done_callback(_log_close_failure)

    async def _cancel_load(self, partition: int) -> None:
        load = self.loads.pop(partition, None)
        if load is not None and not load.done():
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        loads, self.loads = list(self.loads.values()), {}
        for load in loads:
            load.cancel()
        await asyncio.gather(*loads, return_exceptions=True)
        if self.loading is not None and not self.loading.done():
            self.loading.cancel()
            await asyncio.gather(self.loading, return_exceptions=True)
        await self.durable.close()


def _log_close_failure(closing: asyncio.Future[None]) -> None:
    if not closing.cancelled() and closing.exception() is not None:
        log.warning("closing a lost offsets partition log failed", error=repr(closing.exception()))


async def _settled(writes: list[Write]) -> None:
    """Until every write is settled, durable or failed (a failure was answered already)."""
    loop = asyncio.get_running_loop()
    for write in writes:
        if not write.done():
            settled: asyncio.Future[None] = loop.create_future()
            write.add_done_callback(partial(_set_done, settled))
            await settled


def _set_done(done: asyncio.Future[None], _write: Completion) -> None:
    if not done.done():
        done.set_result(None)
