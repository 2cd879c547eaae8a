"""OffsetFetch v0-v9: kio messages <-> coordinator/offsets/manager.py's `fetch`.

OffsetFetch v0 (a class from protocol/legacy_messages.py) is v1: Kafka read v0 from ZooKeeper;
we read the one store. A group-level error (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
INVALID_GROUP_ID) is answered on the group (v8+), at top level (v2-v7) or on every requested
partition (v1), as Kafka's GroupCoordinatorService / KafkaApis do. A request naming more than
offset_fetch_slices.SLICE partitions is answered in slices by offset_fetch_slices.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.fastlane.lane import fetch_fast
from coordinator.groups.consumer import offset_rules as consumer_rules
from coordinator.handlers import offset_fetch_slices as fetch_slices
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.offsets.manager import fetch
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey, VersionMap
from protocol.build import nested_class

log = structlog.get_logger("coordinator.offsets.manager")

E = ErrorCode
FETCH_TOP_ERROR_FROM = 2
FETCH_THROTTLE_FROM = 3
FETCH_EPOCH_FROM = 5
FETCH_STABLE_FROM = 7
FETCH_GROUPS_FROM = 8
FETCH_MEMBER_FROM = 9  # member id and epoch of KIP-848 members

_CLASSES = API_TABLE[ApiKey.OFFSET_FETCH].responses
_GROUP = VersionMap(range(FETCH_GROUPS_FROM, _CLASSES.versions.stop), lambda v: nested_class(_CLASSES[v], "groups"))
_TOPIC = VersionMap(_CLASSES.versions, lambda v: nested_class(_GROUP[v] if v >= FETCH_GROUPS_FROM else _CLASSES[v],
                                                              "topics"))
_PARTITION = _TOPIC.derived(lambda cls: nested_class(cls, "partitions"))


def fetch_topics(version: int, rows: list) -> tuple:
    """The topics array of a response: rows [(topic, [(index, offset, epoch, metadata, code)])]."""
    topic_cls, partition_cls = _TOPIC[version], _PARTITION[version]
    with_epoch = version >= FETCH_EPOCH_FROM
    out = []
    for name, partitions in rows:
        parts = []
        for index, offset, epoch, metadata, code in partitions:
            if with_epoch:
                parts.append(partition_cls(partition_index=index, committed_offset=offset,
                                           committed_leader_epoch=epoch, metadata=metadata, error_code=code))
            else:
                parts.append(partition_cls(partition_index=index, committed_offset=offset,
                                           metadata=metadata, error_code=code))
        out.append(topic_cls(name=name, partitions=tuple(parts)))
    return tuple(out)


GroupError = Callable[[str], "ErrorCode | None"]
Read = Callable[[str, Any], list]


class OffsetFetchHandler:
    def __init__(self, groups: GroupCoordinator, access: Access | None = None) -> None:
        self.shard_for = groups.shard_for
        self.access = access

    def group_error(self, group_id: str) -> ErrorCode | None:
        """An OffsetFetch's group-level error, or None."""
        if not group_id:
            return E.invalid_group_id
        return self.shard_for(group_id).error

    def read(self, group_id: str, topics: Any, require_stable: bool) -> list:
        return fetch(self.shard_for(group_id), group_id, topics, require_stable)

    @staticmethod
    def fetch_group(group_error: GroupError, read: Read, group_id: str, topics: Any) -> tuple[ErrorCode, list]:
        code = group_error(group_id)
        if code is not None:
            return code, []
        try:
            return E.none, read(group_id, topics)
        except Exception:
            log.exception("OffsetFetch failed", group=group_id)
            return E.unknown_server_error, []

    def authorized(self, ctx: RequestContext, read: Read) -> tuple[GroupError, Read]:
        """KafkaApis: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; of the topics asked for, those the
        principal may not DESCRIBE answer TOPIC_AUTHORIZATION_FAILED (after the others); asked for all, it sees
        only those it may describe."""
        access = self.access
        assert access is not None

        def group_error(group_id: str) -> ErrorCode | None:
            if not access.group(ctx, Op.DESCRIBE, group_id):
                return E.group_authorization_failed
            return self.group_error(group_id)

        def read_allowed(group_id: str, topics: Any) -> list:
            if topics is None:
                return [row for row in read(group_id, None) if access.topic(ctx, Op.DESCRIBE, row[0])]
            allowed, denied = [], []
            for t in topics:
                if access.topic(ctx, Op.DESCRIBE, t.name):
                    allowed.append(t)
                else:
                    refused = E.topic_authorization_failed
                    denied.append((t.name, [(i, -1, -1, "", refused) for i in t.partition_indexes]))
            return (read(group_id, allowed) if allowed else []) + denied

        return group_error, read_allowed

    def member_checked(self, group_error: GroupError, groups: Any) -> GroupError:
        """v9: a consumer group's (KIP-848) member must fetch at its epoch (ConsumerGroup.validateOffsetFetch)."""
        members = {g.group_id: (g.member_id, g.member_epoch) for g in groups}

        def checked(group_id: str) -> ErrorCode | None:
            code = group_error(group_id)
            if code is not None:
                return code
            consumer = self.shard_for(group_id).consumer_groups.get(group_id)
            if consumer is None:
                return None
            member_id, epoch = members.get(group_id, (None, -1))
            return consumer_rules.fetch_error(consumer, member_id, epoch)

        return checked

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        cls = _CLASSES[version]
        require_stable = version >= FETCH_STABLE_FROM and request.require_stable
        group_error: GroupError = self.group_error
        read: Read = lambda group_id, topics: self.read(group_id, topics, require_stable)  # noqa: E731
        if self.access is not None and self.access.enabled:
            group_error, read = self.authorized(ctx, read)
        if version >= FETCH_MEMBER_FROM:
            group_error = self.member_checked(group_error, request.groups)
        if fetch_slices.requested_partitions(version, request) > fetch_slices.SLICE:
            return fetch_slices.sliced_body(version, request, group_error, read)
        if version >= FETCH_GROUPS_FROM:
            # classic groups: Kafka ignores member id / epoch (ClassicGroup.validateOffsetFetch)
            out = []
            for g in request.groups:
                code, rows = self.fetch_group(group_error, read, g.group_id, g.topics)
                out.append(_GROUP[version](group_id=g.group_id, error_code=code, topics=fetch_topics(version, rows)))
            return cls(throttle_time=NO_THROTTLE, groups=tuple(out))
        topics = request.topics
        code, rows = self.fetch_group(group_error, read, request.group_id, topics)
        if code is not E.none:
            if version >= FETCH_TOP_ERROR_FROM:
                rows = []
            else:  # v1 has no top-level error: every requested partition carries it
                rows = [(t.name, [(i, -1, -1, "", code) for i in t.partition_indexes]) for t in topics or ()]
        topic_objs = fetch_topics(version, rows)
        if version >= FETCH_THROTTLE_FROM:
            return cls(throttle_time=NO_THROTTLE, topics=topic_objs, error_code=code)
        if version >= FETCH_TOP_ERROR_FROM:
            return cls(topics=topic_objs, error_code=code)
        return cls(topics=topic_objs)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = OffsetFetchHandler(services.groups, services.access)
    # the native lane (coordinator/fastlane/) when it is built; else the generic path answers every fetch
    dispatcher.register(ApiKey.OFFSET_FETCH, handler.handle, fast=fetch_fast(handler.shard_for, fetch_slices))
