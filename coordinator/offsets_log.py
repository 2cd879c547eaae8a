"""The durable RecordLog: one storage.log.PartitionLog per __consumer_offsets partition.

`<log.dirs>/__consumer_offsets-<p>/` in Kafka's layout and record format. A shard's
write becomes one record batch (Kafka: one batch per write operation); PartitionLog
puts every batch appended in one event-loop turn into one write + one fsync (group
commit across all requests of the partition), and the PendingWrite resolves when its
batch is durable. Encoding errors and storage errors resolve the write with the
exception; errors.commit_error_code / write_error_code map them to wire codes.
"""

from __future__ import annotations

import asyncio
import os
from typing import Iterator

import structlog

from storage.batch import build_plain_batch, decode_records, iter_batches
from storage.errors import RecordTooLargeError
from storage.log import FlushPolicy, PartitionLog, partition_dir
from storage.placement import OFFSETS_TOPIC

from . import record_codec
from .records import Record
from .shard import PendingWrite

log = structlog.get_logger(__name__)


class DurableLog:
    """Implements shard.RecordLog over PartitionLogs opened by `open_partition`."""

    def __init__(self, root: str, *, flush_policy: str = "fsync", flush_interval_ms: int = 1000,
                 segment_bytes: int = 100 * 1024 * 1024, clock_ms=None, fsync=os.fsync) -> None:
        self.root = root
        self.flush_policy = FlushPolicy(flush_policy.lower())
        self.flush_interval_ms = flush_interval_ms
        self.segment_bytes = segment_bytes  # Kafka's offsets.topic.segment.bytes default
        self.logs: dict[int, PartitionLog] = {}
        self._fsync = fsync
        if clock_ms is None:
            import time

            def clock_ms() -> int:
                return int(time.time() * 1000)
        self.clock_ms = clock_ms

    def path(self, partition: int) -> str:
        return partition_dir(self.root, OFFSETS_TOPIC, partition)

    def open_partition(self, partition: int) -> PartitionLog:
        """Open (and recover the tail of) the partition's log; reopening replaces it."""
        plog = PartitionLog.open(self.path(partition), segment_bytes=self.segment_bytes,
                                 flush_policy=self.flush_policy, flush_interval_ms=self.flush_interval_ms,
                                 fsync=self._fsync)
        self.logs[partition] = plog
        return plog

    # --- RecordLog -------------------------------------------------------------------------

    def append(self, partition: int, pending: PendingWrite) -> None:
        plog = self.logs.get(partition)
        if plog is None:
            from .errors import NotCoordinator

            pending.resolve(NotCoordinator(f"offsets partition {partition} is not open"))
            return
        try:
            batch = build_plain_batch(record_codec.encode_all(pending.records), self.clock_ms())
        except ValueError as exc:  # a string too long for its field: the commit is too large
            pending.resolve(RecordTooLargeError(str(exc)))
            return
        try:
            result = plog.append(batch)
        except Exception as exc:
            pending.resolve(exc)
            return
        result.durable.add_done_callback(lambda done: pending.resolve(
            None if not done.cancelled() and done.exception() is None
            else (done.exception() if not done.cancelled() else asyncio.CancelledError())))

    # --- reading (loading, dump) ----------------------------------------------------------

    def read_records(self, partition: int, start: int, max_bytes: int) -> tuple[list[tuple[int, int, Record]], int]:
        """Decoded records [(offset, timestamp, record)] from `start`, and the next offset.

        Reads whole batches (at least one) up to about `max_bytes`; records of unknown
        types (e.g. KIP-848 consumer-group records) are skipped, as a classic-only
        coordinator must.
        """
        plog = self.logs[partition]
        data = plog.read(start, max_bytes)
        return decode_chunk(data, start)

    async def flush(self) -> None:
        await asyncio.gather(*(plog.flush() for plog in self.logs.values()))

    async def close(self) -> None:
        logs, self.logs = list(self.logs.values()), {}
        for plog in logs:
            try:
                await plog.close()
            except Exception:
                log.exception("closing offsets log failed", dir=plog.path)

    async def close_partition(self, partition: int) -> None:
        plog = self.logs.pop(partition, None)
        if plog is not None:
            await plog.close()


def decode_chunk(data: bytes, start: int) -> tuple[list[tuple[int, int, Record]], int]:
    out: list[tuple[int, int, Record]] = []
    next_offset = start
    decode = record_codec.decode
    for batch in iter_batches(data):
        if batch.is_control:
            next_offset = batch.next_offset
            continue
        for r in decode_records(batch):
            if r.offset < start or r.key is None:
                continue
            try:
                out.append((r.offset, r.timestamp, decode(r.key, r.value)))
            except record_codec.UnknownRecordType:
                continue
        next_offset = batch.next_offset
    return out, next_offset


def iter_log(plog: PartitionLog, start: int, max_bytes: int) -> Iterator[list[tuple[int, int, Record]]]:
    """Chunks of decoded records from `start` to the high watermark."""
    offset = start
    while offset < plog.high_watermark:
        data = plog.read(offset, max_bytes)
        if not data:
            return
        records, offset = decode_chunk(data, offset)
        yield records
