"""Kafka record batch v2 (magic 2): the on-disk and on-wire unit of the log.

Layout (big-endian, byte positions; see DefaultRecordBatch in Kafka)::

    0  baseOffset int64            27 baseTimestamp int64
    8  batchLength int32           35 maxTimestamp int64
    12 partitionLeaderEpoch int32  43 producerId int64
    16 magic int8 (= 2)            51 producerEpoch int16
    17 crc uint32 (CRC-32C)        53 baseSequence int32
    21 attributes int16            57 recordsCount int32
    23 lastOffsetDelta int32       61 records...

``batchLength`` counts everything after itself, so a batch occupies
``batchLength + 12`` bytes. The CRC-32C covers attributes..end; baseOffset and
partitionLeaderEpoch are outside it, which is what lets the log assign offsets by
patching 8 bytes (``assign_offsets``) without re-encoding or re-checksumming.

Each record: varint length, int8 attributes, varlong timestampDelta, varint
offsetDelta, key (varint length, -1 = null), value (same; null = tombstone), varint
header count, headers (varint-length UTF-8 key, varint-length value or -1).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import final

from crc32c import crc32c

from .compression import NONE, STORED_MAX_DECOMPRESSED_BYTES, decompress
from .errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError, UnsupportedCompressionError
from .varint import SMALL_VARINT_MIN, SMALL_VARINTS, encode_varint, read_varint

#: Every header field in order; 61 bytes (RECORD_BATCH_OVERHEAD).
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12  # baseOffset + batchLength precede what batchLength counts
MAGIC = 2
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
LEADER_EPOCH_OFFSET = 12
NO_TIMESTAMP = -1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0 = CreateTime, 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

_OFFSET_LEN = struct.Struct(">qi")
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_U32 = struct.Struct(">I")
_NULL = encode_varint(-1)
_ZERO = encode_varint(0)
_ATTRS_TS0 = b"\x00\x00"  # attributes 0, timestampDelta 0
_NULL_NO_HEADERS = _NULL + _ZERO  # a null value, then no headers


@dataclass(frozen=True, slots=True)
@final  # build_batch tells a Record from a tuple with `type(r) is Record`
class Record:
    """One record. ``headers`` is a tuple of (str key, bytes-or-None value)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class RecordBatch:
    """A parsed header over the bytes of one batch (no copy, no CRC check)."""

    __slots__ = ("buffer", "position", "base_offset", "batch_length", "partition_leader_epoch",
                 "magic", "crc", "attributes", "last_offset_delta", "base_timestamp",
                 "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                 "records_count")

    def __init__(self, buffer, position: int = 0) -> None:
        if len(buffer) - position < HEADER_SIZE:
            raise CorruptRecordError(
                f"batch at {position} has {len(buffer) - position} bytes, "
                f"less than the {HEADER_SIZE}-byte header")
        (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic,
         self.crc, self.attributes, self.last_offset_delta, self.base_timestamp,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
         self.records_count) = HEADER.unpack_from(buffer, position)
        self.buffer = buffer
        self.position = position

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies (batchLength + 12)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    def raw(self) -> memoryview:
        """The batch's bytes (header included), as a view into the source buffer."""
        return memoryview(self.buffer)[self.position:self.position + self.size]

    def computed_crc(self) -> int:
        return crc32c(memoryview(self.buffer)[self.position + ATTRIBUTES_OFFSET:
                                              self.position + self.size])

    def __repr__(self) -> str:
        return (f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"size={self.size}, count={self.records_count}, codec={self.compression})")


def iter_batches(buf, position: int = 0) -> Iterator[RecordBatch]:
    """Walk concatenated batches; stop cleanly at a partial trailing batch.

    Headers are parsed, CRCs are *not* checked (call ``ensure_valid``). Raises
    CorruptRecordError for a length that cannot be a v2 batch (negative, or smaller
    than the header) and InvalidRecordError for a magic other than 2: nothing past
    such a batch can be located, so iteration cannot continue.
    """
    end = len(buf)
    while end - position >= MAGIC_OFFSET + 1:
        _, length = _OFFSET_LEN.unpack_from(buf, position)
        if length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(
                f"batch at position {position} has length {length}, "
                f"below the minimum {HEADER_SIZE - LOG_OVERHEAD}")
        if end - position < length + LOG_OVERHEAD:
            return  # partial trailing batch (a fetch cut, or a torn write)
        magic = buf[position + MAGIC_OFFSET]
        if magic != MAGIC:
            raise InvalidRecordError(f"batch at position {position} has magic {magic}, only 2 is supported")
        batch = RecordBatch(buf, position)
        yield batch
        position += length + LOG_OVERHEAD


def ensure_valid(batch: RecordBatch) -> None:
    """Kafka's ensureValid: size and CRC. What recovery checks for every batch."""
    if batch.size < HEADER_SIZE:
        raise CorruptRecordError(f"batch size {batch.size} is below the {HEADER_SIZE}-byte overhead")
    if len(batch.buffer) - batch.position < batch.size:
        raise CorruptRecordError(
            f"batch declares {batch.size} bytes, only {len(batch.buffer) - batch.position} present")
    if batch.magic != MAGIC:
        raise InvalidRecordError(f"magic {batch.magic}, only 2 is supported")
    computed = batch.computed_crc()
    if computed != batch.crc:
        raise CorruptRecordError(f"batch CRC mismatch: stored {batch.crc:#010x}, computed {computed:#010x}")


def validate(buf) -> RecordBatch:
    """Full check of one producer batch (exactly one batch in ``buf``).

    CorruptRecordError: truncated, bad length, bad CRC. InvalidRecordError: wrong
    magic, count <= 0 or not matching lastOffsetDelta + 1 or the records present, a
    malformed record. UnsupportedCompressionError: unknown/undecodable codec.
    """
    if len(buf) < HEADER_SIZE:
        raise CorruptRecordError(f"{len(buf)} bytes cannot hold a {HEADER_SIZE}-byte batch header")
    _, length = _OFFSET_LEN.unpack_from(buf, 0)
    if length + LOG_OVERHEAD != len(buf):
        raise CorruptRecordError(f"batch length field says {length + LOG_OVERHEAD} bytes, got {len(buf)}")
    batch = RecordBatch(buf, 0)
    ensure_valid(batch)
    if batch.records_count <= 0:
        raise InvalidRecordError(f"invalid record count {batch.records_count}")
    if batch.last_offset_delta + 1 != batch.records_count:
        raise InvalidRecordError(
            f"lastOffsetDelta {batch.last_offset_delta} does not match count {batch.records_count}")
    decode_records(batch)  # walks every record: structure + count
    return batch


def decode_records(batch: RecordBatch | bytes | bytearray | memoryview,
                   max_decompressed_bytes: int = STORED_MAX_DECOMPRESSED_BYTES) -> list[Record]:
    """All records of a batch, decompressing if needed (at most `max_decompressed_bytes`,
    else DecompressedTooLargeError). Does not check the CRC."""
    if not isinstance(batch, RecordBatch):
        batch = RecordBatch(batch, 0)
    count = batch.records_count
    if count < 0:
        raise InvalidRecordError(f"negative record count {count}")
    start = batch.position + HEADER_SIZE
    end = batch.position + batch.size
    if end > len(batch.buffer):
        raise CorruptRecordError("batch is truncated")
    codec = batch.compression
    if codec == NONE:
        data = bytes(batch.buffer[start:end])
    elif codec > 4:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}")
    else:
        data = decompress(codec, memoryview(batch.buffer)[start:end], max_decompressed_bytes)
    append_time = batch.max_timestamp if batch.is_log_append_time else None
    return _decode(data, count, batch.base_offset, batch.base_timestamp, append_time)


