"""KIP-932 share-group records of __consumer_offsets, byte-compatible with Kafka 4.2.

Keys and values are framed as the consumer-group ones (storage/record_family.py): an int16 record type
(CoordinatorRecordType) and a non-flexible key struct; an int16 value version (0 for all of these) and a
flexible value struct; a null value is a tombstone.

    type  key                                          value
    9     ShareGroupPartitionMetadataKey(group)        ShareGroupPartitionMetadataValue   (4.0 only: read)
    10    ShareGroupMemberMetadataKey(group, m)        ShareGroupMemberMetadataValue
    11    ShareGroupMetadataKey(group)                 ShareGroupMetadataValue
    12    ShareGroupTargetAssignmentMetadataKey(g)     ShareGroupTargetAssignmentMetadataValue
    13    ShareGroupTargetAssignmentMemberKey(g, m)    ShareGroupTargetAssignmentMemberValue
    14    ShareGroupCurrentMemberAssignmentKey(g, m)   ShareGroupCurrentMemberAssignmentValue
    15    ShareGroupStatePartitionMetadataKey(g)       ShareGroupStatePartitionMetadataValue

Field order follows Kafka 4.2's group-coordinator/src/main/resources/common/message/ShareGroup*.json.
Kafka 4.1 dropped ShareGroupPartitionMetadata (its GroupCoordinatorShard no longer replays type 9, the
subscription metadata became ShareGroupMetadataValue.MetadataHash, an untagged int64: share groups were a
preview whose schemas could change incompatibly), so 4.2 never writes type 9; it is decoded here for dump-log
(Kafka 4.0's layout, the consumer group's TopicMetadata) and ignored by the domain. Kafka 4.1 also added
TopicPartitionsInfo.CreateTimestamp (untagged) to ShareGroupStatePartitionMetadataValue. A Kafka 4.0 share
group's ShareGroupMetadataValue (Epoch alone) therefore does not parse as 4.2's, as in Kafka.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, final

from .consumer_group_records import TOPIC_METADATA, TOPIC_PARTITIONS, TopicMetadata, TopicPartitions
from .record_family import RecordFamily, RecordType, key_schema, value_schema
from .record_schema import Field

# --- keys ------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class ShareGroupPartitionMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey:
    group: str


ShareGroupKey = (ShareGroupPartitionMetadataKey | ShareGroupMemberMetadataKey | ShareGroupMetadataKey
                 | ShareGroupTargetAssignmentMetadataKey | ShareGroupTargetAssignmentMemberKey
                 | ShareGroupCurrentMemberAssignmentKey | ShareGroupStatePartitionMetadataKey)

# --- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # the hash of the subscribed topics' metadata (KIP-1101's, untagged here)


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState's byte (a share member is STABLE: 0)
    assigned_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...] = ()
    create_timestamp: int = 0  # when the topic was added to the initializing set (ms)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: uuid.UUID
    topic_name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    initializing_topics: tuple[TopicPartitionsInfo, ...] = ()
    initialized_topics: tuple[TopicPartitionsInfo, ...] = ()
    deleting_topics: tuple[TopicInfo, ...] = ()


ShareGroupValue = (ShareGroupPartitionMetadataValue | ShareGroupMemberMetadataValue | ShareGroupMetadataValue
                   | ShareGroupTargetAssignmentMetadataValue | ShareGroupTargetAssignmentMemberValue
                   | ShareGroupCurrentMemberAssignmentValue | ShareGroupStatePartitionMetadataValue)

# --- schemas ---------------------------------------------------------------------------------

_TOPIC_PARTITIONS_INFO = value_schema(
    TopicPartitionsInfo, Field("topic_id", "uuid", 0), Field("topic_name", "string", 0),
    Field("partitions", "[]int32", 0), Field("create_timestamp", "int64", 0))
_TOPIC_INFO = value_schema(TopicInfo, Field("topic_id", "uuid", 0), Field("topic_name", "string", 0))

TYPES: dict[int, RecordType] = {t.id: t for t in (
    RecordType(9, "share_group_partition_metadata", key_schema(ShareGroupPartitionMetadataKey, 9), value_schema(
        ShareGroupPartitionMetadataValue, Field("topics", "[]", 0, nested=TOPIC_METADATA))),
    RecordType(10, "share_group_member_metadata", key_schema(
        ShareGroupMemberMetadataKey, 10, Field("member_id", "string", 10)), value_schema(
        ShareGroupMemberMetadataValue, Field("rack_id", "nullable_string", 0), Field("client_id", "string", 0),
        Field("client_host", "string", 0), Field("subscribed_topic_names", "[]string", 0))),
    RecordType(11, "share_group_metadata", key_schema(ShareGroupMetadataKey, 11), value_schema(
        ShareGroupMetadataValue, Field("epoch", "int32", 0), Field("metadata_hash", "int64", 0))),
    RecordType(12, "share_group_target_assignment_metadata", key_schema(ShareGroupTargetAssignmentMetadataKey, 12),
               value_schema(ShareGroupTargetAssignmentMetadataValue, Field("assignment_epoch", "int32", 0))),
    RecordType(13, "share_group_target_assignment_member", key_schema(
        ShareGroupTargetAssignmentMemberKey, 13, Field("member_id", "string", 13)), value_schema(
        ShareGroupTargetAssignmentMemberValue, Field("topic_partitions", "[]", 0, nested=TOPIC_PARTITIONS))),
    RecordType(14, "share_group_current_member_assignment", key_schema(
        ShareGroupCurrentMemberAssignmentKey, 14, Field("member_id", "string", 14)), value_schema(
        ShareGroupCurrentMemberAssignmentValue, Field("member_epoch", "int32", 0),
        Field("previous_member_epoch", "int32", 0), Field("state", "int8", 0),
        Field("assigned_partitions", "[]", 0, nested=TOPIC_PARTITIONS))),
    RecordType(15, "share_group_state_partition_metadata", key_schema(ShareGroupStatePartitionMetadataKey, 15),
               value_schema(ShareGroupStatePartitionMetadataValue,
                            Field("initializing_topics", "[]", 0, nested=_TOPIC_PARTITIONS_INFO),
                            Field("initialized_topics", "[]", 0, nested=_TOPIC_PARTITIONS_INFO),
                            Field("deleting_topics", "[]", 0, nested=_TOPIC_INFO))),
)}
#: the record types Kafka 4.2 writes and replays (9 is only read, for dump-log)
WRITTEN_TYPES = frozenset(TYPES) - {9}
FAMILY = RecordFamily(TYPES.values(), value_version=0)


def is_share_group_key(data: bytes) -> bool:
    """Whether a raw key's type (its first two bytes) is a share-group record type (9-15)."""
    return FAMILY.has_key(data)


def record_type(key: ShareGroupKey) -> RecordType:
    return FAMILY.record_type(key)


def encode(key: ShareGroupKey, value: ShareGroupValue | None) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None for a tombstone)."""
    return FAMILY.encode(key, value)


def decode_key(data: bytes) -> ShareGroupKey:
    """The key; UnknownRecordType for a record type that is not a share-group one."""
    key: ShareGroupKey = FAMILY.decode_key(data)
    return key


def decode_value(key: ShareGroupKey, data: bytes | None) -> tuple[int, Any] | None:
    """(value version, value) for `key`, or None for a tombstone."""
    return FAMILY.decode_value(key, data)
