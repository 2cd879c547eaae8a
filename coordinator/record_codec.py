"""Coordinator records <-> __consumer_offsets key/value bytes, at the log boundary only.

Offset commits are the hot path (every OffsetCommit writes one record per partition,
every load decodes millions), so OffsetCommitKey v1 and OffsetCommitValue v3/v1 are
packed and unpacked here with precompiled structs; the result is byte-identical to
storage.records' schema-driven codec (tests/test_offsets_codec.py checks it), which is
still used for GroupMetadata records and for every version this fast path does not
cover (keys v0, values v0/v2/v4).
"""

from __future__ import annotations

from struct import Struct, error as StructError

from storage.errors import InvalidRecordError
from storage.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

from .records import GroupMetadataRecord, OffsetCommitRecord, OffsetValue, Record

_H = Struct(">h")
_I = Struct(">i")
_Q = Struct(">q")
_VALUE_V3_HEAD = Struct(">hqih")  # version, offset, leader epoch, metadata length
_VALUE_V1_HEAD = Struct(">hqh")  # version, offset, metadata length
_QQ = Struct(">qq")
_V3 = b"\x00\x03"
_V1 = b"\x00\x01"
_KEY_V1 = b"\x00\x01"


def _str(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > 32767:
        raise ValueError("string longer than 32767 bytes")
    return _H.pack(len(raw)) + raw


def offset_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1."""
    return _KEY_V1 + _str(group) + _str(topic) + _I.pack(partition)


def offset_value(value: OffsetValue) -> bytes:
    """OffsetCommitValue v3, or v1 when an expire timestamp is set (what Kafka writes)."""
    offset, metadata, commit_ts, epoch, expire_ts = value
    raw = metadata.encode()
    if len(raw) > 32767:
        raise ValueError("metadata longer than 32767 bytes")
    if expire_ts == -1:
        return _VALUE_V3_HEAD.pack(3, offset, epoch, len(raw)) + raw + _Q.pack(commit_ts)
    return _VALUE_V1_HEAD.pack(1, offset, len(raw)) + raw + _QQ.pack(commit_ts, expire_ts)


def encode(record: Record) -> tuple[bytes, bytes | None]:
    """(key, value or None for a tombstone)."""
    if type(record) is OffsetCommitRecord:
        group, topic, partition, value = record
        return offset_key(group, topic, partition), None if value is None else offset_value(value)
    return encode_key(GroupMetadataKey(record.group_id)), encode_value(record.value)


_KEY_PREFIXES: dict[tuple[str, str], bytes] = {}
_KEY_PREFIX_LIMIT = 100_000
_VALUE_V3_PLAIN = Struct(">hqihq")  # version 3, offset, leader epoch, empty metadata, commit timestamp


def encode_all(records: list[Record]) -> list[tuple[bytes, bytes | None]]:
    """[encode(r) for r in records], faster for offset commits (the OffsetCommit hot path):
    the key prefix of each (group, topic) is cached, and a value without metadata and
    expire timestamp is one struct pack."""
    out = []
    prefixes = _KEY_PREFIXES
    pack_partition = _I.pack
    pack_plain = _VALUE_V3_PLAIN.pack
    for record in records:
        if type(record) is not OffsetCommitRecord:
            out.append(encode(record))
            continue
        group, topic, partition, value = record
        prefix = prefixes.get((group, topic))
        if prefix is None:
            if len(prefixes) >= _KEY_PREFIX_LIMIT:
                prefixes.clear()
            prefix = prefixes[group, topic] = _KEY_V1 + _str(group) + _str(topic)
        if value is None:
            out.append((prefix + pack_partition(partition), None))
        elif value[1] or value[4] != -1:
            out.append((prefix + pack_partition(partition), offset_value(value)))
        else:
            out.append((prefix + pack_partition(partition), pack_plain(3, value[0], value[3], 0, value[2])))
    return out


def decode(key: bytes, value: bytes | None) -> Record:
    """A record from its key and value bytes. Raises InvalidRecordError (or its subclass
    UnknownRecordType for keys other than offset commit / group metadata)."""
    try:
        if key[:2] == _KEY_V1:
            (glen,) = _H.unpack_from(key, 2)
            tpos = 4 + glen
            (tlen,) = _H.unpack_from(key, tpos)
            ppos = tpos + 2 + tlen
            if ppos + 4 != len(key) or glen < 0 or tlen < 0:
                raise InvalidRecordError("OffsetCommitKey v1 does not parse")
            group = key[4:tpos].decode()
            topic = key[tpos + 2:ppos].decode()
            (partition,) = _I.unpack_from(key, ppos)
            return OffsetCommitRecord(group, topic, partition, None if value is None else _offset_value(value))
    except (StructError, UnicodeDecodeError) as exc:
        raise InvalidRecordError(f"OffsetCommitKey v1 does not parse: {exc}") from None
    _version, parsed = decode_key(key)
    if type(parsed) is OffsetCommitKey:
        return OffsetCommitRecord(parsed.group, parsed.topic, parsed.partition,
                                  None if value is None else _offset_value(value))
    decoded = decode_value(parsed, value)
    return GroupMetadataRecord(parsed.group, None if decoded is None else decoded[1])


def _offset_value(data: bytes) -> OffsetValue:
    if data[:2] == _V3:
        try:
            _v, offset, epoch, mlen = _VALUE_V3_HEAD.unpack_from(data, 0)
            end = 16 + mlen
            if mlen >= 0 and end + 8 <= len(data):
                (commit_ts,) = _Q.unpack_from(data, end)
                return OffsetValue(offset, data[16:end].decode(), commit_ts, epoch, -1)
        except (StructError, UnicodeDecodeError):
            pass
    decoded = decode_value(OffsetCommitKey("", "", 0), data)
    assert decoded is not None
    v = decoded[1]
    return OffsetValue(v.offset, v.metadata, v.commit_timestamp, v.leader_epoch, v.expire_timestamp)


__all__ = ["encode", "encode_all", "decode", "offset_key", "offset_value", "UnknownRecordType", "InvalidRecordError"]
