"""The share coordinator's settings (Kafka's ShareCoordinatorConfig): their table rows for coordinator/config.py.
The share.coordinator.snapshot.update.records.per.snapshot row is with the group.share.* ones
(coordinator/groups/share/config_settings.py)."""

from __future__ import annotations

from typing import Any

from coordinator.config_values import _int

INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1

SHARE_COORDINATOR_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "share.coordinator.state.topic.num.partitions": (
        "share_coordinator_state_topic_num_partitions", _int(1, INT32_MAX), "50",
        "Partitions of __share_group_state (fixes where each share partition's state is kept)."),
    "share.coordinator.state.topic.segment.bytes": (
        "share_coordinator_state_topic_segment_bytes", _int(1, INT32_MAX), "104857600",
        "Segment size of the __share_group_state logs."),
    "share.coordinator.state.topic.prune.interval.ms": (
        "share_coordinator_state_topic_prune_interval_ms", _int(1, INT32_MAX), "300000",
        "How often the __share_group_state records no share partition needs any more are deleted."),
    "share.coordinator.state.topic.replication.factor": (
        "share_coordinator_state_topic_replication_factor", _int(1, INT16_MAX), "3",
        "Cluster mode: the replication factor __share_group_state is created with, i.e. how many live nodes "
        "Metadata names as each of its partitions' replicas, at most."),
}
