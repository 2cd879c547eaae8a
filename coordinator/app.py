"""Wire the server together and run it until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from typing import TYPE_CHECKING

import structlog

from coordinator.config import Config, ConfigError
from coordinator.data_plane.file_catalog_store import FileCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.fastlane import native as compiled
from coordinator.handlers import (
    acls_admin,
    add_offsets_to_txn,
    add_partitions_to_txn,
    api_versions,
    configs_admin,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    delete_records,
    describe_cluster,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    end_txn,
    fetch,
    find_coordinator,
    group_admin,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl,
    scram_admin,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    share_group_offsets,
    sync_group,
    topics_admin,
    transactions_admin,
    txn_offset_commit,
)
from coordinator.net.dispatch import Dispatcher
from coordinator.net.request_metrics import RequestMetrics
from coordinator.net.server import Server
from coordinator.node import Node, load_or_create_cluster_id
from coordinator.runtime.offsets_topic import OffsetsRuntime
from coordinator.services import Services

if TYPE_CHECKING:
    from coordinator.cluster.node_runtime import ClusterNode
    from coordinator.ops.http_listener import HttpListener

log = structlog.get_logger(__name__)

YOUNG_GC_THRESHOLD = 50_000

#: Each module's `register(dispatcher, services)` binds its handlers (and fast paths) to api keys.
HANDLER_MODULES = (api_versions, metadata, find_coordinator,
                   join_group, sync_group, heartbeat, leave_group, group_admin,
                   consumer_group_heartbeat, consumer_group_describe,
                   share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge, share_group_offsets,
                   offset_commit, offset_fetch, offset_delete, txn_offset_commit,
                   produce, fetch, list_offsets, topics_admin, init_producer_id, delete_records,
                   create_partitions, describe_cluster, describe_log_dirs, offset_for_leader_epoch,
                   describe_producers, describe_topic_partitions, configs_admin, sasl,
                   scram_admin, acls_admin,
                   add_partitions_to_txn, add_offsets_to_txn, end_txn, transactions_admin)


def build_dispatcher(services: Services) -> Dispatcher:
    dispatcher = Dispatcher()
    for module in HANDLER_MODULES:
        module.register(dispatcher, services)
    if services.access.enabled:
        dispatcher.drop_fast_paths()
    dispatcher.verify()
    return dispatcher


class App:
    """The server of one node. Local mode (storage.url unset) builds its parts here, as always;
    cluster mode is given them by a ClusterNode, which also joins the cluster once listening."""

    def __init__(self, config: Config, cluster: ClusterNode | None = None) -> None:
        self.config = config
        self.cluster = cluster
        if cluster is None:
            cluster_id = load_or_create_cluster_id(config.log_dirs, config.node_id)
            self.node = Node(config.node_id, cluster_id)
            self.offsets = OffsetsRuntime(config)
            topics = TopicCatalog(cluster_id, config.offsets_topic_num_partitions, FileCatalogStore(config.log_dirs))
            data = view = dynamic = scram = acl_store = None
        else:
            self.node, self.offsets, topics, data, view = (cluster.node, cluster.offsets, cluster.topics, cluster.data,
                                                           cluster.view)
            dynamic, scram, acl_store = cluster.dynamic, cluster.scram, cluster.acl_store
        # Request metrics are counted only when something serves them (http.listener).
        metrics = RequestMetrics() if config.http_listener is not None else None
        self.services = Services(config, self.node, topics, groups=self.offsets.coordinator, data=data, view=view,
                                 metrics=metrics, dynamic=dynamic, scram=scram, acl_store=acl_store,
                                 txn_topic=None if cluster is None else cluster.txn_topic.ready,
                                 share_topic=None if cluster is None else cluster.share_topic.ready)
        listener = self.services.txn.listener
        if listener is not None:  # offsets a restart found pending, transactions known over (runtime/orphans.py)
            self.offsets.on_loaded = listener.sweep_soon
        if cluster is not None:
            cluster.acls = self.services.acls
            cluster.attach_txn(self.services.txn)  # it takes __transaction_state partitions as the others
            cluster.attach_share(self.services.share)  # and __share_group_state's; state requests to their owners
        self.dispatcher = build_dispatcher(self.services)
        self.dispatcher.metrics = metrics
        self.server: Server | None = None
        self.http: HttpListener | None = None
        self.listening = False  # the Kafka listener is up (and, in cluster mode, the node has joined)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.config.http_listener is not None:  # first: probes answer (not ready) while the logs open
            from coordinator.ops.http_listener import HttpListener

            self.http = HttpListener(self, self.config.http_listener)
            await self.http.start()
        await self.services.data.start()  # topic logs open (and recover) before the first request
        await self.offsets.start()  # offsets logs open; partitions load in the background
        await self.services.share.start()  # local mode: __share_group_state logs open, load in the background
        if self.cluster is None:
            await self.services.txn.start()  # __transaction_state logs open; partitions load in the background
        else:
            self.services.txn.start_timers()  # its partitions come one by one as this node takes them
        if self.cluster is not None and self.services.acls is not None:
            await self.services.acls.refresh()  # the ACLs in force before the first request
        self.server = Server(self.config, self.dispatcher, loop, self.services.metrics)
        self.server.on_connection_closed.append(self.services.share.partitions.connection_closed)
        self.server.quotas.watch(self.config, self.services.dynamic)  # max.connections* changed by AlterConfigs
        self.server.scram_credentials = self.services.scram.lookup
        bound = await self.server.start()
        advertised = self.config.advertised(bound)
        self.node.advertise(*advertised)
        if self.cluster is not None:
            try:
                await self.cluster.start(advertised)  # register (node.id in use: StartupError), take a share
            except BaseException:
                await self.stop()
                raise
        self.listening = True
        log.info("hot path", **compiled.describe(), authorizer=self.services.access.enabled)
        for listener in bound.values():
            log.info("listening", listener=str(listener), host=listener.host, port=listener.port,
                     advertised=",".join(map(str, advertised)), node_id=self.node.node_id,
                     cluster_id=self.node.cluster_id)

    async def stop(self) -> None:
        """Each phase is logged as it starts, so that a stop that does not end says where it waits."""
        self.listening = False
        if self.server is not None:
            log.info("stopping.phase", phase="connections")
            await self.server.stop()
        if self.cluster is not None:
            log.info("stopping.phase", phase="cluster hand-off")
            await self.cluster.stop()  # hand the partitions off (unload, release), leave the cluster
        log.info("stopping.phase", phase="logs")
        await self.services.txn.stop()  # flush and close the transaction state logs
        await self.services.share.stop()  # flush and close the share-group state logs
        await self.offsets.stop()  # flush and close the offsets logs
        await self.services.data.stop()  # flush and close the topic logs
        if self.cluster is not None:
            log.info("stopping.phase", phase="storage connections")
            await self.cluster.close()
        if self.http is not None:
            log.info("stopping.phase", phase="http listener")
            await self.http.stop()

    async def run_until_signalled(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        await stop.wait()
        log.info("stopping", reason="signal")
        await self.stop()
        log.info("stopped")


async def serve(config: Config) -> None:
    """Run one node until signalled: local mode, or cluster mode when storage.url is set (only then is
    the PostgreSQL driver imported)."""
    if config.cluster_mode:
        from coordinator.cluster.node_runtime import ClusterNode
        app = App(config, await ClusterNode.build(config))
    else:
        app = App(config)
    await app.run_until_signalled()


def check_paths(config: Config) -> None:
    """Start-up refusals about paths (ConfigError: one line, exit 2): an offsets.snapshot.dir that does not
    exist is a mistyped path, and the server would silently start without the state it was meant to load."""
    snapshots = config.offsets_snapshot_dir
    if snapshots and not os.path.isdir(snapshots):
        raise ConfigError(f"offsets.snapshot.dir: {snapshots} is not a directory (a bulk_load --output; "
                          "unset it to use log.dirs)")


def run(config: Config) -> None:
    check_paths(config)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep running without it
        runner = asyncio.run
    else:
        runner = uvloop.run
    # What the imports made (modules, classes, kio schemas: ~100k objects) lives as long
    # as the process; frozen, a full collection walks only what requests made. Unfrozen,
    # each walked them all: ~1/3 of the CPU of pipelined OffsetCommits (measured in-process).
    gc.collect()
    gc.freeze()
    # A young collection when 50,000 more objects live than at the last one (default 700):
    # 512 pipelined requests keep ~25k objects alive until their fsync, and at 700 each
    # was walked and promoted many times (another ~15% of that CPU).
    gc.set_threshold(YOUNG_GC_THRESHOLD, 10, 10)
    runner(serve(config))
