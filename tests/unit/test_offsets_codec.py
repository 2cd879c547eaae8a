"""coordinator/log_codec's fast paths are byte-identical to storage.records' codec, and read
every key/value version back."""

from __future__ import annotations

from hypothesis import given, strategies as st

from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from storage.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)

text = st.text(max_size=40)


@given(text, text, st.integers(0, 2**31 - 1), st.integers(-1, 2**62), text, st.integers(0, 2**62),
       st.integers(-1, 2**31 - 1), st.sampled_from([-1, 0, 123456789]))
def test_offset_records_match_storage_codec(group, topic, partition, offset, metadata, ts, epoch, expire):
    record = OffsetCommitRecord(group, topic, partition, OffsetValue(offset, metadata, ts, epoch, expire))
    key, value = log_codec.encode(record)
    assert key == encode_key(OffsetCommitKey(group, topic, partition))
    assert value == encode_value(OffsetCommitValue(offset, metadata, ts, epoch, expire))
    decoded = log_codec.decode(key, value)
    expected_epoch = -1 if expire != -1 else epoch  # v1 has no leader epoch field
    assert decoded == OffsetCommitRecord(group, topic, partition, OffsetValue(offset, metadata, ts, expected_epoch,
                                                                              expire))
    assert log_codec.decode(key, None) == OffsetCommitRecord(group, topic, partition, None)


def test_every_version_is_read():
    key0 = encode_key(OffsetCommitKey("g", "t", 1), 0)
    for version in (0, 1, 2, 3, 4):
        value = encode_value(OffsetCommitValue(5, "m", 7, 3 if version >= 3 else -1,
                                               9 if version == 1 else -1), version)
        decoded = log_codec.decode(key0, value)
        assert (decoded.group, decoded.value.offset, decoded.value.metadata) == ("g", 5, "m")
    member = MemberMetadata("m", "c", "/h", 10, b"s", b"a", None, 20)
    value = GroupMetadataValue("consumer", 2, "range", "m", (member,), 99)
    for version in (3, 4):
        record = log_codec.decode(encode_key(GroupMetadataKey("g")), encode_value(value, version))
        assert record == GroupMetadataRecord("g", value)
    assert log_codec.encode(GroupMetadataRecord("g", value)) == (encode_key(GroupMetadataKey("g")),
                                                                    encode_value(value))
