"""What taking, giving up and losing a partition does on this node (the Reconciler's OwnershipHooks).

take: open the partition's PostgreSQL log at the acquired epoch (a fresh local replica of its rows)
and hand it to the offsets runtime (an __consumer_offsets partition: LOADING, replay, ACTIVE) or to
the data plane (a topic partition, led at the wire's constant leader epoch: state.WIRE_LEADER_EPOCH)
-- Kafka's immigration. A take that fails raises: the Reconciler
tries again at its next round. give_up: the hand-off (queued writes finish, unload, close) before
the Reconciler releases the row. lost: fenced or the lease lapsed -- unload at once; nothing can be
flushed, and nothing unflushed was ever answered as a success.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

import structlog

from coordinator.cluster.log_factory import LogFactory
from coordinator.cluster.state import WIRE_LEADER_EPOCH
from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo

log = structlog.get_logger(__name__)

PartitionKey = tuple[uuid.UUID, int]


class Owned(NamedTuple):
    topic: TopicInfo
    epoch: int
    log: Any  # PgPartitionLog


class PartitionHooks:
    def __init__(self, topics: TopicCatalog, offsets: Any, data: Any, logs: LogFactory) -> None:
        self.topics = topics
        self.offsets = offsets
        self.data = data
        self.logs = logs
        self.owned: dict[PartitionKey, Owned] = {}

    async def take(self, topic_id: uuid.UUID, partition: int, epoch: int) -> None:
        topic = self.topics.by_id(topic_id)
        if topic is None:
            await self.topics.refresh()  # created by another node a moment ago
            topic = self.topics.by_id(topic_id)
            if topic is None:
                raise LookupError(f"no topic with id {topic_id}")
        if topic.internal:
            plog = await self.logs.open_offsets_partition(partition, epoch)
        else:
            plog = await self.logs.open_topic_partition(topic, partition, epoch)
        key = (topic_id, partition)
        self.owned[key] = Owned(topic, epoch, plog)
        try:
            if topic.internal:
                await self.offsets.take(partition, plog)
            else:
                await self.data.take_partition(topic.name, partition, plog, WIRE_LEADER_EPOCH)
        except BaseException:
            self.owned.pop(key, None)
            await plog.close()
            raise
        log.info("cluster.partition.taken", topic=topic.name, partition=partition, epoch=epoch)

    async def give_up(self, topic_id: uuid.UUID, partition: int) -> None:
        owned = self.owned.pop((topic_id, partition), None)
        if owned is None:
            return
        if owned.topic.internal:
            await self.offsets.give_up(partition)
        else:
            await self.data.give_up_partition(owned.topic.name, partition)
        log.info("cluster.partition.given_up", topic=owned.topic.name, partition=partition, epoch=owned.epoch)

    def lost(self, topic_id: uuid.UUID, partition: int) -> None:
        owned = self.owned.pop((topic_id, partition), None)
        if owned is None:
            return
        if owned.topic.internal:
            self.offsets.lost(partition)
        else:
            self.data.lose_partition(owned.topic.name, partition)
        log.warning("cluster.partition.lost", topic=owned.topic.name, partition=partition, epoch=owned.epoch)

    def broken(self) -> list[tuple[PartitionKey, Owned]]:
        """Owned partitions whose log failed (a failed or fenced commit): they must be reloaded or dropped."""
        return [(key, owned) for key, owned in self.owned.items() if owned.log.failed is not None]
