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

Every pass only looks at a segment whose upper bound (its successor's base offset, or the
log end offset for the active, last segment) is at or below the high watermark, so the log
start offset never passes it (Kafka's UnifiedLog.deletableSegments). The active segment is
a candidate like the others, except when it is empty: when every segment goes, the log
first rolls to a new empty segment at the log end offset (``PartitionLog.delete_oldest``),
so an idle partition keeps no expired data. Inputs are plain values, so tests drive the
rules with a fake clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


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


Predicate = Callable[[SegmentInfo, SegmentInfo | None], bool]  # (segment, its successor or None)


def _prefix(segments: Sequence[SegmentInfo], start: int, high_watermark: int, log_end_offset: int,
            predicate: Predicate) -> int:
    """How many segments from ``start`` on qualify, stopping at the first that does not
    (an empty last segment never does)."""
    n = 0
    last = len(segments) - 1
    for i in range(start, len(segments)):
        seg = segments[i]
        nxt = segments[i + 1] if i < last else None
        if nxt is None and seg.size == 0:
            break
        upper = nxt.base_offset if nxt is not None else log_end_offset
        if high_watermark >= upper and predicate(seg, nxt):
            n += 1
        else:
            break
    return n


def plan(segments: Sequence[SegmentInfo], policy: RetentionPolicy, *, now_ms: int,
         log_start_offset: int, high_watermark: int, log_end_offset: int) -> Deletion:
    """The segments (a prefix of ``segments``, oldest first, the last being the active one) to
    delete; all of them means the log rolls first."""
    done = 0
    reasons: list[str] = []

    def run(predicate: Predicate, reason: str) -> None:
        nonlocal done
        n = _prefix(segments, done, high_watermark, log_end_offset, predicate)
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

            def too_big(seg: SegmentInfo, _next: SegmentInfo | None) -> bool:
                nonlocal diff
                if diff - seg.size >= 0:
                    diff -= seg.size
                    return True
                return False

            run(too_big, f"retention size in bytes {policy.retention_bytes} breach")
    run(lambda _seg, nxt: nxt is not None and nxt.base_offset <= log_start_offset,
        f"log start offset {log_start_offset} breach")
    return Deletion(done, tuple(reasons))

