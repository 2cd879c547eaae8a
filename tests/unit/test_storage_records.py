"""__consumer_offsets keys and values: hand-derived bytes from Kafka's schemas, round trips of
every version, the versions Kafka writes, and refusal of malformed records."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from storage.errors import InvalidRecordError
from storage.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def test_offset_commit_key_v1_bytes():
    # A vector from an independent decoder (Franz's test fixtures): group "ABC", topic "BCD", partition 1.
    raw = bytes([0, 1, 0, 3, 65, 66, 67, 0, 3, 66, 67, 68, 0, 0, 0, 1])
    assert encode_key(OffsetCommitKey("ABC", "BCD", 1)) == raw
    assert decode_key(raw) == (1, OffsetCommitKey("ABC", "BCD", 1))


def test_group_metadata_key_v2_bytes():
    assert encode_key(GroupMetadataKey("g1")) == bytes.fromhex("0002" "0002" "6731")


def test_offset_commit_value_v3_and_v1_bytes():
    value = OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1000, leader_epoch=7)
    assert encode_value(value) == bytes.fromhex("0003" "000000000000002a" "00000007" "0001" "6d" "00000000000003e8")
    expiring = OffsetCommitValue(offset=42, metadata="", commit_timestamp=1000, expire_timestamp=2000)
    # Kafka writes v1 when an expire timestamp is set: offset, metadata, commit ts, expire ts.
    assert encode_value(expiring) == bytes.fromhex("0001" "000000000000002a" "0000" "00000000000003e8"
                                                   "00000000000007d0")


def test_offset_commit_value_v4_is_flexible():
    value = OffsetCommitValue(offset=1, metadata="ab", commit_timestamp=2, leader_epoch=-1)
    raw = encode_value(value, version=4)
    assert raw == bytes.fromhex("0004" "0000000000000001" "ffffffff" "03" "6162" "0000000000000002" "00")
    # A newer writer's tagged field is skipped, not an error.
    tagged = raw[:-1] + bytes([1, 5, 2, 0xAA, 0xBB])
    assert decode_value(OffsetCommitKey("g", "t", 0), tagged) == (4, value)


def test_group_metadata_value_v3_bytes():
    member = MemberMetadata(member_id="m", group_instance_id=None, client_id="c", client_host="/h",
                            rebalance_timeout=300, session_timeout=100, subscription=b"\x01", assignment=b"")
    value = GroupMetadataValue(protocol_type="consumer", generation=2, protocol="range", leader="m",
                               current_state_timestamp=5, members=(member,))
    expected = bytes.fromhex(
        "0003" "0008" + b"consumer".hex() + "00000002" "0005" + b"range".hex() + "0001" "6d"
        "0000000000000005" "00000001"
        "0001" "6d" "ffff" "0001" "63" "0002" + b"/h".hex() + "0000012c" "00000064" "00000001" "01" "00000000"
    )
    assert encode_value(value) == expected
    assert decode_value(GroupMetadataKey("g"), expected) == (3, value)


texts = st.text(max_size=20)
members = st.builds(
    MemberMetadata, member_id=texts, client_id=texts, client_host=texts,
    session_timeout=st.integers(-(2**31), 2**31 - 1), subscription=st.binary(max_size=20),
    assignment=st.binary(max_size=20), group_instance_id=st.none() | texts,
    rebalance_timeout=st.integers(-(2**31), 2**31 - 1),
)
group_values = st.builds(
    GroupMetadataValue, protocol_type=texts, generation=st.integers(-(2**31), 2**31 - 1),
    protocol=st.none() | texts, leader=st.none() | texts, members=st.lists(members, max_size=3).map(tuple),
    current_state_timestamp=st.integers(-(2**63), 2**63 - 1),
)
offset_values = st.builds(
    OffsetCommitValue, offset=st.integers(-(2**63), 2**63 - 1), metadata=texts,
    commit_timestamp=st.integers(-(2**63), 2**63 - 1), leader_epoch=st.integers(-(2**31), 2**31 - 1),
    expire_timestamp=st.integers(-(2**63), 2**63 - 1),
)

# What survives a version: fields absent in it come back as their schema defaults.
GROUP_DROPS = {0: {"current_state_timestamp": -1}, 1: {"current_state_timestamp": -1}}
MEMBER_DROPS = {0: {"rebalance_timeout": -1, "group_instance_id": None}, 1: {"group_instance_id": None},
                2: {"group_instance_id": None}}
OFFSET_DROPS = {0: {"leader_epoch": -1, "expire_timestamp": -1}, 1: {"leader_epoch": -1},
                2: {"leader_epoch": -1, "expire_timestamp": -1}, 3: {"expire_timestamp": -1},
                4: {"expire_timestamp": -1}}


@given(group_values, st.integers(0, 4))
def test_group_metadata_round_trips_every_version(value, version):
    import dataclasses

    expected_members = tuple(dataclasses.replace(m, **MEMBER_DROPS.get(version, {})) for m in value.members)
    expected = dataclasses.replace(value, members=expected_members, **GROUP_DROPS.get(version, {}))
    assert decode_value(GroupMetadataKey("g"), encode_value(value, version)) == (version, expected)


@given(offset_values, st.integers(0, 4))
def test_offset_commit_round_trips_every_version(value, version):
    import dataclasses

    expected = dataclasses.replace(value, **OFFSET_DROPS[version])
    assert decode_value(OffsetCommitKey("g", "t", 0), encode_value(value, version)) == (version, expected)


@given(texts, texts, st.integers(-(2**31), 2**31 - 1), st.integers(0, 1))
def test_offset_commit_keys_round_trip(group, topic, partition, version):
    key = OffsetCommitKey(group, topic, partition)
    assert decode_key(encode_key(key, version)) == (version, key)


def test_tombstone():
    assert encode_value(None) is None
    assert decode_value(GroupMetadataKey("g"), None) is None


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x00\x01\x00\x05ab", b"\x00\x02\x00\x01",
                                 b"\x00\x01\x00\x01a\x00\x01b\x00"])
def test_malformed_keys_are_refused(raw):
    with pytest.raises(InvalidRecordError):
        decode_key(raw)


def test_unknown_record_types_are_distinguished():
    with pytest.raises(UnknownRecordType):
        decode_key(bytes.fromhex("0005" "0001" "67"))


@pytest.mark.parametrize("raw", [b"\x00\x09", b"\x00\x03\x00",
                                 bytes.fromhex("0003" "000000000000002a" "00000007" "0009" "6d")])
def test_malformed_values_are_refused(raw):
    with pytest.raises(InvalidRecordError):
        decode_value(OffsetCommitKey("g", "t", 0), raw)
