"""ConsumerGroupHeartbeat v0-1 (KIP-848): kio messages <-> the shard's consumer-group heartbeat; answered once
the records it wrote are durable (Kafka completes the response when its records are committed).

Authorization as Kafka's KafkaApis.handleConsumerGroupHeartbeat: READ on the group, then DESCRIBE on every
subscribed topic name (TOPIC_AUTHORIZATION_FAILED when one is refused: a client must not learn of topics it
cannot see); a subscribed regex matches only topics the principal may DESCRIBE (groups/consumer/regexes.py).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from coordinator.errors import KafkaError, error_message, write_error_code
from coordinator.groups.consumer.model import Assignment, TopicId
from coordinator.groups.consumer.params import HeartbeatAnswer, HeartbeatParams
from coordinator.handlers.wire_values import NO_THROTTLE, ms
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from protocol.codec import DecodeError, FixedResponse, decode_request
from protocol.header import plain_body_offset

if TYPE_CHECKING:
    from protocol.request_types import ConsumerGroupHeartbeatRequest

log = structlog.get_logger("coordinator.groups")

_SPEC = API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT]
REGEX_FROM = 1  # SubscribedTopicRegex is a v1 field


def _interval(value: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def error_response(version: int, code: ErrorCode, message: str | None = None) -> Any:
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=code,
                 error_message=message if message is not None else error_message(code), member_id=None,
                 member_epoch=0, heartbeat_interval=_interval(0), assignment=None)


def response(version: int, answer: HeartbeatAnswer, _written: Any = None) -> Any:
    assignment = None
    if answer.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": sorted(parts)}
                                           for topic_id, parts in sorted(answer.assignment.items())]}
    return build(_SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                 member_id=answer.member_id, member_epoch=answer.member_epoch,
                 heartbeat_interval=_interval(answer.heartbeat_interval_ms), assignment=assignment)


def _failed(version: int, _answer: HeartbeatAnswer, error: BaseException) -> Any:
    return error_response(version, write_error_code(error))


def _owned(topic_partitions: Any) -> Assignment | None:
    if topic_partitions is None:
        return None
    owned: dict[TopicId, frozenset[int]] = {}
    for tp in topic_partitions:
        if tp.partitions:
            owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return owned


def oversized(request: ConsumerGroupHeartbeatRequest, shard: Any) -> tuple[ErrorCode, str] | None:
    """Requests too large to be a member's, refused before any work is spent on them (a hostile client's list of
    millions of names or partitions would otherwise hold the event loop for seconds):
    - subscribed names that cannot fit one record of the offsets log: Kafka would build the record and fail its
      append, answering UNKNOWN_SERVER_ERROR; the same answer, at once;
    - owned partitions (TopicPartitions) beyond what the member holds (assigned + pending revocation): a member
      only ever owns what it was given; INVALID_REQUEST."""
    names = request.subscribed_topic_names
    if names is not None and sum(map(len, names)) + len(names) > shard.settings.offsets_max_batch_bytes:
        return ErrorCode.unknown_server_error, "The subscription is too large to be stored."
    owned = request.topic_partitions
    if owned:
        count = sum(len(tp.partitions) for tp in owned)
        group = shard.consumer_groups.get(request.group_id)
        member = group.members.get(request.member_id) if group is not None else None
        held = 0 if member is None else sum(map(len, member.assigned_partitions.values())) + sum(
            map(len, member.partitions_pending_revocation.values()))
        if count > held and (member is not None or count > OWNED_WITHOUT_MEMBER):
            return ErrorCode.invalid_request, "TopicPartitions lists more partitions than the member holds."
    return None


#: partitions an unknown member may list (it is answered UNKNOWN_MEMBER_ID or INVALID_REQUEST after the checks)
OWNED_WITHOUT_MEMBER = 10_000


def params_of(ctx: RequestContext, request: ConsumerGroupHeartbeatRequest,
              access: Access | None = None) -> HeartbeatParams:
    names = request.subscribed_topic_names
    describable = None
    if access is not None and access.enabled:
        def describable(name: str) -> bool:  # TopicRegexResolver: regex matches the principal may see only
            return access.topic(ctx, Op.DESCRIBE, name)
    return HeartbeatParams(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=ms(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=_owned(request.topic_partitions),
        client_id=ctx.client_id or "", client_host=ctx.client_host, describable=describable)


#: the fast path's cached answers, (version, member id, epoch) -> frame; cleared when it grows past this
FRAME_CACHE_LIMIT = 100_000
_MINUS_ONE_MS = datetime.timedelta(milliseconds=-1)
#: frames longer than this are not steady heartbeats (ids of a few hundred bytes at most); the generic path
STEADY_BODY_LIMIT = 4096


class ConsumerGroupHeartbeatHandler:
    def __init__(self, groups: GroupCoordinator, access: Access) -> None:
        self.groups = groups
        self.access = access
        self.flexible = {version: _SPEC.request_is_flexible(version) for version in _SPEC.responses}
        self.frames: dict[tuple[int, str, int, int], FixedResponse] = {}
        self.bodies: dict[tuple[int, bytes], tuple[str, str, int, str | None]] = {}

    def fast(self, frame: bytes, version: int, correlation_id: int) -> bytes | None:
        """A steady heartbeat (ConsumerGroupOps.steady), answered from a cached frame per (version, member, epoch).
        A member's steady heartbeats are the same bytes every time but for the correlation id, so a body seen
        before is not decoded again: its (group, member, epoch, instance) are cached by its bytes (bodies that
        kio decoded and found steady-shaped only). None (the generic path) for anything else."""
        flexible = self.flexible.get(version)
        if flexible is None or len(frame) > STEADY_BODY_LIMIT:
            return None
        offset = plain_body_offset(frame, flexible)
        if offset < 0:
            return None
        key = (version, frame[offset:])
        fields = self.bodies.get(key)
        if fields is None:
            fields = self._steady_fields(version, frame, offset)
            if fields is None:
                return None
            if len(self.bodies) >= FRAME_CACHE_LIMIT:
                self.bodies.clear()
            self.bodies[key] = fields
        group_id, member_id, epoch, instance_id = fields
        try:
            shard = self.groups.shard_for(group_id)
            if shard.error is not None or not shard.consumer.ops.steady(group_id, member_id, epoch, instance_id):
                return None
            interval_ms = shard.consumer.ops.heartbeat_interval_ms(group_id)  # consumer.heartbeat.interval.ms
        except Exception:
            log.exception("ConsumerGroupHeartbeat failed", group=group_id)
            return None
        answer_key = (version, member_id, epoch, interval_ms)
        fixed = self.frames.get(answer_key)
        if fixed is None:
            if len(self.frames) >= FRAME_CACHE_LIMIT:
                self.frames.clear()
            fixed = self.frames[answer_key] = FixedResponse(_SPEC.response_header_versions[version], response(
                version, HeartbeatAnswer(member_id, epoch, interval_ms)))
        return fixed.frame(correlation_id)

    @staticmethod
    def _steady_fields(version: int, frame: bytes, offset: int) -> tuple[str, str, int, str | None] | None:
        """(group, member, epoch, instance) of a request that carries nothing but them (kio decodes it)."""
        try:
            request = decode_request(_SPEC, version, frame, offset)
        except DecodeError:
            return None
        if request.topic_partitions is not None or request.subscribed_topic_names is not None \
                or request.rebalance_timeout != _MINUS_ONE_MS or request.server_assignor is not None \
                or request.rack_id is not None or getattr(request, "subscribed_topic_regex", None) is not None:
            return None
        if request.member_epoch <= 0 or not request.group_id or not request.member_id:
            return None
        return request.group_id, request.member_id, request.member_epoch, request.instance_id

    def handle(self, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> Any:
        version = ctx.api_version
        access = self.access
        if access.enabled:
            if not access.group(ctx, Op.READ, request.group_id):
                return error_response(version, ErrorCode.group_authorization_failed)
            names = request.subscribed_topic_names or ()
            if any(not access.topic(ctx, Op.DESCRIBE, name) for name in names):
                return error_response(version, ErrorCode.topic_authorization_failed)
        try:
            shard = self.groups.shard_for(request.group_id)
            if shard.error is not None:
                return error_response(version, shard.error)
            refused = oversized(request, shard)
            if refused is not None:
                return error_response(version, *refused)
            answer, write = shard.consumer_heartbeat(params_of(ctx, request, access))
        except KafkaError as exc:
            return error_response(version, exc.code, str(exc))
        except Exception:
            log.exception("ConsumerGroupHeartbeat failed", group=request.group_id)
            return error_response(version, ErrorCode.unknown_server_error)
        if write is None or (write.done() and write.exception() is None):
            return response(version, answer)
        return write.then(response, _failed, version, answer)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = ConsumerGroupHeartbeatHandler(services.groups, services.access)
    # with an authorizer, no fast path: it would answer without asking (Dispatcher.drop_fast_paths)
    dispatcher.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, handler.handle, fast=handler.fast)
