"""ShareGroupDescribe v1 (KIP-932): GroupMetadataManager.shareGroupDescribe and ShareGroup.asDescribedGroup
(groups/share/describe.py).

Per group: GROUP_AUTHORIZATION_FAILED without DESCRIBE on it; the shard's error when it is loading or not ours;
GROUP_ID_NOT_FOUND for an unknown id ("Group %s not found.") or a group of another kind ("Group %s is not a share
group."). The members' assignments name their topics; a topic the principal may not DESCRIBE turns the group into
TOPIC_AUTHORIZATION_FAILED, as for consumer groups.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.groups.share.describe import describe
from coordinator.groups.share.model import Assignment
from coordinator.handlers import sliced_encoding
from coordinator.handlers.consumer_group_describe import _failed
from coordinator.handlers.group_admin import GROUP_OPERATIONS
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build


class ShareGroupDescribeHandler:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.groups = groups
        self.access = access

    def names(self, assignment: Assignment) -> list[Fields]:
        name_of = self.groups.topic_view.name_of
        out = []
        for topic_id, partitions in sorted(assignment.items()):
            name = name_of(topic_id)
            if name is not None:
                out.append({"topic_id": topic_id, "topic_name": name, "partitions": sorted(partitions)})
        return out

    def describe_one(self, ctx: RequestContext, group_id: str, with_ops: bool) -> Fields:
        access = self.access
        if access.enabled and not access.group(ctx, Op.DESCRIBE, group_id):
            return _failed(group_id, ErrorCode.group_authorization_failed)
        shard = self.groups.shard_for(group_id)
        if shard.error is not None:
            return _failed(group_id, shard.error)
        group = shard.share.groups.get(group_id)
        if group is None:
            if shard.share.not_share_group(group_id):
                return _failed(group_id, ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
            return _failed(group_id, ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        described = describe(group)
        members: list[Fields] = []
        topics: set[str] = set()
        for m in described.members:
            assigned = self.names(m.assignment)
            topics.update(t["topic_name"] for t in assigned)
            members.append({"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "subscribed_topic_names": sorted(m.subscribed_topic_names),
                            "assignment": {"topic_partitions": assigned}})
        if access.enabled and any(not access.topic(ctx, Op.DESCRIBE, name) for name in topics):
            return _failed(group_id, ErrorCode.topic_authorization_failed)
        return {"error_code": ErrorCode.none, "error_message": None, "group_id": group_id,
                "group_state": described.group_state, "group_epoch": described.group_epoch,
                "assignment_epoch": described.assignment_epoch, "assignor_name": described.assignor_name,
                "members": members,
                "authorized_operations": access.operations(ctx, ResourceType.GROUP, group_id, GROUP_OPERATIONS)
                if with_ops else NOT_REQUESTED}

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        with_ops = request.include_authorized_operations
        cls = API_TABLE[ApiKey.SHARE_GROUP_DESCRIBE].responses[ctx.api_version]
        if len(request.group_ids) > sliced_encoding.SLICE:  # described, built and encoded a slice per loop turn
            entries = sliced_encoding.LazyEntries(
                request.group_ids, lambda ids: [self.describe_one(ctx, group_id, with_ops) for group_id in ids])
            return sliced_encoding.encode_sliced(cls, {"throttle_time": NO_THROTTLE}, "groups", entries,
                                                 flexible=True)
        groups = [self.describe_one(ctx, group_id, with_ops) for group_id in request.group_ids]
        return build(cls, throttle_time=NO_THROTTLE, groups=groups)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.SHARE_GROUP_DESCRIBE, ShareGroupDescribeHandler(services.groups,
                                                                               services.access).handle)
