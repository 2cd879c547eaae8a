"""CreatePartitions: a topic's partition count grows (Kafka's ReplicationControlManager.createPartitions).

`check_growth` applies Kafka's checks, in its order, and returns the grown topic; `grow_topic` makes
it so: in local mode the new partitions' logs are opened (in a worker thread), then the catalog is
written (topic-catalog.json, or kc_topics plus the new kc_partitions rows in cluster mode, where the
reconcilers of the live nodes place the new partitions as any other); the new partitions are listed
(Metadata) once that write is durable. A topic deleted meanwhile is not brought back.

Differences from Kafka: the internal `__consumer_offsets` topic keeps its partition count (the group
coordinator hashes groups over it), refused with INVALID_PARTITIONS and the message of Kafka's own
kafka-topics tool; a topic may have at most MAX_PARTITIONS_PER_TOPIC partitions (INVALID_PARTITIONS);
a valid manual assignment (as many replicas as the topic's replication factor, replication.py) is accepted but,
as cluster mode places partitions by hashing, not followed. Without one, the topic's replication factor must
still be reachable: at most the live brokers (INVALID_REPLICATION_FACTOR, Kafka's placer).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from dataclasses import replace

import structlog

from coordinator.data_plane import replication
from coordinator.data_plane.partition import Partition, discard_local
from coordinator.data_plane.plane import MAX_PARTITIONS_PER_TOPIC, DataPlane
from coordinator.data_plane.topic_catalog import TopicInfo
from coordinator.data_plane.topic_configs import EffectiveConfig
from coordinator.errors import InvalidPartitions, InvalidReplicaAssignment, UnknownTopicOrPartition
from storage.log import partition_dir

log = structlog.get_logger(__name__)


def check_growth(plane: DataPlane, name: str, count: int, assignments: Sequence[Sequence[int]] | None,
                 brokers: set[int]) -> tuple[TopicInfo, TopicInfo]:
    """(the topic now, the topic grown to `count` partitions), or the KafkaError Kafka answers.
    `brokers`: the registered (live) node ids a manual assignment may name."""
    topic = plane.catalog.get(name)
    if topic is None:
        raise UnknownTopicOrPartition("")
    if topic.internal:
        raise InvalidPartitions("The number of partitions for the offsets topic cannot be changed.")
    current = topic.partitions
    if count == current:
        raise InvalidPartitions(f"Topic already has {current} partition(s).")
    if count < current:
        raise InvalidPartitions(f"The topic {name} currently has {current} partition(s); {count} would not be "
                                "an increase.")
    additional = count - current
    if assignments is not None and len(assignments) != additional:
        raise InvalidReplicaAssignment(f"Attempted to add {additional} additional partition(s), but only "
                                       f"{len(assignments)} assignment(s) were specified.")
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitions(f"Number of partitions {count} is above this server's limit of "
                                f"{MAX_PARTITIONS_PER_TOPIC} per topic.")
    if assignments is None:
        replication.check_factor(topic.replication_factor, len(brokers))
    for replicas in assignments or ():
        replication.check_assignment(replicas, brokers, topic.replication_factor)
    return topic, replace(topic, partitions=count)


def _open_new(plane: DataPlane, topic: TopicInfo, first: int) -> list[Partition]:
    """In a worker thread: the logs of partitions first..topic.partitions-1 (a leftover directory of
    that name, from a deletion cut short by a crash, is wiped)."""
    config = EffectiveConfig.resolve(topic.config_map(), plane.base_configs)
    opened: list[Partition] = []
    try:
        for index in range(first, topic.partitions):
            path = partition_dir(plane.settings.log_dir, topic.name, index)
            if os.path.exists(path):
                shutil.rmtree(path)
            opened.append(Partition(topic.name, index, plane.new_log(topic.name, index, config), config))
    except BaseException:
        discard_local(opened)
        raise
    return opened


async def grow_topic(plane: DataPlane, old: TopicInfo, new: TopicInfo) -> None:
    """Add the partitions old.partitions..new.partitions-1: logs (local mode), then the catalog write."""
    loop = asyncio.get_running_loop()
    parts = await loop.run_in_executor(None, _open_new, plane, new, old.partitions) if plane.take_all else []
    try:
        shown = await plane.catalog.grow(old, new)
    except BaseException:
        await loop.run_in_executor(None, discard_local, parts)
        raise
    if not shown:  # deleted (or re-created) while the logs opened or the catalog was written
        await loop.run_in_executor(None, discard_local, parts)
        raise UnknownTopicOrPartition("")
    for part in parts:
        plane.partitions[part.key] = part
    log.info("data_plane.topic.partitions_created", topic=new.name, topic_id=str(new.topic_id),
             partitions=new.partitions, added=new.partitions - old.partitions)
