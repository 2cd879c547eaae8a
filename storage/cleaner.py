"""Compaction of one closed segment, following Kafka's log cleaner (magic v2 rules).

Kafka (core/.../log/LogCleaner.scala, Cleaner.cleanInto + shouldRetainRecord, and
MemoryRecords.filterTo) keeps a record when:

* it has a key, and its offset is the latest offset of that key in the offset map
  (built over everything below the first uncleanable offset: the active segment's
  base offset; records in the active segment do not count), and
* it has a value, or it is a tombstone that may not be removed yet: the batch has no
  delete horizon, or ``now < deleteHorizonMs``.

The delete horizon (KIP-534) lives in the batch: the first cleaning that retains a
tombstone rewrites its batch with the DELETE_HORIZON attribute bit set and
baseTimestamp = now + delete.retention.ms; a later cleaning past that time drops the
tombstone. So a tombstone survives at least delete.retention.ms after the first
cleaning that saw it, as in Kafka. (The legacy horizon computed from a segment's
last-modified time only applies to magic 0/1 batches, which this project cannot
read.)

A batch whose records are all kept, and that needs no new horizon, is copied
byte for byte (compression included). Otherwise it is re-encoded uncompressed with
the same base offset, producer fields, leader epoch, timestamp type and the records'
own offsets and timestamps (compaction never renumbers). An emptied batch is dropped,
except the one ending right at the cleaning upper bound, which is kept as an empty
batch (Kafka's RETAIN_EMPTY) so the segment's last offset survives. Control batches
(transaction markers) are kept byte for byte and their keys are no record keys (the
offset map skips them): a marker removed would leave its transaction open forever
when the producer state is rebuilt from the log, holding the last stable offset back.
(Kafka drops a marker once its transaction's records are gone and its delete horizon
passed; that is not modelled.)

Transactions (storage/txn_clean.py): ``aborted(batch)`` says whether a transactional batch
belongs to an aborted transaction; its records are all dropped (a tombstone too) and the
emptied batch goes like any other (Kafka's CleanedTransactionMetadata.onBatchRead ->
discardBatchRecords). The offset map must not count such records either, and the caller
keeps the cleaning bound at or below the last stable offset, so an open transaction is never
cleaned. Committed transactional records compete by their offset, as any record.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from crc32c import crc32c

from .batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Record,
    RecordBatch,
    decode_records,
    ensure_valid,
    iter_batches,
)
from .errors import CorruptRecordError
from .index import rewrite
from .segment import Segment
from .txn_clean import Aborted, never_aborted
from .varint import encode_varint

_U32 = struct.Struct(">I")
DEFAULT_DELETE_RETENTION_MS = 86_400_000


@dataclass
class CleanStats:
    records_read: int = 0
    records_kept: int = 0
    superseded_dropped: int = 0
    tombstones_kept: int = 0
    tombstones_dropped: int = 0
    keyless_dropped: int = 0
    aborted_dropped: int = 0
    batches_read: int = 0
    batches_written: int = 0
    batches_copied: int = 0
    horizons_set: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def add(self, other: CleanStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class CleanedSegment:
    data: bytes
    last_offset: int | None  # of the last batch kept (None: the segment became empty)
    stats: CleanStats = field(default_factory=CleanStats)


def delete_horizon(batch: RecordBatch) -> int | None:
    """Kafka's DefaultRecordBatch.deleteHorizonMs."""
    return batch.base_timestamp if batch.has_delete_horizon else None


