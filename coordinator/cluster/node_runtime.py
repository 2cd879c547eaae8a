"""One node of a cluster (storage.url set): builds the parts App serves and runs the membership.

build(): PostgreSQL pool (unreachable or too-new schema: StartupError), the cluster's identity
(cluster id, offsets partition count), a wiped scratch log.dirs, the catalog from kc_topics, the
offsets runtime and data plane with no partition taken yet, and the hooks that take, give up and
lose partitions through PostgreSQL logs. start(advertised): once listening, register the lease
(node.id in use: StartupError) and let the Reconciler take this node's share. stop(): the SIGTERM
hand-off -- every partition given up and released at once, the lease deregistered -- so the next
owners need not wait for the session to expire.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import structlog

from coordinator.cluster.identity import join_cluster
from coordinator.cluster.log_supervisor import LogSupervisor
from coordinator.cluster.partition_hooks import PartitionHooks
from coordinator.cluster.startup import StartupError, open_store, wipe_scratch
from coordinator.config import Config, Listener
from coordinator.data_plane import DataPlane, DataPlaneSettings
from coordinator.data_plane.pg_catalog_store import PgCatalogStore
from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.node import Node
from coordinator.runtime.offsets_topic import OffsetsRuntime
from storage.pg import cluster_meta

log = structlog.get_logger(__name__)


class ClusterNode:
    def __init__(self, config: Config, pool: Any, node: Node, topics: TopicCatalog, offsets: OffsetsRuntime,
                 data: DataPlane) -> None:
        self.config = config
        self.pool = pool
        self.node = node
        self.topics = topics
        self.offsets = offsets
        self.data = data
        self.hooks = PartitionHooks(topics, offsets, data, self._open_log)
        self.supervisor = LogSupervisor(self.hooks)
        self.membership: Any = None
        self.reconciler: Any = None

    @classmethod
    async def build(cls, config: Config) -> ClusterNode:
        pool = await open_store(config)
        try:
            cluster_id = await join_cluster(pool, config.offsets_topic_num_partitions)
            wipe_scratch(config.log_dirs)
            topics = TopicCatalog(cluster_id, config.offsets_topic_num_partitions, PgCatalogStore(pool))
            await topics.refresh()
            offsets = OffsetsRuntime(config, take_all=False)
            producer_ids = ProducerIdAllocator(None, partial(cluster_meta.reserve_producer_ids, pool))
            data = DataPlane(DataPlaneSettings.from_config(config), topics, producer_ids, take_all=False)
        except BaseException:
            await pool.close()
            raise
        log.info("cluster.joined", cluster_id=cluster_id, node_id=config.node_id)
        return cls(config, pool, Node(config.node_id, cluster_id), topics, offsets, data)

    async def _open_log(self, topic: Any, partition: int, epoch: int) -> Any:
        from storage.pg.pg_log import PgPartitionLog

        return await PgPartitionLog.open(self.pool, topic.topic_id, partition, epoch, self.config.log_dirs)

    async def start(self, advertised: tuple[Listener, ...]) -> None:
        from storage.pg.errors import NodeIdInUseError

        try:
            await self.membership.start(advertised)
        except NodeIdInUseError as exc:
            raise StartupError(f"node.id: {exc}") from None
        self.supervisor.start()

    async def stop(self) -> None:
        await self.supervisor.stop()
        if self.reconciler is not None:
            await self.reconciler.stop()

    async def close(self) -> None:
        await self.pool.close()
