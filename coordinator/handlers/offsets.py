"""OffsetCommit v0-v9, OffsetFetch v0-v9, OffsetDelete v0: kio messages <-> coordinator/offsets/manager.py.

OffsetCommit v0/v1 and OffsetFetch v0 (classes from protocol/legacy_messages.py) behave
as in Kafka 3.x's KafkaApis: a v0 commit is a commit outside group management
(generation -1, no member id; Kafka kept those in ZooKeeper, we keep them in the same
offsets log as every other commit); v1 carries the generation and member id, validated
like v2, and a per-partition commit timestamp that the record keeps (-1: the server's
clock); both use the default retention and answer without throttle time. OffsetFetch v0
is v1 (Kafka read v0 from ZooKeeper; we read the one store).

Where each API puts a coordinator-level error (COORDINATOR_LOAD_IN_PROGRESS while the
group's partition loads, NOT_COORDINATOR when another node owns it, INVALID_GROUP_ID),
as Kafka's GroupCoordinatorService / KafkaApis do: OffsetCommit on every partition;
OffsetFetch on the group (v8+), top level (v2-v7) or on every requested partition (v1);
OffsetDelete at top level.

OffsetCommit is the hot path: no protocol/build.py, kio objects constructed directly,
partition answers (immutable) cached per (version, partition, error), whole encoded
bodies cached per (version, topics and partitions) when every partition answers NONE,
and the deferred answer is a LateAnswer that is the write's callback (no future, no
task, no closure per request).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, NamedTuple

import structlog
from kio.schema.errors import ErrorCode

from coordinator.completion import WriteAnswer
from coordinator.errors import commit_error_code, write_error_code
from coordinator.handlers import offset_fetch_slices as fetch_slices
from coordinator.handlers.api_versions import NO_THROTTLE
from coordinator.handlers.commit_size import SCAN_FROM, refusal_body, scan_oversized
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher, RequestContext
from coordinator.offsets.manager import (
    DEFAULT_RETENTION,
    commit_records,
    delete_offsets,
    error_answer,
    fetch,
    validate_commit,
)
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import Encoded, decode_common, encode_response
from protocol.header import HeaderError, parse_request_header
from protocol.legacy_messages import DEFAULT_COMMIT_TIMESTAMP

log = structlog.get_logger("coordinator.offsets.manager")

E = ErrorCode
_ONE_MS = datetime.timedelta(milliseconds=1)
COMMIT_GENERATION_FROM = 1
COMMIT_TIMESTAMP_VERSION = 1
COMMIT_RETENTION_FROM = 2
COMMIT_EPOCH_FROM = 6
COMMIT_RETENTION_UNTIL = 4
COMMIT_THROTTLE_FROM = 3
FETCH_TOP_ERROR_FROM = 2
FETCH_THROTTLE_FROM = 3
FETCH_EPOCH_FROM = 5
FETCH_STABLE_FROM = 7
FETCH_GROUPS_FROM = 8


def _nested(cls: type, name: str) -> type:
    from protocol.build import _shape  # class introspection only, once per version

    nested = _shape(cls)[name][0]
    assert nested is not None
    return nested


class LegacyCommit(NamedTuple):
    """An OffsetCommit v0/v1 request seen with v2's fields (what handle_commit reads)."""

    group_id: str
    member_id: str
    generation_id_or_member_epoch: int
    topics: Any
    retention_time: datetime.timedelta = datetime.timedelta(milliseconds=DEFAULT_RETENTION)


def as_v2_commit(version: int, request: Any) -> LegacyCommit:
    """v0 commits outside group management (generation -1, no member); v1 names its member."""
    if version >= COMMIT_GENERATION_FROM:
        return LegacyCommit(request.group_id, request.member_id, request.generation_id, request.topics)
    return LegacyCommit(request.group_id, "", -1, request.topics)


