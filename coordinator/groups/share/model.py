"""A share group (Kafka's ShareGroup and ShareGroupMember) and the replay of its records.

The records are the share-group records of __consumer_offsets as storage.share_group_records' key and
value classes: (key, value) pairs, value None for a tombstone. A group changes only by `replay` of them, live
writes and loading alike; the heartbeat (heartbeat.py) computes records from the current state and never
changes it itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from storage.consumer_group_records import TopicPartitions
from storage.share_group_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupPartitionMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
)

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]
Record = tuple[Any, Any]  # (share-group record key, value or None)


class ShareGroupState(Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)


def to_topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(assignment.items(), key=lambda i: i[0].bytes)
                 if ps)


def from_topic_partitions(items: Iterable[TopicPartitions]) -> Assignment:
    return {tp.topic_id: frozenset(tp.partitions) for tp in items if tp.partitions}


@dataclass
class ShareGroup:
    """One share group's state, as its records left it."""

    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    partition_state: ShareGroupStatePartitionMetadataValue = field(
        default_factory=ShareGroupStatePartitionMetadataValue)
    session_deadlines: dict[str, float] = field(default_factory=dict)  # not records: each node's own timers
    created: bool = False  # a ShareGroupMetadata record was seen (a tombstone of it: the group is deleted)

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def initialized(self) -> dict[TopicId, frozenset[int]]:
        """The partitions whose share state is initialized: the ones the assignor may hand out."""
        return {t.topic_id: frozenset(t.partitions) for t in self.partition_state.initialized_topics}

    def state_partitions(self) -> dict[TopicId, frozenset[int]]:
        """Every partition with share state, initialized or being initialized (what deleting the group deletes)."""
        out: dict[TopicId, frozenset[int]] = {}
        for info in (*self.partition_state.initialized_topics, *self.partition_state.initializing_topics):
            out[info.topic_id] = out.get(info.topic_id, frozenset()) | frozenset(info.partitions)
        return out

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}

    # --- replay ------------------------------------------------------------------------------------

    def replay(self, key: Any, value: Any) -> None:
        """Apply one share-group record of this group (Kafka's GroupMetadataManager.replay)."""
        if isinstance(key, ShareGroupMetadataKey):
            if value is None:
                self.created = False
                self.group_epoch = self.assignment_epoch = self.metadata_hash = 0
            else:
                assert isinstance(value, ShareGroupMetadataValue)
                self.created = True
                self.group_epoch, self.metadata_hash = value.epoch, value.metadata_hash
        elif isinstance(key, ShareGroupMemberMetadataKey):
            self._replay_subscription(key.member_id, value)
        elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
            self._replay_current(key.member_id, value)
        elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                assert isinstance(value, ShareGroupTargetAssignmentMemberValue)
                self.target[key.member_id] = from_topic_partitions(value.topic_partitions)
        elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
            self.assignment_epoch = 0 if value is None else value.assignment_epoch
        elif isinstance(key, ShareGroupStatePartitionMetadataKey):
            self.partition_state = value if value is not None else ShareGroupStatePartitionMetadataValue()
        elif isinstance(key, ShareGroupPartitionMetadataKey):
            pass  # Kafka 4.0's subscription metadata: 4.1+ ignores it

    def _replay_subscription(self, member_id: str, value: ShareGroupMemberMetadataValue | None) -> None:
        if value is None:
            self.members.pop(member_id, None)
            self.session_deadlines.pop(member_id, None)
            return
        old = self.members.get(member_id, ShareGroupMember(member_id))
        self.members[member_id] = ShareGroupMember(
            member_id, old.member_epoch, old.previous_member_epoch, value.rack_id, value.client_id,
            value.client_host, value.subscribed_topic_names, old.assigned)

    def _replay_current(self, member_id: str, value: ShareGroupCurrentMemberAssignmentValue | None) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:  # Kafka keeps the member with an empty assignment until its subscription goes
                self.members[member_id] = ShareGroupMember(member_id, -1, -1, old.rack_id, old.client_id,
                                                           old.client_host, old.subscribed_topic_names, {})
            return
        base = old if old is not None else ShareGroupMember(member_id)
        self.members[member_id] = ShareGroupMember(
            member_id, value.member_epoch, value.previous_member_epoch, base.rack_id, base.client_id,
            base.client_host, base.subscribed_topic_names, from_topic_partitions(value.assigned_partitions))


def replay_all(groups: dict[str, ShareGroup], records: Iterable[Record]) -> None:
    """Replay records of any share groups into `groups` (creating a group at its first record)."""
    for key, value in records:
        group = groups.get(key.group)
        if group is None:
            group = groups[key.group] = ShareGroup(key.group)
        group.replay(key, value)
        if isinstance(key, ShareGroupMetadataKey) and value is None and not group.members:
            del groups[key.group]
