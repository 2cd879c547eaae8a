"""JoinGroup v0-9: kio messages <-> Membership.join.

The domain knows nothing of versions; this module maps the request to JoinParams and the
JoinResult to each version's response, with the quirks of Kafka's JoinGroupResponse (the
protocol name "" before v7 and null from v7, v0's rebalance timeout = session timeout). The
domain answers through a Completion: at once (the handler answers with the response), or
later, when the rebalance completes (the handler answers with a Completion of it: no Task and
no coroutine per delayed JoinGroup; a 500-member rebalance completes 500 of them in one go).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.completion import Completion
from coordinator.groups.classic_member import JoinResult, dedupe_protocols
from coordinator.groups.params import JoinParams
from coordinator.handlers import sliced_encoding
from coordinator.handlers.authorized import group_guarded
from coordinator.handlers.wire_values import NO_THROTTLE, ms
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import field_shapes, nested_class

if TYPE_CHECKING:
    from protocol.request_types import JoinGroupRequest, JoinGroupV0

log = structlog.get_logger("coordinator.groups")

NULLABLE_JOIN_PROTOCOL_NAME_FROM = 7
_CLASSES = API_TABLE[ApiKey.JOIN_GROUP].responses
_MEMBER_CLASSES = _CLASSES.derived(lambda cls: nested_class(cls, "members"))


def join_response(version: int, r: JoinResult) -> Any:
    """Built directly (not through protocol/build.py): the leader's answer carries every member."""
    name = r.protocol_name
    if version < NULLABLE_JOIN_PROTOCOL_NAME_FROM and name is None:
        name = ""
    elif version >= NULLABLE_JOIN_PROTOCOL_NAME_FROM and name == "":
        name = None
    cls = _CLASSES[version]
    names = field_shapes(cls)
    members: tuple[object, ...] = ()  # kio's member class of the version
    if r.members:
        member_cls = _MEMBER_CLASSES[version]
        if "group_instance_id" in field_shapes(member_cls):
            members = tuple(member_cls(member_id=mid, group_instance_id=iid, metadata=md)
                            for mid, iid, md in r.members)
        else:
            members = tuple(member_cls(member_id=mid, metadata=md) for mid, _iid, md in r.members)
    extra: dict[str, Any] = {}
    if "throttle_time" in names:
        extra["throttle_time"] = NO_THROTTLE
    if "protocol_type" in names:
        extra["protocol_type"] = r.protocol_type
    if "skip_assignment" in names:
        extra["skip_assignment"] = r.skip_assignment
    return cls(error_code=r.error, generation_id=r.generation_id, protocol_name=name, leader=r.leader,
               member_id=r.member_id, members=members, **extra)


class JoinGroupHandler:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def handle(self, ctx: RequestContext, request: JoinGroupRequest) -> object:
        if len(request.protocols) > sliced_encoding.SLICE:
            return self.join_in_slices(ctx, request)
        return self.join(ctx, request, dedupe_protocols(tuple((p.name, p.metadata) for p in request.protocols)))

    async def join_in_slices(self, ctx: RequestContext, request: JoinGroupRequest) -> object:
        """A JoinGroup listing millions of protocols: deduplicated a slice per loop turn."""
        seen: set[str] = set()
        kept: list[tuple[str, bytes]] = []
        await sliced_encoding.in_slices(request.protocols, lambda chunk: kept.extend(
            dedupe_protocols(tuple((p.name, p.metadata) for p in chunk), seen)))
        answer = self.join(ctx, request, tuple(kept))
        return await answer if isinstance(answer, Completion) else answer

    def join(self, ctx: RequestContext, request: JoinGroupRequest, protocols: tuple[tuple[str, bytes], ...]) -> object:
        version = ctx.api_version
        session_ms = ms(request.session_timeout)
        if version == 0:  # no rebalance timeout: the session timeout's
            rebalance_ms = session_ms
        else:
            if TYPE_CHECKING:  # annotations only (no code on the request's path)
                assert not isinstance(request, JoinGroupV0)
            rebalance_ms = ms(request.rebalance_timeout)
        params = JoinParams(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            protocol_type=request.protocol_type, protocols=protocols,
            reason=getattr(request, "reason", None), client_id=ctx.client_id or "",
            client_host="/" + ctx.client_host, api_version=version)
        if params.reason:  # DEBUG: one line per member per rebalance; the rebalance's own line has the reason
            log.debug("join reason", group=params.group_id, member=params.member_id, reason=params.reason)
        reply = Completion()
        try:
            shard = self.groups.shard_for(params.group_id)
            if shard.error is not None and params.group_id:
                reply.set_result(JoinResult(shard.error, params.member_id))
            else:
                shard.join(params, reply.set_result)
        except Exception:
            log.exception("JoinGroup failed", group=params.group_id)
            reply.set_result(JoinResult(ErrorCode.unknown_server_error, params.member_id))
        return reply.now_or_then(join_response, version)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.JOIN_GROUP, group_guarded(
        services.access, Op.READ, JoinGroupHandler(services.groups).handle,
        lambda version, _request: join_response(version, JoinResult(ErrorCode.group_authorization_failed, ""))))
