"""CreatePartitions v0-v3: grow topics (ControllerApis.createPartitions, ReplicationControlManager).

A name given twice -> INVALID_REQUEST "Duplicate topic name." (answered first, as Kafka's); then per
topic, in request order, the checks of data_plane/growth.py: UNKNOWN_TOPIC_OR_PARTITION (no message),
INVALID_PARTITIONS (not an increase, above the server's limit, the internal topic),
INVALID_REPLICA_ASSIGNMENT (as many assignments as new partitions, each naming as many registered brokers as the
topic's replication factor, none twice), INVALID_REPLICATION_FACTOR (no assignment, and fewer live brokers than
the topic's replication factor). validate_only runs the checks and changes nothing. Requests are carried out
one at a time, each topic checked against the catalog as the previous growths left it; `timeout` is not needed
(the catalog write is the only wait) and no quota throttles it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.growth import check_growth, grow_topic
from coordinator.data_plane.topic_catalog import TopicInfo
from coordinator.errors import KafkaError, error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import CreatePartitionsRequest


def _result(name: str, code: ErrorCode = ErrorCode.none, message: str | None = None) -> Fields:
    return {"name": name, "error_code": code, "error_message": message}


def _refused(name: str, exc: BaseException) -> Fields:
    if isinstance(exc, KafkaError):  # Kafka sends no message for UNKNOWN_TOPIC_OR_PARTITION
        return _result(name, exc.code, None if exc.code == ErrorCode.unknown_topic_or_partition else str(exc))
    return _result(name, error_code_for(exc), f"Cannot create the partitions: {exc}")


class CreatePartitionsHandler:
    def __init__(self, services: Services) -> None:
        self.data: DataPlane = services.data
        self.access = services.access
        self.lock = asyncio.Lock()  # one request's growths at a time: each checks what the last left

    def check(self, topic: Any) -> tuple[TopicInfo, TopicInfo]:  # Any: kio's topic of the request's version
        assignments = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
        return check_growth(self.data, topic.name, topic.count, assignments, set(self.data.live_brokers()))

    def handle(self, ctx: RequestContext, request: CreatePartitionsRequest) -> object:
        version = ctx.api_version
        counts = Counter(t.name for t in request.topics)
        results = [_result(name, ErrorCode.invalid_request, "Duplicate topic name.")
                   for name, count in counts.items() if count > 1]
        topics = [t for t in request.topics if counts[t.name] == 1]
        access = self.access
        if access.enabled:  # KafkaApis: ALTER on each topic
            denied = [t for t in topics if not access.topic(ctx, Op.ALTER, t.name)]
            results += [_result(t.name, ErrorCode.topic_authorization_failed, "Authorization failed.") for t in denied]
            topics = [t for t in topics if t not in denied]

        def respond() -> object:
            cls = API_TABLE[ApiKey.CREATE_PARTITIONS].responses[version]
            return build(cls, throttle_time=NO_THROTTLE, results=results)

        if request.validate_only or not topics:
            for topic in topics:
                try:
                    self.check(topic)
                    results.append(_result(topic.name))
                except KafkaError as exc:
                    results.append(_refused(topic.name, exc))
            return respond()

        async def grow() -> object:
            async with self.lock:
                for topic in topics:
                    try:
                        await grow_topic(self.data, *self.check(topic))
                        results.append(_result(topic.name))
                    except Exception as exc:  # a KafkaError, or the catalog write or the disk failed
                        results.append(_refused(topic.name, exc))
            return respond()

        return grow()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.CREATE_PARTITIONS, CreatePartitionsHandler(services).handle)
