"""The coordinator's consumer-group records through log_codec (round trips of every type and of
its tombstone, sorted assignments, unknown types), the GroupCoordinatorRecordHelpers equivalents,
and members rebuilt from their records."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, strategies as st

from coordinator.groups.consumer import records as helpers
from coordinator.groups.consumer.model import ConsumerGroupMember, MemberState, TopicMetadata
from coordinator.records import log_codec
from coordinator.records.types import (
    CONSUMER_GROUP_RECORD_TYPES,
    ConsumerGroupCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberSubscriptionRecord,
    ConsumerGroupRegularExpressionRecord,
    ConsumerGroupSubscriptionMetadataRecord,
    ConsumerGroupTargetAssignmentEpochRecord,
    ConsumerGroupTargetAssignmentRecord,
    CurrentAssignment,
    OffsetCommitRecord,
    OffsetValue,
    ResolvedRegularExpression,
    ShareGroupRecord,
)
from storage import consumer_group_records as cg
from storage.batch import record_tail
from storage.errors import InvalidRecordError
from storage.records import UnknownRecordType
from storage.share_group_records import ShareGroupMetadataKey

A = uuid.UUID(int=1)
B = uuid.UUID(int=2 << 64)

names = st.text(max_size=12)
assignments = st.dictionaries(st.uuids(), st.frozensets(st.integers(0, 1000), min_size=1, max_size=5), max_size=4)
current = st.builds(CurrentAssignment, st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1),
                    st.sampled_from(MemberState), assignments, assignments)
member_values = st.builds(ConsumerGroupMemberMetadataValue, st.none() | names, st.none() | names, names, names,
                          st.lists(names, max_size=3).map(tuple), st.none() | names, st.integers(-1, 10**6),
                          st.none() | names)
wire_topics = st.lists(st.builds(cg.TopicMetadata, st.uuids(), names, st.integers(0, 100)), max_size=3).map(tuple)
RECORDS = st.one_of(
    st.builds(ConsumerGroupEpochRecord, names, st.none() | st.integers(-2**31, 2**31 - 1)),
    st.builds(ConsumerGroupEpochRecord, names, st.integers(0, 9), st.integers(1, 2**63 - 1)),
    st.builds(ConsumerGroupSubscriptionMetadataRecord, names, st.none() | wire_topics),
    st.builds(ConsumerGroupMemberSubscriptionRecord, names, names, st.none() | member_values),
    st.builds(ConsumerGroupTargetAssignmentEpochRecord, names, st.none() | st.integers(-2**31, 2**31 - 1)),
    st.builds(ConsumerGroupTargetAssignmentRecord, names, names, st.none() | assignments),
    st.builds(ConsumerGroupCurrentAssignmentRecord, names, names, st.none() | current),
    st.builds(ConsumerGroupRegularExpressionRecord, names, names, st.none() | st.builds(
        ResolvedRegularExpression, st.frozensets(names, max_size=3), st.integers(0, 2**40), st.integers(0, 2**40))),
)


@given(RECORDS)
def test_round_trip_every_record_type_and_tombstone(record):
    key, value = log_codec.encode(record)
    type_id, field = CONSUMER_GROUP_RECORD_TYPES[type(record)]
    assert struct.unpack(">h", key[:2])[0] == type_id
    assert (value is None) == (getattr(record, field) is None) == record.is_tombstone
    assert log_codec.decode(key, value) == record
    assert log_codec.encode_tails([record]) == [record_tail(key, value)]
    assert list(log_codec.decode_all([(key, value)])) == [record]


def test_assignments_are_written_sorted():
    a = ConsumerGroupTargetAssignmentRecord("g", "m", {B: frozenset({3, 1}), A: frozenset({2, 0})})
    b = ConsumerGroupTargetAssignmentRecord("g", "m", {A: frozenset({0, 2}), B: frozenset({1, 3})})
    _, value = log_codec.encode(a)
    assert value == log_codec.encode(b)[1]
    decoded = cg.decode_value(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"), value)
    assert decoded is not None
    assert decoded[1].topic_partitions == (cg.TopicPartitions(A, (0, 2)), cg.TopicPartitions(B, (1, 3)))


def test_reading_merges_a_repeated_topic_and_drops_empty_ones():
    wire = cg.ConsumerGroupTargetAssignmentMemberValue(
        (cg.TopicPartitions(A, (1,)), cg.TopicPartitions(B, ()), cg.TopicPartitions(A, (0,))))
    key = cg.encode_key(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"))
    record = log_codec.decode(key, cg.encode_value(7, wire))
    assert record == ConsumerGroupTargetAssignmentRecord("g", "m", {A: frozenset({0, 1})})


def test_unknown_member_state_is_refused():
    wire = cg.ConsumerGroupCurrentMemberAssignmentValue(1, 0, 5)
    with pytest.raises(InvalidRecordError):
        log_codec.decode(cg.encode_key(cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m")),
                            cg.encode_value(8, wire))


def test_unknown_record_types_are_skipped_and_share_group_records_decode():
    unknown_key = struct.pack(">h", 0x7FFF) + struct.pack(">h", 1) + b"g"  # a type no Kafka version writes
    with pytest.raises(UnknownRecordType):
        log_codec.decode(unknown_key, b"\x00\x00\x00\x00\x00\x01\x00")
    share_key = struct.pack(">h", 11) + struct.pack(">h", 1) + b"g"  # ShareGroupMetadataKey (KIP-932)
    share = ShareGroupRecord(ShareGroupMetadataKey("g"), None)
    assert log_codec.decode(share_key, None) == share
    commit = OffsetCommitRecord("g", "t", 0, OffsetValue(5, "", 1))
    epoch = ConsumerGroupEpochRecord("g", 3)
    pairs = [log_codec.encode(commit), (unknown_key, None), (share_key, None), log_codec.encode(epoch)]
    assert list(log_codec.decode_all(pairs)) == [commit, share, epoch]


def test_offset_commit_tails_are_unchanged_beside_consumer_group_records():
    commit = OffsetCommitRecord("g", "t", 0, OffsetValue(5, "", 1, 2))
    alone = log_codec.encode_tails([commit])
    mixed = log_codec.encode_tails([commit, ConsumerGroupEpochRecord("g", 1), commit])
    assert mixed[0] == mixed[2] == alone[0] == record_tail(*log_codec.encode(commit))


MEMBER = ConsumerGroupMember(
    "m1", member_epoch=5, previous_member_epoch=4, state=MemberState.UNREVOKED_PARTITIONS, instance_id="i",
    rack_id="r", rebalance_timeout_ms=30000, client_id="c", client_host="/1.2.3.4",
    subscribed_topic_names=frozenset({"b", "a"}), subscribed_topic_regex="x.*", server_assignor_name="range",
    assigned_partitions={A: frozenset({0})}, partitions_pending_revocation={B: frozenset({1, 2})})


def test_helpers_write_what_kafka_writes():
    sub = helpers.new_consumer_group_member_subscription_record("g", MEMBER)
    assert sub.value is not None and sub.value.subscribed_topic_names == ("a", "b")
    assert sub.value.server_assignor == "range" and sub.value.classic_member_metadata is None
    cur = helpers.new_consumer_group_current_assignment_record("g", MEMBER)
    assert cur == ConsumerGroupCurrentAssignmentRecord("g", "m1", CurrentAssignment(
        5, 4, MemberState.UNREVOKED_PARTITIONS, {A: frozenset({0})}, {B: frozenset({1, 2})}))
    assert helpers.new_consumer_group_epoch_record("g", 7) == ConsumerGroupEpochRecord("g", 7)
    assert log_codec.encode(helpers.new_consumer_group_epoch_record("g", 7)) == (
        b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00\x00\x07\x00")
    assert helpers.new_consumer_group_target_assignment_epoch_record("g", 7).assignment_epoch == 7
    target = helpers.new_consumer_group_target_assignment_record("g", "m1", {A: frozenset({1})})
    assert target.assignment == {A: frozenset({1})}
    meta = helpers.new_consumer_group_subscription_metadata_record(
        "g", {"z": TopicMetadata(B, "z", 2), "a": TopicMetadata(A, "a", 1)})
    assert meta.topics == (cg.TopicMetadata(A, "a", 1), cg.TopicMetadata(B, "z", 2))
    regex = helpers.new_consumer_group_regular_expression_record(
        "g", "x.*", ResolvedRegularExpression(frozenset({"xb", "xa"}), 3, 99))
    assert cg.decode_value(cg.ConsumerGroupRegularExpressionKey("g", "x.*"), log_codec.encode(regex)[1]) == (
        0, cg.ConsumerGroupRegularExpressionValue(("xa", "xb"), 3, 99))


@pytest.mark.parametrize("tombstone", [
    helpers.new_consumer_group_epoch_tombstone_record("g"),
    helpers.new_consumer_group_member_subscription_tombstone_record("g", "m"),
    helpers.new_consumer_group_subscription_metadata_tombstone_record("g"),
    helpers.new_consumer_group_target_assignment_tombstone_record("g", "m"),
    helpers.new_consumer_group_target_assignment_epoch_tombstone_record("g"),
    helpers.new_consumer_group_current_assignment_tombstone_record("g", "m"),
    helpers.new_consumer_group_regular_expression_tombstone("g", "x.*"),
])
def test_tombstone_helpers(tombstone):
    assert tombstone.is_tombstone
    key, value = log_codec.encode(tombstone)
    assert value is None and log_codec.decode(key, None) == tombstone


def test_a_member_comes_back_from_its_records():
    sub = helpers.new_consumer_group_member_subscription_record("g", MEMBER)
    cur = helpers.new_consumer_group_current_assignment_record("g", MEMBER)
    sub_back = log_codec.decode(*log_codec.encode(sub))
    cur_back = log_codec.decode(*log_codec.encode(cur))
    assert isinstance(sub_back, ConsumerGroupMemberSubscriptionRecord)
    assert isinstance(cur_back, ConsumerGroupCurrentAssignmentRecord)
    assert helpers.member_from_records("m1", sub_back.value, cur_back.value) == MEMBER
    only_sub = helpers.member_from_records("m1", sub_back.value, None)
    assert only_sub.member_epoch == 0 and only_sub.subscribed_topic_names == frozenset({"a", "b"})


def test_the_shard_hands_consumer_group_records_to_its_consumer_replay():
    from coordinator.groups.settings import GroupSettings
    from coordinator.runtime.group_coordinator import GroupCoordinator
    from coordinator.runtime.timers import FakeScheduler
    from coordinator.runtime.writes import MemoryLog

    shard = GroupCoordinator(GroupSettings(offsets_partitions=1), FakeScheduler(), MemoryLog(auto=False)).shard_for("g")
    commit = OffsetCommitRecord("g", "t", 0, OffsetValue(5, "", 1))
    epoch, member = ConsumerGroupEpochRecord("g", 1), helpers.new_consumer_group_member_subscription_record("g", MEMBER)
    shard.replay_all([epoch, commit, member])  # no consumer_replay: ignored, the commit applies
    assert [p for _t, p, _v in shard.offsets.items("g")] == [0]
    seen: list = []
    shard.consumer_replay = seen.append  # type: ignore[attr-defined]
    shard.replay_all([epoch, commit, member])
    assert seen == [epoch, member]
