"""DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets v0 and DeleteShareGroupOffsets v0 (KIP-932, KIP-1226), as
Kafka's KafkaApis and GroupCoordinatorService answer them.

DescribeShareGroupOffsets, per group: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED); the shard's error when it
is loading or not ours. Without topics: every initialized partition of the share group (GROUP_ID_NOT_FOUND when
there is none), leaving out topics the principal may not DESCRIBE; with topics: a topic it may not DESCRIBE is
TOPIC_AUTHORIZATION_FAILED per partition, an unknown one is answered with the zero topic id and start offset -1
(absence of data, as OffsetFetch). Each partition's start offset and leader epoch come from the share coordinator's
ReadShareGroupStateSummary; v1's Lag is the partition's end offset - start offset - delivery-complete count (-1
when the start offset or that count is unknown).

DeleteShareGroupOffsets: DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED for that topic), as OffsetDelete; an empty group id is INVALID_GROUP_ID; the group must
be an Empty share group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP); each named topic's share state is deleted
(DeleteShareGroupState) and the topic leaves the group's initialized partitions (its record), so that a member
subscribing again starts it anew (share.auto.offset.reset). A topic the group has no state for, or that does not
exist, is UNKNOWN_TOPIC_OR_PARTITION.

AlterShareGroupOffsets: READ on the group and on each topic; the group must be a share group without members (or
not exist yet: it is made); each partition's share state is initialized anew at its start offset
(InitializeShareGroupState with a state epoch above any used before, so the old state is fenced) and the
partitions become the group's initialized ones; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a
negative start offset INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.errors import error_message
from coordinator.handlers.wire_values import NO_THROTTLE, ZERO_UUID
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

UNINITIALIZED = -1


class ShareGroupOffsetsHandler:
    def __init__(self, services: Services) -> None:
        self.groups = services.groups
        self.coordinator = services.share.state  # the node's own, or cluster mode's routing to the owner
        self.data = services.data
        self.access: Access = services.access

    # --- DescribeShareGroupOffsets ----------------------------------------------------------------------

    async def describe(self, ctx: RequestContext, request: Any) -> Any:
        groups = [await self.describe_group(ctx, group) for group in request.groups]
        return build(API_TABLE[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].responses[ctx.api_version],
                     throttle_time=NO_THROTTLE, groups=groups)

    async def describe_group(self, ctx: RequestContext, request: Any) -> Fields:
        group_id = request.group_id

        def failed(code: ErrorCode, message: str | None = None) -> Fields:
            return {"group_id": group_id, "topics": [], "error_code": code,
                    "error_message": message if message is not None else error_message(code)}

        access = self.access
        if access.enabled and not access.group(ctx, Op.DESCRIBE, group_id):
            return failed(ErrorCode.group_authorization_failed)
        shard = self.groups.shard_for(group_id)
        if shard.error is not None:
            return failed(shard.error)
        catalog = self.data.catalog
        wanted: list[tuple[str, Any, list[int]]] = []  # (name, topic id or None, partitions)
        if request.topics is None:
            group = shard.share.groups.get(group_id)
            if group is None:
                return failed(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
            for topic_id, held in sorted(group.initialized().items(), key=lambda item: item[0].bytes):
                info = catalog.by_id(topic_id)
                if info is not None and (not access.enabled or access.topic(ctx, Op.DESCRIBE, info.name)):
                    wanted.append((info.name, topic_id, sorted(held)))
        else:
            for topic in request.topics:
                info = catalog.get(topic.topic_name)
                wanted.append((topic.topic_name, None if info is None or info.internal else info.topic_id,
                               list(topic.partitions)))
        topics = []
        for name, topic_id, partitions in wanted:
            refused = access.enabled and not access.topic(ctx, Op.DESCRIBE, name)
            answers = []
            for index in partitions:
                if refused:
                    answers.append(_partition(index, error=ErrorCode.topic_authorization_failed))
                elif topic_id is None:
                    answers.append(_partition(index))
                else:
                    answers.append(await self._summary(group_id, name, topic_id, index))
            topics.append({"topic_name": name, "topic_id": ZERO_UUID if topic_id is None or refused else topic_id,
                           "partitions": answers})
        return {"group_id": group_id, "topics": topics, "error_code": ErrorCode.none, "error_message": None}

    async def _summary(self, group_id: str, topic: str, topic_id: Any, index: int) -> Fields:
        answer = await self.coordinator.summary(group_id, topic_id, index)
        state = answer.state
        if answer.error is not ErrorCode.none or state is None:
            return _partition(index, leader_epoch=0)
        lag = UNINITIALIZED
        target = self.data.partition(topic, index)
        if state.start_offset != UNINITIALIZED and state.delivery_complete_count != UNINITIALIZED \
                and target is not None:
            lag = target.log.high_watermark - state.start_offset - state.delivery_complete_count
        return _partition(index, state.start_offset, state.leader_epoch, lag)

    # --- DeleteShareGroupOffsets ------------------------------------------------------------------------

    def _opened(self, ctx: RequestContext, api: ApiKey, op: Op, group_id: str) -> tuple[Any, Any, Any]:
        """Delete's and Alter's opening checks, in Kafka's order (the group's ACL, the group id, its coordinator):
        the answer class, and the group's shard or the answer that refuses the request."""
        cls = API_TABLE[api].responses[ctx.api_version]
        if self.access.enabled and not self.access.group(ctx, op, group_id):
            return cls, None, _failed(cls, ErrorCode.group_authorization_failed)
        if not group_id:
            return cls, None, _failed(cls, ErrorCode.invalid_group_id)
        shard = self.groups.shard_for(group_id)
        if shard.error is not None:
            return cls, None, _failed(cls, shard.error)
        return cls, shard, None

    async def delete(self, ctx: RequestContext, request: Any) -> Any:
        group_id, access = request.group_id, self.access
        cls, shard, refusal = self._opened(ctx, ApiKey.DELETE_SHARE_GROUP_OFFSETS, Op.DELETE, group_id)
        if refusal is not None:
            return refusal
        responses: list[Fields] = []
        deleting: dict[uuid.UUID, str] = {}  # topic id -> name
        for topic in request.topics:
            info = self.data.catalog.get(topic.topic_name)
            if access.enabled and not access.topic(ctx, Op.READ, topic.topic_name):
                responses.append(_topic(topic.topic_name, None, ErrorCode.topic_authorization_failed))
            elif info is None or info.internal:
                responses.append(_topic(topic.topic_name, None, ErrorCode.unknown_topic_or_partition))
            else:
                deleting[info.topic_id] = topic.topic_name
        refused, states = shard.share.offsets_deletion(group_id, set(deleting))
        if refused is not None:
            return _failed(cls, *refused)
        for topic_id, name in deleting.items():
            if topic_id not in states:
                responses.append(_topic(name, topic_id, ErrorCode.unknown_topic_or_partition))
        done = []
        for topic_id, partitions in states.items():
            code = ErrorCode.none
            for index in sorted(partitions):
                answer = await self.coordinator.delete(group_id, topic_id, index)
                if answer.error is not ErrorCode.none:
                    code = answer.error
            if code is ErrorCode.none:
                done.append(topic_id)
            responses.append(_topic(deleting[topic_id], topic_id, code))
        if done:
            error = await shard.share.offsets_deleted(group_id, done)
            if error is not None:
                return _failed(cls, error)
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                     responses=responses)

    # --- AlterShareGroupOffsets -------------------------------------------------------------------------

    async def alter(self, ctx: RequestContext, request: Any) -> Any:
        group_id, access = request.group_id, self.access
        cls, shard, refusal = self._opened(ctx, ApiKey.ALTER_SHARE_GROUP_OFFSETS, Op.READ, group_id)
        if refusal is not None:
            return refusal
        allowed = shard.share.offsets_alteration(group_id)
        if isinstance(allowed, tuple):
            return _failed(cls, *allowed)
        responses, done = [], {}
        for topic in request.topics:
            info = self.data.catalog.get(topic.topic_name)
            refused = access.enabled and not access.topic(ctx, Op.READ, topic.topic_name)
            parts, ok = [], []
            for p in topic.partitions:
                if refused:
                    code = ErrorCode.topic_authorization_failed
                elif info is None or info.internal or not 0 <= p.partition_index < info.partitions:
                    code = ErrorCode.unknown_topic_or_partition
                elif p.start_offset < 0:
                    code = ErrorCode.invalid_request
                else:
                    code = (await self.coordinator.initialize(group_id, info.topic_id, p.partition_index, allowed,
                                                              p.start_offset)).error
                if code is ErrorCode.none:
                    ok.append(p.partition_index)
                parts.append({"partition_index": p.partition_index, "error_code": code,
                              "error_message": None if code is ErrorCode.none else error_message(code)})
            if ok and info is not None:
                done[info.topic_id] = frozenset(ok)
            responses.append({"topic_name": topic.topic_name,
                              "topic_id": ZERO_UUID if info is None or refused else info.topic_id, "partitions": parts})
        if done:
            error = await shard.share.offsets_altered(group_id, done)
            if error is not None:
                return _failed(cls, error)
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                     responses=responses)


def _failed(cls: Any, code: ErrorCode, message: str | None = None) -> Any:
    """A Delete/AlterShareGroupOffsets answer with a top-level error and no topics."""
    return build(cls, throttle_time=NO_THROTTLE, error_code=code,
                 error_message=message if message is not None else error_message(code), responses=[])


def _partition(index: int, start: int = UNINITIALIZED, leader_epoch: int = -1, lag: int = UNINITIALIZED,
               error: ErrorCode = ErrorCode.none) -> Fields:
    return {"partition_index": index, "start_offset": start, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": error, "error_message": None if error is ErrorCode.none else error_message(error)}


def _topic(name: str, topic_id: Any, code: ErrorCode) -> Fields:
    return {"topic_name": name, "topic_id": topic_id or ZERO_UUID, "error_code": code,
            "error_message": None if code is ErrorCode.none else error_message(code)}


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = ShareGroupOffsetsHandler(services)
    dispatcher.register(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, handler.describe)
    dispatcher.register(ApiKey.DELETE_SHARE_GROUP_OFFSETS, handler.delete)
    dispatcher.register(ApiKey.ALTER_SHARE_GROUP_OFFSETS, handler.alter)
