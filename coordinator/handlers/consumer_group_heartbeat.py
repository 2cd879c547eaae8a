"""ConsumerGroupHeartbeat v0-1 (KIP-848): kio messages <-> the shard's consumer-group heartbeat; answered once
the records it wrote are durable (Kafka completes the response when its records are committed).

Authorization as Kafka's KafkaApis.handleConsumerGroupHeartbeat: READ on the group, then DESCRIBE on every
subscribed topic name (TOPIC_AUTHORIZATION_FAILED when one is refused: a client must not learn of topics it
cannot see).
"""

from __future__ import annotations

import datetime
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from coordinator.errors import KafkaError, error_message, write_error_code
from coordinator.groups.consumer.model import Assignment
from coordinator.groups.consumer.params import HeartbeatAnswer, HeartbeatParams
from coordinator.handlers.wire_values import NO_THROTTLE, ms
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

log = structlog.get_logger("coordinator.groups")

_SPEC = API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT]
REGEX_FROM = 1  # SubscribedTopicRegex is a v1 field


def _interval(value: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def error_response(version: int, code: ErrorCode, message: str | None = None) -> Any:
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=code,
                 error_message=message if message is not None else error_message(code), member_id=None,
                 member_epoch=0, heartbeat_interval=_interval(0), assignment=None)


def response(version: int, answer: HeartbeatAnswer, _written: Any = None) -> Any:
    assignment = None
    if answer.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": sorted(parts)}
                                           for topic_id, parts in sorted(answer.assignment.items())]}
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                 member_id=answer.member_id, member_epoch=answer.member_epoch,
                 heartbeat_interval=_interval(answer.heartbeat_interval_ms), assignment=assignment)


def _failed(version: int, _answer: HeartbeatAnswer, error: BaseException) -> Any:
    return error_response(version, write_error_code(error))


def _owned(topic_partitions: Any) -> Assignment | None:
    if topic_partitions is None:
        return None
    owned: dict = {}
    for tp in topic_partitions:
        if tp.partitions:
            owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return owned


def params_of(ctx: RequestContext, request: Any) -> HeartbeatParams:
    names = request.subscribed_topic_names
    return HeartbeatParams(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=ms(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=_owned(request.topic_partitions),
        client_id=ctx.client_id or "", client_host=ctx.client_host)


class ConsumerGroupHeartbeatHandler:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.groups = groups
        self.access = access

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        access = self.access
        if access.enabled:
            if not access.group(ctx, Op.READ, request.group_id):
                return error_response(version, ErrorCode.group_authorization_failed)
            names = request.subscribed_topic_names or ()
            if any(not access.topic(ctx, Op.DESCRIBE, name) for name in names):
                return error_response(version, ErrorCode.topic_authorization_failed)
        try:
            params = params_of(ctx, request)
            shard = self.groups.shard_for(request.group_id)
            if shard.error is not None:
                return error_response(version, shard.error)
            answer, write = shard.consumer_heartbeat(params)
        except KafkaError as exc:
            return error_response(version, exc.code, str(exc))
        except Exception:
            log.exception("ConsumerGroupHeartbeat failed", group=request.group_id)
            return error_response(version, ErrorCode.unknown_server_error)
        if write is None or (write.done() and write.exception() is None):
            return response(version, answer)
        return write.then(response, _failed, version, answer)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                        ConsumerGroupHeartbeatHandler(services.groups, services.access).handle)
