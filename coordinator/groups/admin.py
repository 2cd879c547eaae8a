"""DescribeGroups, ListGroups and DeleteGroups over every shard, as Kafka answers them.

Follows GroupMetadataManager.describeGroups / listGroups, GroupCoordinatorShard.deleteGroups
and ClassicGroup.validateDeleteGroup; the request-level details (distinct group names in
DeleteGroups, null ids) come from KafkaApis and GroupCoordinatorService.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.groups.classic_group import GroupState, RebalanceRecord
from coordinator.offsets.manager import offset_tombstones
from coordinator.records import GroupMetadataRecord
from coordinator.runtime.shard import GroupCoordinator
from coordinator.runtime.writes import PendingWrite

log = structlog.get_logger("coordinator.groups")

S = GroupState
GROUP_TYPE_CLASSIC = "classic"
KNOWN_GROUP_TYPES = {"classic", "consumer", "share"}  # Group.GroupType; others parse to "unknown"


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


def describe_groups(coordinator: GroupCoordinator, group_ids: list[str]) -> list[DescribedGroup]:
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


def list_groups(coordinator: GroupCoordinator, states_filter: tuple[str, ...] = (),
                types_filter: tuple[str, ...] = ()) -> list[ListedGroup]:
    """States compare case-insensitively after trimming; types case-insensitively (not trimmed)."""
    states = {state.strip().lower() for state in states_filter}
    types = {t.lower() if t.lower() in KNOWN_GROUP_TYPES else "unknown" for t in types_filter}
    if types and GROUP_TYPE_CLASSIC not in types:
        return []
    return [ListedGroup(group.group_id, group.protocol_type or "", group.state.value)
            for shard in coordinator.all_shards() if shard.error is None
            for group in list(shard.groups.values())
            if not states or group.state.value.lower() in states]


def rebalance_history(coordinator: GroupCoordinator, group_id: str) -> list[RebalanceRecord]:
    """The last rebalances of a group, oldest first (for a later admin view)."""
    group = coordinator.group(group_id)
    return [] if group is None else list(group.rebalances)


async def delete_groups(coordinator: GroupCoordinator,
                        group_ids: list[str | None]) -> list[tuple[str | None, ErrorCode]]:
    """Delete Empty groups: a tombstone for each of their offsets, then one for the group
    (GroupCoordinatorShard.deleteGroups); answers wait until the tombstones are written."""
    results: dict[str | None, ErrorCode] = {}
    writes: list[tuple[PendingWrite, list[str]]] = []
    by_shard: dict[int, list[str]] = {}
    for group_id in dict.fromkeys(group_ids):  # KafkaApis: groupsNames.distinct
        if group_id is None:
            results[group_id] = ErrorCode.invalid_group_id
            continue
        shard = coordinator.shard_for(group_id)
        group = shard.groups.get(group_id)
        if shard.error is not None:
            results[group_id] = shard.error
        elif group is None or group.is_in(S.DEAD):
            results[group_id] = ErrorCode.group_id_not_found
        elif group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE):
            results[group_id] = ErrorCode.non_empty_group
        else:
            group.transition_to(S.DEAD, shard.scheduler.wall_ms())
            del shard.groups[group_id]
            shard.timers.cancel(("join", group_id))
            shard.timers.cancel(("sync", group_id))
            for member_id in list(group.pending_join_members):
                shard.timers.cancel(("session", group_id, member_id))
            results[group_id] = ErrorCode.none
            by_shard.setdefault(shard.partition, []).append(group_id)
    for partition, deleted in by_shard.items():
        shard = coordinator.shards[partition]
        records: list = []
        for group_id in deleted:
            records += offset_tombstones(shard.offsets, group_id)
            records.append(GroupMetadataRecord(group_id, None))
        writes.append((shard.write(records), deleted))
        log.info("groups deleted", partition=partition, groups=deleted)
    for write, deleted in writes:
        try:
            await write
        except Exception as exc:  # the write failed: these deletions are not durable
            code = write_error_code(exc)
            for group_id in deleted:
                results[group_id] = code
    return list(results.items())
