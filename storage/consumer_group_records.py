"""KIP-848 consumer-group records of __consumer_offsets, byte-compatible with Kafka 4.0/4.1.

A key is an int16 record type (CoordinatorRecordType: what Kafka writes as the key's
"version") and a non-flexible struct; a value is an int16 version (0 for all of these) and a
flexible struct (compact strings and arrays, tagged fields); a null value is a tombstone.

    type  key                                          value
    3     ConsumerGroupMetadataKey(group)              ConsumerGroupMetadataValue
    4     ConsumerGroupPartitionMetadataKey(group)     ConsumerGroupPartitionMetadataValue
    5     ConsumerGroupMemberMetadataKey(group, m)     ConsumerGroupMemberMetadataValue
    6     ConsumerGroupTargetAssignmentMetadataKey(g)  ConsumerGroupTargetAssignmentMetadataValue
    7     ConsumerGroupTargetAssignmentMemberKey(g, m) ConsumerGroupTargetAssignmentMemberValue
    8     ConsumerGroupCurrentMemberAssignmentKey(g,m) ConsumerGroupCurrentMemberAssignmentValue
    16    ConsumerGroupRegularExpressionKey(g, regex)  ConsumerGroupRegularExpressionValue

Field order follows group-coordinator/src/main/resources/common/message/*.json. Versions:
Kafka 4.0 writes every value at v0 with no tagged field set; 4.1 (KIP-1101) may add
ConsumerGroupMetadataValue.MetadataHash (tag 0, int64, default 0), read here and written only
when set. Share-group records (9-15) are storage.share_group_records'; other record types (streams
groups 17+) raise UnknownRecordType.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, final

from .record_family import RecordFamily, RecordType, key_schema, value_schema
from .record_schema import Field

# --- keys ------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group: str
    regular_expression: str


ConsumerGroupKey = (ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey | ConsumerGroupMemberMetadataKey
                    | ConsumerGroupTargetAssignmentMetadataKey | ConsumerGroupTargetAssignmentMemberKey
                    | ConsumerGroupCurrentMemberAssignmentKey | ConsumerGroupRegularExpressionKey)

# --- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # 4.1 (KIP-1101), tagged


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    partition: int
    racks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionRacks, ...] = ()  # deprecated: 4.0 writes it empty


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None  # tagged: a classic-protocol member


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState's byte
    assigned_partitions: tuple[TopicPartitions, ...] = ()
    partitions_pending_revocation: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerGroupValue = (ConsumerGroupMetadataValue | ConsumerGroupPartitionMetadataValue
                      | ConsumerGroupMemberMetadataValue | ConsumerGroupTargetAssignmentMetadataValue
                      | ConsumerGroupTargetAssignmentMemberValue | ConsumerGroupCurrentMemberAssignmentValue
                      | ConsumerGroupRegularExpressionValue)

# --- schemas ---------------------------------------------------------------------------------

_key, _value = key_schema, value_schema

TOPIC_PARTITIONS = _value(TopicPartitions, Field("topic_id", "uuid", 0), Field("partitions", "[]int32", 0))
_CLASSIC_MEMBER = _value(ClassicMemberMetadata, Field("session_timeout_ms", "int32", 0), Field(
    "supported_protocols", "[]", 0, nested=_value(ClassicProtocol, Field("name", "string", 0),
                                                  Field("metadata", "bytes", 0))))
TOPIC_METADATA = _value(TopicMetadata, Field("topic_id", "uuid", 0), Field("topic_name", "string", 0),
                        Field("num_partitions", "int32", 0), Field(
                            "partition_metadata", "[]", 0, nested=_value(
                                PartitionRacks, Field("partition", "int32", 0), Field("racks", "[]string", 0))))

TYPES: dict[int, RecordType] = {t.id: t for t in (
    RecordType(3, "consumer_group_metadata", _key(ConsumerGroupMetadataKey, 3), _value(
        ConsumerGroupMetadataValue, Field("epoch", "int32", 0),
        Field("metadata_hash", "int64", 0, tag=0, default=0))),
    RecordType(4, "consumer_group_partition_metadata", _key(ConsumerGroupPartitionMetadataKey, 4), _value(
        ConsumerGroupPartitionMetadataValue, Field("topics", "[]", 0, nested=TOPIC_METADATA))),
    RecordType(5, "consumer_group_member_metadata", _key(
        ConsumerGroupMemberMetadataKey, 5, Field("member_id", "string", 5)), _value(
        ConsumerGroupMemberMetadataValue, Field("instance_id", "nullable_string", 0),
        Field("rack_id", "nullable_string", 0), Field("client_id", "string", 0), Field("client_host", "string", 0),
        Field("subscribed_topic_names", "[]string", 0), Field("subscribed_topic_regex", "nullable_string", 0),
        Field("rebalance_timeout_ms", "int32", 0), Field("server_assignor", "nullable_string", 0),
        Field("classic_member_metadata", "struct", 0, nested=_CLASSIC_MEMBER, tag=0))),
    RecordType(6, "consumer_group_target_assignment_metadata", _key(ConsumerGroupTargetAssignmentMetadataKey, 6),
               _value(ConsumerGroupTargetAssignmentMetadataValue, Field("assignment_epoch", "int32", 0))),
    RecordType(7, "consumer_group_target_assignment_member", _key(
        ConsumerGroupTargetAssignmentMemberKey, 7, Field("member_id", "string", 7)), _value(
        ConsumerGroupTargetAssignmentMemberValue, Field("topic_partitions", "[]", 0, nested=TOPIC_PARTITIONS))),
    RecordType(8, "consumer_group_current_member_assignment", _key(
        ConsumerGroupCurrentMemberAssignmentKey, 8, Field("member_id", "string", 8)), _value(
        ConsumerGroupCurrentMemberAssignmentValue, Field("member_epoch", "int32", 0),
        Field("previous_member_epoch", "int32", 0), Field("state", "int8", 0),
        Field("assigned_partitions", "[]", 0, nested=TOPIC_PARTITIONS),
        Field("partitions_pending_revocation", "[]", 0, nested=TOPIC_PARTITIONS))),
    RecordType(16, "consumer_group_regular_expression", _key(
        ConsumerGroupRegularExpressionKey, 16, Field("regular_expression", "string", 16)), _value(
        ConsumerGroupRegularExpressionValue, Field("topics", "[]string", 0), Field("version", "int64", 0),
        Field("timestamp", "int64", 0))),
)}
VALUE_VERSION = 0  # what Kafka 4.0 writes for every one of them
FAMILY = RecordFamily(TYPES.values(), VALUE_VERSION)


def record_type(key: ConsumerGroupKey) -> RecordType:
    return FAMILY.record_type(key)


def is_consumer_group_key(data: bytes) -> bool:
    """Whether a raw key's type (its first two bytes) is one of this module's."""
    return FAMILY.has_key(data)


# --- encoding and decoding ---------------------------------------------------------------------

def encode_key(key: ConsumerGroupKey) -> bytes:
    return FAMILY.encode_key(key)


def encode_value(key_type: int, value: ConsumerGroupValue | None) -> bytes | None:
    """The value bytes (v0) for a key of `key_type`; None (a tombstone) for None."""
    return FAMILY.encode_value(key_type, value)


def decode_key(data: bytes) -> ConsumerGroupKey:
    """The key; UnknownRecordType for a record type that is not a consumer-group one."""
    key: ConsumerGroupKey = FAMILY.decode_key(data)
    return key


def decode_value(key: ConsumerGroupKey, data: bytes | None) -> tuple[int, Any] | None:
    """(value version, value) for `key`, or None for a tombstone. Unknown tagged fields are
    skipped; a version Kafka does not define is refused."""
    return FAMILY.decode_value(key, data)


def key_json(key: ConsumerGroupKey) -> dict[str, Any]:
    """The key's fields with Kafka's JSON names (groupId, memberId, regularExpression)."""
    return FAMILY.key_json(key)


def value_json(key: ConsumerGroupKey, value: Any, version: int) -> dict[str, Any]:
    """The value as Kafka's JsonConverter prints it (camelCase, Uuids base64url)."""
    return FAMILY.value_json(key, value, version)


def consumer_group_subscribed(records: Iterable[tuple[bytes, bytes | None]]) -> set[str]:
    """A consumer group's subscribed topics from its live records' (key, value) bytes: the
    members' SubscribedTopicNames and the resolved regular expressions' Topics (ConsumerGroup.isSubscribedToTopic,
    as the live server's groups/consumer/offset_rules.py answers it; the Spark expire job's input to
    rules/offset_expiry.expire_consumer_group)."""
    topics: set[str] = set()
    for raw_key, raw_value in records:
        key = decode_key(raw_key)
        decoded = decode_value(key, raw_value)
        if decoded is None:
            continue
        value = decoded[1]
        if isinstance(value, ConsumerGroupMemberMetadataValue):
            topics.update(value.subscribed_topic_names)
        elif isinstance(value, ConsumerGroupRegularExpressionValue):
            topics.update(value.topics)
    return topics
