"""What taking, giving up and losing a partition does on this node (the Reconciler's hooks).

take: open the partition's PostgreSQL log at the acquired epoch (a fresh local replica of its rows)
and hand it to the offsets runtime (an __consumer_offsets partition: LOADING, replay, ACTIVE) or to
the data plane (a topic partition) -- Kafka's immigration. give_up: the hand-off (queued writes
finish, unload, close) before the Reconciler releases the row. lost: fenced or the lease lapsed --
unload at once; nothing can be flushed, and nothing unflushed was ever answered as a success.

A log that breaks while owned (PostgreSQL lost: every waiting write failed with a retriable
error) is re-taken by the LogSupervisor through `retake`: unload, open again from the rows at the
same epoch. A fenced log is dropped: another node owns the partition now.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import structlog

log = structlog.get_logger(__name__)

PartitionKey = tuple[uuid.UUID, int]


class Owned(NamedTuple):
    epoch: int
    log: Any  # PgPartitionLog


class PartitionHooks:
    """`open_log(topic, partition, epoch)` opens a partition's PostgreSQL log (PgPartitionLog.open)."""

    def __init__(self, topics: Any, offsets: Any, data: Any,
                 open_log: Callable[[Any, int, int], Awaitable[Any]]) -> None:
        self.topics = topics
        self.offsets = offsets
        self.data = data
        self.open_log = open_log
        self.owned: dict[PartitionKey, Owned] = {}
        self.pending: dict[PartitionKey, int] = {}  # acquired, log not open (yet): epoch
        self.opening: set[PartitionKey] = set()  # an open in progress (take or retake)

    # ------------------------------------------------------------ the hooks protocol
    async def take(self, topic_id: uuid.UUID, partition: int, epoch: int) -> None:
        """Immigration. A log that cannot be opened now (PostgreSQL away) stays pending: the
        supervisor retries it; meanwhile requests for it get retriable errors."""
        key = (topic_id, partition)
        self.pending[key] = epoch
        await self._open(key, epoch)

    async def give_up(self, topic_id: uuid.UUID, partition: int) -> None:
        key = (topic_id, partition)
        self.pending.pop(key, None)
        owned = self.owned.pop(key, None)
        if owned is None:
            return
        topic = self.topics.by_id(topic_id)
        if topic is not None and topic.internal:
            await self.offsets.give_up(partition)
        elif topic is not None:
            await self.data.give_up_partition(topic.name, partition)
        else:
            await owned.log.close()
        log.info("cluster.partition.given_up", topic_id=str(topic_id), partition=partition, epoch=owned.epoch)

    def lost(self, topic_id: uuid.UUID, partition: int) -> None:
        key = (topic_id, partition)
        self.pending.pop(key, None)
        owned = self.owned.pop(key, None)
        if owned is None:
            return
        self._unload(topic_id, partition, owned)
        log.warning("cluster.partition.lost", topic_id=str(topic_id), partition=partition, epoch=owned.epoch)

    # ------------------------------------------------------------ used by the supervisor
    def broken(self) -> list[tuple[PartitionKey, Owned]]:
        """Owned partitions whose log failed (a failed or fenced commit)."""
        return [(key, owned) for key, owned in self.owned.items() if owned.log.failed is not None]

    async def retake(self, key: PartitionKey) -> bool:
        """Unload a broken (or pending) partition and open it again at its epoch; True when open."""
        owned = self.owned.pop(key, None)
        if owned is not None:
            self._unload(key[0], key[1], owned)
            self.pending[key] = owned.epoch
        epoch = self.pending.get(key)
        return epoch is not None and await self._open(key, epoch)

    # ------------------------------------------------------------ internals
    async def _open(self, key: PartitionKey, epoch: int) -> bool:
        if key in self.opening:
            return False
        self.opening.add(key)
        try:
            return await self._open_once(key, epoch)
        finally:
            self.opening.discard(key)

    async def _open_once(self, key: PartitionKey, epoch: int) -> bool:
        topic_id, partition = key
        topic = self.topics.by_id(topic_id)
        if topic is None:
            await self.topics.refresh()  # created by another node a moment ago
            topic = self.topics.by_id(topic_id)
        if topic is None:
            log.warning("cluster.partition.unknown_topic", topic_id=str(topic_id), partition=partition)
            return False
        try:
            plog = await self.open_log(topic, partition, epoch)
        except Exception as exc:  # PostgreSQL away, or fenced already: the supervisor decides
            log.warning("cluster.partition.open_failed", topic=topic.name, partition=partition, epoch=epoch,
                        error=repr(exc))
            return False
        if self.pending.get(key) != epoch:  # given up or lost while opening
            await plog.close()
            return False
        del self.pending[key]
        self.owned[key] = Owned(epoch, plog)
        if topic.internal:
            await self.offsets.take(partition, plog)
        else:
            await self.data.take_partition(topic.name, partition, plog)
        log.info("cluster.partition.taken", topic=topic.name, partition=partition, epoch=epoch)
        return True

    def _unload(self, topic_id: uuid.UUID, partition: int, owned: Owned) -> None:
        topic = self.topics.by_id(topic_id)
        if topic is not None and topic.internal:
            self.offsets.lost(partition)
        elif topic is not None:
            self.data.lose_partition(topic.name, partition)
        owned.log.abandon()
