"""What every node of a cluster must agree on, settled in PostgreSQL at start (cluster mode).

The first node to start a cluster stores a new cluster id and its
offsets.topic.num.partitions in kc_cluster; every later node reads them (local mode keeps
the cluster id in meta.properties instead, coordinator/node.py). A node configured with
another partition count would map groups to other partitions than its peers: it refuses to
start. The internal topic's rows (kc_topics, kc_partitions) exist once this returns.
"""

from __future__ import annotations

import asyncpg

from coordinator.config import ConfigError
from coordinator.node import new_cluster_id
from storage.pg import catalog, cluster_meta
from storage.placement import OFFSETS_TOPIC, offsets_topic_id


async def join_cluster(pool: asyncpg.Pool, offsets_partitions: int) -> str:
    """The cluster id, creating the cluster's identity on first start; ConfigError when this
    node's offsets.topic.num.partitions differs from the cluster's."""
    cluster_id = await cluster_meta.put_once(pool, cluster_meta.CLUSTER_ID, new_cluster_id())
    stored = await cluster_meta.put_once(pool, cluster_meta.OFFSETS_PARTITIONS, str(offsets_partitions))
    if stored != str(offsets_partitions):
        raise ConfigError(f"offsets.topic.num.partitions: this node is configured with {offsets_partitions}, "
                          f"but the cluster in PostgreSQL was created with {stored}; every node must use {stored}")
    await catalog.apply_changes(pool, [catalog.TopicRow(OFFSETS_TOPIC, offsets_topic_id(cluster_id),
                                                        offsets_partitions, {}, internal=True)])
    return cluster_id
