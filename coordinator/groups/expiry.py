"""Periodic KIP-211 offset expiry of live groups (Kafka's cleanupGroupMetadata).

The rules are storage.expiry's (written for the Spark expire job), applied to the live
state so that server and job cannot disagree: a live group is presented to
`expire_group` as the GroupMetadataValue Kafka would load for it -- no members when
Empty, its members and their subscriptions when Stable. Groups in PreparingRebalance or
CompletingRebalance expire nothing (ClassicGroup.offsetExpirationCondition answers
only for Empty and Stable). On top of those rules, as in Kafka, an offset with a commit
in flight never expires.

Expired offsets get tombstones; an Empty group whose offsets all expired (or that has
none) is deleted with a GroupMetadata tombstone (maybeDeleteGroup). Everything goes
through Shard.write, hence through replay.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import structlog

from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.records import GroupMetadataRecord, GroupMetadataValue, MemberMetadata, OffsetCommitRecord
from coordinator.runtime.shard import ShardState
from coordinator.runtime.writes import PendingWrite
from storage.expiry import expire_group

if TYPE_CHECKING:
    from coordinator.runtime.shard import GroupCoordinator, Shard

log = structlog.get_logger("coordinator.groups.expiry")

S = GroupState


def expiry_view(group: ClassicGroup) -> GroupMetadataValue | None | Literal[False]:
    """The value storage.expiry judges for a live group; None for a simple group (no
    protocol type); False when the group's state lets nothing expire."""
    if not group.protocol_type:
        return None
    if group.state is S.EMPTY:
        return GroupMetadataValue(group.protocol_type, group.generation_id, None, None, (), group.state_timestamp)
    if group.state is not S.STABLE:
        return False
    members = tuple(MemberMetadata(m.member_id, m.client_id, m.client_host, m.session_timeout_ms,
                                   m.metadata(group.protocol_name), b"")
                    for m in group.members.values())
    return GroupMetadataValue(group.protocol_type, group.generation_id, group.protocol_name, group.leader_id,
                              members, group.state_timestamp)


def expired_records(shard: Shard, group: ClassicGroup, now_ms: int, retention_ms: int,
                    only: set[tuple[str, int]] | None = None) -> tuple[list, bool]:
    """(tombstones for the group's expired offsets, whether the group itself goes).

    `only` restricts the offsets that may expire (the staging swap's re-check)."""
    view = expiry_view(group)
    if view is False:
        return [], False
    store = shard.offsets
    group_id = group.group_id
    in_flight = store.durable_view(group_id) if store.inflight else {}
    candidates, blocked = [], bool(in_flight)  # a key with a write in flight keeps the group alive
    for topic, partition, value in store.items(group_id):
        if (topic, partition) in in_flight or (only is not None and (topic, partition) not in only):
            blocked = True  # never expires now, and keeps the group alive
        else:
            candidates.append((topic, partition, value))
    decision = expire_group(view, candidates, now_ms, retention_ms)
    records = [OffsetCommitRecord(group_id, topic, partition, None) for topic, partition, _r in decision.expired]
    delete = (decision.delete_group and not blocked and group.state is S.EMPTY and not group.members
              and not group.pending_join_members)
    return records, delete


def delete_group_record(shard: Shard, group: ClassicGroup) -> GroupMetadataRecord:
    """Take an expired group out of the shard; the caller writes the returned tombstone."""
    group.transition_to(S.DEAD, shard.scheduler.wall_ms())
    shard.groups.pop(group.group_id, None)
    shard.timers.cancel(("join", group.group_id))
    shard.timers.cancel(("sync", group.group_id))
    return GroupMetadataRecord(group.group_id, None)


def expire_shard(shard: Shard, now_ms: int, retention_ms: int) -> tuple[int, int, PendingWrite | None]:
    """One cleanup pass over a shard: (offsets expired, groups deleted, the write)."""
    if shard.state is not ShardState.ACTIVE:
        return 0, 0, None
    records: list = []
    offsets = groups = 0
    for group in list(shard.groups.values()):
        tombstones, delete = expired_records(shard, group, now_ms, retention_ms)
        records += tombstones
        offsets += len(tombstones)
        if delete:
            records.append(delete_group_record(shard, group))
            groups += 1
    if not records:
        return 0, 0, None
    return offsets, groups, shard.write(records)


def expire_all(coordinator: GroupCoordinator) -> tuple[int, int]:
    """Kafka's periodic cleanupGroupMetadata over every shard; logs Kafka's line."""
    started = time.monotonic()
    settings = coordinator.settings
    now_ms = coordinator.scheduler.wall_ms()
    total_offsets = total_groups = 0
    for shard in coordinator.all_shards():
        offsets, groups, write = expire_shard(shard, now_ms, settings.offsets_retention_ms)
        total_offsets += offsets
        total_groups += groups
        if write is not None:
            partition = shard.partition

            def failed(error: BaseException | None, partition: int = partition) -> None:
                if error is not None:
                    log.warning("writing expired offset tombstones failed", partition=partition, error=repr(error))

            write.add_callback(failed)
    elapsed = int((time.monotonic() - started) * 1000)
    log.info(f"Removed {total_offsets} expired offsets in {elapsed} milliseconds.",
             offsets=total_offsets, groups_deleted=total_groups, ms=elapsed)
    return total_offsets, total_groups
