"""LeaveGroup v0-5: kio messages <-> Membership.leave; answered once the group's record is written.

Before v3 a request names one member and the response carries a single error (the first
member's error when the group's is NONE), as Kafka's LeaveGroupResponse does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.groups.params import LeaveResult, LeavingMember
from coordinator.handlers.authorized import group_guarded
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from protocol.request_types import LeaveGroupRequest, LeaveGroupV0, LeaveGroupV1, LeaveGroupV2

log = structlog.get_logger("coordinator.groups")

BATCHED_LEAVE_FROM = 3
_CLASSES = API_TABLE[ApiKey.LEAVE_GROUP].responses


def leave_response(version: int, result: LeaveResult, _written: Any = None) -> Any:
    cls = _CLASSES[version]
    if version < BATCHED_LEAVE_FROM:
        code = result.error
        if code is ErrorCode.none:
            code = next((c for _m, _i, c in result.members if c is not ErrorCode.none), ErrorCode.none)
        return build(cls, throttle_time=NO_THROTTLE, error_code=code)
    return build(cls, throttle_time=NO_THROTTLE, error_code=result.error, members=[
        {"member_id": mid, "group_instance_id": iid, "error_code": code} for mid, iid, code in result.members])


def leave_failed(version: int, _result: LeaveResult, error: BaseException) -> Any:
    return leave_response(version, LeaveResult(write_error_code(error), ()))


class LeaveGroupHandler:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def handle(self, ctx: RequestContext, request: LeaveGroupRequest) -> object:
        version = ctx.api_version
        if version < BATCHED_LEAVE_FROM:
            if TYPE_CHECKING:  # annotations only (no code on the request's path): v0-v2 name one member
                assert isinstance(request, LeaveGroupV0 | LeaveGroupV1 | LeaveGroupV2)
            leaving = [LeavingMember(request.member_id)]
        else:
            if TYPE_CHECKING:
                assert not isinstance(request, LeaveGroupV0 | LeaveGroupV1 | LeaveGroupV2)
            leaving = [LeavingMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                       for m in request.members]
        try:
            shard = self.groups.shard_for(request.group_id)
            if shard.error is not None and request.group_id:
                return leave_response(version, LeaveResult(shard.error, ()))
            result, write = shard.leave(request.group_id, leaving)
        except Exception:
            log.exception("LeaveGroup failed", group=request.group_id)
            return leave_response(version, LeaveResult(ErrorCode.unknown_server_error, ()))
        if write is None or (write.done() and write.exception() is None):
            return leave_response(version, result)
        return write.then(leave_response, leave_failed, version, result)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.LEAVE_GROUP, group_guarded(
        services.access, Op.READ, LeaveGroupHandler(services.groups).handle,
        lambda version, _request: leave_response(version, LeaveResult(ErrorCode.group_authorization_failed, ()))))
