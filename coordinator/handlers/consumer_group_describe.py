"""ConsumerGroupDescribe v0-1 (KIP-848): GroupMetadataManager.consumerGroupDescribe and ConsumerGroup.asDescribedGroup.

Per group: GROUP_AUTHORIZATION_FAILED without DESCRIBE on it (KafkaApis); the shard's error when it is loading
or not ours; GROUP_ID_NOT_FOUND for an unknown id ("Group %s not found.") or a classic group ("Group %s is not a
consumer group."). A described group names every topic of its members' assignments; one the principal may not
DESCRIBE turns the group into TOPIC_AUTHORIZATION_FAILED (Kafka 4's KafkaApis).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import Assignment
from coordinator.handlers import sliced_encoding
from coordinator.handlers.group_admin import GROUP_OPERATIONS
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import ConsumerGroupDescribeRequest

MEMBER_TYPE_CLASSIC = 0  # v1 MemberType: 0 classic, 1 consumer
MEMBER_TYPE_CONSUMER = 1


def _failed(group_id: str, code: ErrorCode, message: str | None = None) -> Fields:
    return {"error_code": code, "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
            "authorized_operations": NOT_REQUESTED}


class ConsumerGroupDescribeHandler:
    def __init__(self, groups: GroupCoordinator, access: Access, default_assignor: str) -> None:
        self.groups = groups
        self.access = access
        self.default_assignor = default_assignor

    def names(self, assignment: Assignment) -> list[Fields]:
        name_of = self.groups.topic_view.name_of
        out = []
        for topic_id, partitions in sorted(assignment.items()):
            name = name_of(topic_id)
            if name is not None:  # a deleted topic drops out, as Kafka's TopicsImage lookup
                out.append({"topic_id": topic_id, "topic_name": name, "partitions": sorted(partitions)})
        return out

    def described(self, ctx: RequestContext, group: ConsumerGroup, with_ops: bool) -> Fields:
        members = []
        topics: set[str] = set()
        for member in group.members.values():
            current = self.names(member.assigned_partitions)
            target = self.names(group.target_assignment.get(member.member_id, {}))
            topics.update(t["topic_name"] for t in current + target)
            members.append({
                "member_id": member.member_id, "instance_id": member.instance_id, "rack_id": member.rack_id,
                "member_epoch": member.member_epoch, "client_id": member.client_id,
                "client_host": member.client_host, "subscribed_topic_names": sorted(member.subscribed_topic_names),
                "subscribed_topic_regex": member.subscribed_topic_regex,
                "assignment": {"topic_partitions": current}, "target_assignment": {"topic_partitions": target},
                "member_type": MEMBER_TYPE_CLASSIC if member.classic is not None else MEMBER_TYPE_CONSUMER})
        access = self.access
        if access.enabled and any(not access.topic(ctx, Op.DESCRIBE, name) for name in topics):
            return _failed(group.group_id, ErrorCode.topic_authorization_failed)
        return {"error_code": ErrorCode.none, "error_message": None, "group_id": group.group_id,
                "group_state": group.state.value, "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": group.preferred_assignor() or self.default_assignor, "members": members,
                "authorized_operations": access.operations(ctx, ResourceType.GROUP, group.group_id, GROUP_OPERATIONS)
                if with_ops else NOT_REQUESTED}

    def describe_one(self, ctx: RequestContext, group_id: str, with_ops: bool) -> Fields:
        if self.access.enabled and not self.access.group(ctx, Op.DESCRIBE, group_id):
            return _failed(group_id, ErrorCode.group_authorization_failed)
        shard = self.groups.shard_for(group_id)
        if shard.error is not None:
            return _failed(group_id, shard.error)
        group = shard.consumer_groups.get(group_id)
        if group is None:
            if group_id in shard.groups:
                return _failed(group_id, ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
            return _failed(group_id, ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        return self.described(ctx, group, with_ops)

    def handle(self, ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> object:
        with_ops = request.include_authorized_operations
        cls = API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].responses[ctx.api_version]
        if len(request.group_ids) > sliced_encoding.SLICE:  # described, built and encoded a slice per loop turn
            entries = sliced_encoding.LazyEntries(
                request.group_ids, lambda ids: [self.describe_one(ctx, group_id, with_ops) for group_id in ids])
            return sliced_encoding.encode_sliced(cls, {"throttle_time": NO_THROTTLE}, "groups", entries,
                                                 flexible=True)
        groups = [self.describe_one(ctx, group_id, with_ops) for group_id in request.group_ids]
        return build(cls, throttle_time=NO_THROTTLE, groups=groups)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = ConsumerGroupDescribeHandler(services.groups, services.access,
                                           services.groups.settings.consumer.default_assignor)
    dispatcher.register(ApiKey.CONSUMER_GROUP_DESCRIBE, handler.handle)
