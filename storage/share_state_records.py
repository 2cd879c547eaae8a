"""The share coordinator's records of __share_group_state, byte-compatible with Kafka 4.2.

Framed as the group coordinator's records (storage/record_family.py): the key is an int16 record type and a
non-flexible struct (GroupId, TopicId, Partition), the value an int16 version (0) and a flexible struct.

    type  key                                   value
    0     ShareSnapshotKey(group, topic, p)     ShareSnapshotValue: the whole state of a share partition
    1     ShareUpdateKey(group, topic, p)       ShareUpdateValue: state batches to merge onto the snapshot

Field order follows Kafka 4.2's share-coordinator/src/main/resources/common/message/*.json:
ShareSnapshotValue = SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, CreateTimestamp, WriteTimestamp,
StateBatches, and the tagged DeliveryCompleteCount (tag 0, int32, default -1: KIP-1226, new in 4.2);
ShareUpdateValue = SnapshotEpoch, LeaderEpoch, StartOffset (-1: unchanged), StateBatches, and the same tagged
DeliveryCompleteCount. A state batch is FirstOffset, LastOffset, DeliveryState (0 available, 2 acknowledged,
4 archived), DeliveryCount (int16). A ShareSnapshot tombstone deletes a share partition's state.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, final

from .record_family import RecordFamily, RecordType, key_schema, value_schema
from .record_schema import Field

SNAPSHOT_TYPE, UPDATE_TYPE = 0, 1


@final
@dataclass(frozen=True, slots=True)
class ShareSnapshotKey:
    group: str
    topic_id: uuid.UUID
    partition: int


@final
@dataclass(frozen=True, slots=True)
class ShareUpdateKey:
    group: str
    topic_id: uuid.UUID
    partition: int


ShareStateKey = ShareSnapshotKey | ShareUpdateKey


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (4.2)


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (4.2)


ShareStateValue = ShareSnapshotValue | ShareUpdateValue

_STATE_BATCH = value_schema(StateBatch, Field("first_offset", "int64", 0), Field("last_offset", "int64", 0),
                            Field("delivery_state", "int8", 0), Field("delivery_count", "int16", 0))
_COMPLETE = Field("delivery_complete_count", "int32", 0, tag=0, default=-1)


def _key(cls: type, record_type: int) -> Any:
    return key_schema(cls, record_type, Field("topic_id", "uuid", record_type),
                      Field("partition", "int32", record_type))


TYPES: dict[int, RecordType] = {t.id: t for t in (
    RecordType(SNAPSHOT_TYPE, "share_snapshot", _key(ShareSnapshotKey, SNAPSHOT_TYPE), value_schema(
        ShareSnapshotValue, Field("snapshot_epoch", "int32", 0), Field("state_epoch", "int32", 0),
        Field("leader_epoch", "int32", 0), Field("start_offset", "int64", 0), _COMPLETE,
        Field("create_timestamp", "int64", 0), Field("write_timestamp", "int64", 0),
        Field("state_batches", "[]", 0, nested=_STATE_BATCH))),
    RecordType(UPDATE_TYPE, "share_update", _key(ShareUpdateKey, UPDATE_TYPE), value_schema(
        ShareUpdateValue, Field("snapshot_epoch", "int32", 0), Field("leader_epoch", "int32", 0),
        Field("start_offset", "int64", 0), _COMPLETE, Field("state_batches", "[]", 0, nested=_STATE_BATCH))),
)}
FAMILY = RecordFamily(TYPES.values(), value_version=0)


def encode(key: ShareStateKey, value: ShareStateValue | None) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None for a tombstone)."""
    return FAMILY.encode(key, value)


def decode_key(data: bytes) -> ShareStateKey:
    """The key; UnknownRecordType for a type other than 0 and 1."""
    key: ShareStateKey = FAMILY.decode_key(data)
    return key


def decode_value(key: ShareStateKey, data: bytes | None) -> tuple[int, Any] | None:
    """(value version, value) for `key`, or None for a tombstone."""
    return FAMILY.decode_value(key, data)
