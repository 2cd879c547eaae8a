"""The share groups' runtime of a node, built from the config: the share coordinator, the share partitions and
the requests on them, and their links to the share groups of every shard (runtime/share_shard.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from coordinator.groups.consumer.config_settings import consumer_timing
from coordinator.groups.share.config_settings import share_group_settings
from coordinator.runtime.share_shard import ShareTopics
from coordinator.share.runtime.group_configs import GroupConfigs
from coordinator.share.runtime.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from coordinator.share.runtime.share_fetching import ShareFetching
from coordinator.share.runtime.share_partitions import SharePartitions


@dataclass
class ShareRuntime:
    """`coordinator`: the __share_group_state partitions hosted here; `state`: where the share-group state
    requests go (the coordinator itself in local mode; in cluster mode the node owning each request's partition:
    cluster/share_state_remote.py, set by `route`)."""

    coordinator: ShareCoordinator
    partitions: SharePartitions
    fetching: ShareFetching
    group_configs: GroupConfigs
    state: Any = None
    host_all: bool = True  # local mode: every __share_group_state partition is hosted here

    def __post_init__(self) -> None:
        if self.state is None:
            self.state = self.coordinator

    def route(self, state: Any) -> None:
        """Cluster mode: the requests go through `state`; the partitions come as this node takes them."""
        self.state = self.partitions.coordinator = state
        self.host_all = False

    async def start(self) -> None:
        await self.coordinator.start(self.host_all)

    async def stop(self) -> None:
        self.partitions.close()
        await self.coordinator.stop()


def build_share_runtime(config: Any, data: Any, groups: Any) -> ShareRuntime:
    """`data`: the DataPlane (topic logs, catalog, purgatory); `groups`: the GroupCoordinator (its shards)."""
    catalog = data.catalog

    def partition_exists(topic_id: uuid.UUID, partition: int) -> bool:
        info = catalog.by_id(topic_id)
        return info is not None and 0 <= partition < info.partitions

    coordinator = ShareCoordinator(ShareCoordinatorSettings.from_config(config), config.log_dirs, partition_exists)
    base = share_group_settings(config)
    group_configs = GroupConfigs(config.log_dirs, base, consumer_timing(config))
    partitions = SharePartitions(coordinator, data, base)
    partitions.settings_for = group_configs.settings_for
    fetching = ShareFetching(partitions, data)
    topics = ShareTopics(catalog)

    def wire(shard: Any) -> None:
        shard.share.members = partitions
        shard.share.topics = topics
        shard.share.settings_for = group_configs.settings_for
        shard.consumer.ops.timing_for = group_configs.consumer_timing

    groups.share_wiring = wire
    for shard in groups.shards.values():
        wire(shard)
    return ShareRuntime(coordinator, partitions, fetching, group_configs)


__all__ = ["ShareRuntime", "build_share_runtime"]
