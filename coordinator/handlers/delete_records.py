"""DeleteRecords v0-v2: move a partition's log start offset forward (AdminClient.deleteRecords).

Follows KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog and
Partition.deleteRecordsOnLeader:

* a partition named twice counts once, with the last offset given (Kafka collects the
  request into a map);
* unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; an internal topic
  (``__consumer_offsets``) -> INVALID_TOPIC_EXCEPTION;
* a topic whose cleanup.policy lacks ``delete`` -> POLICY_VIOLATION;
* offset -1 means the high watermark; a negative offset or one above the high watermark
  -> OFFSET_OUT_OF_RANGE; an offset below the current log start offset changes nothing;
* the answer's low_watermark is the log start offset afterwards (one replica: Kafka's
  low watermark is the leader's log start offset); errors carry -1. The answer is sent
  once the new log start offset is durable, so it survives a crash (no replicas here).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.errors import KafkaError, error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from storage.errors import OffsetOutOfRangeError, StorageError

if TYPE_CHECKING:
    from protocol.request_types import DeleteRecordsRequest

SLICE = 1024


class DeleteRecordsHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    async def one(self, topic: str, index: int, offset: int, denied: frozenset[str] | set[str] = frozenset()
                  ) -> tuple[int, ErrorCode]:
        if topic in denied:
            return -1, ErrorCode.topic_authorization_failed
        data = self.data
        info = data.catalog.get(topic)
        if info is None or not 0 <= index < info.partitions:
            return -1, ErrorCode.unknown_topic_or_partition
        if info.internal:
            return -1, ErrorCode.invalid_topic_exception
        part = data.partition(topic, index)
        if part is None:
            return -1, not_hosted_error(data, topic, index)
        try:
            return await data.delete_records(part, offset), ErrorCode.none
        except (KafkaError, OffsetOutOfRangeError, StorageError) as exc:
            return -1, error_code_for(exc)

    def handle(self, ctx: RequestContext, request: DeleteRecordsRequest) -> object:
        wanted: dict[tuple[str, int], int] = {}
        for topic in request.topics:
            for p in topic.partitions:
                wanted[(topic.name, p.partition_index)] = p.offset

        access = self.access  # KafkaApis: DELETE on each topic
        denied = set() if not access.enabled else {t for t, _ in wanted if not access.topic(ctx, Op.DELETE, t)}

        async def answer() -> object:
            items = list(wanted.items())
            results: list[tuple[int, ErrorCode]] = []
            for start in range(0, len(items), SLICE):  # a huge request yields to other requests
                if start:
                    await asyncio.sleep(0)
                chunk = items[start:start + SLICE]
                results += await asyncio.gather(*(self.one(t, i, o, denied) for (t, i), o in chunk))
            topics: dict[str, list[Fields]] = {}
            for (name, index), (low, code) in zip(wanted, results):
                topics.setdefault(name, []).append(
                    {"partition_index": index, "low_watermark": low, "error_code": code})
            return build(API_TABLE[ApiKey.DELETE_RECORDS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                         topics=[{"name": name, "partitions": parts} for name, parts in topics.items()])

        return answer()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.DELETE_RECORDS, DeleteRecordsHandler(services.data, services.access).handle)
