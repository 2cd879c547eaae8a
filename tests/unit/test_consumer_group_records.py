"""KIP-848 consumer-group records: bytes built by hand from Kafka's JSON schemas (field order,
compact lengths, tagged sections), round trips of every type, tombstones, the 4.1 tagged
MetadataHash, and unknown record types."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, strategies as st

from storage import consumer_group_records as cg
from storage.errors import InvalidRecordError
from storage.records import UnknownRecordType

T1 = uuid.UUID("00000000-0000-0001-0000-000000000002")
T2 = uuid.UUID("ffffffff-ffff-ffff-0000-000000000000")


def i8(n): return struct.pack(">b", n)
def i16(n): return struct.pack(">h", n)
def i32(n): return struct.pack(">i", n)
def i64(n): return struct.pack(">q", n)
def key_string(s): return i16(len(s.encode())) + s.encode()  # non-flexible (keys)
def cstr(s): return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()  # compact, < 127 bytes
def carray(items): return bytes([len(items) + 1]) + b"".join(items)  # compact array, < 127 items
NO_TAGS = b"\x00"


def test_keys_are_the_record_type_and_a_plain_struct():
    assert cg.encode_key(cg.ConsumerGroupMetadataKey("g1")) == i16(3) + key_string("g1")
    assert cg.encode_key(cg.ConsumerGroupPartitionMetadataKey("g1")) == i16(4) + key_string("g1")
    assert cg.encode_key(cg.ConsumerGroupMemberMetadataKey("g1", "m")) == i16(5) + key_string("g1") + key_string("m")
    assert cg.encode_key(cg.ConsumerGroupTargetAssignmentMetadataKey("g")) == i16(6) + key_string("g")
    assert cg.encode_key(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m")) == (
        i16(7) + key_string("g") + key_string("m"))
    assert cg.encode_key(cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m")) == (
        i16(8) + key_string("g") + key_string("m"))
    assert cg.encode_key(cg.ConsumerGroupRegularExpressionKey("g", "a.*")) == (
        i16(16) + key_string("g") + key_string("a.*"))


def test_group_metadata_value_v0_and_the_41_metadata_hash():
    key = cg.ConsumerGroupMetadataKey("g")
    raw = i16(0) + i32(7) + NO_TAGS  # Epoch, no tagged fields: what 4.0 writes
    assert cg.encode_value(3, cg.ConsumerGroupMetadataValue(7)) == raw
    assert cg.decode_value(key, raw) == (0, cg.ConsumerGroupMetadataValue(7))
    # 4.1: MetadataHash, tag 0, int64 (size 8)
    with_hash = i16(0) + i32(7) + b"\x01" + b"\x00" + b"\x08" + i64(-5)
    assert cg.decode_value(key, with_hash) == (0, cg.ConsumerGroupMetadataValue(7, -5))
    assert cg.encode_value(3, cg.ConsumerGroupMetadataValue(7, -5)) == with_hash
    # an unknown tag (a later Kafka's CreationTimeMs, tag 1) is skipped
    later = i16(0) + i32(7) + b"\x02" + b"\x00\x08" + i64(9) + b"\x01\x08" + i64(123)
    assert cg.decode_value(key, later) == (0, cg.ConsumerGroupMetadataValue(7, 9))


def test_partition_metadata_value_v0():
    value = cg.ConsumerGroupPartitionMetadataValue((
        cg.TopicMetadata(T1, "foo", 3), cg.TopicMetadata(T2, "bar", 1, (cg.PartitionRacks(0, ("r1", "r2")),))))
    raw = (i16(0) + carray([
        T1.bytes + cstr("foo") + i32(3) + carray([]) + NO_TAGS,
        T2.bytes + cstr("bar") + i32(1) + carray([i32(0) + carray([cstr("r1"), cstr("r2")]) + NO_TAGS]) + NO_TAGS,
    ]) + NO_TAGS)
    assert cg.encode_value(4, value) == raw
    assert cg.decode_value(cg.ConsumerGroupPartitionMetadataKey("g"), raw) == (0, value)


def test_member_metadata_value_v0_with_and_without_classic_metadata():
    key = cg.ConsumerGroupMemberMetadataKey("g", "m")
    value = cg.ConsumerGroupMemberMetadataValue(
        instance_id="i", rack_id=None, client_id="c", client_host="/h", subscribed_topic_names=("a", "b"),
        subscribed_topic_regex="x.*", rebalance_timeout_ms=30000, server_assignor="uniform")
    body = (cstr("i") + cstr(None) + cstr("c") + cstr("/h") + carray([cstr("a"), cstr("b")]) + cstr("x.*")
            + i32(30000) + cstr("uniform"))
    assert cg.encode_value(5, value) == i16(0) + body + NO_TAGS
    assert cg.decode_value(key, i16(0) + body + NO_TAGS) == (0, value)
    classic = cg.ClassicMemberMetadata(45000, (cg.ClassicProtocol("range", b"\x00\x01"),))
    struct_bytes = i32(45000) + carray([cstr("range") + b"\x03\x00\x01" + NO_TAGS]) + NO_TAGS
    # tag 0, size (struct + 1), then Kafka's presence varint 1 for a nullable tagged struct
    tagged = b"\x01" + b"\x00" + bytes([len(struct_bytes) + 1]) + b"\x01" + struct_bytes
    with_classic = cg.ConsumerGroupMemberMetadataValue(**{**_fields(value), "classic_member_metadata": classic})
    assert cg.encode_value(5, with_classic) == i16(0) + body + tagged
    assert cg.decode_value(key, i16(0) + body + tagged) == (0, with_classic)


def _fields(value):
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def test_target_assignment_values_v0():
    assert cg.encode_value(6, cg.ConsumerGroupTargetAssignmentMetadataValue(12)) == i16(0) + i32(12) + NO_TAGS
    value = cg.ConsumerGroupTargetAssignmentMemberValue((cg.TopicPartitions(T1, (0, 2)), cg.TopicPartitions(T2, ())))
    raw = i16(0) + carray([T1.bytes + carray([i32(0), i32(2)]) + NO_TAGS, T2.bytes + carray([]) + NO_TAGS]) + NO_TAGS
    assert cg.encode_value(7, value) == raw
    assert cg.decode_value(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"), raw) == (0, value)


def test_current_member_assignment_value_v0():
    value = cg.ConsumerGroupCurrentMemberAssignmentValue(
        10, 9, 1, (cg.TopicPartitions(T1, (1,)),), (cg.TopicPartitions(T2, (4, 5)),))
    raw = (i16(0) + i32(10) + i32(9) + i8(1) + carray([T1.bytes + carray([i32(1)]) + NO_TAGS])
           + carray([T2.bytes + carray([i32(4), i32(5)]) + NO_TAGS]) + NO_TAGS)
    assert cg.encode_value(8, value) == raw
    assert cg.decode_value(cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m"), raw) == (0, value)


def test_regular_expression_value_v0():
    value = cg.ConsumerGroupRegularExpressionValue(("abc", "abd"), 10, 12345)
    raw = i16(0) + carray([cstr("abc"), cstr("abd")]) + i64(10) + i64(12345) + NO_TAGS
    assert cg.encode_value(16, value) == raw
    assert cg.decode_value(cg.ConsumerGroupRegularExpressionKey("g", "ab.*"), raw) == (0, value)


def test_tombstones_are_null_values():
    assert cg.encode_value(5, None) is None
    assert cg.decode_value(cg.ConsumerGroupMemberMetadataKey("g", "m"), None) is None


@pytest.mark.parametrize("type_id", [0, 1, 2, 9, 10, 15, 17, 100])
def test_other_record_types_are_unknown(type_id):
    with pytest.raises(UnknownRecordType):
        cg.decode_key(i16(type_id) + key_string("g"))
    assert not cg.is_consumer_group_key(i16(type_id) + key_string("g"))


def test_refuses_unknown_value_versions_and_truncation():
    key = cg.ConsumerGroupMetadataKey("g")
    with pytest.raises(InvalidRecordError):
        cg.decode_value(key, i16(1) + i32(7) + NO_TAGS)
    with pytest.raises(InvalidRecordError):
        cg.decode_value(key, i16(0) + b"\x00\x00")
    with pytest.raises(InvalidRecordError):
        cg.decode_key(i16(5) + key_string("g"))  # no member id
    with pytest.raises(InvalidRecordError):
        cg.decode_key(i16(3) + key_string("g") + b"x")  # trailing bytes


def test_json_uses_kafka_names_and_uuid_strings():
    key = cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    value = cg.ConsumerGroupCurrentMemberAssignmentValue(3, 2, 0, (cg.TopicPartitions(T2, (0,)),))
    assert cg.key_json(key) == {"groupId": "g", "memberId": "m"}
    assert cg.value_json(key, value, 0) == {
        "memberEpoch": 3, "previousMemberEpoch": 2, "state": 0,
        "assignedPartitions": [{"topicId": "__________8AAAAAAAAAAA", "partitions": [0]}],
        "partitionsPendingRevocation": []}
    # Kafka's Uuid.ONE_UUID prints as AAAAAAAAAAAAAAAAAAAAAQ (base64url, no padding)
    one = cg.ConsumerGroupTargetAssignmentMemberValue((cg.TopicPartitions(uuid.UUID(int=1), ()),))
    assert cg.value_json(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"), one, 0) == {
        "topicPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": []}]}
    metadata = cg.ConsumerGroupMetadataKey("g")
    assert cg.value_json(metadata, cg.ConsumerGroupMetadataValue(4), 0) == {"epoch": 4}
    assert cg.value_json(metadata, cg.ConsumerGroupMetadataValue(4, 8), 0) == {"epoch": 4, "metadataHash": 8}


# --- round trips (hypothesis) ---------------------------------------------------------------

names = st.text(max_size=20)
uuids = st.uuids()
i32s = st.integers(-2**31, 2**31 - 1)
parts = st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
topic_partitions = st.lists(st.builds(cg.TopicPartitions, uuids, parts), max_size=4).map(tuple)
VALUES = {
    3: st.builds(cg.ConsumerGroupMetadataValue, i32s, st.integers(-2**63, 2**63 - 1)),
    4: st.builds(cg.ConsumerGroupPartitionMetadataValue, st.lists(st.builds(
        cg.TopicMetadata, uuids, names, i32s, st.lists(st.builds(
            cg.PartitionRacks, i32s, st.lists(names, max_size=3).map(tuple)), max_size=3).map(tuple)),
        max_size=3).map(tuple)),
    5: st.builds(cg.ConsumerGroupMemberMetadataValue, st.none() | names, st.none() | names, names, names,
                 st.lists(names, max_size=4).map(tuple), st.none() | names, i32s, st.none() | names,
                 st.none() | st.builds(cg.ClassicMemberMetadata, i32s, st.lists(st.builds(
                     cg.ClassicProtocol, names, st.binary(max_size=200)), max_size=3).map(tuple))),
    6: st.builds(cg.ConsumerGroupTargetAssignmentMetadataValue, i32s),
    7: st.builds(cg.ConsumerGroupTargetAssignmentMemberValue, topic_partitions),
    8: st.builds(cg.ConsumerGroupCurrentMemberAssignmentValue, i32s, i32s, st.integers(-128, 127),
                 topic_partitions, topic_partitions),
    16: st.builds(cg.ConsumerGroupRegularExpressionValue, st.lists(names, max_size=4).map(tuple),
                  st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)),
}
KEYS = {
    3: st.builds(cg.ConsumerGroupMetadataKey, names),
    4: st.builds(cg.ConsumerGroupPartitionMetadataKey, names),
    5: st.builds(cg.ConsumerGroupMemberMetadataKey, names, names),
    6: st.builds(cg.ConsumerGroupTargetAssignmentMetadataKey, names),
    7: st.builds(cg.ConsumerGroupTargetAssignmentMemberKey, names, names),
    8: st.builds(cg.ConsumerGroupCurrentMemberAssignmentKey, names, names),
    16: st.builds(cg.ConsumerGroupRegularExpressionKey, names, names),
}


def test_every_kafka_type_has_a_strategy():
    assert set(VALUES) == set(KEYS) == set(cg.TYPES) == {3, 4, 5, 6, 7, 8, 16}


@given(st.sampled_from(sorted(cg.TYPES)).flatmap(lambda t: st.tuples(st.just(t), KEYS[t], VALUES[t])))
def test_round_trip_every_type(case):
    type_id, key, value = case
    raw_key = cg.encode_key(key)
    assert raw_key[:2] == i16(type_id) and cg.is_consumer_group_key(raw_key)
    assert cg.decode_key(raw_key) == key
    assert cg.decode_value(key, cg.encode_value(type_id, value)) == (0, value)
