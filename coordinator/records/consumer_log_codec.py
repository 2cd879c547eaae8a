"""KIP-848 consumer-group records <-> key/value bytes (log_codec's path for record types 3-8 and 16).

The wire values are storage.consumer_group_records'; the records (records/types.py) carry model types:
an Assignment ({topic id: frozenset of partitions}) is written as [TopicId, Partitions] with
topics and partitions sorted, so the same assignment always gives the same bytes (Kafka writes
its maps' iteration order; any order reads the same). Reading one, a topic listed twice gets the
union of its partitions and a topic with no partitions is dropped (model.Assignment never holds one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coordinator.groups.consumer.model import Assignment, MemberState
from coordinator.records.types import (
    CONSUMER_GROUP_RECORD_TYPES,
    ConsumerGroupCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerGroupMemberSubscriptionRecord,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpressionRecord,
    ConsumerGroupSubscriptionMetadataRecord,
    ConsumerGroupTargetAssignmentEpochRecord,
    ConsumerGroupTargetAssignmentRecord,
    CurrentAssignment,
    ResolvedRegularExpression,
)
from storage import consumer_group_records as cg
from storage.errors import InvalidRecordError


def to_topic_partitions(assignment: Assignment) -> tuple[cg.TopicPartitions, ...]:
    """An Assignment as the wire's [TopicId, Partitions], sorted."""
    return tuple(cg.TopicPartitions(topic_id, tuple(sorted(assignment[topic_id]))) for topic_id in sorted(assignment))


def from_topic_partitions(topics: Iterable[cg.TopicPartitions]) -> dict:
    """The wire's [TopicId, Partitions] as an Assignment (see the module docstring)."""
    out: dict = {}
    for tp in topics:
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out


def _key(record: ConsumerGroupRecord) -> cg.ConsumerGroupKey:
    if isinstance(record, ConsumerGroupEpochRecord):
        return cg.ConsumerGroupMetadataKey(record.group_id)
    if isinstance(record, ConsumerGroupSubscriptionMetadataRecord):
        return cg.ConsumerGroupPartitionMetadataKey(record.group_id)
    if isinstance(record, ConsumerGroupTargetAssignmentEpochRecord):
        return cg.ConsumerGroupTargetAssignmentMetadataKey(record.group_id)
    if isinstance(record, ConsumerGroupRegularExpressionRecord):
        return cg.ConsumerGroupRegularExpressionKey(record.group_id, record.regex)
    if isinstance(record, ConsumerGroupMemberSubscriptionRecord):
        return cg.ConsumerGroupMemberMetadataKey(record.group_id, record.member_id)
    if isinstance(record, ConsumerGroupTargetAssignmentRecord):
        return cg.ConsumerGroupTargetAssignmentMemberKey(record.group_id, record.member_id)
    if isinstance(record, ConsumerGroupCurrentAssignmentRecord):
        return cg.ConsumerGroupCurrentMemberAssignmentKey(record.group_id, record.member_id)
    raise TypeError(f"not a consumer-group record: {record!r}")


def _value(record: ConsumerGroupRecord) -> Any:
    """The wire value of a record that is not a tombstone."""
    if isinstance(record, ConsumerGroupEpochRecord):
        return cg.ConsumerGroupMetadataValue(record.epoch or 0, record.metadata_hash)
    if isinstance(record, ConsumerGroupSubscriptionMetadataRecord):
        return cg.ConsumerGroupPartitionMetadataValue(tuple(record.topics or ()))
    if isinstance(record, ConsumerGroupTargetAssignmentEpochRecord):
        return cg.ConsumerGroupTargetAssignmentMetadataValue(record.assignment_epoch or 0)
    if isinstance(record, ConsumerGroupTargetAssignmentRecord):
        return cg.ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(record.assignment or {}))
    if isinstance(record, ConsumerGroupCurrentAssignmentRecord):
        v = record.value
        assert v is not None
        return cg.ConsumerGroupCurrentMemberAssignmentValue(
            v.member_epoch, v.previous_member_epoch, v.state.value, to_topic_partitions(v.assigned_partitions),
            to_topic_partitions(v.partitions_pending_revocation))
    if isinstance(record, ConsumerGroupRegularExpressionRecord):
        r = record.value
        assert r is not None
        return cg.ConsumerGroupRegularExpressionValue(tuple(sorted(r.topics)), r.version, r.timestamp)
    return record.value  # the member subscription: already the wire value


def encode(record: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    """(key, value or None for a tombstone)."""
    type_id, _ = CONSUMER_GROUP_RECORD_TYPES[type(record)]
    key = _key(record)
    return cg.encode_key(key), None if record.is_tombstone else cg.encode_value(type_id, _value(record))


def _member_state(byte: int) -> MemberState:
    try:
        return MemberState(byte)
    except ValueError:  # Kafka's MemberState.fromValue refuses it too
        raise InvalidRecordError(f"unknown member state {byte}") from None


def decode(key: bytes, value: bytes | None) -> ConsumerGroupRecord:
    """A record from its key and value bytes; UnknownRecordType for another record type."""
    parsed = cg.decode_key(key)
    decoded = cg.decode_value(parsed, value)
    v = None if decoded is None else decoded[1]
    group = parsed.group
    if isinstance(parsed, cg.ConsumerGroupMetadataKey):
        return ConsumerGroupEpochRecord(group, None if v is None else v.epoch, 0 if v is None else v.metadata_hash)
    if isinstance(parsed, cg.ConsumerGroupPartitionMetadataKey):
        return ConsumerGroupSubscriptionMetadataRecord(group, None if v is None else v.topics)
    if isinstance(parsed, cg.ConsumerGroupMemberMetadataKey):
        return ConsumerGroupMemberSubscriptionRecord(group, parsed.member_id, v)
    if isinstance(parsed, cg.ConsumerGroupTargetAssignmentMetadataKey):
        return ConsumerGroupTargetAssignmentEpochRecord(group, None if v is None else v.assignment_epoch)
    if isinstance(parsed, cg.ConsumerGroupTargetAssignmentMemberKey):
        return ConsumerGroupTargetAssignmentRecord(
            group, parsed.member_id, None if v is None else from_topic_partitions(v.topic_partitions))
    if isinstance(parsed, cg.ConsumerGroupCurrentMemberAssignmentKey):
        current = None if v is None else CurrentAssignment(
            v.member_epoch, v.previous_member_epoch, _member_state(v.state),
            from_topic_partitions(v.assigned_partitions), from_topic_partitions(v.partitions_pending_revocation))
        return ConsumerGroupCurrentAssignmentRecord(group, parsed.member_id, current)
    resolved = None if v is None else ResolvedRegularExpression(frozenset(v.topics), v.version, v.timestamp)
    return ConsumerGroupRegularExpressionRecord(group, parsed.regular_expression, resolved)
