"""What handlers are given: the settings, this node, and the domain objects."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.config import Config
from coordinator.data_plane import DataPlane, DataPlaneSettings
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.node import Node
from coordinator.runtime.shard import GroupCoordinator, GroupSettings


@dataclass
class Services:
    config: Config
    node: Node
    topics: TopicCatalog
    groups: GroupCoordinator | None = None  # built from config when not given
    data: DataPlane | None = None  # the embedded data plane (topic logs); built from config when not given

    def __post_init__(self) -> None:
        if self.groups is None:
            self.groups = GroupCoordinator(GroupSettings.from_config(self.config))
        if self.data is None:
            self.data = DataPlane(DataPlaneSettings.from_config(self.config), self.topics)
