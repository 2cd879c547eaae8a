"""OffsetDelete v0: kio messages <-> coordinator/offsets/manager.py's `delete_offsets`; a
group-level error answers at top level; the answer waits for the tombstones to be written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.offsets.manager import DeleteRow, delete_offsets
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequestTopic

    from protocol.request_types import OffsetDeleteRequest

log = structlog.get_logger("coordinator.offsets.manager")

E = ErrorCode


def delete_response(code: ErrorCode, answer: list[DeleteRow], _written: object = None) -> Any:
    return build(API_TABLE[ApiKey.OFFSET_DELETE].responses[0], error_code=code, throttle_time=NO_THROTTLE, topics=[
        {"name": name, "partitions": [{"partition_index": i, "error_code": c} for i, c in codes]}
        for name, codes in answer])


def delete_failed(_code: ErrorCode, _answer: list[DeleteRow], error: BaseException) -> Any:
    return delete_response(write_error_code(error), [])


class OffsetDeleteHandler:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.shard_for = groups.shard_for
        self.access = access

    def handle(self, ctx: RequestContext, request: OffsetDeleteRequest) -> object:
        group_id = request.group_id
        topics: Sequence[OffsetDeleteRequestTopic] = request.topics
        denied: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
        access = self.access
        if access.enabled:  # KafkaApis: DELETE on the group, then READ on each topic
            if not access.group(ctx, Op.DELETE, group_id):
                return delete_response(E.group_authorization_failed, [])
            readable = [access.topic(ctx, Op.READ, t.name) for t in topics]
            denied = [(t.name, [(p.partition_index, E.topic_authorization_failed) for p in t.partitions])
                      for t, ok in zip(topics, readable) if not ok]
            topics = [t for t, ok in zip(topics, readable) if ok]
        if not group_id:
            return delete_response(E.invalid_group_id, [])
        try:
            shard = self.shard_for(group_id)
            if shard.error is not None:
                return delete_response(shard.error, [])
            code, records, answer = delete_offsets(shard, group_id, topics)
            answer = denied + answer
        except Exception:
            log.exception("OffsetDelete failed", group=group_id)
            return delete_response(E.unknown_server_error, [])
        if code is not E.none:
            return delete_response(code, [])
        if not records:
            return delete_response(E.none, answer)
        return shard.write(records).then(delete_response, delete_failed, E.none, answer)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.OFFSET_DELETE, OffsetDeleteHandler(services.groups, services.access).handle)
