"""The seam where a partition's log comes from when this node takes the partition.

`LogFactory` opens the log of an __consumer_offsets partition or a topic partition at the
ownership epoch, as a PartitionLogProtocol (storage/log_protocol.py: what the offsets runtime,
the transaction coordinator and the data plane use of a log). `LocalLogFactory` opens today's logs under
log.dirs (the epoch is not needed: nobody else writes them); cluster mode plugs in one that
opens PgPartitionLog (storage/pg/pg_log.py), whose writes are fenced by the epoch.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from coordinator.data_plane.plane import DataPlane
from coordinator.data_plane.topic_catalog import TopicInfo
from coordinator.data_plane.topic_configs import EffectiveConfig
from coordinator.runtime.durable_log import DurableLog
from storage.log_protocol import PartitionLogProtocol


class LogFactory(Protocol):
    async def open_offsets_partition(self, partition: int, epoch: int) -> PartitionLogProtocol:
        """The log of __consumer_offsets partition `partition`, writable at `epoch`."""

    async def open_topic_partition(self, topic: TopicInfo, index: int, epoch: int) -> PartitionLogProtocol:
        """The log of partition `index` of `topic`, writable at `epoch`."""


class LocalLogFactory:
    """The local segment logs, opened (and their tails recovered) in a worker thread."""

    def __init__(self, durable: DurableLog, data: DataPlane) -> None:
        self.durable = durable
        self.data = data

    async def open_offsets_partition(self, partition: int, epoch: int) -> PartitionLogProtocol:
        return await asyncio.to_thread(self.durable.new_log, partition)

    async def open_topic_partition(self, topic: TopicInfo, index: int, epoch: int) -> PartitionLogProtocol:
        config = EffectiveConfig.resolve(topic.config_map(), self.data.base_configs)
        return await asyncio.to_thread(self.data.new_log, topic.name, index, config)
