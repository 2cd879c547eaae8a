"""What taking, giving up and losing a partition does on this node (the Reconciler's OwnershipHooks).

take: open the partition's PostgreSQL log at the acquired epoch (a fresh local replica of its rows)
and hand it to its runtime, chosen by topic: an __consumer_offsets partition to the offsets runtime
(LOADING, replay, ACTIVE), a __transaction_state partition to the transaction coordinator (loaded
by replay; the ownership epoch is its coordinator epoch), a __share_group_state partition to the share
coordinator (loaded by replay), any other to the data plane (led at the wire's constant leader epoch:
state.WIRE_LEADER_EPOCH; the share partitions over it follow it: `topic_gone` drops them where it is given up
or lost) -- Kafka's immigration. A take that fails
raises: the Reconciler tries again at its next round. give_up: the hand-off (queued writes finish,
unload, close) before the Reconciler releases the row. lost: fenced or the lease lapsed -- unload
at once; nothing can be flushed, and nothing unflushed was ever answered as a success.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple, Protocol

import structlog

from coordinator.cluster.log_factory import LogFactory
from coordinator.cluster.state import WIRE_LEADER_EPOCH
from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo
from rules.placement import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from storage.log_protocol import PartitionLogProtocol

log = structlog.get_logger(__name__)

PartitionKey = tuple[uuid.UUID, int]


class Runtime(Enum):
    """Who hosts a partition on this node."""

    OFFSETS = "offsets"  # the group coordinator's __consumer_offsets
    TXN = "txn"  # the transaction coordinator's __transaction_state
    SHARE = "share"  # the share coordinator's __share_group_state
    DATA = "data"  # the data plane's topics


def runtime_of(topic: TopicInfo) -> Runtime:
    """Internal topics by name (a user topic can never be internal); every other topic is data."""
    if topic.internal and topic.name == OFFSETS_TOPIC:
        return Runtime.OFFSETS
    if topic.internal and topic.name == TRANSACTION_STATE_TOPIC:
        return Runtime.TXN
    if topic.internal and topic.name == SHARE_GROUP_STATE_TOPIC:
        return Runtime.SHARE
    return Runtime.DATA


class Owned(NamedTuple):
    topic: TopicInfo
    epoch: int
    log: PartitionLogProtocol  # cluster mode's LogFactory: a PgPartitionLog


class OffsetsHost(Protocol):
    """What of runtime/offsets_topic.py's OffsetsRuntime the hooks call."""

    async def take(self, partition: int, plog: PartitionLogProtocol) -> None: ...

    async def give_up(self, partition: int) -> None: ...

    def lost(self, partition: int) -> None: ...


class TxnHost(Protocol):
    """What of transactions/runtime/txn_coordinator.py's TransactionCoordinator the hooks call."""

    async def take(self, partition: int, coordinator_epoch: int, log_: PartitionLogProtocol | None = None) -> None: ...

    async def give_up(self, partition: int) -> None: ...

    def lost(self, partition: int) -> None: ...


class ShareHost(Protocol):
    """What of share/runtime's ShareCoordinator (cluster mode) the hooks call."""

    async def take(self, partition: int, log_: PartitionLogProtocol) -> None: ...

    async def give_up(self, partition: int) -> None: ...

    def lost(self, partition: int) -> None: ...


class DataHost(Protocol):
    """What of data_plane/plane.py's DataPlane the hooks call."""

    async def take_partition(self, topic: str, index: int, log_: PartitionLogProtocol,
                             epoch: int | None = None) -> object: ...

    async def give_up_partition(self, topic: str, index: int) -> None: ...

    def lose_partition(self, topic: str, index: int) -> None: ...


