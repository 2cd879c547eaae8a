"""KIP-932 records, byte for byte: the share-group records of __consumer_offsets (types 9-15) and the share
coordinator's __share_group_state records (ShareSnapshot 0, ShareUpdate 1).

The expected bytes are built by hand from Kafka 4.2's JSON schemas (group-coordinator's ShareGroup*.json and
share-coordinator's ShareSnapshot/ShareUpdate*.json: field order, int16 key type, non-flexible keys, compact
strings and arrays and a tagged-field section in the values). No Kafka jar with the coordinators' generated
classes is on this machine (kafka-clients 3.9.1 has neither), so these hand-built bytes are the reference."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, strategies as st

from storage import share_group_records as sg, share_state_records as ss
from storage.consumer_group_records import TopicMetadata, TopicPartitions
from storage.errors import InvalidRecordError
from storage.records import UnknownRecordType

T1 = uuid.UUID("00000000-0000-0001-0000-000000000002")
T2 = uuid.UUID("ffffffff-ffff-ffff-0000-000000000000")


def i8(n): return struct.pack(">b", n)
def i16(n): return struct.pack(">h", n)
def i32(n): return struct.pack(">i", n)
def i64(n): return struct.pack(">q", n)
def key_string(s): return i16(len(s.encode())) + s.encode()
def cstr(s): return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()
def carray(items): return bytes([len(items) + 1]) + b"".join(items)
NO_TAGS = b"\x00"


def test_share_group_keys():
    assert sg.encode(sg.ShareGroupPartitionMetadataKey("g"), None)[0] == i16(9) + key_string("g")
    assert sg.encode(sg.ShareGroupMemberMetadataKey("g", "m"), None)[0] == i16(10) + key_string("g") + key_string("m")
    assert sg.encode(sg.ShareGroupMetadataKey("g"), None)[0] == i16(11) + key_string("g")
    assert sg.encode(sg.ShareGroupTargetAssignmentMetadataKey("g"), None)[0] == i16(12) + key_string("g")
    assert sg.encode(sg.ShareGroupTargetAssignmentMemberKey("g", "m"), None)[0] == (
        i16(13) + key_string("g") + key_string("m"))
    assert sg.encode(sg.ShareGroupCurrentMemberAssignmentKey("g", "m"), None)[0] == (
        i16(14) + key_string("g") + key_string("m"))
    assert sg.encode(sg.ShareGroupStatePartitionMetadataKey("g"), None)[0] == i16(15) + key_string("g")


def _roundtrip(key, value, raw_value):
    key_bytes, value_bytes = sg.encode(key, value)
    assert value_bytes == raw_value
    assert sg.decode_key(key_bytes) == key
    assert sg.decode_value(key, raw_value) == (0, value)


def test_member_metadata_value():
    value = sg.ShareGroupMemberMetadataValue("rack", "client", "/10.0.0.1", ("a", "b"))
    raw = i16(0) + cstr("rack") + cstr("client") + cstr("/10.0.0.1") + carray([cstr("a"), cstr("b")]) + NO_TAGS
    _roundtrip(sg.ShareGroupMemberMetadataKey("g", "m"), value, raw)
    no_rack = sg.ShareGroupMemberMetadataValue(None, "c", "/h", ())
    _roundtrip(sg.ShareGroupMemberMetadataKey("g", "m"), no_rack, i16(0) + cstr(None) + cstr("c") + cstr("/h")
               + carray([]) + NO_TAGS)


def test_group_metadata_value_has_an_untagged_metadata_hash():
    _roundtrip(sg.ShareGroupMetadataKey("g"), sg.ShareGroupMetadataValue(7, -99), i16(0) + i32(7) + i64(-99) + NO_TAGS)
    # Kafka 4.0's layout (Epoch alone) is not 4.2's: refused, as Kafka 4.2 refuses it
    with pytest.raises(InvalidRecordError):
        sg.decode_value(sg.ShareGroupMetadataKey("g"), i16(0) + i32(7) + NO_TAGS)


def test_target_assignment_values():
    _roundtrip(sg.ShareGroupTargetAssignmentMetadataKey("g"), sg.ShareGroupTargetAssignmentMetadataValue(3),
               i16(0) + i32(3) + NO_TAGS)
    value = sg.ShareGroupTargetAssignmentMemberValue((TopicPartitions(T1, (0, 2)), TopicPartitions(T2, ())))
    raw = i16(0) + carray([T1.bytes + carray([i32(0), i32(2)]) + NO_TAGS, T2.bytes + carray([]) + NO_TAGS]) + NO_TAGS
    _roundtrip(sg.ShareGroupTargetAssignmentMemberKey("g", "m"), value, raw)


def test_current_member_assignment_value():
    value = sg.ShareGroupCurrentMemberAssignmentValue(5, 4, 0, (TopicPartitions(T1, (1,)),))
    raw = i16(0) + i32(5) + i32(4) + i8(0) + carray([T1.bytes + carray([i32(1)]) + NO_TAGS]) + NO_TAGS
    _roundtrip(sg.ShareGroupCurrentMemberAssignmentKey("g", "m"), value, raw)


def test_state_partition_metadata_value():
    value = sg.ShareGroupStatePartitionMetadataValue(
        initializing_topics=(sg.TopicPartitionsInfo(T1, "foo", (0, 1), 1700),),
        initialized_topics=(sg.TopicPartitionsInfo(T2, "bar", (3,), 12),),
        deleting_topics=(sg.TopicInfo(T1, "old"),))
    raw = (i16(0)
           + carray([T1.bytes + cstr("foo") + carray([i32(0), i32(1)]) + i64(1700) + NO_TAGS])
           + carray([T2.bytes + cstr("bar") + carray([i32(3)]) + i64(12) + NO_TAGS])
           + carray([T1.bytes + cstr("old") + NO_TAGS]) + NO_TAGS)
    _roundtrip(sg.ShareGroupStatePartitionMetadataKey("g"), value, raw)


def test_kafka_40_partition_metadata_is_read():
    value = sg.ShareGroupPartitionMetadataValue((TopicMetadata(T1, "foo", 3),))
    raw = i16(0) + carray([T1.bytes + cstr("foo") + i32(3) + carray([]) + NO_TAGS]) + NO_TAGS
    _roundtrip(sg.ShareGroupPartitionMetadataKey("g"), value, raw)
    assert 9 not in sg.WRITTEN_TYPES and sg.WRITTEN_TYPES == {10, 11, 12, 13, 14, 15}


def test_tombstones_and_foreign_types():
    key = sg.ShareGroupMemberMetadataKey("g", "m")
    assert sg.encode(key, None)[1] is None and sg.decode_value(key, None) is None
    assert not sg.is_share_group_key(i16(8) + key_string("g")) and sg.is_share_group_key(i16(15) + key_string("g"))
    with pytest.raises(UnknownRecordType):
        sg.decode_key(i16(16) + key_string("g"))
    with pytest.raises(InvalidRecordError):
        sg.decode_key(i16(11) + key_string("g") + b"x")  # trailing bytes


# --- __share_group_state -----------------------------------------------------------------------------

def test_share_state_keys():
    assert ss.encode(ss.ShareSnapshotKey("g", T1, 3), None)[0] == i16(0) + key_string("g") + T1.bytes + i32(3)
    assert ss.encode(ss.ShareUpdateKey("g", T1, 3), None)[0] == i16(1) + key_string("g") + T1.bytes + i32(3)
    assert ss.decode_key(i16(1) + key_string("g") + T2.bytes + i32(0)) == ss.ShareUpdateKey("g", T2, 0)
    with pytest.raises(UnknownRecordType):
        ss.decode_key(i16(2) + key_string("g") + T2.bytes + i32(0))


def _batch(first, last, state, count):
    return i64(first) + i64(last) + i8(state) + i16(count) + NO_TAGS


def test_share_snapshot_value():
    key = ss.ShareSnapshotKey("g", T1, 0)
    value = ss.ShareSnapshotValue(snapshot_epoch=2, state_epoch=1, leader_epoch=5, start_offset=100,
                                  create_timestamp=1000, write_timestamp=2000,
                                  state_batches=(ss.StateBatch(100, 109, 2, 1), ss.StateBatch(110, 110, 0, 3)))
    raw = (i16(0) + i32(2) + i32(1) + i32(5) + i64(100) + i64(1000) + i64(2000)
           + carray([_batch(100, 109, 2, 1), _batch(110, 110, 0, 3)]) + NO_TAGS)
    assert ss.encode(key, value)[1] == raw
    assert ss.decode_value(key, raw) == (0, value)
    # 4.2's DeliveryCompleteCount: tag 0, int32, written when not -1
    counted = ss.ShareSnapshotValue(2, 1, 5, 100, 1000, 2000, (), delivery_complete_count=7)
    raw = (i16(0) + i32(2) + i32(1) + i32(5) + i64(100) + i64(1000) + i64(2000) + carray([])
           + b"\x01" + b"\x00" + b"\x04" + i32(7))
    assert ss.encode(key, counted)[1] == raw
    assert ss.decode_value(key, raw) == (0, counted)


def test_share_update_value():
    key = ss.ShareUpdateKey("g", T1, 0)
    value = ss.ShareUpdateValue(snapshot_epoch=2, leader_epoch=-1, start_offset=-1,
                                state_batches=(ss.StateBatch(5, 5, 4, 5),))
    raw = i16(0) + i32(2) + i32(-1) + i64(-1) + carray([_batch(5, 5, 4, 5)]) + NO_TAGS
    assert ss.encode(key, value)[1] == raw
    assert ss.decode_value(key, raw) == (0, value)
    with pytest.raises(InvalidRecordError):
        ss.decode_value(key, i16(1) + raw[2:])  # no version 1


_names = st.text(min_size=0, max_size=8)
_ints = st.integers(-2**31, 2**31 - 1)
_longs = st.integers(-2**63, 2**63 - 1)
_batches = st.tuples(_longs, _longs, st.integers(-128, 127), st.integers(-2**15, 2**15 - 1)).map(
    lambda t: ss.StateBatch(*t))


@given(_names, st.uuids(), _ints, _ints, _ints, _ints, _longs, _longs, _longs, st.lists(_batches, max_size=4),
       _ints)
def test_share_snapshot_roundtrip(group, topic, partition, snap, state, leader, start, created, written, batches,
                                  complete):
    key = ss.ShareSnapshotKey(group, topic, partition)
    value = ss.ShareSnapshotValue(snap, state, leader, start, created, written, tuple(batches), complete)
    key_bytes, value_bytes = ss.encode(key, value)
    assert ss.decode_key(key_bytes) == key
    assert ss.decode_value(key, value_bytes) == (0, value)


@given(_names, _names, st.one_of(st.none(), _names), st.lists(_names, max_size=3), _ints, _longs)
def test_share_group_roundtrip(group, member, rack, topics, epoch, metadata_hash):
    for key, value in ((sg.ShareGroupMemberMetadataKey(group, member),
                        sg.ShareGroupMemberMetadataValue(rack, member, group, tuple(topics))),
                       (sg.ShareGroupMetadataKey(group), sg.ShareGroupMetadataValue(epoch, metadata_hash))):
        key_bytes, value_bytes = sg.encode(key, value)
        assert sg.decode_key(key_bytes) == key
        assert sg.decode_value(key, value_bytes) == (0, value)
