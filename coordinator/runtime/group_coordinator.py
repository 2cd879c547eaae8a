"""The group coordinator of this node: all its shards, and the operations that span them.

Routes a group id to the shard of its offsets partition (GroupCoordinatorService's
role in Kafka): single-group requests go to `shard_for(group_id)`; DeleteGroups and the
periodic offset expiry run on each shard in turn, each shard writing its own records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import NotCoordinator, write_error_code
from coordinator.groups.classic_group import ClassicGroup
from coordinator.groups.consumer.topic_view import NO_TOPICS, TopicView
from coordinator.groups.settings import GroupSettings
from coordinator.groups.stats import GroupStats
from coordinator.runtime.shard import Shard, ShardState
from coordinator.runtime.timers import LoopScheduler, Scheduler
from coordinator.runtime.writes import MemoryLog, PendingWrite, RecordLog
from rules.placement import partition_for

log = structlog.get_logger(__name__)

_SHARD_CACHE_LIMIT = 100_000


class GroupCoordinator:
    """All shards of this node; routes a group id to its shard."""

    def __init__(self, settings: GroupSettings, scheduler: Scheduler | None = None,
                 record_log: RecordLog | None = None, owned: Iterable[int] | None = None) -> None:
        """`owned`: the partitions this node loads (they start LOADING); None = every
        partition, ACTIVE at once with nothing to load (unit tests, MemoryLog)."""
        self.settings = settings
        self._scheduler = scheduler
        self.record_log: RecordLog = record_log if record_log is not None else MemoryLog()
        self.shards: dict[int, Shard] = {}
        self._shard_by_group: dict[str, Shard] = {}
        self.owned: set[int] | None = None if owned is None else set(owned)
        self.stats = GroupStats()  # every shard's group events, for the metrics endpoint
        self._topic_view: TopicView = NO_TOPICS
        self.share_wiring: Callable[[Shard], None] | None = None  # share groups' links, set on each new shard

    @property
    def topic_view(self) -> TopicView:
        """The topics consumer groups subscribe to (Services gives the data plane's catalog)."""
        return self._topic_view

    @topic_view.setter
    def topic_view(self, view: TopicView) -> None:
        self._topic_view = view
        for shard in self.shards.values():
            shard.consumer.ops.topics = view

    @property
    def scheduler(self) -> Scheduler:
        if self._scheduler is None:  # the server's loop, known only once it runs
            self._scheduler = LoopScheduler(asyncio.get_running_loop())
        return self._scheduler

    def shard_for(self, group_id: str) -> Shard:
        """The shard owning `group_id` (the hash is cached: heartbeats route per request)."""
        shard = self._shard_by_group.get(group_id)
        if shard is None:
            partition = partition_for(group_id, self.settings.offsets_partitions)
            shard = self.shards.get(partition)
            if shard is None:
                shard = self._new_shard(partition)
            if len(self._shard_by_group) >= _SHARD_CACHE_LIMIT:
                self._shard_by_group.clear()
            self._shard_by_group[group_id] = shard
        return shard

    def _new_shard(self, partition: int) -> Shard:
        shard = self.shards[partition] = Shard(partition, self.settings, self.scheduler, self.record_log, self.stats,
                                               self.topic_view)
        if self.share_wiring is not None:
            self.share_wiring(shard)
        if self.owned is not None:  # owned partitions load first; others are not ours
            shard.set_state(ShardState.LOADING if partition in self.owned else ShardState.UNLOADED)
        return shard

    def owned_shards(self) -> list[Shard]:
        """The shards of the owned partitions (created LOADING), in partition order."""
        return [self.shards.get(p) or self._new_shard(p) for p in sorted(self.owned or ())]

    def take(self, partition: int) -> Shard:
        """The partition is ours now: its shard goes LOADING (the loader makes it ACTIVE)."""
        if self.owned is None:
            self.owned = set(range(self.settings.offsets_partitions))
        self.owned.add(partition)
        shard = self.shards.get(partition) or self._new_shard(partition)
        shard.set_state(ShardState.LOADING)
        return shard

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.shard_for(group_id).groups.get(group_id)

    def all_shards(self) -> Iterator[Shard]:
        return iter(list(self.shards.values()))

    def unload(self, partition: int) -> None:
        """The hook for moving a partition to another node: see Shard.unload."""
        shard = self.shards.get(partition)
        if shard is None:
            shard = self.shards[partition] = Shard(partition, self.settings, self.scheduler, self.record_log,
                                                   self.stats, self.topic_view)
        shard.unload()
        if self.owned is not None:
            self.owned.discard(partition)

    # --- operations over several shards -------------------------------------------------

    async def delete_groups(self, group_ids: list[str | None]) -> list[tuple[str | None, ErrorCode]]:
        """DeleteGroups: each shard deletes its Empty groups in one write (Shard.delete_groups);
        the answers wait until the tombstones are written, and a failed write answers its
        groups with the write's error (the shard has restored them)."""
        results: dict[str | None, ErrorCode] = {}
        by_shard: dict[Shard, list[str]] = {}
        for group_id in dict.fromkeys(group_ids):  # KafkaApis: groupsNames.distinct
            if group_id is None:
                results[group_id] = ErrorCode.invalid_group_id
            else:
                results[group_id] = ErrorCode.none  # keeps the request's order; set below
                by_shard.setdefault(self.shard_for(group_id), []).append(group_id)
        writes: list[tuple[PendingWrite, dict[str, ErrorCode]]] = []
        for shard, ids in by_shard.items():
            answers, write = shard.delete_groups(ids)
            results.update(answers)
            if write is not None:
                writes.append((write, answers))
        for write, answers in writes:
            try:
                await write
            except Exception as exc:  # the write failed: these deletions are not durable
                code = write_error_code(exc)
                for group_id, answer in answers.items():
                    if answer is ErrorCode.none:
                        results[group_id] = code
        return list(results.items())

    async def complete_transaction(self, offsets_partition: int, producer_id: int, producer_epoch: int,
                                   commit: bool, coordinator_epoch: int) -> None:
        """GroupCoordinatorService.completeTransaction: write the producer's marker (a control batch) into the
        offsets partition; once it is durable the producer's pending offsets there are committed (where newer
        in the log than the committed one) or dropped (runtime/txn_offsets.py). Raises a KafkaError:
        NOT_COORDINATOR when the partition is not ours (or not hosted), COORDINATOR_LOAD_IN_PROGRESS while it
        loads, INVALID_PRODUCER_EPOCH for a marker older than the producer's transaction there, or the write's
        error (errors.write_error_code maps it)."""
        if not 0 <= offsets_partition < self.settings.offsets_partitions:
            raise NotCoordinator(f"no offsets partition {offsets_partition}")
        shard = self.shards.get(offsets_partition)
        if shard is None:
            if self.owned is not None and offsets_partition not in self.owned:
                raise NotCoordinator(f"offsets partition {offsets_partition} is not ours")
            shard = self._new_shard(offsets_partition)
        await shard.txn.complete(producer_id, producer_epoch, commit, coordinator_epoch)

    def expire_offsets(self) -> tuple[int, int]:
        """Kafka's periodic cleanupGroupMetadata over every shard (Shard.expire); logs Kafka's line."""
        started = time.monotonic()
        now_ms = self.scheduler.wall_ms()
        total_offsets = total_groups = 0
        for shard in self.all_shards():
            offsets, groups, write = shard.expire(now_ms, self.settings.offsets_retention_ms)
            total_offsets += offsets
            total_groups += groups
            if write is not None:
                write.add_callback(partial(_expiry_written, self.stats, shard.partition, offsets))
        elapsed = int((time.monotonic() - started) * 1000)
        log.info(f"Removed {total_offsets} expired offsets in {elapsed} milliseconds.",
                 offsets=total_offsets, groups_deleted=total_groups, ms=elapsed)
        return total_offsets, total_groups


def _expiry_written(stats: GroupStats, partition: int, offsets: int, error: BaseException | None) -> None:
    if error is not None:
        log.warning("writing expired offset tombstones failed", partition=partition, error=repr(error))
    else:
        stats.offsets_expired += offsets
