"""DescribeProducers v0: the active idempotent producers of partitions (KafkaApis.handleDescribeProducersRequest,
UnifiedLog.activeProducers).

Per topic: an illegal name -> INVALID_TOPIC_EXCEPTION with the reason; an unknown one ->
UNKNOWN_TOPIC_OR_PARTITION with Kafka's default message, for each partition asked. Per partition: not
hosted here -> NOT_LEADER_OR_FOLLOWER (its topic has it) or UNKNOWN_TOPIC_OR_PARTITION; else every
producer the partition's producer state holds (data_plane/producer_state.py): id, epoch, the last
sequence (-1 when a marker emptied its batches) and its last timestamp (of its last batch or
marker), the coordinator epoch of its last marker (-1 without one) and the first offset of its ongoing
transaction in the partition (-1 without one), as Kafka's ProducerStateEntry holds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.data_plane.topic_catalog import topic_name_error
from coordinator.errors import error_message
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import DescribeProducersRequest


def _error(index: int, code: ErrorCode, message: str | None = None) -> Fields:
    return {"partition_index": index, "error_code": code, "error_message": message, "active_producers": []}


class DescribeProducersHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def partition(self, topic: str, index: int) -> Fields:
        part = self.data.partition(topic, index)
        if part is None:
            return _error(index, not_hosted_error(self.data, topic, index))
        producers = []
        for pid, entry in part.producers.entries.items():
            producers.append({"producer_id": pid, "producer_epoch": entry.epoch, "last_sequence": entry.last_seq,
                              "last_timestamp": entry.last_timestamp, "coordinator_epoch": entry.coordinator_epoch,
                              "current_txn_start_offset": entry.txn_first_offset})
        return {"partition_index": index, "error_code": ErrorCode.none, "error_message": None,
                "active_producers": producers}

    def handle(self, ctx: RequestContext, request: DescribeProducersRequest) -> object:
        topics = []
        for topic in request.topics:
            name = topic.name
            reason = topic_name_error(name)
            if not self.access.topic(ctx, Op.READ, name):  # KafkaApis: READ on each topic
                code = ErrorCode.topic_authorization_failed
                parts = [_error(i, code, error_message(code)) for i in topic.partition_indexes]
            elif reason is not None:
                parts = [_error(i, ErrorCode.invalid_topic_exception, f"Topic name {name!r} is illegal: {reason}")
                         for i in topic.partition_indexes]
            elif self.data.catalog.get(name) is None:
                code = ErrorCode.unknown_topic_or_partition
                parts = [_error(i, code, error_message(code)) for i in topic.partition_indexes]
            else:
                parts = [self.partition(name, i) for i in topic.partition_indexes]
            topics.append({"name": name, "partitions": parts})
        cls = API_TABLE[ApiKey.DESCRIBE_PRODUCERS].responses[ctx.api_version]
        return build(cls, throttle_time=NO_THROTTLE, topics=topics)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.DESCRIBE_PRODUCERS, DescribeProducersHandler(services.data, services.access).handle)
