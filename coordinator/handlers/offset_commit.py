"""OffsetCommit v0-v9: kio messages <-> coordinator/offsets/manager.py, the hot path.

OffsetCommit v0/v1 (classes from protocol/legacy_messages.py) behave as in Kafka 3.x's
KafkaApis: a v0 commit is a commit outside group management (generation -1, no member id;
Kafka kept those in ZooKeeper, we keep them in the same offsets log as every other commit);
v1 carries the generation and member id, validated like v2, and a per-partition commit
timestamp that the record keeps (-1: the server's clock); both use the default retention and
answer without throttle time. A coordinator-level error (COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR, INVALID_GROUP_ID) is answered on every partition, as Kafka does.

No protocol/build.py here: kio objects constructed directly, partition answers (immutable)
cached per (version, partition, error), whole encoded bodies cached per (version, topics and
partitions) when every partition answers NONE, and the deferred answer is a Completion derived
from the write (`then`: no future, no task, no closure per request). The fast path (v2+, the
common header) shares `commit` with the generic handler; frames past commit_size.SCAN_FROM are
first walked for a commit that surely cannot fit the offsets log.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog
from kio.schema.errors import ErrorCode

from coordinator.completion import Completion
from coordinator.errors import commit_error_code, logged_by_storage
from coordinator.fastlane.lane import commit_fast
from coordinator.handlers.commit_size import SCAN_FROM, refusal_body, scan_oversized
from coordinator.handlers.wire_values import NO_THROTTLE, ms
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher, RequestContext, later
from coordinator.net.request_metrics import RequestMetrics
from coordinator.offsets.known_topics import merge_answers, split_unknown
from coordinator.offsets.manager import DEFAULT_RETENTION, commit_records, error_answer, validate_commit
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import nested_class
from protocol.codec import Encoded, decode_common, encode_response
from protocol.header import HeaderError, parse_request_header
from protocol.legacy_messages import DEFAULT_COMMIT_TIMESTAMP

if TYPE_CHECKING:
    from protocol.request_types import OffsetCommitRequest

log = structlog.get_logger("coordinator.offsets.manager")

E = ErrorCode
COMMIT_GENERATION_FROM = 1
COMMIT_TIMESTAMP_VERSION = 1
COMMIT_RETENTION_FROM = 2
COMMIT_EPOCH_FROM = 6
COMMIT_RETENTION_UNTIL = 4
COMMIT_THROTTLE_FROM = 3
PARTITION_CACHE_SIZE = 100_000
BODY_CACHE_SIZE = 10_000

_SPEC = API_TABLE[ApiKey.OFFSET_COMMIT]
_CLASSES = _SPEC.responses
_TOPIC = _CLASSES.derived(lambda cls: nested_class(cls, "topics"))
_PARTITION = _TOPIC.derived(lambda cls: nested_class(cls, "partitions"))
_HEADER = {v: _SPEC.response_header_versions[v] for v in _CLASSES}
_FLEXIBLE = {v: _SPEC.request_is_flexible(v) for v in _CLASSES}
_FAST_FLEXIBLE = {v: flexible for v, flexible in _FLEXIBLE.items() if v >= COMMIT_RETENTION_FROM}


class LegacyCommit(NamedTuple):
    """An OffsetCommit v0/v1 request seen with v2's fields (what `commit` reads)."""

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


def merged(refused: list | None, answer: list) -> list:
    """`answer` after the partitions refused for unknown topics (as Kafka's response builder)."""
    return answer if refused is None else merge_answers(refused, answer)


def group_refusal(shard: Any, group_id: str, member_id: str, instance_id: str | None, generation: int,
                  version: int) -> ErrorCode | None:
    """The error of a commit refused for its group as a whole, or None."""
    if not group_id:
        return E.invalid_group_id
    return shard.error or validate_commit(shard, group_id, member_id, instance_id, generation, version)


