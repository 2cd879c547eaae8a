"""The one way consumer groups change: replaying their records (GroupMetadataManager.replay of the
ConsumerGroup* records), live and on load alike.

Live writes replay into a copy of each group they touch (`begin_write` ... `end_write`): if the write fails,
`restore` puts back the group as it was before it (Kafka reverts its state to the last committed offset).
Loading replays in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import LEAVE_GROUP_MEMBER_EPOCH, Assignment, ConsumerGroupMember, TopicMetadata
from coordinator.groups.consumer.records import member_with_current_assignment, member_with_subscription
from coordinator.records.types import (
    ConsumerGroupCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberSubscriptionRecord,
    ConsumerGroupRegularExpressionRecord,
    ConsumerGroupSubscriptionMetadataRecord,
    ConsumerGroupTargetAssignmentEpochRecord,
    ConsumerGroupTargetAssignmentRecord,
    CurrentAssignment,
    Record,
)

Saved = dict[str, ConsumerGroup | None]  # group id -> the group before a write (None: there was none)


class IllegalStateError(RuntimeError):
    """Records that contradict each other (Kafka throws IllegalStateException on replay): a corrupt log."""


class ConsumerGroupReplay:
    """Applies consumer-group records to `groups`. `on_created(group_id)` runs when a group is made (the shard
    drops a "simple" classic group of that id, one made only by offset commits: Kafka replaces it)."""

    def __init__(self, groups: dict[str, ConsumerGroup], on_created: Callable[[str], None]) -> None:
        self.groups = groups
        self.on_created = on_created
        self._saved: Saved | None = None  # the groups as they were before the live write in progress

    # --- live writes ---------------------------------------------------------------------------------------

    def begin_write(self) -> None:
        self._saved = {}

    def end_write(self) -> Saved:
        saved, self._saved = self._saved or {}, None
        return saved

    def restore(self, saved: Saved) -> None:
        for group_id, group in saved.items():
            if group is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = group

    def _group(self, group_id: str, create: bool) -> ConsumerGroup | None:
        saved = self._saved
        if saved is not None and group_id not in saved:
            before = self.groups.get(group_id)
            saved[group_id] = before
            if before is not None:
                self.groups[group_id] = before.copy()
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = ConsumerGroup(group_id)
            self.on_created(group_id)
        return group

    # --- the records ---------------------------------------------------------------------------------------

    def apply(self, record: Record) -> None:
        """Replay one consumer-group record (the shard's hook for records.types.ConsumerGroupRecord)."""
        if isinstance(record, ConsumerGroupCurrentAssignmentRecord):
            self.current_assignment(record.group_id, record.member_id, record.value)
        elif isinstance(record, ConsumerGroupTargetAssignmentRecord):
            self.target_member(record.group_id, record.member_id, record.assignment)
        elif isinstance(record, ConsumerGroupMemberSubscriptionRecord):
            self.member_subscription(record.group_id, record.member_id, record.value)
        elif isinstance(record, ConsumerGroupTargetAssignmentEpochRecord):
            self.target_epoch(record.group_id, record.assignment_epoch)
        elif isinstance(record, ConsumerGroupEpochRecord):
            self.group_epoch(record.group_id, record.epoch)
        elif isinstance(record, ConsumerGroupSubscriptionMetadataRecord):
            topics = record.topics
            self.subscription_metadata(record.group_id, None if topics is None else {
                t.topic_name: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions) for t in topics})
        elif not isinstance(record, ConsumerGroupRegularExpressionRecord):
            # (a resolved regex: regexes are resolved live against the catalog here, docs/CONSUMER_GROUPS.md)
            raise TypeError(f"not a consumer-group record: {type(record).__name__}")

    def group_epoch(self, group_id: str, epoch: int | None) -> None:
        group = self._group(group_id, epoch is not None)
        if group is None:
            return
        if epoch is not None:
            group.group_epoch = epoch
            group.refresh_state()
            return
        if group.members or group.target_assignment or group.assignment_epoch != -1:
            raise IllegalStateError(f"a tombstone deletes group {group_id}, which still has members, a target "
                                    "assignment or its epoch")
        del self.groups[group_id]

    def subscription_metadata(self, group_id: str, topics: dict[str, TopicMetadata] | None) -> None:
        group = self._group(group_id, topics is not None)
        if group is not None:
            group.subscription_metadata = dict(topics or {})

    def member_subscription(self, group_id: str, member_id: str,
                            value: ConsumerGroupMemberMetadataValue | None) -> None:
        group = self._group(group_id, value is not None)
        if group is None:
            return
        old = group.members.get(member_id)
        if value is not None:
            group.update_member(member_with_subscription(old or ConsumerGroupMember(member_id), value))
            return
        if old is None:
            return
        if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise IllegalStateError(f"a tombstone deletes member {member_id} of {group_id} before its current "
                                    "assignment tombstone")
        if member_id in group.target_assignment:
            raise IllegalStateError(f"a tombstone deletes member {member_id} of {group_id} before its target "
                                    "assignment tombstone")
        group.remove_member(member_id)

    def target_member(self, group_id: str, member_id: str, assignment: Assignment | None) -> None:
        group = self._group(group_id, assignment is not None)
        if group is not None:
            group.set_target(member_id, assignment)

    def target_epoch(self, group_id: str, epoch: int | None) -> None:
        group = self._group(group_id, epoch is not None)
        if group is None:
            return
        if epoch is None and group.target_assignment:
            raise IllegalStateError(f"a tombstone deletes the target assignment of {group_id}, which still has "
                                    "members")
        group.assignment_epoch = -1 if epoch is None else epoch
        group.refresh_state()

    def current_assignment(self, group_id: str, member_id: str,
                           value: CurrentAssignment | None) -> None:
        group = self._group(group_id, value is not None)
        if group is None:
            return
        old = group.members.get(member_id)
        if value is not None:
            group.update_member(member_with_current_assignment(old or ConsumerGroupMember(member_id), value))
        elif old is not None:
            group.update_member(dataclasses.replace(
                old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned_partitions={}, partitions_pending_revocation={}))
