"""DescribeGroups and ListGroups over every shard, and what DeleteGroups writes, as Kafka answers them.

Follows GroupMetadataManager.describeGroups / listGroups, GroupCoordinatorShard.deleteGroups
and ClassicGroup.validateDeleteGroup; the request-level details (distinct group names in
DeleteGroups, null ids) come from KafkaApis and GroupCoordinatorService; the deletion itself
is the replay of the records `group_tombstones` returns (runtime.shard.Shard.delete_groups).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.offsets.manager import offset_tombstones
from coordinator.offsets.store import OffsetStore
from coordinator.records.types import GroupMetadataRecord, Record

S = GroupState
GROUP_TYPE_CLASSIC = "classic"
GROUP_TYPE_CONSUMER = "consumer"
GROUP_TYPE_SHARE = "share"  # also a share group's protocol type (Kafka's ShareGroup.PROTOCOL_TYPE)
KNOWN_GROUP_TYPES = {"classic", "consumer", "share"}  # Group.GroupType; others parse to "unknown"


class GroupShard(Protocol):
    error: ErrorCode | None  # the answer for its groups when it is not ACTIVE
    groups: dict[str, ClassicGroup]
    consumer_groups: dict[str, ConsumerGroup]  # KIP-848
    share: Any  # KIP-932: runtime/share_shard.ShareGroups (its `groups`)


class GroupShards(Protocol):
    """What the admin views read of the coordinator (runtime.group_coordinator.GroupCoordinator)."""

    def shard_for(self, group_id: str) -> GroupShard: ...

    def all_shards(self) -> Iterable[GroupShard]: ...


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]
    error: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = GROUP_TYPE_CLASSIC


def describe_groups(coordinator: GroupShards, group_ids: list[str]) -> list[DescribedGroup]:
    """Member metadata only for a Stable group (its protocol is chosen); an unknown group is Dead."""
    described = []
    for group_id in group_ids:
        shard = coordinator.shard_for(group_id)
        if shard.error is not None:
            described.append(DescribedGroup(group_id, "", "", "", (), shard.error))
            continue
        group = shard.groups.get(group_id)
        if group is None:
            described.append(DescribedGroup(group_id, S.DEAD.value, "", "", ()))
            continue
        stable = group.is_in(S.STABLE)
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(group.protocol_name) if stable else b"", m.assignment)
            for m in group.members.values())
        described.append(DescribedGroup(group_id, group.state.value, group.protocol_type or "",
                                        (group.protocol_name or "") if stable else "", members))
    return described


def list_groups(coordinator: GroupShards, states_filter: tuple[str, ...] = (),
                types_filter: tuple[str, ...] = ()) -> list[ListedGroup]:
    """States compare case-insensitively after trimming; types case-insensitively (not trimmed)."""
    states = {state.strip().lower() for state in states_filter}
    types = {t.lower() if t.lower() in KNOWN_GROUP_TYPES else "unknown" for t in types_filter}
    listed: list[ListedGroup] = []
    for shard in coordinator.all_shards():
        if shard.error is not None:
            continue
        if not types or GROUP_TYPE_CLASSIC in types:
            listed += [ListedGroup(group.group_id, group.protocol_type or "", group.state.value)
                       for group in list(shard.groups.values())
                       if not states or group.state.value.lower() in states]
        if not types or GROUP_TYPE_CONSUMER in types:
            listed += [ListedGroup(group.group_id, group.protocol_type, group.state.value, GROUP_TYPE_CONSUMER)
                       for group in list(shard.consumer_groups.values())
                       if not states or group.state.value.lower() in states]
        if not types or GROUP_TYPE_SHARE in types:
            listed += [ListedGroup(group.group_id, GROUP_TYPE_SHARE, group.state().value, GROUP_TYPE_SHARE)
                       for group in list(shard.share.groups.values())
                       if not states or group.state().value.lower() in states]
    return listed


def deletion_error(group: ClassicGroup | None) -> ErrorCode:
    """ClassicGroup.validateDeleteGroup: only an Empty group may go (ErrorCode.none)."""
    if group is None or group.is_in(S.DEAD):
        return ErrorCode.group_id_not_found
    if group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE):
        return ErrorCode.non_empty_group
    return ErrorCode.none


def group_tombstones(offsets: OffsetStore, group_id: str) -> list[Record]:
    """The records that delete a group: a tombstone for each of its offsets, then one for
    the group (GroupCoordinatorShard.deleteGroups, and expiry's maybeDeleteGroup); their
    replay removes the group."""
    records: list[Record] = offset_tombstones(offsets, group_id)
    records.append(GroupMetadataRecord(group_id, None))
    return records