class OffsetCommitHandler:
    __slots__ = ("shard_for", "settings", "partition_counts", "partitions", "ok_bodies", "on_written", "on_failed",
                 "metrics", "access")

    def __init__(self, groups: GroupCoordinator, partition_counts: dict[str, int],
                 metrics: RequestMetrics | None = None, access: Access | None = None) -> None:
        self.access = access  # with an authorizer: the group's and topics' READ (the fast path is then off)
        self.metrics = metrics  # the fast path counts the errors of its immediate answers there
        self.partition_counts = partition_counts  # the topic catalog's: name -> partition count
        self.shard_for = groups.shard_for
        self.settings = groups.settings
        self.partitions: dict[tuple[int, int, ErrorCode], Any] = {}
        self.ok_bodies: dict[tuple, Encoded] = {}
        # bound once: a bound method made per commit would be two objects more per request
        self.on_written, self.on_failed = self.answered, self.failed

    def response(self, version: int, answer: list) -> Any:
        """The response to an answer [(topic, indexes, codes or None: all NONE)]."""
        topic_cls, partition_cls = _TOPIC[version], _PARTITION[version]
        cache = self.partitions
        ok = E.none
        topics = []
        for name, indexes, codes in answer:
            parts = []
            for index, code in zip(indexes, codes or [ok] * len(indexes)):
                key = (version, index, code)
                part = cache.get(key)
                if part is None:
                    part = partition_cls(partition_index=index, error_code=code)
                    if len(cache) < PARTITION_CACHE_SIZE:
                        cache[key] = part
                parts.append(part)
            topics.append(topic_cls(name=name, partitions=tuple(parts)))
        if version >= COMMIT_THROTTLE_FROM:
            return _CLASSES[version](throttle_time=NO_THROTTLE, topics=tuple(topics))
        return _CLASSES[version](topics=tuple(topics))

    def answered(self, version: int, answer: list, _written: Any = None) -> Any:
        """`response`, as a cached encoded body when every partition answers NONE: such an
        answer depends on nothing but the version and the partitions, and a committer sends
        the same partitions again and again."""
        shape: list = [version]
        for name, indexes, codes in answer:
            if codes is not None:
                return self.response(version, answer)
            shape.append(name)
            shape.append(tuple(indexes))
        key = tuple(shape)
        body = self.ok_bodies.get(key)
        if body is None:
            body = Encoded.of(self.response(version, answer))
            if len(self.ok_bodies) < BODY_CACHE_SIZE:
                self.ok_bodies[key] = body
        return body

    def failed(self, version: int, answer: list, error: BaseException) -> Any:
        code = commit_error_code(error)
        (log.debug if logged_by_storage(error) else log.warning)("offset commit failed", error=repr(error),
                                                                 code=code.name)
        ok = E.none
        return self.response(version, [(name, indexes, [code] * len(indexes) if codes is None
                                         else [code if c is ok else c for c in codes])
                                        for name, indexes, codes in answer])

    def commit(self, version: int, request: Any, denied: list | None = None) -> Any:
        """OffsetCommit: the response, or a Completion settled when the records are durable. `denied`: the
        topics the principal may not read, answered TOPIC_AUTHORIZATION_FAILED before anything else."""
        if version < COMMIT_RETENTION_FROM:
            request = as_v2_commit(version, request)
        group_id = request.group_id
        topics = request.topics
        refused = None  # partitions of topics this server does not know (known_topics.py), or may not be read
        if denied:
            names = {t.name for t in denied}
            topics = [t for t in topics if t.name not in names]
            refused = error_answer(denied, E.topic_authorization_failed)
            if not topics:
                return self.response(version, refused)
        try:
            split = split_unknown(topics, self.partition_counts)
            if split is not None:
                topics, unknown = split
                refused = unknown if refused is None else refused + unknown
                if not topics:
                    return self.response(version, refused)
            shard = self.shard_for(group_id)
            code = group_refusal(shard, group_id, request.member_id, getattr(request, "group_instance_id", None),
                                 request.generation_id_or_member_epoch, version)
            if code is not None:
                return self.response(version, merged(refused, error_answer(topics, code)))
            retention = ms(request.retention_time) if version <= COMMIT_RETENTION_UNTIL else -1
            settings = self.settings
            records, answer, tails = commit_records(group_id, topics, shard.scheduler.wall_ms(), retention,
                                                    settings.offset_metadata_max_bytes, version >= COMMIT_EPOCH_FROM)
            if version == COMMIT_TIMESTAMP_VERSION:
                stamped = with_commit_timestamps(records, topics)
                if stamped is not records:
                    records, tails = stamped, None  # the tails carry the server's timestamps
        except Exception:
            log.exception("OffsetCommit failed", group=group_id)
            return self.response(version, error_answer(request.topics, E.unknown_server_error))
        answer = merged(refused, answer)
        if not records:
            return self.response(version, answer)
        return shard.write(records, tails).then(self.on_written, self.on_failed, version, answer)

    def handle(self, ctx: RequestContext, request: OffsetCommitRequest) -> Any:
        access = self.access
        if access is None or not access.enabled:
            return self.commit(ctx.api_version, request)
        # KafkaApis: READ on the group, else every partition GROUP_AUTHORIZATION_FAILED; then READ on each topic
        if not access.group(ctx, Op.READ, request.group_id):
            return self.response(ctx.api_version, error_answer(request.topics, E.group_authorization_failed))
        denied = [t for t in request.topics if not access.topic(ctx, Op.READ, t.name)]
        return self.commit(ctx.api_version, request, denied)

    def fast(self, frame: bytes, version: int, correlation_id: int) -> Any:
        """OffsetCommit v2+ without RequestHeader, RequestContext or the generic dispatch: kio's
        reader for the body, then `commit` (the handler's logic). None (generic path) for
        anything unusual: v0/v1, an uncommon header, a body that does not parse."""
        if len(frame) > SCAN_FROM:
            refused = self.oversized(frame, version, correlation_id)
            if refused is not None:
                return refused
        flexible = _FAST_FLEXIBLE.get(version)
        if flexible is None:
            return None
        request = decode_common(_SPEC, version, frame, flexible)
        if request is None:
            return None
        try:
            result = self.commit(version, request)
        except Exception:  # as dispatch_generic does with a failing handler
            log.exception("handler failed", api=_SPEC.name, version=version)
            raise CloseConnection(f"internal error handling {_SPEC.name}") from None
        if isinstance(result, Completion):
            return Deferred(result, correlation_id, _HEADER[version], _SPEC.name)
        if self.metrics is not None:
            self.metrics.response_errors(_SPEC.name, result)
        return encode_response(correlation_id, _HEADER[version], result)

    def oversized(self, frame: bytes, version: int, correlation_id: int) -> Deferred | None:
        """A commit whose records surely pass the offsets log's batch limit (commit_size.py),
        answered without decoding it; None for anything else."""
        flexible = _FLEXIBLE.get(version)
        if flexible is None:
            return None
        try:
            body_at = parse_request_header(frame, flexible).body_offset
        except HeaderError:
            return None
        settings = self.settings
        scan = scan_oversized(frame, body_at, version, flexible, settings.offsets_max_batch_bytes,
                              settings.offset_metadata_max_bytes)
        if scan is None:
            return None
        try:
            code = group_refusal(self.shard_for(scan.group_id), scan.group_id, scan.member_id, scan.instance_id,
                                 scan.generation, version) or E.invalid_commit_offset_size
        except Exception:
            log.exception("OffsetCommit failed", group=scan.group_id)
            code = E.unknown_server_error
        log.warning("offset commit refused: its records pass the offsets log's batch limit", group=scan.group_id,
                    limit=settings.offsets_max_batch_bytes, request_bytes=len(frame), code=code.name)
        body = refusal_body(frame, scan, version, flexible, code, self.partition_counts)
        return later(body, correlation_id, _HEADER[version], _SPEC.name)


def register(dispatcher: Dispatcher, services: Services) -> None:
    commit = OffsetCommitHandler(services.groups, services.topics.partition_counts, services.metrics, services.access)
    # the native lane (coordinator/fastlane/) in front of `fast` when it is built
    dispatcher.register(ApiKey.OFFSET_COMMIT, commit.handle, fast=commit_fast(commit, SCAN_FROM))
