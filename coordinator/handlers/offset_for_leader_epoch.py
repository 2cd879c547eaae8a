"""OffsetForLeaderEpoch v2-v4 (what consumers send after a leader change, to detect truncation):
ReplicaManager.lastOffsetForLeaderEpoch, Partition.lastOffsetForLeaderEpoch and
LeaderEpochFileCache.endOffsetFor.

A partition not hosted here: NOT_LEADER_OR_FOLLOWER when its topic has it, else
UNKNOWN_TOPIC_OR_PARTITION. A current_leader_epoch (other than -1) above the partition's leader
epoch -> UNKNOWN_LEADER_EPOCH, below -> FENCED_LEADER_EPOCH. Then the end offset of the requested
epoch: -1 -> epoch -1 / offset -1; the current epoch -> it with the log end offset; a later one ->
-1 / -1; an earlier one -> the requested epoch with the start offset of the first epoch after it.

The epoch history: every partition is led at one leader epoch for its whole life (0, in local and
cluster mode: cluster/state.py WIRE_LEADER_EPOCH; every batch is stamped with it), so the history is
exactly {leader epoch: log start offset} and the answers above are Kafka's for that history. Nothing
records earlier epochs: were a partition's leader epoch ever to change, an earlier epoch would be
answered with the log start offset as if it were the only one before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import OffsetForLeaderEpochRequest

UNDEFINED = -1


def end_offset_for(requested: int, leader_epoch: int, log_start: int, log_end: int) -> tuple[int, int]:
    """(epoch, end offset) as LeaderEpochFileCache.endOffsetFor with the history {leader_epoch: log_start}."""
    if requested == UNDEFINED or requested > leader_epoch:
        return UNDEFINED, UNDEFINED
    if requested == leader_epoch:
        return leader_epoch, log_end
    return requested, log_start  # before every known epoch: the start of the first one after it


def _answer(index: int, code: ErrorCode, epoch: int = UNDEFINED, offset: int = UNDEFINED) -> Fields:
    return {"error_code": code, "partition": index, "leader_epoch": epoch, "end_offset": offset}


class OffsetForLeaderEpochHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def partition(self, topic: str, asked: Any) -> Fields:  # Any: kio's partition of the request's version
        index = asked.partition
        part = self.data.partition(topic, index)
        if part is None:
            return _answer(index, not_hosted_error(self.data, topic, index))
        current, ours = asked.current_leader_epoch, part.leader_epoch
        if current != UNDEFINED and current != ours:
            return _answer(index, ErrorCode.unknown_leader_epoch if current > ours else ErrorCode.fenced_leader_epoch)
        lg = part.log
        epoch, offset = end_offset_for(asked.leader_epoch, ours, lg.log_start_offset, lg.log_end_offset)
        return _answer(index, ErrorCode.none, epoch, offset)

    def handle(self, ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> object:
        access = self.access  # KafkaApis: DESCRIBE on each topic
        topics = [{"topic": t.topic, "partitions": [
            self.partition(t.topic, p) if access.topic(ctx, Op.DESCRIBE, t.topic)
            else _answer(p.partition, ErrorCode.topic_authorization_failed) for p in t.partitions]}
            for t in request.topics]
        cls = API_TABLE[ApiKey.OFFSET_FOR_LEADER_EPOCH].responses[ctx.api_version]
        return build(cls, throttle_time=NO_THROTTLE, topics=topics)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = OffsetForLeaderEpochHandler(services.data, services.access)
    dispatcher.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, handler.handle)
