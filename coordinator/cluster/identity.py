"""What every node of a cluster must agree on, settled in PostgreSQL at start (cluster mode).

The first node to start a cluster stores a new cluster id, its offsets.topic.num.partitions
and its transaction.state.log.num.partitions in kc_cluster; every later node reads them (local
mode keeps the cluster id in meta.properties instead, coordinator/node.py). A node configured with
another partition count would map groups (or transactional ids) to other partitions than its peers:
it refuses to start. The internal topic's rows (kc_topics, kc_partitions) exist once this returns.
"""

from __future__ import annotations

import asyncpg

from coordinator.config import ConfigError
from coordinator.node import new_cluster_id
from rules.placement import OFFSETS_TOPIC, offsets_topic_id
from storage.pg import catalog, cluster_meta


async def join_cluster(pool: asyncpg.Pool, offsets_partitions: int, txn_partitions: int | None = None) -> str:
    """The cluster id, creating the cluster's identity on first start; ConfigError when this
    node's offsets.topic.num.partitions (or transaction.state.log.num.partitions) differs from the cluster's."""
    cluster_id = await cluster_meta.put_once(pool, cluster_meta.CLUSTER_ID, new_cluster_id())
    await _agree(pool, cluster_meta.OFFSETS_PARTITIONS, offsets_partitions)
    if txn_partitions is not None:  # __transaction_state's rows come later, at the first transactional lookup
        await _agree(pool, cluster_meta.TXN_PARTITIONS, txn_partitions)
    await catalog.apply_changes(pool, [catalog.TopicRow(OFFSETS_TOPIC, offsets_topic_id(cluster_id),
                                                        offsets_partitions, {}, internal=True)])
    return cluster_id


async def _agree(pool: asyncpg.Pool, name: str, configured: int) -> None:
    stored = await cluster_meta.put_once(pool, name, str(configured))
    if stored != str(configured):
        raise ConfigError(f"{name}: this node is configured with {configured}, "
                          f"but the cluster in PostgreSQL was created with {stored}; every node must use {stored}")
