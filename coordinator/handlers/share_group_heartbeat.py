"""ShareGroupHeartbeat v1 (KIP-932): kio messages <-> the shard's share-group heartbeat (runtime/share_shard.py);
answered once the records it wrote are durable.

Authorization as Kafka's KafkaApis.handleShareGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED),
then DESCRIBE on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED when one is refused).
"""

from __future__ import annotations

import datetime
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from coordinator.errors import KafkaError, error_message, write_error_code
from coordinator.groups.share.heartbeat import HeartbeatRequest, HeartbeatResult
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

log = structlog.get_logger("coordinator.groups")

_SPEC = API_TABLE[ApiKey.SHARE_GROUP_HEARTBEAT]


def _interval(value: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def error_response(version: int, code: ErrorCode, message: str | None = None) -> Any:
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=code,
                 error_message=message if message is not None else error_message(code), member_id=None,
                 member_epoch=0, heartbeat_interval=_interval(0), assignment=None)


def response(version: int, member_id: str, result: HeartbeatResult, _written: Any = None) -> Any:
    if result.error is not ErrorCode.none:
        return error_response(version, result.error, result.message)
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": sorted(parts)}
                                           for topic_id, parts in sorted(result.assignment.items())]}
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                 member_id=member_id, member_epoch=result.member_epoch,
                 heartbeat_interval=_interval(result.heartbeat_interval_ms), assignment=assignment)


def _failed(version: int, _member_id: str, _result: HeartbeatResult, error: BaseException) -> Any:
    return error_response(version, write_error_code(error))


class ShareGroupHeartbeatHandler:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.groups = groups
        self.access = access

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        access = self.access
        if access.enabled:
            if not access.group(ctx, Op.READ, request.group_id):
                return error_response(version, ErrorCode.group_authorization_failed)
            if any(not access.topic(ctx, Op.DESCRIBE, name) for name in request.subscribed_topic_names or ()):
                return error_response(version, ErrorCode.topic_authorization_failed)
        names = request.subscribed_topic_names
        params = HeartbeatRequest(request.group_id, request.member_id, request.member_epoch, request.rack_id,
                                  None if names is None else tuple(names), ctx.client_id or "", ctx.client_host)
        try:
            shard = self.groups.shard_for(request.group_id)
            if shard.error is not None:
                return error_response(version, shard.error)
            if names is not None and sum(map(len, names)) + len(names) > shard.settings.offsets_max_batch_bytes:
                return error_response(version, ErrorCode.unknown_server_error,
                                      "The subscription is too large to be stored.")
            result, write = shard.share.heartbeat(params)
        except KafkaError as exc:
            return error_response(version, exc.code, str(exc))
        except Exception:
            log.exception("ShareGroupHeartbeat failed", group=request.group_id)
            return error_response(version, ErrorCode.unknown_server_error)
        if write is None or (write.done() and write.exception() is None):
            return response(version, request.member_id, result)
        return write.then(response, _failed, version, request.member_id, result)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.SHARE_GROUP_HEARTBEAT, ShareGroupHeartbeatHandler(services.groups,
                                                                                 services.access).handle)
