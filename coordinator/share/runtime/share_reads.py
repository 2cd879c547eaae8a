"""Reading a hosted topic partition for a share partition: the batches from its next fetch offset (up to the last
stable offset and with the aborted transactions for share.isolation.level=read_committed, as a Fetch reads them),
as `LogBatch`es for acquiring, and then the raw batches that hold the acquired records, for the answer.

Kafka's ShareFetch answers whole batches (as Fetch does) with the acquired ranges beside them: the client
delivers only the records inside an acquired range (a batch may hold records acquired by another member, or
already acknowledged)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.data_plane.committed_reads import aborted_transactions
from coordinator.share.record_states import AcquiredRecords, LogBatch
from storage.batch import iter_batches


@dataclass
class LogRead:
    """What one read of the partition's log gave."""

    raw: bytes = b""
    batches: list[LogBatch] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)  # each batch's (start, end) in `raw`
    aborted: tuple[tuple[int, int], ...] = ()  # (producer id, first offset), for read_committed


def read_log(target: Any, offset: int, max_bytes: int, read_committed: bool) -> LogRead:
    """The batches of `target` (a data_plane Partition) from `offset`, at most `max_bytes` (the first batch
    whole, whatever its size), up to the high watermark or, for read_committed, the last stable offset."""
    lg = target.log
    hw = lg.high_watermark
    end = target.last_stable_offset if read_committed else hw
    if offset >= end:
        return LogRead()
    raw = lg.read(offset, max(1, max_bytes))
    aborted: list[dict] = []
    if read_committed:
        raw, aborted = aborted_transactions(target, offset, raw, end, hw)
    read = LogRead(raw, aborted=tuple((a["producer_id"], a["first_offset"]) for a in aborted))
    for batch in iter_batches(raw):
        if batch.base_offset >= end:
            break
        read.batches.append(LogBatch(batch.base_offset, batch.last_offset, batch.producer_id,
                                     batch.is_transactional, batch.is_control))
        read.spans.append((batch.position, batch.position + batch.size))
    return read


def acquired_bytes(read: LogRead, acquired: list[AcquiredRecords]) -> bytes:
    """The raw batches of `read` that hold any acquired offset, in log order."""
    if not acquired:
        return b""
    parts = []
    ranges = sorted((a.first_offset, a.last_offset) for a in acquired)
    for batch, (start, end) in zip(read.batches, read.spans):
        if batch.control:
            continue
        if any(first <= batch.last_offset and last >= batch.base_offset for first, last in ranges):
            parts.append(read.raw[start:end])
    return b"".join(parts)
