"""OffsetCommit v0/v1 and OffsetFetch v0: the message versions kio has no classes for.

Kafka 4 dropped OffsetCommit v0/v1 and OffsetFetch v0 from its JSON schemas, and kio is
generated from those, but old clients (kafka-python with api_version 0.8.2 / 0.9, old
librdkafka) still send them. These classes follow Kafka 3.x's
clients/src/main/resources/common/message/OffsetCommit{Request,Response}.json and
OffsetFetch{Request,Response}.json for those versions, in kio's generated style (frozen
slotted dataclasses, `kafka_type` field metadata, the same class variables), so kio's
native reader and protocol/encoder.py handle them like any kio class.

All are non-flexible: request header v1, response header v0. Per version:
- OffsetCommit request v0: group_id, topics[name, partitions[partition_index,
  committed_offset, committed_metadata]].
- OffsetCommit request v1: adds generation_id and member_id after group_id, and a
  per-partition commit_timestamp (ms, -1 = "now") after committed_offset.
- OffsetCommit response v0/v1: topics[name, partitions[partition_index, error_code]]
  (the v2 wire shape; throttle time came in v3).
- OffsetFetch request/response v0: the v1 wire shape (v0 read offsets from ZooKeeper).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import GroupId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DEFAULT_COMMIT_TIMESTAMP = -1  # OffsetCommitRequest.DEFAULT_TIMESTAMP: the broker uses its own clock

T = TypeVar("T", bound=type)


def _message(api_key: int, version: int, entity_type: EntityType, header: type) -> Callable[[T], T]:
    """kio's class variables plus its dataclass flavour (frozen, slotted, keyword-only)."""

    def make(cls: T) -> T:
        entity: Any = cls  # a plain class until the dataclass() below; these are kio's ClassVars
        entity.__type__ = entity_type
        entity.__version__ = i16(version)
        entity.__flexible__ = False
        entity.__api_key__ = i16(api_key)
        entity.__header_schema__ = header
        return dataclass(frozen=True, slots=True, kw_only=True)(cls)  # type: ignore[return-value]

    return make


def _request(api_key: int, version: int, entity_type: EntityType = EntityType.nested) -> Callable[[T], T]:
    return _message(api_key, version, entity_type, RequestHeader)


def _response(api_key: int, version: int, entity_type: EntityType = EntityType.nested) -> Callable[[T], T]:
    return _message(api_key, version, entity_type, ResponseHeader)


def _int32() -> i32:
    return field(metadata={"kafka_type": "int32"})


def _int64() -> i64:
    return field(metadata={"kafka_type": "int64"})


def _string() -> Any:  # a str, TopicName, GroupId or optional str field: the annotation says which
    return field(metadata={"kafka_type": "string"})


# --- OffsetCommit requests ----------------------------------------------------------------

@_request(OFFSET_COMMIT, 0)
class OffsetCommitRequestPartitionV0:
    partition_index: i32 = _int32()
    committed_offset: i64 = _int64()
    committed_metadata: str | None = _string()


@_request(OFFSET_COMMIT, 0)
class OffsetCommitRequestTopicV0:
    name: TopicName = _string()
    partitions: tuple[OffsetCommitRequestPartitionV0, ...]


@_request(OFFSET_COMMIT, 0, EntityType.request)
class OffsetCommitRequestV0:
    group_id: GroupId = _string()
    topics: tuple[OffsetCommitRequestTopicV0, ...]


@_request(OFFSET_COMMIT, 1)
class OffsetCommitRequestPartitionV1:
    partition_index: i32 = _int32()
    committed_offset: i64 = _int64()
    commit_timestamp: i64 = field(metadata={"kafka_type": "int64"}, default=i64(DEFAULT_COMMIT_TIMESTAMP))
    committed_metadata: str | None = _string()


@_request(OFFSET_COMMIT, 1)
class OffsetCommitRequestTopicV1:
    name: TopicName = _string()
    partitions: tuple[OffsetCommitRequestPartitionV1, ...]


@_request(OFFSET_COMMIT, 1, EntityType.request)
class OffsetCommitRequestV1:
    group_id: GroupId = _string()
    generation_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    member_id: str = _string()
    topics: tuple[OffsetCommitRequestTopicV1, ...]


# --- OffsetFetch request ------------------------------------------------------------------


@_request(OFFSET_FETCH, 0)
class OffsetFetchRequestTopicV0:
    name: TopicName = _string()
    partition_indexes: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@_request(OFFSET_FETCH, 0, EntityType.request)
class OffsetFetchRequestV0:
    group_id: GroupId = _string()
    topics: tuple[OffsetFetchRequestTopicV0, ...]


# --- responses ----------------------------------------------------------------------------

def _error_code() -> ErrorCode:
    return field(metadata={"kafka_type": "error_code"})


@_response(OFFSET_COMMIT, 0)
class OffsetCommitResponsePartitionV0:
    partition_index: i32 = _int32()
    error_code: ErrorCode = _error_code()


@_response(OFFSET_COMMIT, 0)
class OffsetCommitResponseTopicV0:
    name: TopicName = _string()
    partitions: tuple[OffsetCommitResponsePartitionV0, ...]


@_response(OFFSET_COMMIT, 0, EntityType.response)
class OffsetCommitResponseV0:
    topics: tuple[OffsetCommitResponseTopicV0, ...]


@_response(OFFSET_COMMIT, 1)
class OffsetCommitResponsePartitionV1:
    partition_index: i32 = _int32()
    error_code: ErrorCode = _error_code()


@_response(OFFSET_COMMIT, 1)
class OffsetCommitResponseTopicV1:
    name: TopicName = _string()
    partitions: tuple[OffsetCommitResponsePartitionV1, ...]


@_response(OFFSET_COMMIT, 1, EntityType.response)
class OffsetCommitResponseV1:
    topics: tuple[OffsetCommitResponseTopicV1, ...]


@_response(OFFSET_FETCH, 0)
class OffsetFetchResponsePartitionV0:
    partition_index: i32 = _int32()
    committed_offset: i64 = _int64()
    metadata: str | None = _string()
    error_code: ErrorCode = _error_code()


@_response(OFFSET_FETCH, 0)
class OffsetFetchResponseTopicV0:
    name: TopicName = _string()
    partitions: tuple[OffsetFetchResponsePartitionV0, ...]


@_response(OFFSET_FETCH, 0, EntityType.response)
class OffsetFetchResponseV0:
    topics: tuple[OffsetFetchResponseTopicV0, ...]


# (api key, version, request or response) -> class, for protocol/apis.py
LEGACY_CLASSES: dict[tuple[int, int, EntityType], type] = {
    (OFFSET_COMMIT, 0, EntityType.request): OffsetCommitRequestV0,
    (OFFSET_COMMIT, 0, EntityType.response): OffsetCommitResponseV0,
    (OFFSET_COMMIT, 1, EntityType.request): OffsetCommitRequestV1,
    (OFFSET_COMMIT, 1, EntityType.response): OffsetCommitResponseV1,
    (OFFSET_FETCH, 0, EntityType.request): OffsetFetchRequestV0,
    (OFFSET_FETCH, 0, EntityType.response): OffsetFetchResponseV0,
}