class PartitionHooks:
    """`txn`: the TransactionCoordinator (take(partition, coordinator_epoch, log) / give_up / lost), attached
    once built; `share`: the ShareCoordinator (take(partition, log) / give_up / lost), the same; `taken`: told of
    each partition taken that markers may be queued for (not __transaction_state); `topic_gone`: told of each
    topic partition of the data plane given up or lost (its share partitions go)."""

    def __init__(self, topics: TopicCatalog, offsets: OffsetsHost, data: DataHost, logs: LogFactory,
                 txn: TxnHost | None = None) -> None:
        self.topics = topics
        self.offsets = offsets
        self.data = data
        self.logs = logs
        self.txn = txn
        self.share: ShareHost | None = None
        self.topic_gone: Callable[[str, int], None] = lambda topic, index: None
        self.owned: dict[PartitionKey, Owned] = {}
        self.taken: Callable[[PartitionKey], None] = lambda key: None
        self._closing: set[asyncio.Task[None]] = set()

    async def take(self, topic_id: uuid.UUID, partition: int, epoch: int) -> None:
        topic = self.topics.by_id(topic_id)
        if topic is None:
            await self.topics.refresh()  # created by another node a moment ago
            topic = self.topics.by_id(topic_id)
            if topic is None:
                raise LookupError(f"no topic with id {topic_id}")
        runtime = runtime_of(topic)
        if runtime is Runtime.TXN and self.txn is None:
            raise LookupError(f"{topic.name}: no transaction coordinator on this node yet")
        if runtime is Runtime.SHARE and self.share is None:
            raise LookupError(f"{topic.name}: no share coordinator on this node yet")
        if runtime is Runtime.OFFSETS:
            plog = await self.logs.open_offsets_partition(partition, epoch)
        else:
            plog = await self.logs.open_topic_partition(topic, partition, epoch)
        key = (topic_id, partition)
        self.owned[key] = Owned(topic, epoch, plog)
        try:
            if runtime is Runtime.OFFSETS:
                await self.offsets.take(partition, plog)
            elif runtime is Runtime.TXN:
                await self._take_txn(partition, epoch, plog)
            elif runtime is Runtime.SHARE:
                await self._share_host().take(partition, plog)  # unloaded again if its load fails
            else:
                await self.data.take_partition(topic.name, partition, plog, WIRE_LEADER_EPOCH)
        except BaseException:
            self.owned.pop(key, None)
            await plog.close()
            raise
        log.info("cluster.partition.taken", topic=topic.name, partition=partition, epoch=epoch)
        if runtime not in (Runtime.TXN, Runtime.SHARE):
            self.taken(key)

    def _share_host(self) -> ShareHost:
        """The share coordinator: attached before any __share_group_state partition is taken."""
        if self.share is None:
            raise LookupError("no share coordinator on this node yet")
        return self.share

    def _txn_host(self) -> TxnHost:
        """The transaction coordinator: attached before any __transaction_state partition is taken."""
        if self.txn is None:
            raise LookupError("no transaction coordinator on this node yet")
        return self.txn

    async def _take_txn(self, partition: int, epoch: int, plog: PartitionLogProtocol) -> None:
        txn = self._txn_host()
        try:
            await txn.take(partition, epoch, plog)  # the ownership epoch is the coordinator epoch
        except BaseException:
            txn.lost(partition)  # not left half-loaded
            raise

    async def give_up(self, topic_id: uuid.UUID, partition: int) -> None:
        owned = self.owned.pop((topic_id, partition), None)
        if owned is None:
            return
        runtime = runtime_of(owned.topic)
        if runtime is Runtime.OFFSETS:
            await self.offsets.give_up(partition)
        elif runtime is Runtime.TXN:
            await self._txn_host().give_up(partition)
        elif runtime is Runtime.SHARE:
            await self._share_host().give_up(partition)
        else:
            await self.data.give_up_partition(owned.topic.name, partition)
            self.topic_gone(owned.topic.name, partition)  # after: no request reaches the partition here any more
        log.info("cluster.partition.given_up", topic=owned.topic.name, partition=partition, epoch=owned.epoch)

    def lost(self, topic_id: uuid.UUID, partition: int) -> None:
        owned = self.owned.pop((topic_id, partition), None)
        if owned is None:
            return
        runtime = runtime_of(owned.topic)
        if runtime is Runtime.OFFSETS:
            self.offsets.lost(partition)
        elif runtime in (Runtime.TXN, Runtime.SHARE):
            # each forgets the log without closing it: closed here, in the background
            (self._txn_host() if runtime is Runtime.TXN else self._share_host()).lost(partition)
            closing = asyncio.ensure_future(owned.log.close())
            self._closing.add(closing)
            closing.add_done_callback(self._closed)
        else:
            self.topic_gone(owned.topic.name, partition)
            self.data.lose_partition(owned.topic.name, partition)
        log.warning("cluster.partition.lost", topic=owned.topic.name, partition=partition, epoch=owned.epoch)

    def _closed(self, task: asyncio.Task[None]) -> None:
        self._closing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("cluster.partition.close_failed", error=repr(task.exception()))

    def holding(self, topic_id: uuid.UUID, partition: int) -> str | None:
        """The topic's name if this node holds the partition now (taken, not given up or lost), else None."""
        owned = self.owned.get((topic_id, partition))
        return None if owned is None else owned.topic.name

    def holds(self, topic: str, partition: int) -> bool:
        """Whether this node holds partition `partition` of topic `topic` now."""
        info = self.topics.get(topic)
        return info is not None and (info.topic_id, partition) in self.owned

    def broken(self) -> list[tuple[PartitionKey, Owned]]:
        """Owned partitions whose log failed (a failed or fenced commit): they must be reloaded or dropped."""
        return [(key, owned) for key, owned in self.owned.items() if owned.log.failed is not None]
