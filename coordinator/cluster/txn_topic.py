"""`__transaction_state` in cluster mode, created when first needed, as Kafka does.

Kafka creates its transaction state topic at the first FindCoordinator for a transactional id (KafkaApis
getCoordinator -> autoTopicCreationManager) and answers COORDINATOR_NOT_AVAILABLE meanwhile, which clients
retry. Here the first such lookup on any node writes the topic's catalog rows (kc_topics, internal, its id
derived from the cluster id, transaction.state.log.num.partitions partitions as kc_cluster settled at start,
transaction.state.log.replication.factor as its replication factor;
the kc_partitions rows NOTIFY the other nodes) and re-reads the catalog. The Reconciler then spreads the
partitions like any other; until they have owners the lookup still answers COORDINATOR_NOT_AVAILABLE
(ClusterState names no leader). Local mode has no row: its transaction coordinator hosts every partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from coordinator.data_plane.topic_catalog import TopicCatalog
from rules.placement import TRANSACTION_STATE_TOPIC, transaction_state_topic_id
from storage.pg import catalog

log = structlog.get_logger(__name__)

ApplyChanges = Callable[[Any, Sequence[catalog.TopicRow]], Awaitable[Any]]


class TxnTopic:
    def __init__(self, pool: Any, topics: TopicCatalog, cluster_id: str, partitions: int,
                 apply_changes: ApplyChanges = catalog.apply_changes, replication_factor: int = 1) -> None:
        self.pool = pool
        self.topics = topics
        self.row = catalog.TopicRow(TRANSACTION_STATE_TOPIC, transaction_state_topic_id(cluster_id), partitions, {},
                                    internal=True, replication_factor=replication_factor)
        self.apply_changes = apply_changes
        self._creating: asyncio.Task[None] | None = None

    def ready(self) -> bool:
        """Whether the topic exists (in this node's catalog); if not, its creation starts (once at a time)."""
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is not None and topic.internal:
            return True
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        return False

    async def _create(self) -> None:
        try:
            await self.apply_changes(self.pool, [self.row])  # a node that created it first wins: same id
            await self.topics.refresh()
        except Exception as exc:  # PostgreSQL away: the next lookup tries again
            log.warning("cluster.txn_topic.create_failed", error=repr(exc))
            return
        log.info("cluster.txn_topic.created", topic=TRANSACTION_STATE_TOPIC, partitions=self.row.partitions)

    async def stop(self) -> None:
        if self._creating is not None:
            self._creating.cancel()
            await asyncio.gather(self._creating, return_exceptions=True)
