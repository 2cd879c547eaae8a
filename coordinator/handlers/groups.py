"""JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5, DescribeGroups v0-5,
ListGroups v0-5, DeleteGroups v0-2: kio messages <-> the classic group domain.

The domain (membership.py, group_admin.py) knows nothing of versions; this module maps
requests to its parameters and its results to each version's response, following the
version quirks of Kafka's request/response classes (JoinGroupResponse's protocol name
"" before v7 and null from v7, LeaveGroupResponse's single error before v3, v0's
rebalance timeout = session timeout, ...). JoinGroup and SyncGroup answers are delayed
operations: the handler returns an awaitable when the domain has not answered at once.

Heartbeat is the hot path: its kio responses are built once per (version, error) and
reused (they are immutable), and it bypasses protocol/build.py. It also has a fast path
(registered with the dispatcher) that skips the request header's client id without
building a RequestHeader and answers with a cached response frame; both paths decode
the body with kio's reader and share `heartbeat_code`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.groups.admin import delete_groups, describe_groups, list_groups
from coordinator.groups.classic_group import JoinResult, SyncResult, dedupe_protocols
from coordinator.groups.membership import JoinParams, LeaveResult, LeavingMember, SyncParams
from coordinator.handlers import sliced_encoding
from coordinator.handlers.api_versions import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from protocol.codec import FixedResponse, decode_common

log = structlog.get_logger("coordinator.groups")

_ONE_MS = datetime.timedelta(milliseconds=1)
NOT_REQUESTED = -(2**31)  # authorized operations not asked for
# AclOperation bits allowed on a GROUP resource with no authorizer: READ 3, DELETE 6, DESCRIBE 8.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
BATCHED_LEAVE_FROM = 3
NULLABLE_JOIN_PROTOCOL_NAME_FROM = 7


def _ms(value: datetime.timedelta) -> int:
    return value // _ONE_MS


class _Reply:
    """Receives a domain answer. Before the handler returns, the answer is kept and converted at
    once; after it, the answer is converted on arrival and set on a plain future, which the
    dispatcher waits on directly (no Task and no coroutine per delayed JoinGroup/SyncGroup: a
    500-member rebalance completes 500 of them in one go)."""

    __slots__ = ("result", "future", "convert")

    def __init__(self) -> None:
        self.result: Any = None
        self.future: asyncio.Future | None = None
        self.convert: Callable[[Any], Any] | None = None

    def __call__(self, result: Any) -> None:
        future = self.future
        if future is None:
            if self.result is None:
                self.result = result
        elif not future.done():
            assert self.convert is not None
            try:
                future.set_result(self.convert(result))
            except Exception as exc:  # noqa: BLE001 - the dispatcher logs it and closes the connection
                future.set_exception(exc)

    def respond(self, convert: Callable[[Any], Any]) -> Any:
        if self.result is not None:
            return convert(self.result)
        self.convert = convert
        self.future = asyncio.get_running_loop().create_future()
        return self.future


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def register(dispatcher: Dispatcher, services: Services) -> None:
    groups = services.groups
    assert groups is not None
    responses = {key: API_TABLE[key].responses for key in (
        ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
        ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS)}

    # --- JoinGroup ---------------------------------------------------------------------

    join_classes = responses[ApiKey.JOIN_GROUP]
    join_member_classes = {v: sys.modules[cls.__module__].JoinGroupResponseMember for v, cls in join_classes.items()}

    def join_response(version: int, r: JoinResult) -> Any:
        """Built directly (not through protocol/build.py): the leader's answer carries every member."""
        name = r.protocol_name
        if version < NULLABLE_JOIN_PROTOCOL_NAME_FROM and name is None:
            name = ""
        elif version >= NULLABLE_JOIN_PROTOCOL_NAME_FROM and name == "":
            name = None
        cls = join_classes[version]
        names = _field_names(cls)
        members: tuple = ()
        if r.members:
            member_cls = join_member_classes[version]
            if "group_instance_id" in _field_names(member_cls):
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

    def handle_join(ctx: RequestContext, request: Any) -> Any:
        if len(request.protocols) > sliced_encoding.SLICE:
            return join_in_slices(ctx, request)
        return join(ctx, request, dedupe_protocols(tuple((p.name, p.metadata) for p in request.protocols)))

    async def join_in_slices(ctx: RequestContext, request: Any) -> Any:
        """A JoinGroup listing millions of protocols: deduplicated a slice per loop turn."""
        seen: set[str] = set()
        kept: list[tuple[str, bytes]] = []
        await sliced_encoding.in_slices(request.protocols, lambda chunk: kept.extend(
            dedupe_protocols(tuple((p.name, p.metadata) for p in chunk), seen)))
        answer = join(ctx, request, tuple(kept))
        return await answer if isinstance(answer, asyncio.Future) else answer

    def join(ctx: RequestContext, request: Any, protocols: tuple[tuple[str, bytes], ...]) -> Any:
        version = ctx.api_version
        session_ms = _ms(request.session_timeout)
        params = JoinParams(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=session_ms if version == 0 else _ms(request.rebalance_timeout),
            protocol_type=request.protocol_type, protocols=protocols,
            reason=getattr(request, "reason", None), client_id=ctx.client_id or "",
            client_host="/" + ctx.client_host, api_version=version)
        if params.reason:  # DEBUG: one line per member per rebalance; the rebalance's own line has the reason
            log.debug("join reason", group=params.group_id, member=params.member_id, reason=params.reason)
        reply = _Reply()
        try:
            shard = groups.shard_for(params.group_id)
            if shard.error is not None and params.group_id:
                reply(JoinResult(shard.error, params.member_id))
            else:
                shard.membership.join(params, reply)
        except Exception:
            log.exception("JoinGroup failed", group=params.group_id)
            reply(JoinResult(ErrorCode.unknown_server_error, params.member_id))
        return reply.respond(lambda r: join_response(version, r))

    # --- SyncGroup ---------------------------------------------------------------------

    def sync_response(version: int, r: SyncResult) -> Any:
        cls = responses[ApiKey.SYNC_GROUP][version]
        names = _field_names(cls)
        extra: dict[str, Any] = {}
        if "throttle_time" in names:
            extra["throttle_time"] = NO_THROTTLE
        if "protocol_type" in names:
            extra["protocol_type"], extra["protocol_name"] = r.protocol_type, r.protocol_name
        return cls(error_code=r.error, assignment=r.assignment, **extra)

    def handle_sync(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        params = SyncParams(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None), generation_id=request.generation_id,
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments=tuple((a.member_id, a.assignment) for a in request.assignments), api_version=version)
        reply = _Reply()
        try:
            shard = groups.shard_for(params.group_id)
            if shard.error is not None and params.group_id:
                reply(SyncResult(shard.error))
            else:
                shard.membership.sync(params, reply)
        except Exception:
            log.exception("SyncGroup failed", group=params.group_id)
            reply(SyncResult(ErrorCode.unknown_server_error))
        return reply.respond(lambda r: sync_response(version, r))

    # --- Heartbeat (hot path) ------------------------------------------------------------

    heartbeat_classes = responses[ApiKey.HEARTBEAT]
    heartbeat_answers: dict[tuple[int, ErrorCode], Any] = {}
    heartbeat_frames: dict[tuple[int, ErrorCode], FixedResponse] = {}
    heartbeat_header_versions = API_TABLE[ApiKey.HEARTBEAT].response_header_versions

    def heartbeat_answer(version: int, code: ErrorCode) -> Any:
        answer = heartbeat_answers.get((version, code))
        if answer is None:
            answer = heartbeat_answers[(version, code)] = build(
                heartbeat_classes[version], throttle_time=NO_THROTTLE, error_code=code)
        return answer

    def heartbeat_frame(version: int, code: ErrorCode) -> FixedResponse:
        """The fast path's answer: heartbeat_answer(version, code) encoded once by the generic encoder."""
        fixed = heartbeat_frames[(version, code)] = FixedResponse(
            heartbeat_header_versions[version], heartbeat_answer(version, code))
        return fixed

    for version in heartbeat_classes:
        for code in (ErrorCode.none, ErrorCode.rebalance_in_progress, ErrorCode.unknown_member_id,
                     ErrorCode.illegal_generation, ErrorCode.fenced_instance_id):
            heartbeat_frame(version, code)
    shard_for = groups.shard_for

    def heartbeat_code(group_id: str, generation_id: int, member_id: str, instance_id: str | None) -> ErrorCode:
        """The one heartbeat decision, for the generic handler and the fast path alike."""
        try:
            shard = shard_for(group_id)
            if shard.error is not None and group_id:
                # Kafka answers a heartbeat for a loading group blindly with NONE
                return ErrorCode.none if shard.error is ErrorCode.coordinator_load_in_progress else shard.error
            return shard.membership.heartbeat(group_id, member_id, instance_id, generation_id)
        except Exception:
            log.exception("Heartbeat failed", group=group_id)
            return ErrorCode.unknown_server_error

    def handle_heartbeat(ctx: RequestContext, request: Any) -> Any:
        return heartbeat_answer(ctx.api_version, heartbeat_code(
            request.group_id, request.generation_id, request.member_id, getattr(request, "group_instance_id", None)))

    heartbeat_spec = API_TABLE[ApiKey.HEARTBEAT]
    heartbeat_flexible = {version: heartbeat_spec.request_is_flexible(version) for version in heartbeat_classes}

    def fast_heartbeat(frame: bytes, version: int, correlation_id: int) -> bytes | None:
        """Heartbeat without RequestHeader, RequestContext or encoder: kio's reader for the body,
        the shared decision, a cached response frame. None (generic path) for anything unusual."""
        flexible = heartbeat_flexible.get(version)
        if flexible is None:
            return None  # unsupported version: the generic path answers it
        request = decode_common(heartbeat_spec, version, frame, flexible)
        if request is None:
            return None
        code = heartbeat_code(request.group_id, request.generation_id, request.member_id,
                              getattr(request, "group_instance_id", None))
        fixed = heartbeat_frames.get((version, code)) or heartbeat_frame(version, code)
        return fixed.frame(correlation_id)

    # --- LeaveGroup ----------------------------------------------------------------------

    def leave_response(version: int, result: LeaveResult) -> Any:
        cls = responses[ApiKey.LEAVE_GROUP][version]
        if version < BATCHED_LEAVE_FROM:
            code = result.error
            if code is ErrorCode.none:
                code = next((c for _m, _i, c in result.members if c is not ErrorCode.none), ErrorCode.none)
            return build(cls, throttle_time=NO_THROTTLE, error_code=code)
        return build(cls, throttle_time=NO_THROTTLE, error_code=result.error, members=[
            {"member_id": mid, "group_instance_id": iid, "error_code": code} for mid, iid, code in result.members])

    async def leave_after_write(version: int, result: LeaveResult, write: Any) -> Any:
        try:
            await write
        except Exception as exc:
            return leave_response(version, LeaveResult(write_error_code(exc), ()))
        return leave_response(version, result)

    def handle_leave(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        if version < BATCHED_LEAVE_FROM:
            leaving = [LeavingMember(request.member_id)]
        else:
            leaving = [LeavingMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                       for m in request.members]
        try:
            shard = groups.shard_for(request.group_id)
            if shard.error is not None and request.group_id:
                return leave_response(version, LeaveResult(shard.error, ()))
            result, write = shard.membership.leave(request.group_id, leaving)
        except Exception:
            log.exception("LeaveGroup failed", group=request.group_id)
            return leave_response(version, LeaveResult(ErrorCode.unknown_server_error, ()))
        if write is None or (write.done and write.error is None):
            return leave_response(version, result)
        return leave_after_write(version, result, write)

    # --- DescribeGroups / ListGroups / DeleteGroups ------------------------------------------

    def handle_describe(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        with_ops = getattr(request, "include_authorized_operations", False)

        def described(group_ids: Any) -> list[dict]:
            return [{
                "error_code": g.error, "group_id": g.group_id, "group_state": g.state,
                "protocol_type": g.protocol_type, "protocol_data": g.protocol_data,
                "authorized_operations": GROUP_OPERATIONS if with_ops and g.error is ErrorCode.none
                else NOT_REQUESTED,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata, "member_assignment": m.assignment}
                            for m in g.members]} for g in describe_groups(groups, list(group_ids))]

        cls = responses[ApiKey.DESCRIBE_GROUPS][version]
        if len(request.groups) > sliced_encoding.SLICE:  # described, built and encoded a slice per loop turn
            return sliced_encoding.encode_sliced(cls, {"throttle_time": NO_THROTTLE}, "groups",
                                                 sliced_encoding.LazyEntries(request.groups, described),
                                                 flexible=version >= 5)
        return build(cls, throttle_time=NO_THROTTLE, groups=described(request.groups))

    def handle_list(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        if any(shard.error is ErrorCode.coordinator_load_in_progress for shard in groups.all_shards()):
            return build(responses[ApiKey.LIST_GROUPS][version], throttle_time=NO_THROTTLE,
                         error_code=ErrorCode.coordinator_load_in_progress, groups=[])
        listed = list_groups(groups, tuple(getattr(request, "states_filter", ())),
                             tuple(getattr(request, "types_filter", ())))
        return build(responses[ApiKey.LIST_GROUPS][version], throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                     groups=[{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
                              "group_type": g.group_type} for g in listed])

    async def handle_delete(ctx: RequestContext, request: Any) -> Any:
        results = await delete_groups(groups, list(request.groups_names))
        return build(responses[ApiKey.DELETE_GROUPS][ctx.api_version], throttle_time=NO_THROTTLE,
                     results=[{"group_id": gid, "error_code": code} for gid, code in results])

    dispatcher.register(ApiKey.JOIN_GROUP, handle_join)
    dispatcher.register(ApiKey.SYNC_GROUP, handle_sync)
    dispatcher.register(ApiKey.HEARTBEAT, handle_heartbeat)
    dispatcher.register_fast(ApiKey.HEARTBEAT, fast_heartbeat)
    dispatcher.register(ApiKey.LEAVE_GROUP, handle_leave)
    dispatcher.register(ApiKey.DESCRIBE_GROUPS, handle_describe)
    dispatcher.register(ApiKey.LIST_GROUPS, handle_list)
    dispatcher.register(ApiKey.DELETE_GROUPS, handle_delete)