def encode_batch(batch: RecordBatch, records: list[Record], horizon_ms: int | None) -> bytes:
    """Re-encode ``records`` (a subset of ``batch``'s) uncompressed, keeping offsets."""
    base = batch.base_offset
    if horizon_ms is not None:
        base_ts = horizon_ms
    else:
        base_ts = records[0].timestamp if records else batch.max_timestamp
    append_time = batch.is_log_append_time
    max_ts = batch.max_timestamp if append_time or not records else max(r.timestamp for r in records)
    enc = encode_varint
    body = bytearray()
    for r in records:
        rec = bytearray(b"\x00")
        rec += enc(r.timestamp - base_ts)
        rec += enc(r.offset - base)
        for blob in (r.key, r.value):
            if blob is None:
                rec += enc(-1)
            else:
                rec += enc(len(blob))
                rec += blob
        rec += enc(len(r.headers))
        for hk, hv in r.headers:
            hkb = hk.encode()
            rec += enc(len(hkb)) + hkb
            rec += enc(-1) if hv is None else enc(len(hv)) + hv
        body += enc(len(rec))
        body += rec
    attributes = batch.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    if horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    last_delta = (records[-1].offset - base) if records else batch.last_offset_delta
    buf = bytearray(HEADER_SIZE) + body
    HEADER.pack_into(buf, 0, base, len(buf) - LOG_OVERHEAD, batch.partition_leader_epoch, MAGIC, 0,
                     attributes, last_delta, base_ts, max_ts, batch.producer_id,
                     batch.producer_epoch, batch.base_sequence, len(records))
    _U32.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
    return bytes(buf)


def clean_segment(data: bytes, is_latest, *, now_ms: int, delete_retention_ms: int,
                  upper_bound: int, aborted: Aborted = never_aborted) -> CleanedSegment:
    """Compact one closed segment's bytes.

    ``is_latest(offset)`` says whether the record at ``offset`` is the latest of its
    key below ``upper_bound`` (the offset map's verdict, built without aborted records).
    ``aborted(batch)``: the batch belongs to an aborted transaction (storage/txn_clean.py).
    Raises CorruptRecordError for a bad batch or a partial one (a closed segment has no torn tail).
    """
    out = bytearray()
    stats = CleanStats(bytes_read=len(data))
    last_offset = None
    end = 0
    for batch in iter_batches(data):
        ensure_valid(batch)
        end = batch.position + batch.size
        stats.batches_read += 1
        if batch.is_control:
            out += batch.raw()
            stats.batches_copied += 1
            stats.batches_written += 1
            last_offset = batch.last_offset
            continue
        records = decode_records(batch)
        stats.records_read += len(records)
        if aborted(batch):
            stats.aborted_dropped += len(records)
            if batch.next_offset != upper_bound:
                continue
            out += encode_batch(batch, [], None)  # Kafka's RETAIN_EMPTY at the cleaning bound
            stats.batches_written += 1
            last_offset = batch.last_offset
            continue
        horizon = delete_horizon(batch)
        retain_deletes = horizon is None or now_ms < horizon
        kept = []
        for r in records:
            if r.key is None:
                stats.keyless_dropped += 1
            elif not is_latest(r.offset):
                stats.superseded_dropped += 1
            elif r.value is None and not retain_deletes:
                stats.tombstones_dropped += 1
            else:
                kept.append(r)
                if r.value is None:
                    stats.tombstones_kept += 1
        stats.records_kept += len(kept)
        need_horizon = horizon is None and any(r.value is None for r in kept)
        if len(kept) == len(records) and not need_horizon:
            out += batch.raw()
            stats.batches_copied += 1
        elif kept or batch.next_offset == upper_bound:
            if need_horizon:
                horizon = now_ms + delete_retention_ms
                stats.horizons_set += 1
            out += encode_batch(batch, kept, horizon)
        else:
            continue
        stats.batches_written += 1
        last_offset = batch.last_offset if len(kept) == len(records) or not kept else kept[-1].offset
    if end != len(data):
        raise CorruptRecordError(f"{len(data) - end} bytes of a partial batch at position {end}")
    stats.bytes_written = len(out)
    return CleanedSegment(bytes(out), last_offset, stats)


def write_segment_files(directory: str, base_offset: int, data: bytes,
                        index_interval_bytes: int = 4096) -> None:
    """Write ``<base>.log`` plus its .index and .timeindex (built by the same
    bookkeeping the log uses, so they equal what recovery would rebuild); fsync'ed."""
    seg = Segment(directory, base_offset, index_interval_bytes)
    position = 0
    for batch in iter_batches(data):
        seg.track(position, batch.size, batch.last_offset, batch.max_timestamp)
        position += batch.size
    seg.finalize_time_index()
    with open(seg.log_path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    rewrite(seg.offset_index)
    rewrite(seg.time_index)


__all__ = ["CleanStats", "CleanedSegment", "clean_segment", "encode_batch", "write_segment_files",
           "delete_horizon", "DEFAULT_DELETE_RETENTION_MS", "CorruptRecordError"]
