"""ListOffsets v1-v9 (kio has no v0): offsets by special timestamp or by time.

Follows KafkaApis.handleListOffsetRequest and UnifiedLog.fetchOffsetByTimestamp:

* the last fetchable offset is the high watermark, or for isolation_level 1 (read_committed,
  v2+) the last stable offset (Kafka's Partition.fetchOffsetForTimestamp);
* -2 EARLIEST and -4 EARLIEST_LOCAL (no tiered storage, so the same) -> the log start
  offset; -1 LATEST -> the last fetchable offset; -3 MAX_TIMESTAMP (v7+) -> the first record
  with the largest timestamp; -5 LATEST_TIERED -> offset -1 (no remote storage);
  a timestamp >= 0 -> the first record at or after it; for these two, offset -1 /
  timestamp -1 when there is none or it is not below the last fetchable offset (Kafka's
  ReplicaManager.fetchOffset). Special timestamps answer timestamp -1;
* leader_epoch (v4+) is the partition's leader epoch for a found offset, -1 otherwise;
  current_leader_epoch above the partition's (0 in local mode) -> UNKNOWN_LEADER_EPOCH, below (other
  than -1) -> FENCED_LEADER_EPOCH; a partition of a known topic not hosted here -> NOT_LEADER_OR_FOLLOWER;
* a partition named twice -> INVALID_REQUEST for it; unknown topic or partition ->
  UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.errors import error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from storage.errors import RecordError, StorageError
from storage.log_protocol import PartitionLogProtocol

if TYPE_CHECKING:
    from protocol.request_types import ListOffsetsRequest

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def _answer(index: int, code: ErrorCode, timestamp: int = -1, offset: int = -1, epoch: int = -1) -> Fields:
    return {"partition_index": index, "error_code": code, "timestamp": timestamp, "offset": offset,
            "leader_epoch": epoch}


def lookup(lg: PartitionLogProtocol, timestamp: int, version: int, leader_epoch: int = 0,
           fetchable: int | None = None) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) for one partition log led at `leader_epoch`; `fetchable`: the last
    fetchable offset (default: the high watermark)."""
    hw = lg.high_watermark if fetchable is None else fetchable
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, lg.log_start_offset, leader_epoch
    if timestamp == LATEST:
        return -1, hw, leader_epoch
    if timestamp == LATEST_TIERED:
        return -1, -1, -1
    if timestamp == MAX_TIMESTAMP and version >= 7:
        found = lg.max_timestamp_offset()
    else:
        found = lg.offset_for_timestamp(timestamp)
    if found is None or found.offset >= hw:
        return -1, -1, -1
    return found.timestamp, found.offset, leader_epoch


class ListOffsetsHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def handle(self, ctx: RequestContext, request: ListOffsetsRequest) -> object:
        data = self.data
        version = ctx.api_version
        counts = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
        topics = []
        access = self.access
        committed = getattr(request, "isolation_level", 0) == 1  # v1 has none: READ_UNCOMMITTED
        for topic in request.topics:
            parts = []
            if access.enabled and not access.topic(ctx, Op.DESCRIBE, topic.name):  # KafkaApis: DESCRIBE
                topics.append({"name": topic.name, "partitions": [
                    _answer(lp.partition_index, ErrorCode.topic_authorization_failed) for lp in topic.partitions]})
                continue
            for lp in topic.partitions:
                index = lp.partition_index
                if counts[(topic.name, index)] > 1:
                    parts.append(_answer(index, ErrorCode.invalid_request))
                    continue
                part = data.partition(topic.name, index)
                if part is None:
                    parts.append(_answer(index, not_hosted_error(data, topic.name, index)))
                    continue
                epoch, ours = getattr(lp, "current_leader_epoch", -1), part.leader_epoch
                if epoch != -1 and epoch != ours:
                    parts.append(_answer(index, ErrorCode.unknown_leader_epoch if epoch > ours
                                         else ErrorCode.fenced_leader_epoch))
                    continue
                fetchable = part.last_stable_offset if committed else part.log.high_watermark
                try:
                    ts, offset, leader_epoch = lookup(part.log, lp.timestamp, version, ours, fetchable)
                except (RecordError, StorageError) as exc:
                    parts.append(_answer(index, error_code_for(exc)))
                    continue
                parts.append(_answer(index, ErrorCode.none, ts, offset, leader_epoch))
            topics.append({"name": topic.name, "partitions": parts})
        return build(API_TABLE[ApiKey.LIST_OFFSETS].responses[version], throttle_time=NO_THROTTLE, topics=topics)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.LIST_OFFSETS, ListOffsetsHandler(services.data, services.access).handle)
