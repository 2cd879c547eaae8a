"""A family of coordinator records keyed by record type: Kafka's CoordinatorRecordType codecs, as tables.

Kafka's group and share coordinators write records whose key starts with an int16 record type (what Kafka
writes as the key's "version": CoordinatorRecordType's id) followed by a non-flexible struct, and whose value
is an int16 version followed by a flexible struct; a null value is a tombstone. A `RecordFamily` is the codec
of one such set of types (the KIP-848 consumer-group records of __consumer_offsets, the KIP-932 share-group
ones, the share coordinator's __share_group_state records), built from `RecordType`s: each type's id, the
name dump-log prints, and its key and value schemas (storage/record_schema.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRecordError
from .record_schema import I16, Field, Schema, read_struct, to_json, write_struct
from .records import UnknownRecordType

_NOT_FLEXIBLE = 99  # keys are never flexible


def key_schema(cls: type, record_type: int, *extra: Field) -> Schema:
    """A key struct: its group id (JSON "groupId") then `extra`, present in version `record_type` only."""
    group = Field("group", "string", record_type, kafka="groupId")
    return Schema(cls, range(record_type, record_type + 1), _NOT_FLEXIBLE, (group, *extra))


def value_schema(cls: type, *fields: Field) -> Schema:
    """A value struct of version 0, flexible (compact lengths, tagged fields)."""
    return Schema(cls, range(0, 1), 0, fields)


@dataclass(frozen=True)
class RecordType:
    """One record type: its key type (CoordinatorRecordType id), name and schemas."""

    id: int
    name: str  # dump-log's "type"
    key: Schema
    value: Schema


class RecordFamily:
    """The codec of a set of record types; every value is written at `value_version`."""

    def __init__(self, types: Iterable[RecordType], value_version: int = 0) -> None:
        self.types: dict[int, RecordType] = {t.id: t for t in types}
        self._by_key = {t.key.cls: t for t in self.types.values()}
        self.value_version = value_version

    def record_type(self, key: Any) -> RecordType:
        return self._by_key[type(key)]

    def has_key(self, data: bytes) -> bool:
        """Whether a raw key's type (its first two bytes) is one of this family's."""
        return len(data) >= 2 and I16.unpack_from(data, 0)[0] in self.types

    def encode_key(self, key: Any) -> bytes:
        kind = self.record_type(key)
        out = bytearray(I16.pack(kind.id))
        write_struct(out, kind.key, key, kind.id)
        return bytes(out)

    def encode_value(self, key_type: int, value: Any | None) -> bytes | None:
        """The value bytes for a key of `key_type`; None (a tombstone) for None."""
        if value is None:
            return None
        schema = self.types[key_type].value
        if not isinstance(value, schema.cls):
            raise TypeError(f"a {type(value).__name__} is not a {schema.cls.__name__}")
        out = bytearray(I16.pack(self.value_version))
        write_struct(out, schema, value, self.value_version)
        return bytes(out)

    def encode(self, key: Any, value: Any | None) -> tuple[bytes, bytes | None]:
        """(key bytes, value bytes or None for a tombstone)."""
        return self.encode_key(key), self.encode_value(self.record_type(key).id, value)

    def decode_key(self, data: bytes) -> Any:
        """The key; UnknownRecordType for a record type that is not one of this family's."""
        if len(data) < 2:
            raise InvalidRecordError("record key is shorter than its version")
        (type_id,) = I16.unpack_from(data, 0)
        kind = self.types.get(type_id)
        if kind is None:
            raise UnknownRecordType(f"unknown record key version {type_id}")
        key, end = read_struct(data, 2, kind.key, type_id)
        if end != len(data):
            raise InvalidRecordError(f"record key v{type_id} has {len(data) - end} trailing bytes")
        return key

    def decode_value(self, key: Any, data: bytes | None) -> tuple[int, Any] | None:
        """(value version, value) for `key`, or None for a tombstone. Unknown tagged fields are
        skipped; a version Kafka does not define is refused; trailing bytes are ignored, as Kafka does."""
        if data is None:
            return None
        if len(data) < 2:
            raise InvalidRecordError("record value is shorter than its version")
        schema = self.record_type(key).value
        (version,) = I16.unpack_from(data, 0)
        if version not in schema.versions:
            raise InvalidRecordError(f"unknown {schema.cls.__name__} version {version}")
        value, _end = read_struct(data, 2, schema, version)
        return version, value

    def key_json(self, key: Any) -> dict[str, Any]:
        """The key's fields with Kafka's JSON names (groupId, memberId, topicId...)."""
        kind = self.record_type(key)
        return to_json(kind.key, key, kind.id)

    def value_json(self, key: Any, value: Any, version: int) -> dict[str, Any]:
        """The value as Kafka's JsonConverter prints it (camelCase, Uuids base64url)."""
        return to_json(self.record_type(key).value, value, version)

    def describe(self, offset: int, key: bytes, value: bytes | None) -> dict[str, Any]:
        """A record as dump-log --json prints it: type name, key type, group, the key's and the
        value's fields under Kafka's JSON names (None for a tombstone)."""
        parsed = self.decode_key(key)
        kind = self.record_type(parsed)
        out: dict[str, Any] = {"offset": offset, "type": kind.name, "key_version": kind.id, "group": parsed.group,
                               "key": self.key_json(parsed)}
        decoded = self.decode_value(parsed, value)
        if decoded is None:
            out["value"] = None
        else:
            version, parsed_value = decoded
            out["value"] = {"version": version, **self.value_json(parsed, parsed_value, version)}
        return out
