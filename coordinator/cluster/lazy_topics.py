"""Internal topics cluster mode creates when first needed, as Kafka does: `__transaction_state` and
`__share_group_state`.

Kafka creates its transaction state topic at the first FindCoordinator for a transactional id (KafkaApis
getCoordinator -> autoTopicCreationManager), and its share-group state topic at the first FindCoordinator for a
share key (the persister's, when a share group first initializes or reads a share partition's state), and answers
COORDINATOR_NOT_AVAILABLE meanwhile, which clients (and the persister) retry. Here the first such need on any
node writes the topic's catalog rows (kc_topics, internal, its id derived from the cluster id, its partition
count -- transaction.state.log.num.partitions as kc_cluster settled at start, or
share.coordinator.state.topic.num.partitions -- and replication factor; the kc_partitions rows NOTIFY the other
nodes) and re-reads the catalog. The Reconciler then spreads the partitions like any other; until they have
owners a lookup still answers COORDINATOR_NOT_AVAILABLE (ClusterState names no leader). Local mode has no row:
its transaction and share coordinators host every partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from coordinator.data_plane.topic_catalog import TopicCatalog
from rules.placement import (
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    share_group_state_topic_id,
    transaction_state_topic_id,
)
from storage.pg import catalog

log = structlog.get_logger(__name__)

ApplyChanges = Callable[[Any, Sequence[catalog.TopicRow]], Awaitable[Any]]


class LazyInternalTopic:
    """One internal topic (`row`), created by the first `ready()` that finds it missing."""

    def __init__(self, pool: Any, topics: TopicCatalog, row: catalog.TopicRow,
                 apply_changes: ApplyChanges = catalog.apply_changes) -> None:
        self.pool = pool
        self.topics = topics
        self.row = row
        self.apply_changes = apply_changes
        self._creating: asyncio.Task[None] | None = None

    def ready(self) -> bool:
        """Whether the topic exists (in this node's catalog); if not, its creation starts (once at a time)."""
        topic = self.topics.get(self.row.name)
        if topic is not None and topic.internal:
            return True
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        return False

    def partitions(self) -> int | None:
        """The topic's partition count as created (the first creator's), None while it does not exist."""
        topic = self.topics.get(self.row.name)
        return topic.partitions if topic is not None and topic.internal else None

    async def _create(self) -> None:
        try:
            await self.apply_changes(self.pool, [self.row])  # a node that created it first wins: same id
            await self.topics.refresh()
        except Exception as exc:  # PostgreSQL away: the next lookup tries again
            log.warning("cluster.internal_topic.create_failed", topic=self.row.name, error=repr(exc))
            return
        log.info("cluster.internal_topic.created", topic=self.row.name, partitions=self.row.partitions)

    async def stop(self) -> None:
        if self._creating is not None:
            self._creating.cancel()
            await asyncio.gather(self._creating, return_exceptions=True)


class TxnTopic(LazyInternalTopic):
    def __init__(self, pool: Any, topics: TopicCatalog, cluster_id: str, partitions: int,
                 apply_changes: ApplyChanges = catalog.apply_changes, replication_factor: int = 1) -> None:
        super().__init__(pool, topics, catalog.TopicRow(
            TRANSACTION_STATE_TOPIC, transaction_state_topic_id(cluster_id), partitions, {}, internal=True,
            replication_factor=replication_factor), apply_changes)


class ShareStateTopic(LazyInternalTopic):
    """`__share_group_state`: its partition count is the first creator's; a node configured otherwise uses the
    topic's (as Kafka's share coordinator reads it from the topic's metadata), so every node maps a share
    partition's key to the same partition."""

    def __init__(self, pool: Any, topics: TopicCatalog, cluster_id: str, partitions: int,
                 apply_changes: ApplyChanges = catalog.apply_changes, replication_factor: int = 1) -> None:
        super().__init__(pool, topics, catalog.TopicRow(
            SHARE_GROUP_STATE_TOPIC, share_group_state_topic_id(cluster_id), partitions, {}, internal=True,
            replication_factor=replication_factor), apply_changes)
