"""Which topic partitions this node hosts, at run time (cluster mode): take, give up, lose.

In local mode every partition of every topic is opened at start and stays. In cluster mode
(`take_all=False`) a partition is hosted only while this node owns it: `take_partition`
(with the log opened at the ownership epoch; the idempotent-producer state is rebuilt from
it, as at start), `give_up_partition` (hand-off: the partition stops taking requests, its
delayed fetches are answered, its log is flushed and closed) and `lose_partition` (fenced or
the lease lapsed: the same without waiting; the log is closed in the background).

A request for a partition of a known topic that is not hosted here answers
NOT_LEADER_OR_FOLLOWER (Kafka's ReplicaManager.getPartitionOrError: the topic exists, this
broker is no replica), so clients refresh their metadata and go to the owner.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.data_plane.partition import Partition
from coordinator.data_plane.purgatory import FetchPurgatory
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.data_plane.topic_configs import EffectiveConfig
from storage.log_protocol import PartitionLogProtocol

log = structlog.get_logger(__name__)


class DataPlane(Protocol):
    """What of data_plane.plane.DataPlane this module uses."""

    take_all: bool
    catalog: TopicCatalog
    partitions: dict[tuple[str, int], Partition]
    purgatory: FetchPurgatory
    base_configs: dict[str, str]


def not_hosted_error(plane: DataPlane, topic: str, index: int) -> ErrorCode:
    """The error for a partition that `plane.partition` does not find."""
    if plane.take_all:
        return ErrorCode.unknown_topic_or_partition  # local mode: every partition of a topic is here
    info = plane.catalog.get(topic)
    if info is not None and 0 <= index < info.partitions:
        return ErrorCode.not_leader_or_follower
    return ErrorCode.unknown_topic_or_partition


async def take_partition(plane: DataPlane, topic: str, index: int, log_: PartitionLogProtocol,
                         epoch: int | None = None) -> Partition:
    """Host the partition on `log_`, led at `epoch` (default: the log's `epoch`, else 0): Fetch and
    ListOffsets check clients' current_leader_epoch against it, Produce stamps it into batches."""
    if epoch is None:
        epoch = getattr(log_, "epoch", 0)
    info = plane.catalog.get(topic)
    if info is None or not 0 <= index < info.partitions:
        raise LookupError(f"no partition {topic}-{index} in the catalog")
    old = _remove(plane, (topic, index))
    if old is not None and old.log is not log_:
        await old.log.close()
    part = Partition(topic, index, log_, EffectiveConfig.resolve(info.config_map(), plane.base_configs), epoch)
    batches = await asyncio.to_thread(part.rebuild_producers)  # before any append: not yet listed
    plane.partitions[part.key] = part
    log.info("data_plane.partition.taken", topic=topic, partition=index, epoch=epoch,
             producers=len(part.producers.entries), batches=batches)
    return part


async def give_up_partition(plane: DataPlane, topic: str, index: int) -> None:
    part = _remove(plane, (topic, index))
    if part is not None:
        await part.log.close()  # flushes what was appended
        log.info("data_plane.partition.given_up", topic=topic, partition=index)


def lose_partition(plane: DataPlane, topic: str, index: int) -> None:
    part = _remove(plane, (topic, index))
    if part is not None:
        closing = asyncio.ensure_future(part.log.close())
        closing.add_done_callback(_log_close_failure)
        log.warning("data_plane.partition.lost", topic=topic, partition=index)


def _remove(plane: DataPlane, key: tuple[str, int]) -> Partition | None:
    """Stop hosting: no new request finds it; delayed fetches on it are answered now."""
    part = plane.partitions.pop(key, None)
    if part is not None:
        plane.purgatory.wake(key)
    return part


def _log_close_failure(closing: asyncio.Future) -> None:
    if not closing.cancelled() and closing.exception() is not None:
        log.warning("data_plane.partition.close_failed", error=repr(closing.exception()))
