"""Which segments of a topic log retention deletes: Kafka's UnifiedLog.deleteOldSegments as pure functions.

Kafka runs three passes, each deleting a prefix of the log (oldest first) and stopping at
the first segment that does not qualify:

* time (``cleanup.policy`` has ``delete``, ``retention.ms`` >= 0): a segment whose largest
  timestamp (its largest record timestamp, or the file's modification time when no record
  carried one) is more than ``retention.ms`` before now;
* size (``delete``, ``retention.bytes`` >= 0, the log is not smaller than it): the oldest
  segments while what is left stays at least ``retention.bytes``;
* log start offset (any policy): a segment whose successor starts at or below the log start
  offset (DeleteRecords moved it), so all its records are below it.

Every pass only looks at a segment whose successor starts at or below the high watermark
(the log start offset may never pass it). The active (last) segment is never deleted here:
Kafka rolls and deletes an expired active segment; this server leaves it until it rolls
(see docs/DATA_PLANE.md). Inputs are plain values, so tests drive the rules with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    base_offset: int
    size: int
    largest_timestamp: int  # ms: the largest record timestamp, or the file's mtime if none had one


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    retention_ms: int  # -1: no time limit
    retention_bytes: int  # -1: no size limit
    delete: bool  # cleanup.policy contains "delete"


@dataclass(frozen=True, slots=True)
class Deletion:
    count: int  # how many of the oldest segments to delete
    reasons: tuple[str, ...]  # Kafka's wording, one per pass that deleted something


def _prefix(segments: Sequence[SegmentInfo], start: int, high_watermark: int,
            predicate: Callable[[SegmentInfo, SegmentInfo], bool]) -> int:
    """How many closed segments from ``start`` on qualify, stopping at the first that does not."""
    n = 0
    for i in range(start, len(segments) - 1):
        seg, nxt = segments[i], segments[i + 1]
        if high_watermark >= nxt.base_offset and predicate(seg, nxt):
            n += 1
        else:
            break
    return n


def plan(segments: Sequence[SegmentInfo], policy: RetentionPolicy, *, now_ms: int,
         log_start_offset: int, high_watermark: int) -> Deletion:
    """The segments (a prefix of ``segments``, oldest first, the last being the active one) to delete."""
    done = 0
    reasons: list[str] = []

    def run(predicate: Callable[[SegmentInfo, SegmentInfo], bool], reason: str) -> None:
        nonlocal done
        n = _prefix(segments, done, high_watermark, predicate)
        if n:
            done += n
            reasons.append(reason)

    if policy.delete and policy.retention_ms >= 0:
        run(lambda seg, _next: now_ms - seg.largest_timestamp > policy.retention_ms,
            f"retention time {policy.retention_ms}ms breach")
    if policy.delete and policy.retention_bytes >= 0:
        size = sum(s.size for s in segments[done:])
        if size >= policy.retention_bytes:
            diff = size - policy.retention_bytes

            def too_big(seg: SegmentInfo, _next: SegmentInfo) -> bool:
                nonlocal diff
                if diff - seg.size >= 0:
                    diff -= seg.size
                    return True
                return False

            run(too_big, f"retention size in bytes {policy.retention_bytes} breach")
    run(lambda _seg, nxt: nxt.base_offset <= log_start_offset, f"log start offset {log_start_offset} breach")
    return Deletion(done, tuple(reasons))

