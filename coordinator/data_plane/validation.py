"""Checks on one producer batch, on its bytes, before anything is appended.

Follows Kafka's order and codes (ProduceRequest.validateRecords,
ByteBufferLogInputStream.nextBatch, UnifiedLog.analyzeAndValidateRecords,
LogValidator.validateBatch):

* no complete batch -> INVALID_RECORD ("at least one record batch");
* a length below the header size, a magic above 2, a bad CRC -> CORRUPT_MESSAGE;
* magic 0/1, more than one batch, a control batch from a client, a record count that
  disagrees with lastOffsetDelta or with the records present, a negative record
  length, an idempotent batch without a sequence -> INVALID_RECORD;
* batch > max.message.bytes -> MESSAGE_TOO_LARGE; > segment.bytes -> RECORD_LIST_TOO_LARGE;
* an unknown codec, or zstd before Produce v7 -> UNSUPPORTED_COMPRESSION_TYPE;
* compressed records that do not decompress -> CORRUPT_MESSAGE; that inflate past
  message.max.decompressed.bytes (a decompression bomb, stopped while inflating) ->
  INVALID_RECORD, as Kafka answers records it cannot accept.

The cap also bounds one Produce request as a whole (a WalkBudget shared by its batches):
its batches together may make the server walk at most message.max.decompressed.bytes of
records (inflated bytes; an uncompressed batch counts its records section). A batch that
would pass what is left is INVALID_RECORD, like a single batch past the cap, and nothing
of it is appended; the batches before it are unaffected. Without it one 1.6 KB zstd
batch of 2.4M records cost 0.31 s of walking on the event loop, and a request carried
one per partition (or the same partition 20 times): 10 partitions froze the server 3.3 s.

The header is one struct unpack and the CRC one C call. The record walk only hops
over varint lengths (decompressing first, in C, when the batch is compressed), so the
Python work per record is one varint read: it proves the count and the lengths
without building Record objects.
"""

from __future__ import annotations

import struct
import time
from typing import NamedTuple

from crc32c import crc32c

from coordinator.data_plane.record_rules import RecordRules, check_records
from coordinator.errors import (
    CorruptMessage,
    InvalidRecord,
    MessageTooLarge,
    RecordListTooLarge,
    UnsupportedCompressionType,
)
from storage.batch import ATTRIBUTES_OFFSET, CONTROL_MASK, HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC
from storage.compression import MAX_DECOMPRESSED_BYTES, NONE, ZSTD, decompress_counted
from storage.errors import DecompressedTooLargeError
from storage.varint import read_varint

_LENGTH_MAGIC = struct.Struct(">8xi4xb")
_MAX_TS = struct.Struct(">q")
_ATTRS = struct.Struct(">h")
_CRC = struct.Struct(">I")
MAX_TIMESTAMP_OFFSET = 35
CRC_OFFSET = 17


class BatchInfo(NamedTuple):
    size: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)


class WalkBudget:
    """What is left of the record bytes one Produce request may make the server walk."""

    __slots__ = ("cap", "left")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.left = cap

    def too_large(self, what: str, left: int) -> InvalidRecord:
        if left < self.cap:
            return InvalidRecord(f"{what}: the batches of this Produce request together pass "
                                 f"message.max.decompressed.bytes ({self.cap}); "
                                 f"{left} bytes were left for this one")
        return InvalidRecord(f"{what}: more than message.max.decompressed.bytes ({self.cap})")


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at Integer.MAX_VALUE."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


