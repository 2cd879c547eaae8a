"""DescribeGroups v0-5, ListGroups v0-5, DeleteGroups v0-2: the admin views of classic groups
(coordinator/groups/admin.py) as each version's response."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.groups.admin import describe_groups, list_groups
from coordinator.handlers import sliced_encoding
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest

# AclOperation bits allowed on a GROUP resource with no authorizer: READ 3, DELETE 6, DESCRIBE 8.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
DESCRIBE_FLEXIBLE_FROM = 5


def refused_group(group_id: str) -> Fields:
    """DescribeGroupsResponse.groupError: a group the principal may not describe."""
    return {"error_code": ErrorCode.group_authorization_failed, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "authorized_operations": NOT_REQUESTED, "members": []}


class GroupAdminHandlers:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.groups = groups
        self.access = access

    def described(self, ctx: RequestContext, group_ids: Any, with_ops: bool) -> list[Fields]:
        access = self.access
        ids = list(group_ids)
        refused = set() if not access.enabled else {g for g in ids if not access.group(ctx, Op.DESCRIBE, g)}
        found = iter(describe_groups(self.groups, [g for g in ids if g not in refused] if refused else ids))
        out = []
        for group_id in ids:
            if group_id in refused:
                out.append(refused_group(group_id))
                continue
            g = next(found)
            out.append({
                "error_code": g.error, "group_id": g.group_id, "group_state": g.state,
                "protocol_type": g.protocol_type, "protocol_data": g.protocol_data,
                "authorized_operations": access.operations(ctx, ResourceType.GROUP, g.group_id, GROUP_OPERATIONS)
                if with_ops and g.error is ErrorCode.none else NOT_REQUESTED,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata, "member_assignment": m.assignment}
                            for m in g.members]})
        return out

    def describe(self, ctx: RequestContext, request: DescribeGroupsRequest) -> object:
        version = ctx.api_version
        with_ops = getattr(request, "include_authorized_operations", False)
        cls = API_TABLE[ApiKey.DESCRIBE_GROUPS].responses[version]
        if len(request.groups) > sliced_encoding.SLICE:  # described, built and encoded a slice per loop turn
            entries = sliced_encoding.LazyEntries(request.groups, lambda ids: self.described(ctx, ids, with_ops))
            return sliced_encoding.encode_sliced(cls, {"throttle_time": NO_THROTTLE}, "groups", entries,
                                                 flexible=version >= DESCRIBE_FLEXIBLE_FROM)
        return build(cls, throttle_time=NO_THROTTLE, groups=self.described(ctx, request.groups, with_ops))

    def list(self, ctx: RequestContext, request: ListGroupsRequest) -> object:
        cls = API_TABLE[ApiKey.LIST_GROUPS].responses[ctx.api_version]
        if any(shard.error is ErrorCode.coordinator_load_in_progress for shard in self.groups.all_shards()):
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.coordinator_load_in_progress,
                         groups=[])
        listed = list_groups(self.groups, tuple(getattr(request, "states_filter", ())),
                             tuple(getattr(request, "types_filter", ())))
        access = self.access
        if access.enabled and not access.cluster(ctx, Op.DESCRIBE):  # else only the groups it may describe
            listed = [g for g in listed if access.group(ctx, Op.DESCRIBE, g.group_id)]
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                     groups=[{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
                              "group_type": g.group_type} for g in listed])

    async def delete(self, ctx: RequestContext, request: DeleteGroupsRequest) -> object:
        names = list(request.groups_names)
        access = self.access
        refused = set() if not access.enabled else {
            g for g in names if g is not None and not access.group(ctx, Op.DELETE, g)}
        deleted = dict(await self.groups.delete_groups([g for g in names if g not in refused]))
        results = [(g, ErrorCode.group_authorization_failed if g in refused else deleted[g]) for g in
                   dict.fromkeys(names)]
        return build(API_TABLE[ApiKey.DELETE_GROUPS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     results=[{"group_id": gid, "error_code": code} for gid, code in results])


def register(dispatcher: Dispatcher, services: Services) -> None:
    handlers = GroupAdminHandlers(services.groups, services.access)
    dispatcher.register(ApiKey.DESCRIBE_GROUPS, handlers.describe)
    dispatcher.register(ApiKey.LIST_GROUPS, handlers.list)
    dispatcher.register(ApiKey.DELETE_GROUPS, handlers.delete)
