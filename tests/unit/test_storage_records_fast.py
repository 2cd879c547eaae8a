"""storage.records' hand-packed OffsetCommitKey v1 / OffsetCommitValue v3+v1 codec gives the
schema codec's bytes and reads every version back."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from storage.errors import InvalidRecordError
from storage.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    offset_key_bytes,
    offset_value_bytes,
    read_offset_key,
    read_offset_value,
)

text = st.text(max_size=40)


@given(text, text, st.integers(-2**31, 2**31 - 1))
def test_key_bytes_and_back(group, topic, partition):
    raw = offset_key_bytes(group, topic, partition)
    assert raw == encode_key(OffsetCommitKey(group, topic, partition))
    assert read_offset_key(raw) == (group, topic, partition)


@given(st.integers(-1, 2**62), text, st.integers(-1, 2**62), st.integers(-1, 2**31 - 1),
       st.sampled_from([-1, 0, 123456789]))
def test_value_bytes_and_back(offset, metadata, commit_ts, epoch, expire):
    raw = offset_value_bytes(offset, metadata, commit_ts, epoch, expire)
    assert raw == encode_value(OffsetCommitValue(offset, metadata, commit_ts, epoch, expire))
    assert read_offset_value(raw) == (offset, metadata, commit_ts, epoch if expire == -1 else -1, expire)
    assert OffsetCommitValue(*read_offset_value(raw)) == decode_value(OffsetCommitKey("", "", 0), raw)[1]


def test_every_version_is_read():
    assert read_offset_key(encode_key(OffsetCommitKey("g", "t", 1), 0)) is None  # v0: the schema reader's
    assert read_offset_key(encode_key(GroupMetadataKey("g"))) is None
    for version in (0, 1, 2, 3, 4):
        value = OffsetCommitValue(5, "m", 7, 3 if version >= 3 else -1, 9 if version == 1 else -1)
        assert read_offset_value(encode_value(value, version)) == (5, "m", 7, value.leader_epoch,
                                                                   value.expire_timestamp)
    assert decode_key(offset_key_bytes("g", "t", 2)) == (1, OffsetCommitKey("g", "t", 2))


@pytest.mark.parametrize("raw", [b"\x00\x01\x00\x05ab", b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00", b"\x00\x01\xff\xff",
                                 b"\x00\x01\x00\x01\xff\x00\x01t\x00\x00\x00\x00"])
def test_bad_keys_raise_invalid_record(raw):
    with pytest.raises(InvalidRecordError):
        read_offset_key(raw)


@pytest.mark.parametrize("raw", [b"\x00", b"\x00\x03\x00", b"\x00\x03" + b"\x00" * 12 + b"\xff\xff" + b"\x00" * 8,
                                 b"\x00\x09" + b"\x00" * 22])
def test_bad_values_raise_invalid_record(raw):
    with pytest.raises(InvalidRecordError):
        read_offset_value(raw)


def test_too_long_strings_are_refused():
    with pytest.raises(ValueError):
        offset_key_bytes("g" * 40_000, "t", 0)
    with pytest.raises(ValueError):
        offset_value_bytes(1, "m" * 40_000, 2)
