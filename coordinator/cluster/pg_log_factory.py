"""Cluster mode's LogFactory: a partition's log is a PgPartitionLog, writable only at the ownership epoch.

Opening copies the partition's committed rows from PostgreSQL into a fresh replica under the scratch
log.dirs, in Kafka's directory layout (`<log.dirs>/<topic>-<partition>`), wiped first.
"""

from __future__ import annotations

from typing import Any

from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo
from rules.placement import OFFSETS_TOPIC
from storage.log import partition_dir
from storage.pg.pg_log import PgPartitionLog


class PgLogFactory:
    def __init__(self, pool: Any, topics: TopicCatalog, scratch_dir: str) -> None:
        self.pool = pool
        self.topics = topics
        self.scratch_dir = scratch_dir

    async def open_offsets_partition(self, partition: int, epoch: int) -> PgPartitionLog:
        offsets = self.topics.get(OFFSETS_TOPIC)
        assert offsets is not None  # the catalog always has the internal topic
        return await self.open_topic_partition(offsets, partition, epoch)

    async def open_topic_partition(self, topic: TopicInfo, index: int, epoch: int) -> PgPartitionLog:
        scratch = partition_dir(self.scratch_dir, topic.name, index)
        return await PgPartitionLog.open(self.pool, topic.topic_id, index, epoch, scratch)
