"""The native fast paths put in front of the Python ones: the handlers' `register` asks here for the fast path to
register. On the pure-Python path (native.py) each handler's own fast path is returned unchanged (OffsetFetch has
none: the generic handler answers it); on the native path the compiled lane, whose fallback for anything it does
not handle is that same Python fast path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from coordinator.completion import Completion
from coordinator.errors import commit_error_code, logged_by_storage
from coordinator.fastlane import native as compiled
from coordinator.groups.classic_group import GroupState
from coordinator.net.dispatch import Deferred, FastPath
from coordinator.offsets.manager import validate_commit
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import Encoded

if TYPE_CHECKING:
    from coordinator.runtime.shard import Shard

log = structlog.get_logger("coordinator.offsets.manager")

_COMMIT = API_TABLE[ApiKey.OFFSET_COMMIT]
_HEARTBEAT = API_TABLE[ApiKey.HEARTBEAT]


def heartbeat_fast(handler: Any) -> FastPath:
    lane = compiled.module("_heartbeat")
    if lane is None:
        return handler.fast
    return lane.HeartbeatLane(handler, _HEARTBEAT.name)


def fetch_fast(shard_for: Any, slices: Any) -> FastPath | None:
    """OffsetFetch: the native lane, or None (no fast path: the generic handler answers every fetch)."""
    lane = compiled.module("_fetch")
    if lane is None:
        return None
    return lane.FetchLane(shard_for, GroupState.DEAD, slices)  # slices: the module whose SLICE bounds it


def commit_fast(handler: Any, scan_from: int) -> FastPath:
    lane = compiled.module("_commit")
    if lane is None:
        return handler.fast
    return lane.CommitLane(handler, validate_commit, CommitAnswers(lane.failed_body).written,
                             OffsetCommitRecord, OffsetValue, scan_from)


class CommitAnswers:
    """The native commit's write and its deferred answer: the lane's answer frame once the write is durable, or
    that frame with the write's error code on every partition (OffsetCommitHandler.failed's answer)."""

    __slots__ = ("failed_body", "ok", "failed")

    def __init__(self, failed_body: Any) -> None:
        self.failed_body = failed_body
        self.ok, self.failed = self._ok, self._failed  # bound once, as the handler's

    def written(self, shard: Shard, records: list, tails: list, undo: list, frame: bytes, version: int,
                correlation_id: int) -> Deferred:
        pending = shard.write_applied(records, tails, undo)
        answer: Completion = pending.then(self.ok, self.failed, frame, version)
        return Deferred(answer, correlation_id, _COMMIT.response_header_versions[version], _COMMIT.name)

    @staticmethod
    def _ok(frame: bytes, version: int, _written: Any) -> Encoded:
        return Encoded(frame[8 + _COMMIT.response_header_versions[version]:])

    def _failed(self, frame: bytes, version: int, error: BaseException) -> Encoded:
        code = commit_error_code(error)
        (log.debug if logged_by_storage(error) else log.warning)("offset commit failed", error=repr(error),
                                                                 code=code.name)
        body = self.failed_body(frame, version, int(code))
        return Encoded(body[8 + _COMMIT.response_header_versions[version]:])
