"""What handlers are given: the settings, this node, the cluster view, and the domain objects."""

from __future__ import annotations

from collections.abc import Callable

from coordinator.cluster.view import ClusterView, LocalView
from coordinator.config import Config
from coordinator.data_plane import DataPlane, DataPlaneSettings, broker_configs
from coordinator.data_plane.broker_configs import DynamicBrokerConfigs, FileDynamicConfigStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.groups.consumer.catalog_view import CatalogTopics
from coordinator.groups.settings import GroupSettings
from coordinator.net.request_metrics import RequestMetrics
from coordinator.node import Node
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access
from coordinator.security.acl_store import Acls, AclStore, FileAclStore
from coordinator.security.authorizer import Authorizer, parse_super_users
from coordinator.security.scram_store import FileCredentialStore, ScramCredentials
from coordinator.share.runtime.wiring import build_share_runtime
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator
from coordinator.transactions.runtime.wiring import build_transaction_coordinator


class Services:
    """`groups` and `data` (the embedded data plane: topic logs) are built from `config` when not given;
    `view` (who leads what) is LocalView(node) unless cluster mode gives its own; `metrics` is what the
    answer path counts for /metrics (None: no http.listener); `dynamic`: the dynamic broker configs (local mode:
    read from log.dirs here), applied to `data`."""

    def __init__(self, config: Config, node: Node, topics: TopicCatalog, groups: GroupCoordinator | None = None,
                 data: DataPlane | None = None, view: ClusterView | None = None,
                 metrics: RequestMetrics | None = None, dynamic: DynamicBrokerConfigs | None = None,
                 scram: ScramCredentials | None = None, acl_store: AclStore | None = None,
                 txn: TransactionCoordinator | None = None, txn_topic: Callable[[], bool] | None = None,
                 share_topic: Callable[[], bool] | None = None) -> None:
        self.config = config
        self.node = node
        self.topics = topics
        self.groups: GroupCoordinator = GroupCoordinator(GroupSettings.from_config(config)) if groups is None \
            else groups
        self.groups.topic_view = CatalogTopics(topics)  # what consumer groups (KIP-848) subscribe to
        self.data: DataPlane = DataPlane(DataPlaneSettings.from_config(config), topics) if data is None else data
        self.view: ClusterView = LocalView(node) if view is None else view
        if dynamic is None:
            dynamic = DynamicBrokerConfigs(config.node_id, FileDynamicConfigStore(config.log_dirs),
                                           self.data.base_configs)
            broker_configs.attach(self.data, dynamic)
        self.dynamic = dynamic
        self.metrics = metrics  # the answer path's counters, when the metrics endpoint is on
        # SCRAM credentials (local mode: read from log.dirs here; cluster mode: PostgreSQL's, given)
        self.scram = ScramCredentials(FileCredentialStore(config.log_dirs)) if scram is None else scram
        # ACLs, when an authorizer is configured (local mode: log.dirs/acls.json; cluster mode: kc_acls, given)
        self.acls: Acls | None = None
        if config.authorizer_class_name:
            authorizer = Authorizer(parse_super_users(config.super_users), config.allow_everyone_if_no_acl_found)
            self.acls = Acls(FileAclStore(config.log_dirs) if acl_store is None else acl_store, authorizer)
        self.access = Access(None if self.acls is None else self.acls.authorizer)
        # the transaction coordinator (its __transaction_state partitions: all here in local mode)
        self.txn: TransactionCoordinator = build_transaction_coordinator(config, self.data, self.groups) \
            if txn is None else txn
        # cluster mode: whether __transaction_state exists, creating it if not (FindCoordinator key type 1)
        self.txn_topic = txn_topic
        # KIP-932: the share coordinator (its __share_group_state partitions: all here in local mode), the share
        # partitions of the topic partitions hosted here, and their link to the share groups of each shard
        self.share = build_share_runtime(config, self.data, self.groups)
        # cluster mode: whether __share_group_state exists, creating it if not (FindCoordinator key type 2)
        self.share_topic = share_topic
