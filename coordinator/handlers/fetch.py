"""Fetch v4-v16, sessionless, with long polling through the fetch purgatory.

Follows KafkaApis.handleFetchRequest / ReplicaManager.fetchMessages / readFromLog:

* sessions: this server keeps no fetch-session cache (Kafka with
  max.incremental.fetch.session.cache.slots=0). Session epoch 0 or -1 is a full
  fetch answered with session id 0 ("no session"), which clients accept by sending
  full fetches; any other epoch names a session we cannot have ->
  FETCH_SESSION_ID_NOT_FOUND for the whole request (FetchManager.newContext);
* topics by name before v13, by id from v13 (unknown id -> UNKNOWN_TOPIC_ID);
  unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; an offset outside
  [log start, log end] -> OFFSET_OUT_OF_RANGE; a current_leader_epoch above ours ->
  UNKNOWN_LEADER_EPOCH, below -> FENCED_LEADER_EPOCH; errors carry -1 offsets; a partition of a
  known topic not hosted here (cluster mode) -> NOT_LEADER_OR_FOLLOWER;
* a partition listed more than once is read once (Kafka keys the request's partitions
  in a LinkedHashMap: the first place, the last listing's offset and limits);
* limits: the request reads at most min(max_bytes, fetch.max.bytes) (Kafka's
  ReplicaManager.fetchMessages); each partition at most min(partition_max_bytes, what is
  left of that), whole batches only, except that the first partition returning data
  may exceed both with its first batch (KIP-74), so progress is always possible;
* records are the log's raw batch bytes up to the high watermark; for isolation_level 1
  (read_committed) up to the last stable offset (LSO), with the aborted transactions
  (producer id, first offset) whose records overlap the returned range (Kafka's
  collectAbortedTxns: last offset >= the fetch offset, first offset < the end of what was
  returned; an empty list when nothing was). Control batches (markers) are returned as they
  are, as Kafka does: clients skip them. last_stable_offset is answered at both levels;
* min_bytes is at most the request's byte limit (Kafka: min(min_bytes, fetch max bytes));
  max_wait_ms is the client's, unbounded as in Kafka, but a parked fetch is released
  when its connection closes;
* fewer than min_bytes and max_wait_ms > 0 and no error -> wait in the purgatory
  until appends bring enough bytes (read_committed: until the LSO moves past enough bytes)
  or max_wait_ms passes, then read again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.data_plane.committed_reads import aborted_transactions
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.data_plane.partition import Partition
from coordinator.errors import error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Abandonable, Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from protocol.codec import Encoded
from storage.errors import OffsetOutOfRangeError, RecordError, StorageError

if TYPE_CHECKING:
    from protocol.request_types import FetchRequest, FetchV4, FetchV5, FetchV6


class FetchPartition(Protocol):
    """A partition of a Fetch request (kio's class of the request's version; current_leader_epoch from v9)."""

    @property
    def partition(self) -> int: ...

    @property
    def fetch_offset(self) -> int: ...

    @property
    def partition_max_bytes(self) -> int: ...


TopicKey = str | uuid.UUID  # a topic's name (v4-v12) or id (v13+)
#: a partition to read: (index, the partition or the error answering it, offset, max bytes, current leader epoch)
Planned = tuple[int, Partition | ErrorCode, int, int, int]


def _error(index: int, code: ErrorCode) -> Fields:
    return {"partition_index": index, "error_code": code, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": None, "records": b""}


def distinct_partitions(version: int, topics: Iterable[Any]) -> list[tuple[TopicKey, list[FetchPartition]]]:
    """The request's partitions as Kafka's FetchRequest.fetchData sees them: a LinkedHashMap keyed
    by topic and partition, so a partition listed twice is read once, at its first place, with
    its last listing's fields. Consecutive partitions of one topic share a topic entry, as
    FetchResponse.toMessage groups them. Returns [(topic name or id, [FetchPartition])]."""
    by_key: dict[tuple[TopicKey, int], FetchPartition] = {}
    for ft in topics:
        topic_key = ft.topic_id if version >= 13 else ft.topic
        for fp in ft.partitions:
            by_key[topic_key, fp.partition] = fp
    grouped: list[tuple[TopicKey, list[FetchPartition]]] = []
    for (topic_key, _), fp in by_key.items():
        if grouped and grouped[-1][0] == topic_key:
            grouped[-1][1].append(fp)
        else:
            grouped.append((topic_key, [fp]))
    return grouped


class FetchHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def plan(self, version: int, request: FetchRequest,
             ctx: RequestContext | None = None) -> list[tuple[Fields, list[Planned]]]:
        """[(topic response fields, [(index, partition or error code, offset, max bytes, leader epoch)])],
        one row per distinct partition (see `distinct_partitions`). With an authorizer (`ctx` given), a topic
        the principal may not READ answers TOPIC_AUTHORIZATION_FAILED."""
        data = self.data
        access = self.access
        catalog = data.catalog
        out: list[tuple[Fields, list[Planned]]] = []
        topic_key: Any  # a uuid.UUID from v13, else a str
        for topic_key, rows in distinct_partitions(version, request.topics):
            head: Fields
            if version >= 13:
                info = catalog.by_id(topic_key)
                head = {"topic_id": topic_key}
                missing = ErrorCode.unknown_topic_id
            else:
                info = catalog.get(topic_key)
                head = {"topic": topic_key}
                missing = ErrorCode.unknown_topic_or_partition
            planned: list[Planned] = []
            target: Partition | ErrorCode
            name = info.name if info is not None else topic_key if version < 13 else None
            if ctx is not None and access.enabled and name is not None and not access.topic(ctx, Op.READ, name):
                info, missing = None, ErrorCode.topic_authorization_failed
            for fp in rows:
                if info is None:
                    target = missing
                else:
                    target = data.partition(info.name, fp.partition) or not_hosted_error(data, info.name, fp.partition)
                planned.append((fp.partition, target, fp.fetch_offset, fp.partition_max_bytes,
                                getattr(fp, "current_leader_epoch", -1)))
            out.append((head, planned))
        return out

    @staticmethod
    def read(planned: list[tuple[Fields, list[Planned]]], max_bytes: int,
             read_committed: bool) -> tuple[list[Fields], int, bool, list[tuple[str, int]]]:
        remaining = max_bytes
        total = 0
        errors = False
        keys: list[tuple[str, int]] = []
        topics: list[Fields] = []
        for head, rows in planned:
            parts: list[Fields] = []
            for index, target, offset, partition_max, leader_epoch in rows:
                if isinstance(target, ErrorCode):
                    parts.append(_error(index, target))
                    errors = True
                    continue
                if leader_epoch != -1 and leader_epoch != target.leader_epoch:
                    parts.append(_error(index, ErrorCode.unknown_leader_epoch if leader_epoch > target.leader_epoch
                                        else ErrorCode.fenced_leader_epoch))
                    errors = True
                    continue
                lg = target.log
                keys.append(target.key)
                hw = lg.high_watermark
                lso = target.last_stable_offset
                limit = max(0, min(partition_max, remaining))
                first = total == 0
                try:
                    records = lg.read(offset, limit) if (limit > 0 or first) else b""
                except (OffsetOutOfRangeError, RecordError, StorageError) as exc:
                    parts.append(_error(index, error_code_for(exc)))
                    errors = True
                    continue
                aborted = None
                if read_committed:
                    records, aborted = aborted_transactions(target, offset, records, lso, hw)
                if len(records) > limit and not first:
                    records, aborted = b"", ([] if read_committed else None)  # only the first may pass the limits
                total += len(records)
                remaining -= len(records)
                parts.append({"partition_index": index, "error_code": ErrorCode.none, "high_watermark": hw,
                              "last_stable_offset": lso, "log_start_offset": lg.log_start_offset,
                              "aborted_transactions": aborted, "records": records})
            topics.append({**head, "partitions": parts})
        return topics, total, errors, keys

    def handle(self, ctx: RequestContext, request: FetchRequest) -> object:
        version = ctx.api_version
        cls = API_TABLE[ApiKey.FETCH].responses[version]
        if version >= 7:
            if TYPE_CHECKING:  # annotations only (no code on the request's path): v7+ have fetch sessions
                assert not isinstance(request, FetchV4 | FetchV5 | FetchV6)
            if request.session_epoch not in (0, -1):
                return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.fetch_session_id_not_found,
                             session_id=0, responses=[])
        planned = self.plan(version, request, ctx)
        max_bytes = min(request.max_bytes, self.data.settings.fetch_max_bytes)
        read_committed = request.isolation_level == 1
        min_bytes = min(request.min_bytes, max_bytes)  # Kafka: KafkaApis.handleFetchRequest
        wait_s = request.max_wait.total_seconds()

        def respond(topics: list[Fields]) -> object:
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0, responses=topics)

        topics, total, errors, keys = self.read(planned, max_bytes, read_committed)
        if wait_s <= 0 or total >= min_bytes or errors or not keys:
            return respond(topics)
        delayed = self.data.purgatory.park(keys, min_bytes - total, wait_s, committed=read_committed)

        async def after_wait() -> object:
            await delayed.future
            again, _, _, _ = self.read(self.plan(version, request, ctx), max_bytes, read_committed)
            # encoded here, within the purgatory's wake slice, not later by the connection,
            # which encodes every answer that is ready at once (a DeleteTopics wakes them all)
            return Encoded.of(respond(again))

        return Abandonable(after_wait(), delayed.release)  # released if the client goes away


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.FETCH, FetchHandler(services.data, services.access).handle)
