"""The records a KIP-848 consumer group writes (Kafka's GroupCoordinatorRecordHelpers, the
consumer-group part), and the way back from them to a member (ConsumerGroupMember.Builder.updateWith).

Each helper returns one records.types record; a `..._tombstone` one deletes its key. As in Kafka
4.0, subscribed topic names and regex topics are written sorted; the group epoch record carries
no metadata hash (4.1's field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from coordinator.groups.consumer.model import Assignment, ConsumerGroupMember, MemberState, TopicMetadata
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
    ResolvedRegularExpression,
)
from storage.consumer_group_records import TopicMetadata as WireTopicMetadata

if TYPE_CHECKING:
    from coordinator.groups.consumer.group import ConsumerGroup


def new_consumer_group_epoch_record(group_id: str, epoch: int) -> ConsumerGroupEpochRecord:
    return ConsumerGroupEpochRecord(group_id, epoch)


def new_consumer_group_epoch_tombstone_record(group_id: str) -> ConsumerGroupEpochRecord:
    return ConsumerGroupEpochRecord(group_id, None)


def new_consumer_group_member_subscription_record(group_id: str, member: ConsumerGroupMember
                                                  ) -> ConsumerGroupMemberSubscriptionRecord:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor_name, classic_member_metadata=member.classic)
    return ConsumerGroupMemberSubscriptionRecord(group_id, member.member_id, value)


def new_consumer_group_member_subscription_tombstone_record(group_id: str, member_id: str
                                                            ) -> ConsumerGroupMemberSubscriptionRecord:
    return ConsumerGroupMemberSubscriptionRecord(group_id, member_id, None)


def new_consumer_group_subscription_metadata_record(group_id: str, topics: Mapping[str, TopicMetadata]
                                                    ) -> ConsumerGroupSubscriptionMetadataRecord:
    """ConsumerGroupPartitionMetadata (4.0 writes it; racks are no longer written), topics by name."""
    return ConsumerGroupSubscriptionMetadataRecord(group_id, tuple(
        WireTopicMetadata(topics[name].topic_id, topics[name].name, topics[name].partitions)
        for name in sorted(topics)))


def new_consumer_group_subscription_metadata_tombstone_record(group_id: str
                                                              ) -> ConsumerGroupSubscriptionMetadataRecord:
    return ConsumerGroupSubscriptionMetadataRecord(group_id, None)


def new_consumer_group_target_assignment_record(group_id: str, member_id: str, assignment: Assignment
                                                ) -> ConsumerGroupTargetAssignmentRecord:
    return ConsumerGroupTargetAssignmentRecord(group_id, member_id, dict(assignment))


def new_consumer_group_target_assignment_tombstone_record(group_id: str, member_id: str
                                                          ) -> ConsumerGroupTargetAssignmentRecord:
    return ConsumerGroupTargetAssignmentRecord(group_id, member_id, None)


def new_consumer_group_target_assignment_epoch_record(group_id: str, assignment_epoch: int
                                                      ) -> ConsumerGroupTargetAssignmentEpochRecord:
    return ConsumerGroupTargetAssignmentEpochRecord(group_id, assignment_epoch)


def new_consumer_group_target_assignment_epoch_tombstone_record(group_id: str
                                                                ) -> ConsumerGroupTargetAssignmentEpochRecord:
    return ConsumerGroupTargetAssignmentEpochRecord(group_id, None)


def new_consumer_group_current_assignment_record(group_id: str, member: ConsumerGroupMember
                                                 ) -> ConsumerGroupCurrentAssignmentRecord:
    return ConsumerGroupCurrentAssignmentRecord(group_id, member.member_id, CurrentAssignment(
        member.member_epoch, member.previous_member_epoch, member.state, dict(member.assigned_partitions),
        dict(member.partitions_pending_revocation)))


def new_consumer_group_current_assignment_tombstone_record(group_id: str, member_id: str
                                                           ) -> ConsumerGroupCurrentAssignmentRecord:
    return ConsumerGroupCurrentAssignmentRecord(group_id, member_id, None)


def new_consumer_group_regular_expression_record(group_id: str, regex: str, resolved: ResolvedRegularExpression
                                                 ) -> ConsumerGroupRegularExpressionRecord:
    return ConsumerGroupRegularExpressionRecord(group_id, regex, resolved)


def new_consumer_group_regular_expression_tombstone(group_id: str, regex: str) -> ConsumerGroupRegularExpressionRecord:
    return ConsumerGroupRegularExpressionRecord(group_id, regex, None)


# --- the way back: replay rebuilds members from their records ------------------------------------

def member_with_subscription(member: ConsumerGroupMember, value: ConsumerGroupMemberMetadataValue
                             ) -> ConsumerGroupMember:
    """ConsumerGroupMember.Builder.updateWith(ConsumerGroupMemberMetadataValue), the classic-protocol metadata
    included (None: the member speaks the consumer protocol)."""
    return replace(member, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                   client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
                   subscribed_topic_regex=value.subscribed_topic_regex,
                   rebalance_timeout_ms=value.rebalance_timeout_ms, server_assignor_name=value.server_assignor,
                   classic=value.classic_member_metadata)


def member_with_current_assignment(member: ConsumerGroupMember, value: CurrentAssignment) -> ConsumerGroupMember:
    """ConsumerGroupMember.Builder.updateWith(ConsumerGroupCurrentMemberAssignmentValue)."""
    return replace(member, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                   state=value.state, assigned_partitions=value.assigned_partitions,
                   partitions_pending_revocation=value.partitions_pending_revocation)


def member_from_records(member_id: str, subscription: ConsumerGroupMemberMetadataValue | None,
                        current: CurrentAssignment | None) -> ConsumerGroupMember:
    """A member rebuilt from its two records (either may be missing: Kafka creates the member on
    the first one replayed and fills it in with the other)."""
    member = ConsumerGroupMember(member_id, state=MemberState.STABLE)
    if subscription is not None:
        member = member_with_subscription(member, subscription)
    if current is not None:
        member = member_with_current_assignment(member, current)
    return member


def consumer_group_tombstones(group: ConsumerGroup) -> list[Record]:
    """ConsumerGroup.createGroupTombstoneRecords, in Kafka's order: every member's current and target
    assignment, the target epoch, every member's subscription, the subscription metadata, the group epoch
    (replaying them in this order never trips the replay's consistency checks)."""
    gid = group.group_id
    members = list(group.members)
    records: list[Record] = [new_consumer_group_current_assignment_tombstone_record(gid, m) for m in members]
    records += [new_consumer_group_target_assignment_tombstone_record(gid, m) for m in members]
    records.append(new_consumer_group_target_assignment_epoch_tombstone_record(gid))
    records += [new_consumer_group_member_subscription_tombstone_record(gid, m) for m in members]
    records.append(new_consumer_group_subscription_metadata_tombstone_record(gid))
    records.append(new_consumer_group_epoch_tombstone_record(gid))
    return records