def with_commit_timestamps(records: list, topics: Any) -> list:
    """OffsetCommit v1: each partition's own commit timestamp on its record (-1 keeps the server's)."""
    stamps = {(t.name, p.partition_index): p.commit_timestamp for t in topics for p in t.partitions
              if p.commit_timestamp != DEFAULT_COMMIT_TIMESTAMP}
    if not stamps:
        return records
    return [r._replace(value=r.value._replace(commit_timestamp=stamps[r.topic, r.partition]))
            if (r.topic, r.partition) in stamps else r for r in records]


def register(dispatcher: Dispatcher, services: Services) -> None:
    groups = services.groups
    assert groups is not None
    shard_for = groups.shard_for
    settings = groups.settings

    # --- OffsetCommit -----------------------------------------------------------------

    commit_classes = API_TABLE[ApiKey.OFFSET_COMMIT].responses
    commit_topic = {v: _nested(cls, "topics") for v, cls in commit_classes.items()}
    commit_partition = {v: _nested(commit_topic[v], "partitions") for v in commit_classes}
    partition_cache: dict[tuple[int, int, ErrorCode], Any] = {}
    ok = E.none

    def commit_response(version: int, answer: list) -> Any:
        """The response to an answer [(topic, indexes, codes or None: all NONE)]."""
        topic_cls, partition_cls = commit_topic[version], commit_partition[version]
        cache = partition_cache
        topics = []
        for name, indexes, codes in answer:
            parts = []
            for index, code in zip(indexes, codes or [ok] * len(indexes)):
                key = (version, index, code)
                part = cache.get(key)
                if part is None:
                    part = partition_cls(partition_index=index, error_code=code)
                    if len(cache) < 100_000:
                        cache[key] = part
                parts.append(part)
            topics.append(topic_cls(name=name, partitions=tuple(parts)))
        if version >= COMMIT_THROTTLE_FROM:
            return commit_classes[version](throttle_time=NO_THROTTLE, topics=tuple(topics))
        return commit_classes[version](topics=tuple(topics))

    ok_bodies: dict[tuple, Encoded] = {}

    def commit_answered(version: int, answer: list) -> Any:
        """commit_response, as a cached encoded body when every partition answers NONE: such
        an answer depends on nothing but the version and the partitions, and a committer
        sends the same partitions again and again."""
        shape: list = [version]
        for name, indexes, codes in answer:
            if codes is not None:
                return commit_response(version, answer)
            shape.append(name)
            shape.append(tuple(indexes))
        key = tuple(shape)
        body = ok_bodies.get(key)
        if body is None:
            body = Encoded.of(commit_response(version, answer))
            if len(ok_bodies) < 10_000:
                ok_bodies[key] = body
        return body

    def commit_failed(version: int, answer: list, error: BaseException) -> Any:
        code = commit_error_code(error)
        log.warning("offset commit failed", error=repr(error), code=code.name)
        return commit_response(version, [(name, indexes, [code] * len(indexes) if codes is None
                                          else [code if c is ok else c for c in codes])
                                         for name, indexes, codes in answer])

    def group_refusal(shard: Any, group_id: str, member_id: str, instance_id: str | None, generation: int,
                      version: int) -> ErrorCode | None:
        """The error of a commit refused for its group as a whole, or None."""
        if not group_id:
            return E.invalid_group_id
        return shard.error or validate_commit(shard, group_id, member_id, instance_id, generation, version)

    def commit(version: int, request: Any) -> Any:
        """OffsetCommit: the response, or a WriteAnswer settled when the records are durable."""
        if version < COMMIT_RETENTION_FROM:
            request = as_v2_commit(version, request)
        group_id = request.group_id
        topics = request.topics
        try:
            shard = shard_for(group_id)
            code = group_refusal(shard, group_id, request.member_id, getattr(request, "group_instance_id", None),
                                 request.generation_id_or_member_epoch, version)
            if code is not None:
                return commit_response(version, error_answer(topics, code))
            retention = request.retention_time // _ONE_MS if version <= COMMIT_RETENTION_UNTIL else -1
            records, answer, tails = commit_records(group_id, topics, shard.scheduler.wall_ms(), retention,
                                                    settings.offset_metadata_max_bytes, version >= COMMIT_EPOCH_FROM)
            if version == COMMIT_TIMESTAMP_VERSION:
                stamped = with_commit_timestamps(records, topics)
                if stamped is not records:
                    records, tails = stamped, None  # the tails carry the server's timestamps
        except Exception:
            log.exception("OffsetCommit failed", group=group_id)
            return commit_response(version, error_answer(topics, E.unknown_server_error))
        if not records:
            return commit_response(version, answer)
        late = WriteAnswer(commit_answered, commit_failed, (version, answer))
        shard.write(records, tails).add_callback(late)
        return late

    def handle_commit(ctx: RequestContext, request: Any) -> Any:
        return commit(ctx.api_version, request)

    commit_spec = API_TABLE[ApiKey.OFFSET_COMMIT]
    commit_flexible = {v: commit_spec.request_is_flexible(v) for v in commit_classes
                       if v >= COMMIT_RETENTION_FROM}
    commit_header = {v: commit_spec.response_header_versions[v] for v in commit_classes}

    def fast_commit(frame: bytes, version: int, correlation_id: int) -> Any:
        """OffsetCommit v2+ without RequestHeader, RequestContext or the generic dispatch: kio's
        reader for the body, then `commit` (handle_commit's logic). None (generic path) for
        anything unusual: v0/v1, an uncommon header, a body that does not parse."""
        if len(frame) > SCAN_FROM:
            refused = oversized_commit(frame, version, correlation_id)
            if refused is not None:
                return refused
        flexible = commit_flexible.get(version)
        if flexible is None:
            return None
        request = decode_common(commit_spec, version, frame, flexible)
        if request is None:
            return None
        try:
            result = commit(version, request)
        except Exception:  # as dispatch_generic does with a failing handler
            log.exception("handler failed", api=commit_spec.name, version=version)
            raise CloseConnection(f"internal error handling {commit_spec.name}") from None
        if result.__class__ is WriteAnswer:
            return Deferred(result, correlation_id, commit_header[version], commit_spec.name)
        return encode_response(correlation_id, commit_header[version], result)

    any_flexible = {v: commit_spec.request_is_flexible(v) for v in commit_classes}

    def oversized_commit(frame: bytes, version: int, correlation_id: int) -> Deferred | None:
        """A commit whose records surely pass the offsets log's batch limit (commit_size.py),
        answered without decoding it; None for anything else."""
        flexible = any_flexible.get(version)
        if flexible is None:
            return None
        try:
            body_at = parse_request_header(frame, flexible).body_offset
        except HeaderError:
            return None
        scan = scan_oversized(frame, body_at, version, flexible, settings.offsets_max_batch_bytes,
                              settings.offset_metadata_max_bytes)
        if scan is None:
            return None
        try:
            code = group_refusal(shard_for(scan.group_id), scan.group_id, scan.member_id, scan.instance_id,
                                 scan.generation, version) or E.invalid_commit_offset_size
        except Exception:
            log.exception("OffsetCommit failed", group=scan.group_id)
            code = E.unknown_server_error
        log.warning("offset commit refused: its records pass the offsets log's batch limit", group=scan.group_id,
                    limit=settings.offsets_max_batch_bytes, request_bytes=len(frame), code=code.name)
        answer = asyncio.ensure_future(refusal_body(frame, scan, version, flexible, code))
        return Deferred(answer, correlation_id, commit_header[version], commit_spec.name)

    # --- OffsetFetch ------------------------------------------------------------------

    fetch_classes = API_TABLE[ApiKey.OFFSET_FETCH].responses

    def fetch_group_error(group_id: str) -> ErrorCode | None:
        """An OffsetFetch's group-level error, or None."""
        if not group_id:
            return E.invalid_group_id
        return shard_for(group_id).error

    def fetch_group(group_id: str, topics: Any, require_stable: bool) -> tuple[ErrorCode, list]:
        code = fetch_group_error(group_id)
        if code is not None:
            return code, []
        try:
            return E.none, fetch(shard_for(group_id), group_id, topics, require_stable)
        except Exception:
            log.exception("OffsetFetch failed", group=group_id)
            return E.unknown_server_error, []

    def fetch_topics(version: int, topic_cls: type, rows: list) -> tuple:
        partition_cls = _fetch_partition[version]
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

    _fetch_topic: dict[int, type] = {}
    _fetch_partition: dict[int, type] = {}
    _fetch_group: dict[int, type] = {}
    for v, cls in fetch_classes.items():
        if v >= FETCH_GROUPS_FROM:
            _fetch_group[v] = _nested(cls, "groups")
            _fetch_topic[v] = _nested(_fetch_group[v], "topics")
        else:
            _fetch_topic[v] = _nested(cls, "topics")
        _fetch_partition[v] = _nested(_fetch_topic[v], "partitions")

    def handle_fetch(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        cls = fetch_classes[version]
        require_stable = version >= FETCH_STABLE_FROM and request.require_stable
        if fetch_slices.requested_partitions(version, request) > fetch_slices.SLICE:
            return fetch_slices.sliced_body(version, request, fetch_group_error,
                               lambda group_id, topics: fetch(shard_for(group_id), group_id, topics, require_stable))
        if version >= FETCH_GROUPS_FROM:
            # classic groups: Kafka ignores member id / epoch (ClassicGroup.validateOffsetFetch)
            out = []
            for g in request.groups:
                code, rows = fetch_group(g.group_id, g.topics, require_stable)
                out.append(_fetch_group[version](group_id=g.group_id, error_code=code,
                                                 topics=fetch_topics(version, _fetch_topic[version], rows)))
            return cls(throttle_time=NO_THROTTLE, groups=tuple(out))
        topics = request.topics
        code, rows = fetch_group(request.group_id, topics, require_stable)
        if code is not E.none:
            if version >= FETCH_TOP_ERROR_FROM:
                rows = []
            else:  # v1 has no top-level error: every requested partition carries it
                rows = [(t.name, [(i, -1, -1, "", code) for i in t.partition_indexes]) for t in topics or ()]
        topic_objs = fetch_topics(version, _fetch_topic[version], rows)
        if version >= FETCH_THROTTLE_FROM:
            return cls(throttle_time=NO_THROTTLE, topics=topic_objs, error_code=code)
        if version >= FETCH_TOP_ERROR_FROM:
            return cls(topics=topic_objs, error_code=code)
        return cls(topics=topic_objs)

    # --- OffsetDelete -----------------------------------------------------------------

    delete_cls = API_TABLE[ApiKey.OFFSET_DELETE].responses[0]
    delete_topic = _nested(delete_cls, "topics")
    delete_partition = _nested(delete_topic, "partitions")

    def delete_response(code: ErrorCode, answer: list) -> Any:
        return delete_cls(error_code=code, throttle_time=NO_THROTTLE, topics=tuple(
            delete_topic(name=name, partitions=tuple(delete_partition(partition_index=i, error_code=c)
                                                     for i, c in codes))
            for name, codes in answer))

    def delete_failed(_code: ErrorCode, _answer: list, error: BaseException) -> Any:
        return delete_response(write_error_code(error), [])

    def handle_delete(ctx: RequestContext, request: Any) -> Any:
        group_id = request.group_id
        if not group_id:
            return delete_response(E.invalid_group_id, [])
        try:
            shard = shard_for(group_id)
            if shard.error is not None:
                return delete_response(shard.error, [])
            code, records, answer = delete_offsets(shard, group_id, request.topics)
        except Exception:
            log.exception("OffsetDelete failed", group=group_id)
            return delete_response(E.unknown_server_error, [])
        if code is not E.none:
            return delete_response(code, [])
        if not records:
            return delete_response(E.none, answer)
        late = WriteAnswer(delete_response, delete_failed, (E.none, answer))
        shard.write(records).add_callback(late)
        return late

    dispatcher.register(ApiKey.OFFSET_COMMIT, handle_commit)
    dispatcher.register_fast(ApiKey.OFFSET_COMMIT, fast_commit)
    dispatcher.register(ApiKey.OFFSET_FETCH, handle_fetch)
    dispatcher.register(ApiKey.OFFSET_DELETE, handle_delete)
