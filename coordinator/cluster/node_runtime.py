"""One node of a cluster (storage.url set): builds the parts App serves and runs the membership.

build(): PostgreSQL pool (unreachable or too-new schema: StartupError), the cluster's identity
(cluster id, offsets partition count), a wiped scratch log.dirs, the catalog from kc_topics, the
dynamic broker configs from kc_broker_configs (refreshed with the catalog), the
offsets runtime and data plane with no partition taken yet, and the hooks that take, give up and
lose partitions through PostgreSQL logs. attach_txn(txn): the transaction coordinator hosts the
__transaction_state partitions this node takes, and its markers for partitions held elsewhere go
through kc_txn_markers (marker_queue.py; this node's own queue: marker_consumer.py). attach_share(share): the
share coordinator hosts the __share_group_state partitions this node takes (the topic created when first
needed), the share-group state requests go to each partition's owner (share_state_remote.py), and the share
partitions follow their topic partitions. start(advertised):
once listening, register the lease (node.id held by another live node for a whole session: StartupError)
and let the Reconciler take this node's share. stop(): the SIGTERM
hand-off -- every partition given up and released at once, the lease deregistered -- so the next
owners need not wait for the session to expire.
"""

from __future__ import annotations

import asyncio
import os
import time
from functools import partial
from typing import Any

import structlog

from coordinator.cluster.group_config_store import PgGroupConfigStore
from coordinator.cluster.identity import join_cluster
from coordinator.cluster.lazy_topics import ShareStateTopic, TxnTopic
from coordinator.cluster.log_supervisor import LogSupervisor
from coordinator.cluster.marker_consumer import MarkerConsumer
from coordinator.cluster.marker_queue import MarkerQueue
from coordinator.cluster.node_leases import ClusterMembership
from coordinator.cluster.partition_hooks import PartitionHooks
from coordinator.cluster.pg_log_factory import PgLogFactory
from coordinator.cluster.reconcile import OwnershipStore, Reconciler
from coordinator.cluster.share_state_remote import ClusterShareState
from coordinator.cluster.startup import StartupError, claim_scratch, open_store
from coordinator.cluster.state import ClusterState, advertised_listeners
from coordinator.cluster.txn_verification import RemoteVerification
from coordinator.config import Config, Listener
from coordinator.data_plane import DataPlane, DataPlaneSettings, broker_configs
from coordinator.data_plane.broker_configs import DynamicBrokerConfigs
from coordinator.data_plane.pg_catalog_store import PgCatalogStore, PgDynamicConfigStore
from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.node import Node
from coordinator.runtime.offsets_topic import OffsetsRuntime
from coordinator.security.acl_store import Acls, PgAclStore
from coordinator.security.scram_store import PgCredentialStore, ScramCredentials
from coordinator.share.runtime.group_configs import GroupConfigs
from coordinator.transactions.runtime.markers import MarkerWriter
from rules.placement import SHARE_GROUP_STATE_TOPIC
from storage.pg import cluster_meta, share_state_calls, txn_markers, txn_verify
from storage.pg.connect import ConnectionSet
from storage.pg.errors import NodeIdInUseError
from storage.pg.url import redact

log = structlog.get_logger(__name__)

JOIN_MARGIN_SECONDS = 1.0  # past the session, before a node.id held by a lease is another node's


