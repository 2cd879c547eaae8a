"""Periodic KIP-211 offset expiry of live groups (Kafka's cleanupGroupMetadata).

The rules are rules/offset_expiry.py's (the Spark expire job's too), applied to the live
state so that server and job cannot disagree: a live group is presented to
`expire_group` as the GroupMetadataValue Kafka would load for it -- no members when
Empty, its members and their subscriptions when Stable. Groups in PreparingRebalance or
CompletingRebalance expire nothing (ClassicGroup.offsetExpirationCondition answers
only for Empty and Stable). On top of those rules, as in Kafka, an offset with a commit
in flight never expires.

Expired offsets get tombstones; an Empty group whose offsets all expired (or that has
none) is deleted with a GroupMetadata tombstone (maybeDeleteGroup). This module only
decides: the shard writes the records (Shard.expire) and their replay deletes.
"""

from __future__ import annotations

from typing import Literal

from coordinator.groups.admin import group_tombstones
from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.offsets.store import OffsetStore
from coordinator.records.types import GroupMetadataValue, MemberMetadata, OffsetCommitRecord, Record
from rules.offset_expiry import expire_group

S = GroupState


def expiry_view(group: ClassicGroup) -> GroupMetadataValue | None | Literal[False]:
    """The value rules.offset_expiry judges for a live group; None for a simple group (no
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


def expired_records(store: OffsetStore, group: ClassicGroup, now_ms: int, retention_ms: int,
                    only: set[tuple[str, int]] | None = None) -> tuple[list, bool]:
    """(tombstones for the group's expired offsets, whether the group itself goes).

    `only` restricts the offsets that may expire (the staging swap's re-check)."""
    view = expiry_view(group)
    if view is False:
        return [], False
    group_id = group.group_id
    in_flight = store.durable_view(group_id) if store.inflight else {}
    pending = store.txn
    # a key with a write in flight keeps the group alive; so do open transactions (cleanupExpiredOffsets)
    candidates, blocked = [], bool(in_flight) or pending.has_open(group_id)
    for topic, partition, value in store.items(group_id):
        if (topic, partition) in in_flight or (only is not None and (topic, partition) not in only) \
                or pending.has(group_id, topic, partition):
            blocked = True  # never expires now (a pending transactional offset of the key too), keeps the group
        else:
            candidates.append((topic, partition, value))
    decision = expire_group(view, candidates, now_ms, retention_ms)
    records = [OffsetCommitRecord(group_id, topic, partition, None) for topic, partition, _r in decision.expired]
    delete = (decision.delete_group and not blocked and group.state is S.EMPTY and not group.members
              and not group.pending_join_members)
    return records, delete


def expiry_records(groups: dict[str, ClassicGroup], store: OffsetStore, now_ms: int,
                   retention_ms: int) -> tuple[list[Record], int, int]:
    """One cleanup pass over a shard's groups: (the records to write, offsets expired, groups
    deleted). A group that goes gets `group_tombstones` (all its offsets have expired then)."""
    records: list[Record] = []
    offsets = deleted = 0
    for group in list(groups.values()):
        tombstones, delete = expired_records(store, group, now_ms, retention_ms)
        offsets += len(tombstones)
        if delete:
            records += group_tombstones(store, group.group_id)
            deleted += 1
        else:
            records += tombstones
    return records, offsets, deleted