def check_batch(data: bytes | None, *, produce_version: int, max_message_bytes: int,
                segment_bytes: int, max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
                budget: WalkBudget | None = None, rules: RecordRules | None = None, create_time: bool = True,
                topic_partition: str = "") -> BatchInfo:
    """The header of the single valid batch in `data`, or the KafkaError Kafka would raise.

    `budget` is shared by the batches of one request (a fresh one of `max_decompressed_bytes`
    when None); the walk of this batch is taken from it. `rules`: the topic's per-record checks
    (record_rules.py; `create_time` and `topic_partition` "T-P" are what they need)."""
    if not data or len(data) < LOG_OVERHEAD:
        raise InvalidRecord(f"Produce requests with version {produce_version} must have at least one record batch")
    total = len(data)
    if total < MAGIC_END:
        length = struct.unpack_from(">i", data, 8)[0]
        if length + LOG_OVERHEAD < HEADER_SIZE:
            raise CorruptMessage(f"Record size {length + LOG_OVERHEAD} is less than the minimum record overhead")
        raise InvalidRecord(f"Produce requests with version {produce_version} must have at least one record batch")
    length, magic = _LENGTH_MAGIC.unpack_from(data, 0)
    size = length + LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise CorruptMessage(f"Record size {size} is less than the minimum record overhead ({HEADER_SIZE})")
    if magic < 0 or magic > MAGIC:
        raise CorruptMessage(f"Invalid magic found in record: {magic}")
    if size > total:
        raise InvalidRecord(f"Produce requests with version {produce_version} must have at least one record batch")
    if magic != MAGIC:
        raise InvalidRecord(f"Produce requests with version {produce_version} are only allowed to contain "
                            "record batches with magic version 2")
    if size != total:
        raise InvalidRecord(f"Produce requests with version {produce_version} are only allowed to contain "
                            "exactly one record batch per partition")
    (base_offset, _, _, _, crc, attributes, delta, first_ts, max_ts, pid, epoch, base_seq, count) = \
        HEADER.unpack_from(data, 0)
    codec = attributes & 0x07
    if codec == ZSTD and produce_version < 7:
        raise UnsupportedCompressionType(f"Produce requests with version {produce_version} are not allowed "
                                         "to use ZStandard compression")
    if size > max_message_bytes:
        raise MessageTooLarge(f"The record batch size {size} bytes exceeds the maximum {max_message_bytes}")
    if crc32c(memoryview(data)[ATTRIBUTES_OFFSET:]) != crc:
        raise CorruptMessage("Record batch is corrupt (CRC mismatch)")
    if codec > ZSTD:
        raise UnsupportedCompressionType(f"Unknown compression type id {codec}")
    if attributes & CONTROL_MASK:
        raise InvalidRecord("Clients are not allowed to write control records")
    if count <= 0 or delta < 0 or delta + 1 != count:
        raise InvalidRecord(f"Batch has {count} records but lastOffsetDelta {delta}")
    if pid >= 0 and base_seq < 0:
        raise InvalidRecord(f"Invalid sequence number {base_seq} in a batch of producer {pid}")
    body = _walk_records(data, codec, count, budget if budget is not None else WalkBudget(max_decompressed_bytes))
    if rules is not None and rules.active:
        check_records(body, count, base_offset, first_ts, rules, create_time, topic_partition,
                      int(time.time() * 1000))
    if size > segment_bytes:
        raise RecordListTooLarge(f"The batch of {size} bytes is larger than the segment size {segment_bytes}")
    return BatchInfo(size, attributes, delta, max_ts, pid, epoch, base_seq, count)


MAGIC_END = 17  # bytes needed to read the magic byte


def _walk_records(data: bytes, codec: int, count: int, budget: WalkBudget) -> bytes | memoryview:
    """The batch's records section (inflated), once proven to hold `count` well-formed lengths."""
    body: bytes | memoryview = memoryview(data)[HEADER_SIZE:]
    left = budget.left
    if codec != NONE:
        budget.left = 0  # a payload that fails to inflate may have cost all it was allowed
        try:
            body, cost = decompress_counted(codec, body, left)
        except DecompressedTooLargeError:
            raise budget.too_large("compressed records rejected", left) from None
        except Exception as exc:  # cramjam / zlib raise many types for garbage
            raise CorruptMessage(f"compressed records do not decompress: {exc}") from None
        budget.left = left - cost
    elif len(body) > left:
        raise budget.too_large(f"{len(body)} bytes of records", left)
    else:
        budget.left = left - len(body)
    pos, end, rv = 0, len(body), read_varint
    try:
        for _ in range(count):
            b = body[pos]
            if 1 < b < 0x80 and not b & 1:  # a positive size in one byte (zig-zag): no call
                pos += 1 + (b >> 1)
            else:
                size, pos = rv(body, pos)
                if size <= 0:
                    raise InvalidRecord(f"Invalid record size {size}")
                pos += size
            if pos > end:
                raise InvalidRecord(f"Invalid record size: a record runs {pos - end} bytes past the batch")
    except IndexError:
        raise InvalidRecord(f"Batch declares {count} records; the data ends early") from None
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes left after the {count} declared records")
    return body


def stamp_log_append_time(buf: bytearray, now_ms: int) -> None:
    """Kafka's setMaxTimestamp(LOG_APPEND_TIME, now) in place: attributes bit 3, maxTimestamp,
    then the CRC again (both fields are inside it)."""
    attributes = _ATTRS.unpack_from(buf, ATTRIBUTES_OFFSET)[0] | 0x08
    _ATTRS.pack_into(buf, ATTRIBUTES_OFFSET, attributes)
    _MAX_TS.pack_into(buf, MAX_TIMESTAMP_OFFSET, now_ms)
    _CRC.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
