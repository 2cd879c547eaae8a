"""Heartbeat v0-4, the hot path: one decision (`code`), one cache of answers, two ways in.

The generic handler gets the kio request from the dispatcher; the fast path (registered with
it) skips the request header's client id without building a RequestHeader and answers with a
cached response frame. Both decode the body with kio's reader, ask `code`, and answer from the
same cache: a kio response per (version, error), built once and reused (they are immutable),
and its frame encoded once by the generic encoder (protocol.codec.FixedResponse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.fastlane.lane import heartbeat_fast
from coordinator.handlers.authorized import group_guarded
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.net.request_metrics import RequestMetrics
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from protocol.codec import FixedResponse, decode_common

if TYPE_CHECKING:
    from protocol.request_types import HeartbeatRequest

log = structlog.get_logger("coordinator.groups")

_SPEC = API_TABLE[ApiKey.HEARTBEAT]
#: The answers a heartbeat usually gets, cached when the handler is made.
COMMON_CODES = (ErrorCode.none, ErrorCode.rebalance_in_progress, ErrorCode.unknown_member_id,
                ErrorCode.illegal_generation, ErrorCode.fenced_instance_id)


class HeartbeatHandler:
    __slots__ = ("shard_for", "answers", "frames", "flexible", "metrics")

    def __init__(self, groups: GroupCoordinator, metrics: RequestMetrics | None = None) -> None:
        self.shard_for = groups.shard_for
        self.metrics = metrics  # the fast path counts its errors there (the generic path's are counted for it)
        self.answers: dict[tuple[int, ErrorCode], Any] = {}
        self.frames: dict[tuple[int, ErrorCode], FixedResponse] = {}
        self.flexible = {version: _SPEC.request_is_flexible(version) for version in _SPEC.responses}
        for version in _SPEC.responses:
            for code in COMMON_CODES:
                self.frame(version, code)

    def code(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None) -> ErrorCode:
        """The one heartbeat decision, for the generic handler and the fast path alike."""
        try:
            shard = self.shard_for(group_id)
            if shard.error is not None and group_id:
                # Kafka answers a heartbeat for a loading group blindly with NONE
                return ErrorCode.none if shard.error is ErrorCode.coordinator_load_in_progress else shard.error
            return shard.heartbeat(group_id, member_id, instance_id, generation_id)
        except Exception:
            log.exception("Heartbeat failed", group=group_id)
            return ErrorCode.unknown_server_error

    def answer(self, version: int, code: ErrorCode) -> Any:
        """The kio response, built once per (version, error)."""
        answer = self.answers.get((version, code))
        if answer is None:
            answer = self.answers[(version, code)] = build(
                _SPEC.responses[version], throttle_time=NO_THROTTLE, error_code=code)
        return answer

    def frame(self, version: int, code: ErrorCode) -> FixedResponse:
        """The fast path's answer: `answer(version, code)` encoded once by the generic encoder."""
        fixed = self.frames[(version, code)] = FixedResponse(
            _SPEC.response_header_versions[version], self.answer(version, code))
        return fixed

    def handle(self, ctx: RequestContext, request: HeartbeatRequest) -> Any:
        return self.answer(ctx.api_version, self.code(
            request.group_id, request.generation_id, request.member_id, getattr(request, "group_instance_id", None)))

    def fast(self, frame: bytes, version: int, correlation_id: int) -> bytes | None:
        """Heartbeat without RequestHeader, RequestContext or encoder: kio's reader for the body,
        the shared decision, a cached response frame. None (generic path) for anything unusual."""
        flexible = self.flexible.get(version)
        if flexible is None:
            return None  # unsupported version: the generic path answers it
        request = decode_common(_SPEC, version, frame, flexible)
        if request is None:
            return None
        code = self.code(request.group_id, request.generation_id, request.member_id,
                         getattr(request, "group_instance_id", None))
        if code and self.metrics is not None:
            self.metrics.error(_SPEC.name, code)
        fixed = self.frames.get((version, code)) or self.frame(version, code)
        return fixed.frame(correlation_id)


def register(dispatcher: Dispatcher, services: Services) -> None:
    heartbeat = HeartbeatHandler(services.groups, services.metrics)
    refuse = lambda version, _request: heartbeat.answer(version, ErrorCode.group_authorization_failed)  # noqa: E731
    # with an authorizer, no fast path: it would answer without asking (Dispatcher.drop_fast_paths); the native
    # lane (coordinator/fastlane/) in front of `fast` when it is built
    dispatcher.register(ApiKey.HEARTBEAT, group_guarded(services.access, Op.READ, heartbeat.handle, refuse),
                        fast=heartbeat_fast(heartbeat))