def _decode(data: bytes, count: int, base_offset: int, base_ts: int,
            append_time: int | None) -> list[Record]:
    out: list[Record] = []
    pos, end = 0, len(data)
    rv = read_varint
    for _ in range(count):
        if pos >= end:
            raise InvalidRecordError(f"batch declares {count} records, found {len(out)}")
        size, pos = rv(data, pos)
        body_end = pos + size
        if size < 0 or body_end > end:
            raise InvalidRecordError(f"record size {size} runs past the batch")
        pos += 1  # attributes (unused in v2)
        ts_delta, pos = rv(data, pos)
        off_delta, pos = rv(data, pos)
        klen, pos = rv(data, pos)
        if klen < 0:
            key = None
        else:
            key = data[pos:pos + klen]
            pos += klen
        vlen, pos = rv(data, pos)
        if vlen < 0:
            value = None
        else:
            value = data[pos:pos + vlen]
            pos += vlen
        nh, pos = rv(data, pos)
        if nh == 0:
            headers: tuple[tuple[str, bytes | None], ...] = ()
        else:
            if nh < 0 or nh > body_end - pos:
                raise InvalidRecordError(f"invalid header count {nh}")
            hs: list[tuple[str, bytes | None]] = []
            for _h in range(nh):
                hk, pos = rv(data, pos)
                if hk < 0:
                    raise InvalidRecordError(f"negative header key size {hk}")
                try:
                    hkey = data[pos:pos + hk].decode()
                except UnicodeDecodeError as exc:
                    raise InvalidRecordError("header key is not UTF-8") from exc
                pos += hk
                hv, pos = rv(data, pos)
                if hv < 0:
                    hs.append((hkey, None))
                else:
                    hs.append((hkey, data[pos:pos + hv]))
                    pos += hv
            headers = tuple(hs)
        if pos != body_end:
            raise InvalidRecordError(f"record body is {size} bytes but its fields take {size + pos - body_end}")
        ts = append_time if append_time is not None else base_ts + ts_delta
        out.append(Record(base_offset + off_delta, ts, key, value, headers))
    if pos != end:
        raise InvalidRecordError(f"{end - pos} bytes left after the declared {count} records")
    return out


