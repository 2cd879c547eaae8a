"""SyncGroup v0-5: kio messages <-> Membership.sync; the answer may wait for the leader's
assignment, through a Completion (as JoinGroup's, handlers/join_group.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.completion import Completion
from coordinator.groups.classic_member import SyncResult
from coordinator.groups.params import SyncParams
from coordinator.handlers.authorized import group_guarded
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import field_shapes

if TYPE_CHECKING:
    from protocol.request_types import SyncGroupRequest

log = structlog.get_logger("coordinator.groups")

_CLASSES = API_TABLE[ApiKey.SYNC_GROUP].responses


def sync_response(version: int, r: SyncResult) -> Any:
    cls = _CLASSES[version]
    names = field_shapes(cls)
    extra: dict[str, Any] = {}
    if "throttle_time" in names:
        extra["throttle_time"] = NO_THROTTLE
    if "protocol_type" in names:
        extra["protocol_type"], extra["protocol_name"] = r.protocol_type, r.protocol_name
    return cls(error_code=r.error, assignment=r.assignment, **extra)


class SyncGroupHandler:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def handle(self, ctx: RequestContext, request: SyncGroupRequest) -> object:
        version = ctx.api_version
        params = SyncParams(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None), generation_id=request.generation_id,
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments=tuple((a.member_id, a.assignment) for a in request.assignments), api_version=version)
        reply = Completion()
        try:
            shard = self.groups.shard_for(params.group_id)
            if shard.error is not None and params.group_id:
                reply.set_result(SyncResult(shard.error))
            else:
                shard.sync(params, reply.set_result)
        except Exception:
            log.exception("SyncGroup failed", group=params.group_id)
            reply.set_result(SyncResult(ErrorCode.unknown_server_error))
        return reply.now_or_then(sync_response, version)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.SYNC_GROUP, group_guarded(
        services.access, Op.READ, SyncGroupHandler(services.groups).handle,
        lambda version, _request: sync_response(version, SyncResult(ErrorCode.group_authorization_failed))))
