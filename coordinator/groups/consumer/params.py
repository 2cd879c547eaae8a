"""What a ConsumerGroupHeartbeat asks and what it is answered, without protocol versions; and the settings of
consumer groups (group.consumer.*)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coordinator.groups.consumer.model import Assignment, PartitionAssignor


@dataclass(frozen=True, slots=True)
class HeartbeatParams:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int  # -1: unchanged
    subscribed_topic_names: tuple[str, ...] | None  # None: unchanged
    subscribed_topic_regex: str | None  # None: unchanged
    server_assignor: str | None
    owned: Assignment | None  # None: not sent (only full requests carry it)
    client_id: str = ""
    client_host: str = ""
    #: with an authorizer, whether the member's principal may DESCRIBE a topic (its regex matches no other)
    describable: Callable[[str], bool] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged (not sent)


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """group.consumer.* (GroupCoordinatorConfig); `assignors` in preference order, the first is the default."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: Mapping[str, PartitionAssignor] | None = None
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy (ConsumerGroupMigrationPolicy)
    topics_authorized: bool = False  # an authorizer is configured: regex matches are filtered by Topic DESCRIBE

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")

    @property
    def default_assignor(self) -> str:
        return next(iter(self.assignors or {}), "uniform")