class ClusterNode:
    def __init__(self, config: Config, pool: Any, node: Node, topics: TopicCatalog, offsets: OffsetsRuntime,
                 data: DataPlane, scratch_lock: int, dynamic: DynamicBrokerConfigs | None = None,
                 scram: ScramCredentials | None = None, connections: ConnectionSet | None = None) -> None:
        self.config = config
        # the pool's, the session's and the watcher's connections: all ended at once if PostgreSQL stops answering
        self.connections = ConnectionSet(config.storage_url) if connections is None else connections
        # SCRAM credentials from kc_scram_credentials, read again at every membership refresh
        self.scram = ScramCredentials(PgCredentialStore(pool)) if scram is None else scram
        self.acl_store = PgAclStore(pool)  # kc_acls; the App's Acls over it are read again at every refresh
        self.acls: Acls | None = None
        if dynamic is None:  # read from kc_broker_configs at the first membership refresh
            dynamic = DynamicBrokerConfigs(config.node_id, PgDynamicConfigStore(pool), data.base_configs)
            broker_configs.attach(data, dynamic)
        self.dynamic = dynamic
        self.scratch_lock = scratch_lock  # held while this node uses log.dirs (claim_scratch)
        self.pool = pool
        self.node = node
        self.topics = topics
        self.offsets = offsets
        self.data = data
        self.view = ClusterState(config.node_id, self._topic_id)
        data.live_brokers = self._live_brokers  # what CreateTopics' replication factor may reach
        self.hooks = PartitionHooks(topics, offsets, data, PgLogFactory(pool, topics, config.log_dirs))
        self.reconciler = Reconciler(self.hooks, OwnershipStore.over(pool, config.node_id), config.node_id)
        self.supervisor = LogSupervisor(self.hooks, self._forget)
        self.membership: ClusterMembership | None = None
        # transactions: __transaction_state created at the first lookup; markers queued for other holders
        self.txn_topic = TxnTopic(pool, topics, node.cluster_id, config.transaction_state_log_num_partitions,
                                  replication_factor=config.transaction_state_log_replication_factor)
        self.consumer = MarkerConsumer(pool, self.hooks.holding)
        self.hooks.taken = self.consumer.taken
        self.markers = MarkerQueue(pool, self._topic_id, queued=self.consumer.queued)
        self.verification: RemoteVerification | None = None  # once the transaction coordinator is attached
        # share groups: __share_group_state created when first needed; state requests to each partition's owner
        self.share_topic = ShareStateTopic(
            pool, topics, node.cluster_id, config.share_coordinator_state_topic_num_partitions,
            replication_factor=config.share_coordinator_state_topic_replication_factor)
        self.share_state: ClusterShareState | None = None  # once the share runtime is attached
        self.group_configs: GroupConfigs | None = None  # its group configs, over kc_group_configs
        self._sweeper: asyncio.Task[None] | None = None

    @classmethod
    async def build(cls, config: Config) -> ClusterNode:
        connections = ConnectionSet(config.storage_url)
        pool = await open_store(config, connections)
        try:
            cluster_id = await join_cluster(pool, config.offsets_topic_num_partitions,
                                            config.transaction_state_log_num_partitions)
            scratch = claim_scratch(config.log_dirs)
            topics = TopicCatalog(cluster_id, config.offsets_topic_num_partitions, PgCatalogStore(pool),
                                  offsets_replication_factor=config.offsets_topic_replication_factor)
            await topics.refresh()
            offsets = OffsetsRuntime(config, take_all=False)
            producer_ids = ProducerIdAllocator(None, partial(cluster_meta.reserve_producer_ids, pool))
            data = DataPlane(DataPlaneSettings.from_config(config), topics, producer_ids, take_all=False)
            dynamic = DynamicBrokerConfigs(config.node_id, PgDynamicConfigStore(pool), data.base_configs)
            await dynamic.refresh()
            broker_configs.attach(data, dynamic)
            scram = ScramCredentials(PgCredentialStore(pool))
            await scram.refresh()
        except BaseException:
            await pool.close()
            raise
        return cls(config, pool, Node(config.node_id, cluster_id), topics, offsets, data, scratch, dynamic, scram,
                   connections)

    def _live_brokers(self) -> list[int]:
        """The live nodes as of the last refresh, this one included (it is answering, whatever it has seen yet)."""
        return sorted({*self.view.live_node_ids(), self.config.node_id})

    def _topic_id(self, name: str) -> Any:
        topic = self.topics.get(name)
        return None if topic is None else topic.topic_id

    def attach_txn(self, txn: Any) -> None:
        """The node's TransactionCoordinator (built with the App's services): it hosts the __transaction_state
        partitions this node takes; its markers go to this node's own writer for a partition held here, else
        to the queue (the holder writes them); the markers queued for partitions held here are written by
        that same local writer."""
        local: MarkerWriter = txn.markers  # build_transaction_coordinator's: this node's data plane and groups
        self.consumer.writer = local.write
        txn.markers = MarkerWriter(local.data_marker, local.offsets_marker, remote=self.markers.remote,
                                   is_local=self.hooks.holds)
        self.hooks.txn = txn
        # KIP-890's verification of a transaction another node coordinates: asked over PostgreSQL
        self.verification = RemoteVerification(self.pool, self.config.node_id, txn)
        txn.remote_verification = self.verification.verify

    def attach_share(self, share: Any) -> None:
        """The node's ShareRuntime (built with the App's services): its coordinator hosts the __share_group_state
        partitions this node takes, at the topic's partition count once it exists; its state requests go to each
        partition's owner; its share partitions go where their topic partition is given up or lost."""
        coordinator = share.coordinator
        configured = self.config.share_coordinator_state_topic_num_partitions
        coordinator.num_partitions = lambda: self.share_topic.partitions() or configured
        self.hooks.share = coordinator
        self.hooks.topic_gone = share.partitions.topic_partition_gone
        self.share_state = ClusterShareState(self.pool, self.config.node_id, coordinator, self.share_topic,
                                             lambda index: self.view.leader(SHARE_GROUP_STATE_TOPIC, index))
        share.route(self.share_state)
        share.group_configs.use(PgGroupConfigStore(self.pool))  # read again at every membership refresh
        self.group_configs = share.group_configs

    def _txn_notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        self.markers.notified(payload)

    def _forget(self, key: tuple[Any, int]) -> None:
        """A broken log was unloaded: the Reconciler takes the partition again at its next round (now)."""
        self.reconciler.retake(*key)
        self.reconciler.changed()

    async def _refresh_catalog(self) -> None:
        await self.topics.refresh()
        await self.dynamic.refresh()
        await self.scram.refresh()
        if self.acls is not None:
            await self.acls.refresh()
        if self.group_configs is not None:
            await self.group_configs.refresh()

    async def start(self, advertised: tuple[Listener, ...]) -> None:
        """Register this node's lease with its advertised listeners and start taking its share."""
        config = self.config
        self.membership = ClusterMembership(
            self.pool, self.reconciler, self.view, node_id=config.node_id,
            listeners=advertised_listeners((a.name, a.host, a.port) for a in advertised), rack=None,
            heartbeat_ms=config.broker_heartbeat_interval_ms, session_ms=config.broker_session_timeout_ms,
            connect=self.connections.connect, refresh_catalog=self._refresh_catalog,
            unanswered=self.connections.abandon)
        self.membership.session.listen(txn_markers.CHANNEL, self._txn_notified)
        if self.verification is not None:
            self.membership.session.listen(txn_verify.CHANNEL, self.verification.notified)
        if self.share_state is not None:
            self.membership.session.listen(share_state_calls.CHANNEL, self.share_state.notified)
        await self._join(self.membership)
        self.supervisor.start()
        self._sweeper = asyncio.ensure_future(self.consumer.run(config.broker_heartbeat_interval_ms / 1000))
        log.info("cluster.member", node_id=config.node_id, cluster_id=self.node.cluster_id,
                 storage=redact(config.storage_url))

    async def _join(self, membership: ClusterMembership) -> None:
        """Register; a node.id whose lease is still live may be this node's previous life (killed and
        restarted at once), so registering is retried until one session has passed: a lease renewed
        that long belongs to another live node with this node.id (StartupError)."""
        config = self.config
        deadline = time.monotonic() + config.broker_session_timeout_ms / 1000 + JOIN_MARGIN_SECONDS
        while True:
            try:
                await membership.start()
                return
            except NodeIdInUseError as exc:
                if time.monotonic() >= deadline:
                    raise StartupError(f"node.id: {exc}") from None
                log.warning("cluster.node_id_held", node_id=config.node_id, error=str(exc))
                await asyncio.sleep(config.broker_heartbeat_interval_ms / 1000)

    async def stop(self) -> None:
        """SIGTERM: hand every partition off (give up, release), deregister."""
        await self.supervisor.stop()
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await self.txn_topic.stop()
        await self.share_topic.stop()
        if self.membership is not None:
            log.info("stopping.phase", phase="membership: tasks, then the hand-off")
            try:
                await self.membership.stop()
            except Exception as exc:  # PostgreSQL away: the others take over when our lease expires
                log.warning("cluster.handoff_failed", error=repr(exc))
        await self.consumer.stop()
        await self.markers.stop()
        if self.verification is not None:
            await self.verification.stop()
        if self.share_state is not None:
            await self.share_state.stop()

    async def close(self) -> None:
        await self.pool.close()
        os.close(self.scratch_lock)
