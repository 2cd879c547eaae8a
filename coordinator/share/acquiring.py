"""Acquiring records of a share partition for a member (Kafka's SharePartition.acquire).

The data plane reads the log from the partition's next fetch offset and hands over the batches it read.
Walking them in offset order: an in-flight AVAILABLE record is acquired again (delivery count + 1); one held
by another member (or done) is passed over; a record past the end offset is new (delivery count 1), while the
window has room (max record locks). Offsets the batches skip over (compacted away) are ARCHIVED: they do not
exist. Control batches, and with read_committed the batches of aborted transactions, are ARCHIVED instead of
delivered (they never reach a consumer).

MaxRecords and the acquire modes of ShareFetch v2: BATCH_OPTIMIZED stops after the log batch in which the
count reached MaxRecords (a soft limit aligned to batches); RECORD_LIMIT stops at MaxRecords exactly, inside a
batch if need be. The acquired offsets are returned as AcquiredRecords ranges of one delivery count each, cut
at a log batch boundary once a range holds BatchSize records.
"""

from __future__ import annotations

import heapq
from typing import Any, Protocol

from .record_states import AcquiredRecords, AcquireMode, InFlight, LogBatch, RecordState


class Window(Protocol):
    """What acquiring needs of a share partition (share_partition.SharePartition)."""

    start_offset: int
    end_offset: int
    records: dict[int, InFlight]
    max_in_flight: int
    lock_duration_ms: int

    def in_flight(self) -> int: ...

    def set_record(self, change: Any, offset: int, record: InFlight) -> None: ...


class _Ranges:
    """AcquiredRecords built offset by offset."""

    def __init__(self) -> None:
        self.done: list[AcquiredRecords] = []
        self.first = self.last = self.count = -1

    def add(self, offset: int, count: int) -> None:
        if self.first != -1 and self.last + 1 == offset and self.count == count:
            self.last = offset
            return
        self.close()
        self.first = self.last = offset
        self.count = count

    def close(self) -> None:
        if self.first != -1:
            self.done.append(AcquiredRecords(self.first, self.last, self.count))
        self.first = self.last = self.count = -1

    def length(self) -> int:
        return 0 if self.first == -1 else self.last - self.first + 1


def skipped_batches(batches: list[LogBatch], aborted: list[tuple[int, int]], read_committed: bool) -> set[int]:
    """Indexes of the batches never delivered: control batches, and with read_committed the transactional
    batches of an aborted transaction (the consumer's rule: a producer is aborted from its aborted
    transaction's first offset until its next control batch)."""
    skipped = {i for i, b in enumerate(batches) if b.control}
    if not read_committed:
        return skipped
    pending = sorted((first, producer) for producer, first in aborted)
    heapq.heapify(pending)
    aborting: set[int] = set()
    for i, batch in enumerate(batches):
        while pending and pending[0][0] <= batch.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if batch.control:
            aborting.discard(batch.producer_id)
        elif batch.transactional and batch.producer_id in aborting:
            skipped.add(i)
    return skipped


def acquire_records(partition: Window, change: Any, member_id: str, log_batches: list[LogBatch],
                    max_records: int, batch_size: int, now_ms: float, mode: AcquireMode, read_committed: bool,
                    aborted: list[tuple[int, int]]) -> list[AcquiredRecords]:
    batches = sorted(log_batches, key=lambda b: b.base_offset)
    skipped = skipped_batches(batches, aborted, read_committed)
    deadline = now_ms + partition.lock_duration_ms
    room = max(0, partition.max_in_flight - partition.in_flight())
    ranges = _Ranges()
    acquired = 0
    limit = max(1, max_records)
    for i, batch in enumerate(batches):
        if batch.last_offset < partition.start_offset:
            continue
        if acquired >= limit:
            break
        start = max(batch.base_offset, partition.start_offset)
        if start > partition.end_offset:  # offsets the log does not have
            for offset in range(partition.end_offset, start):
                partition.set_record(change, offset, InFlight(RecordState.ARCHIVED, 0))
            partition.end_offset = start
        stopped = False
        for offset in range(start, batch.last_offset + 1):
            if mode is AcquireMode.RECORD_LIMIT and acquired >= limit:
                stopped = True
                break
            if offset < partition.end_offset:
                record = partition.records[offset]
                if record.state is not RecordState.AVAILABLE:
                    ranges.close()
                    continue
                if i in skipped:
                    partition.set_record(change, offset, InFlight(RecordState.ARCHIVED, record.delivery_count))
                    continue
                count = record.delivery_count + 1
            else:
                if i in skipped:
                    partition.set_record(change, offset, InFlight(RecordState.ARCHIVED, 0))
                    partition.end_offset = offset + 1
                    continue
                if room <= 0:
                    stopped = True
                    break
                room -= 1
                count = 1
                partition.end_offset = offset + 1
            partition.set_record(change, offset, InFlight(RecordState.ACQUIRED, count, member_id, deadline))
            ranges.add(offset, count)
            acquired += 1
        if stopped:
            break
        if ranges.length() >= batch_size:
            ranges.close()
    ranges.close()
    return ranges.done
