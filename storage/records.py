"""__consumer_offsets record keys and values, byte-compatible with Kafka.

A record key is an int16 version followed by a struct: versions 0 and 1 are an
OffsetCommitKey (group, topic, partition), version 2 a GroupMetadataKey (group). A
value is an int16 version followed by the value struct for that key; a null value is a
tombstone. The field tables below mirror Kafka's JSON schemas
(group-coordinator/src/main/resources/common/message/*.json): a field exists from
`since` to `until` inclusive, and versions >= `flexible_from` use compact lengths and
tagged-field sections. We read every version and write what Kafka writes:
OffsetCommitKey v1, OffsetCommitValue v3 (v1 when an expire timestamp is set),
GroupMetadataKey v2, GroupMetadataValue v3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from struct import Struct, error as StructError
from typing import Any, final, overload

from .errors import InvalidRecordError
from .record_schema import I16 as _I16, I32 as _I32, I64 as _I64, Field, Schema, read_struct, write_struct


class UnknownRecordType(InvalidRecordError):
    """A key version this coordinator does not know (e.g. KIP-848 consumer-group records)."""


@final
@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@final  # final: `type(key) is GroupMetadataKey` narrows for mypy
@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None
    rebalance_timeout: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = field(default=())
    current_state_timestamp: int = -1


MEMBER = Schema(MemberMetadata, range(0, 5), 4, (
    Field("member_id", "string", 0),
    Field("group_instance_id", "nullable_string", 3),
    Field("client_id", "string", 0),
    Field("client_host", "string", 0),
    Field("rebalance_timeout", "int32", 1),
    Field("session_timeout", "int32", 0),
    Field("subscription", "bytes", 0),
    Field("assignment", "bytes", 0),
))
GROUP_METADATA_VALUE = Schema(GroupMetadataValue, range(0, 5), 4, (
    Field("protocol_type", "string", 0),
    Field("generation", "int32", 0),
    Field("protocol", "nullable_string", 0),
    Field("leader", "nullable_string", 0),
    Field("current_state_timestamp", "int64", 2),
    Field("members", "[]", 0, nested=MEMBER),
))
OFFSET_COMMIT_VALUE = Schema(OffsetCommitValue, range(0, 5), 4, (
    Field("offset", "int64", 0),
    Field("leader_epoch", "int32", 3),
    Field("metadata", "string", 0),
    Field("commit_timestamp", "int64", 0),
    Field("expire_timestamp", "int64", 1, 1),
))
OFFSET_COMMIT_KEY = Schema(OffsetCommitKey, range(0, 2), 99, (
    Field("group", "string", 0), Field("topic", "string", 0), Field("partition", "int32", 0),
))
GROUP_METADATA_KEY = Schema(GroupMetadataKey, range(2, 3), 99, (Field("group", "string", 2),))


# --- public API -------------------------------------------------------------

Key = OffsetCommitKey | GroupMetadataKey
Value = OffsetCommitValue | GroupMetadataValue

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3


def encode_key(key: Key, version: int | None = None) -> bytes:
    if isinstance(key, OffsetCommitKey):
        schema, version = OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION if version is None else version
    else:
        schema, version = GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION if version is None else version
    if version not in schema.versions:
        raise ValueError(f"{schema.cls.__name__} has no version {version}")
    out = bytearray(_I16.pack(version))
    write_struct(out, schema, key, version)
    return bytes(out)


def value_version(value: Value) -> int:
    """The version Kafka writes for this value."""
    if isinstance(value, OffsetCommitValue):
        return 1 if value.expire_timestamp != -1 else 3
    return GROUP_METADATA_VALUE_VERSION


def encode_value(value: Value | None, version: int | None = None) -> bytes | None:
    if value is None:
        return None  # tombstone
    schema = OFFSET_COMMIT_VALUE if isinstance(value, OffsetCommitValue) else GROUP_METADATA_VALUE
    version = value_version(value) if version is None else version
    if version not in schema.versions:
        raise ValueError(f"{schema.cls.__name__} has no version {version}")
    out = bytearray(_I16.pack(version))
    write_struct(out, schema, value, version)
    return bytes(out)


def _split_version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise InvalidRecordError(f"{what} is shorter than its version")
    return _I16.unpack_from(data, 0)[0]


def decode_key(data: bytes) -> tuple[int, Key]:
    """(key version, key). Raises UnknownRecordType for record types other than 0-2."""
    version = _split_version(data, "record key")
    if version in OFFSET_COMMIT_KEY.versions:
        schema = OFFSET_COMMIT_KEY
    elif version in GROUP_METADATA_KEY.versions:
        schema = GROUP_METADATA_KEY
    else:
        raise UnknownRecordType(f"unknown record key version {version}")
    key, end = read_struct(data, 2, schema, version)
    if end != len(data):
        raise InvalidRecordError(f"record key v{version} has {len(data) - end} trailing bytes")
    return version, key


@overload
def decode_value(key: OffsetCommitKey, data: bytes) -> tuple[int, OffsetCommitValue]: ...
@overload
def decode_value(key: GroupMetadataKey, data: bytes) -> tuple[int, GroupMetadataValue]: ...
@overload
def decode_value(key: OffsetCommitKey, data: bytes | None) -> tuple[int, OffsetCommitValue] | None: ...
@overload
def decode_value(key: GroupMetadataKey, data: bytes | None) -> tuple[int, GroupMetadataValue] | None: ...
@overload
def decode_value(key: Key, data: bytes | None) -> tuple[int, Value] | None: ...


def decode_value(key: Key, data: bytes | None) -> tuple[int, Value] | None:
    """(value version, value) for `key`, or None for a tombstone. Unknown fields in
    newer flexible versions are skipped as tagged fields; unknown versions are refused."""
    if data is None:
        return None
    version = _split_version(data, "record value")
    schema = OFFSET_COMMIT_VALUE if isinstance(key, OffsetCommitKey) else GROUP_METADATA_VALUE
    if version not in schema.versions:
        raise InvalidRecordError(f"unknown {schema.cls.__name__} version {version}")
    value, _end = read_struct(data, 2, schema, version)
    return version, value


def value_fields(value: Value, version: int) -> dict[str, Any]:
    """The fields present in `version` of the value's schema, in schema order, snake_case,
    bytes as hex (for dump-log --json)."""
    schema = OFFSET_COMMIT_VALUE if isinstance(value, OffsetCommitValue) else GROUP_METADATA_VALUE
    return _fields(schema, value, version)


def _fields(schema: Schema, obj: Any, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in schema.present(version):
        item = getattr(obj, spec.name)
        if spec.type == "[]":
            assert spec.nested is not None  # an array field has its element schema
            item = [_fields(spec.nested, element, version) for element in item]
        elif isinstance(item, bytes):
            item = item.hex()
        out[spec.name] = item
    return out


# --- the versions Kafka writes, hand-packed ---------------------------------------------------
# OffsetCommitKey v1 and OffsetCommitValue v3 (v1 with an expire timestamp) are every commit,
# written on the OffsetCommit path and read back millions of times by loading, dump-log and
# the Spark jobs, so they get precompiled structs. The bytes equal the schema codec's above
# (tests/unit/test_offsets_codec.py); anything else goes through it.

_KEY_V1 = b"\x00\x01"
_VALUE_V3 = b"\x00\x03"
_VALUE_V3_HEAD = Struct(">hqih")  # version, offset, leader epoch, metadata length
#: OffsetCommitValue v3 without metadata (24 bytes): version, offset, leader epoch, metadata length 0,
#: commit timestamp
OFFSET_VALUE_V3_PLAIN = Struct(">hqihq")
_VALUE_V1_HEAD = Struct(">hqh")  # version, offset, metadata length
_I64_PAIR = Struct(">qq")


def _short_string(value: str, what: str) -> bytes:
    raw = value.encode()
    if len(raw) > 32767:
        raise ValueError(f"{what} longer than 32767 bytes")
    return _I16.pack(len(raw)) + raw


def offset_key_bytes(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1: the bytes of encode_key(OffsetCommitKey(group, topic, partition))."""
    return _KEY_V1 + _short_string(group, "group") + _short_string(topic, "topic") + _I32.pack(partition)


