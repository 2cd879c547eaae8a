"""ListOffsets by time over a log: the first record at or after a timestamp, and the record with the largest
timestamp, found through each segment's time index (segment.py) below the durable end.

A mixin of ``storage.log.PartitionLog``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .log_fields import LogFields


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int


class TimestampReadsMixin(LogFields):
    """Needs PartitionLog's segments and log start offset."""

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """First record at or above the log start offset with timestamp >= ``timestamp`` (ListOffsets by time)."""
        for seg in self._segments:
            if seg.max_timestamp >= timestamp:
                found = seg.find_timestamp(timestamp, seg.durable_size, self._log_start)
                if found is not None:
                    return TimestampOffset(*found)
        return None

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """The record with the largest timestamp (the first such one), if any."""
        best = None
        for seg in self._segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        found = best.record_with_timestamp(best.max_timestamp, best.offset_of_max_timestamp,
                                           best.durable_size)
        return TimestampOffset(*found) if found else None
