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
  UNKNOWN_LEADER_EPOCH, below -> FENCED_LEADER_EPOCH; errors carry -1 offsets;
* limits: each partition reads at most min(partition_max_bytes, what is left of
  max_bytes), whole batches only, except that the first partition returning data
  may exceed both with its first batch (KIP-74), so progress is always possible;
* records are the log's raw batch bytes up to the high watermark
  (= last_stable_offset: no transactions here);
* fewer than min_bytes and max_wait_ms > 0 and no error -> wait in the purgatory
  until appends bring enough bytes or max_wait_ms passes, then read again.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from storage.errors import OffsetOutOfRangeError, RecordError, StorageError

from ..dispatch import Dispatcher, RequestContext
from ..errors import error_code_for
from ..services import Services
from .api_versions import NO_THROTTLE

ZERO_UUID = uuid.UUID(int=0)
LEADER_EPOCH = 0


def _error(index: int, code: ErrorCode) -> dict:
    return {"partition_index": index, "error_code": code, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": None, "records": b""}


def register(dispatcher: Dispatcher, services: Services) -> None:
    data = services.data
    assert data is not None
    catalog = data.catalog
    responses = API_TABLE[ApiKey.FETCH].responses

    def plan(version: int, request) -> list[tuple[dict, list[tuple]]]:
        """[(topic response fields, [(index, partition or error code, offset, max bytes, leader epoch)])]"""
        out = []
        for ft in request.topics:
            if version >= 13:
                info = catalog.by_id(ft.topic_id)
                head = {"topic_id": ft.topic_id}
                missing = ErrorCode.unknown_topic_id
            else:
                info = catalog.get(ft.topic)
                head = {"topic": ft.topic}
                missing = ErrorCode.unknown_topic_or_partition
            rows = []
            for fp in ft.partitions:
                if info is None:
                    target = missing
                else:
                    target = data.partition(info.name, fp.partition) or ErrorCode.unknown_topic_or_partition
                rows.append((fp.partition, target, fp.fetch_offset, fp.partition_max_bytes,
                             getattr(fp, "current_leader_epoch", -1)))
            out.append((head, rows))
        return out

    def read(planned, max_bytes: int, read_committed: bool) -> tuple[list[dict], int, bool, list]:
        remaining = max_bytes
        total = 0
        errors = False
        keys = []
        topics = []
        for head, rows in planned:
            parts = []
            for index, target, offset, partition_max, leader_epoch in rows:
                if isinstance(target, ErrorCode):
                    parts.append(_error(index, target))
                    errors = True
                    continue
                if leader_epoch != -1 and leader_epoch != LEADER_EPOCH:
                    parts.append(_error(index, ErrorCode.unknown_leader_epoch if leader_epoch > LEADER_EPOCH
                                        else ErrorCode.fenced_leader_epoch))
                    errors = True
                    continue
                lg = target.log
                keys.append(target.key)
                hw = lg.high_watermark
                limit = max(0, min(partition_max, remaining))
                first = total == 0
                try:
                    records = lg.read(offset, limit) if (limit > 0 or first) else b""
                except (OffsetOutOfRangeError, RecordError, StorageError) as exc:
                    parts.append(_error(index, error_code_for(exc)))
                    errors = True
                    continue
                if len(records) > limit and not first:
                    records = b""  # only the first partition with data may pass the limits
                total += len(records)
                remaining -= len(records)
                parts.append({"partition_index": index, "error_code": ErrorCode.none, "high_watermark": hw,
                              "last_stable_offset": hw, "log_start_offset": lg.log_start_offset,
                              "aborted_transactions": [] if read_committed else None, "records": records})
            topics.append({**head, "partitions": parts})
        return topics, total, errors, keys

    def handle(ctx: RequestContext, request) -> object:
        version = ctx.api_version
        cls = responses[version]
        if version >= 7 and request.session_epoch not in (0, -1):
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.fetch_session_id_not_found,
                         session_id=0, responses=[])
        planned = plan(version, request)
        max_bytes = request.max_bytes if version >= 3 else 2**31 - 1
        read_committed = request.isolation_level == 1
        min_bytes = request.min_bytes
        wait_s = request.max_wait.total_seconds()

        def respond(topics: list[dict]) -> object:
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0, responses=topics)

        topics, total, errors, keys = read(planned, max_bytes, read_committed)
        if wait_s <= 0 or total >= min_bytes or errors or not keys:
            return respond(topics)
        woken = data.purgatory.park(keys, min_bytes - total, wait_s)

        async def after_wait() -> object:
            await woken
            again, _, _, _ = read(plan(version, request), max_bytes, read_committed)
            return respond(again)

        return after_wait()

    dispatcher.register(ApiKey.FETCH, handle)