def offset_value_bytes(offset: int, metadata: str, commit_timestamp: int, leader_epoch: int = -1,
                       expire_timestamp: int = -1) -> bytes:
    """OffsetCommitValue v3, or v1 when an expire timestamp is set: encode_value's bytes."""
    if expire_timestamp == -1:
        if not metadata:
            return OFFSET_VALUE_V3_PLAIN.pack(3, offset, leader_epoch, 0, commit_timestamp)
        raw = _short_string(metadata, "metadata")
        return _VALUE_V3_HEAD.pack(3, offset, leader_epoch, len(raw) - 2) + raw[2:] + _I64.pack(commit_timestamp)
    raw = _short_string(metadata, "metadata")
    return _VALUE_V1_HEAD.pack(1, offset, len(raw) - 2) + raw[2:] + _I64_PAIR.pack(commit_timestamp,
                                                                                    expire_timestamp)


def read_offset_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an OffsetCommitKey v1, None for any other key version.
    Raises InvalidRecordError for a v1 key that does not parse."""
    if key[:2] != _KEY_V1:
        return None
    try:
        (glen,) = _I16.unpack_from(key, 2)
        tpos = 4 + glen
        (tlen,) = _I16.unpack_from(key, tpos)
        ppos = tpos + 2 + tlen
        if ppos + 4 != len(key) or glen < 0 or tlen < 0:
            raise InvalidRecordError("OffsetCommitKey v1 does not parse")
        return key[4:tpos].decode(), key[tpos + 2:ppos].decode(), _I32.unpack_from(key, ppos)[0]
    except (StructError, UnicodeDecodeError) as exc:
        raise InvalidRecordError(f"OffsetCommitKey v1 does not parse: {exc}") from None


def read_offset_value(data: bytes) -> tuple[int, str, int, int, int]:
    """(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp) of an
    OffsetCommitValue of any version (v3 without the schema walk)."""
    if data[:2] == _VALUE_V3:
        if len(data) == 24:
            _v, offset, epoch, mlen, commit_ts = OFFSET_VALUE_V3_PLAIN.unpack(data)
            if mlen == 0:
                return offset, "", commit_ts, epoch, -1
        try:
            _v, offset, epoch, mlen = _VALUE_V3_HEAD.unpack_from(data, 0)
            end = 16 + mlen
            if mlen >= 0 and end + 8 <= len(data):
                return offset, data[16:end].decode(), _I64.unpack_from(data, end)[0], epoch, -1
        except (StructError, UnicodeDecodeError):
            pass  # the schema walk below says what is wrong
    decoded = decode_value(OffsetCommitKey("", "", 0), data)
    assert decoded is not None
    v = decoded[1]
    return v.offset, v.metadata, v.commit_timestamp, v.leader_epoch, v.expire_timestamp