def build_batch(records: Iterable[Record | tuple], base_offset: int = 0, *,
                partition_leader_epoch: int = -1, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1,
                is_transactional: bool = False, is_control: bool = False,
                log_append_time: bool = False) -> bytes:
    """Encode an uncompressed v2 batch.

    ``records`` are Record objects or tuples ``(key, value, timestamp[, headers])``.
    A Record's ``offset`` is ignored: the i-th record gets offsetDelta i (the log
    assigns the real base offset). baseTimestamp is the first record's timestamp,
    maxTimestamp the largest (as Kafka's MemoryRecordsBuilder does).
    """
    buf = bytearray(HEADER_SIZE)
    enc = encode_varint
    base_ts = None
    max_ts = NO_TIMESTAMP
    i = -1
    for i, r in enumerate(records):
        if type(r) is Record:
            key, value, ts, headers = r.key, r.value, r.timestamp, r.headers
        else:
            key, value, ts = r[0], r[1], r[2]
            headers = r[3] if len(r) > 3 else ()
        if base_ts is None:
            base_ts = ts
        if ts > max_ts:
            max_ts = ts
        rec = bytearray(b"\x00")
        rec += enc(ts - base_ts)
        rec += enc(i)
        if key is None:
            rec += _NULL
        else:
            rec += enc(len(key))
            rec += key
        if value is None:
            rec += _NULL
        else:
            rec += enc(len(value))
            rec += value
        if headers:
            rec += enc(len(headers))
            for hk, hv in headers:
                hkb = hk.encode() if isinstance(hk, str) else hk
                rec += enc(len(hkb))
                rec += hkb
                if hv is None:
                    rec += _NULL
                else:
                    rec += enc(len(hv))
                    rec += hv
        else:
            rec += _ZERO
        buf += enc(len(rec))
        buf += rec
    if i < 0:
        raise InvalidRecordError("a batch needs at least one record")
    attributes = ((TIMESTAMP_TYPE_MASK if log_append_time else 0)
                  | (TRANSACTIONAL_MASK if is_transactional else 0)
                  | (CONTROL_MASK if is_control else 0))
    HEADER.pack_into(buf, 0, base_offset, len(buf) - LOG_OVERHEAD, partition_leader_epoch, MAGIC,
                     0, attributes, i, base_ts, max_ts, producer_id, producer_epoch,
                     base_sequence, i + 1)
    _U32.pack_into(buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
    return bytes(buf)


def record_tail(key: bytes, value: bytes | None) -> bytes:
    """What follows offsetDelta in a record with this key and value and no headers
    (keyLength, key, valueLength, value, headerCount): build_tail_batch's input."""
    if value is None:
        return encode_varint(len(key)) + key + _NULL_NO_HEADERS
    return encode_varint(len(key)) + key + encode_varint(len(value)) + value + _ZERO


def build_tail_batch(tails: Sequence[bytes], timestamp: int, producer_id: int = -1, producer_epoch: int = -1,
                     base_sequence: int = -1, is_transactional: bool = False) -> bytes:
    """The batch of records given by their `record_tail`s, all at `timestamp` (the
    offsets log's writes), byte for byte what build_batch makes, at a fraction of the
    cost: the records are joined once and checksummed after the header, without a buffer
    per record, and varints come straight from the table. A transactional batch (the
    group coordinator's TxnOffsetCommit records) carries its producer's id and epoch."""
    count = len(tails)
    if not count:
        raise InvalidRecordError("a batch needs at least one record")
    table = SMALL_VARINTS  # index v - SMALL_VARINT_MIN; every length and delta here is >= 0
    base = 2 - SMALL_VARINT_MIN  # + attributes and timestampDelta, one byte each
    parts: list[bytes] = []
    extend = parts.extend
    try:
        for i, tail in enumerate(tails):
            delta = table[i - 2 + base]
            extend((table[len(delta) + len(tail) + base], _ATTRS_TS0, delta, tail))
    except IndexError:  # a record or delta beyond the table (8 KiB): varints one by one
        parts = []
        for i, tail in enumerate(tails):
            delta = encode_varint(i)
            parts += (encode_varint(2 + len(delta) + len(tail)), _ATTRS_TS0, delta, tail)
    body = b"".join(parts)
    head = bytearray(HEADER.pack(0, HEADER_SIZE - LOG_OVERHEAD + len(body), -1, MAGIC, 0,
                                 TRANSACTIONAL_MASK if is_transactional else 0, count - 1,
                                 timestamp, timestamp, producer_id, producer_epoch, base_sequence, count))
    _U32.pack_into(head, CRC_OFFSET, crc32c(body, crc32c(memoryview(head)[ATTRIBUTES_OFFSET:])))
    head += body
    return bytes(head)


def assign_offsets(buf: bytearray, base_offset: int, *, position: int = 0,
                   partition_leader_epoch: int | None = None) -> None:
    """Patch baseOffset (and optionally partitionLeaderEpoch) in place.

    Both fields lie outside the CRC, so the batch stays valid and nothing else moves.
    """
    _Q.pack_into(buf, position, base_offset)
    if partition_leader_epoch is not None:
        _I.pack_into(buf, position + LEADER_EPOCH_OFFSET, partition_leader_epoch)


_APPEND_HEADER = struct.Struct(">8xi4xb4x2xiqq")  # length, magic, lastOffsetDelta, baseTs, maxTs


def scan_for_append(buf: bytearray, segment_bytes: int) -> list[tuple[int, int, int, int]]:
    """(position, size, lastOffsetDelta, maxTimestamp) of each batch in an append.

    The append hot path: one struct unpack and one CRC per batch, no objects. Raises
    the same typed errors as ``iter_batches`` + ``ensure_valid``.
    """
    metas = []
    pos, end = 0, len(buf)
    mv = memoryview(buf)
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise CorruptRecordError(f"append of {end} bytes ends with a partial batch at {pos}")
        length, magic, delta, _, max_ts = _APPEND_HEADER.unpack_from(buf, pos)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE or pos + size > end:
            raise CorruptRecordError(f"batch at {pos} declares {size} bytes, {end - pos} present")
        if magic != MAGIC:
            raise InvalidRecordError(f"batch at {pos} has magic {magic}, only 2 is supported")
        if crc32c(mv[pos + ATTRIBUTES_OFFSET:pos + size]) != _U32.unpack_from(buf, pos + CRC_OFFSET)[0]:
            raise CorruptRecordError(f"batch at {pos}: CRC mismatch")
        if delta < 0:
            raise CorruptRecordError(f"negative lastOffsetDelta {delta}")
        if size > segment_bytes:
            raise RecordTooLargeError(f"batch of {size} bytes exceeds segment_bytes {segment_bytes}")
        metas.append((pos, size, delta, max_ts))
        pos += size
    if not metas:
        raise CorruptRecordError("empty append")
    return metas
