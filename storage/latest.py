"""The latest record per key of __consumer_offsets batches: the loader's scan.

Loading replays a partition's log; most of a busy partition is commits superseded
by later commits of the same key. `LatestRecords` walks raw batch bytes (CRC-32C
checked per batch) and keeps raw key -> raw value of the newest record of each key,
so only the survivors are decoded and replayed. For that to give exactly the state
a replay of every record gives, two things a later record cannot undo are kept:

* a commit later deleted by an offset tombstone still created its (simple) group on
  replay: the commit is kept as a *creator*, replayed before the survivors;
* a group tombstone (GroupMetadataKey, null value) removes whatever group exists at
  that point, so it is a barrier: what came before it is sealed as its own part and
  replayed before it, what comes after starts afresh.

Between two barriers the survivors commute (a commit creates its group only if
absent, a group value replaces whatever is there, offset keys are independent), so
each part's order does not matter. `take_sealed` hands over the parts closed by a
barrier, `take_all` everything (call it once the log end is reached).

Records of plain (uncompressed) batches are read by aiokafka's C record-batch parser
when it is built (~1.8x the records/s of Python; bench/bench_offsets.py --load-mb),
else by a Python loop for records whose size, timestamp delta, offset delta, key and
value lengths are one-byte varints without headers (every record this coordinator
writes, and Kafka's). A compressed batch, a batch that starts before `start`, a
timestamp filter, or any other record takes storage.batch.decode_records. The CRC is
always checked here, per batch, with crc32c.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from crc32c import crc32c

try:  # the C parser; aiokafka's pure-Python fallback would be slower than our own loop
    from aiokafka.errors import KafkaError
    from aiokafka.record._crecords.default_records import DefaultRecordBatch as CRecordBatch
except ImportError:  # pragma: no cover - a platform without aiokafka's compiled extension
    CRecordBatch = None
    KafkaError = Exception

from .batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    RecordBatch,
    decode_records,
)
from .errors import CorruptRecordError, InvalidRecordError
from .varint import read_varint

# baseOffset, batchLength, magic, crc, attributes, lastOffsetDelta, recordsCount
_HEAD = struct.Struct(">qi4xbIhi30xi")
_GROUP_KEY_VERSION = b"\x00\x02"  # GroupMetadataKey: its tombstone is a barrier

Pair = tuple[bytes, "bytes | None"]


class LatestRecords:
    """Fold batches into the latest (key, value) per key; see the module docstring.

    `start`: records below this offset are skipped (a snapshot covers them).
    `min_timestamp`: records older than this are skipped (a snapshot taken then).
    """

    __slots__ = ("start", "min_timestamp", "records", "bytes", "next_offset", "c_parser", "_latest", "_creators",
                 "_sealed")

    def __init__(self, start: int = 0, min_timestamp: int | None = None, c_parser: bool = True) -> None:
        self.start = start
        self.c_parser = CRecordBatch if c_parser else None
        self.min_timestamp = min_timestamp
        self.records = 0  # records read at or after `start`
        self.bytes = 0
        self.next_offset = start
        self._latest: dict[bytes, bytes | None] = {}
        self._creators: list[Pair] = []
        self._sealed: list[Iterable[Pair] | dict[bytes, bytes | None]] = []  # dicts: their items

    # --- scanning ------------------------------------------------------------------------

    def add(self, data: bytes) -> int:
        """Fold the whole batches of `data` (as PartitionLog.read returns them); returns
        the offset after the last batch. A partial trailing batch is left for the next
        read. Raises CorruptRecordError (length, CRC) or InvalidRecordError (magic,
        a record that does not parse)."""
        try:
            return self._add(data)
        except IndexError:
            raise InvalidRecordError("a record runs past the end of its batch") from None

    def _add(self, data: bytes) -> int:
        head = _HEAD.unpack_from
        mv = memoryview(data)
        pos, end = 0, len(data)
        start = self.start
        general = self.min_timestamp is not None
        plain = self._plain_c if self.c_parser is not None else self._plain_py
        records = 0
        while end - pos >= HEADER_SIZE:
            base, length, magic, crc, attributes, last_delta, count = head(data, pos)
            size = length + LOG_OVERHEAD
            if size < HEADER_SIZE:
                raise CorruptRecordError(f"batch at position {pos} has length {length}")
            bend = pos + size
            if bend > end:
                break
            if magic != MAGIC:
                raise InvalidRecordError(f"batch at position {pos} has magic {magic}, only 2 is supported")
            if crc32c(mv[pos + ATTRIBUTES_OFFSET:bend]) != crc:
                raise CorruptRecordError(f"batch at position {pos} (offset {base}): CRC mismatch")
            self.next_offset = base + last_delta + 1
            if attributes & CONTROL_MASK:  # transaction markers carry no offsets records
                pass
            elif general or attributes & COMPRESSION_MASK or base < start:
                records += self._general(RecordBatch(data, pos))
            else:
                plain(data, mv, pos, bend)
                records += count
            pos = bend
        self.records += records
        self.bytes += pos
        return self.next_offset

    def _plain_c(self, data: bytes, mv: memoryview, pos: int, bend: int) -> None:
        """The records of an uncompressed batch, through aiokafka's C parser."""
        latest = self._latest
        try:
            for r in self.c_parser(mv[pos:bend]):  # type: ignore[misc]  # not None: chosen only with c_parser
                key = r.key
                value = r.value
                if value is not None and key is not None:
                    latest[key] = value
                elif key is not None:
                    self._put(key, None)
                    latest = self._latest
        except (KafkaError, ValueError) as exc:
            raise InvalidRecordError(f"batch at position {pos}: {exc}") from None

    def _plain_py(self, data: bytes, mv: memoryview, pos: int, bend: int) -> None:
        """The records of an uncompressed batch: one-byte varints inline, others via _record."""
        latest = self._latest
        p = pos + HEADER_SIZE
        while p < bend:
            s = data[p]
            kb = data[p + 4]
            # one-byte size, timestamp delta, offset delta and key length; key not null
            if not ((s | data[p + 2] | data[p + 3]) & 0x80 | kb & 0x81):
                v = p + 5 + (kb >> 1)
                vb = data[v]
                nxt = p + 1 + (s >> 1)
                # one-byte value length, value not null, no headers, fields fill the record
                if not vb & 0x81 and v + 2 + (vb >> 1) == nxt and not data[nxt - 1]:
                    latest[data[p + 5:v]] = data[v + 1:nxt - 1]
                    p = nxt
                    continue
            p = self._record(data, p, bend)
            latest = self._latest
        if p != bend:
            raise InvalidRecordError(f"records of the batch at position {pos} run {p - bend} bytes past it")

    def _record(self, data: bytes, p: int, bend: int) -> int:
        """One record in the general form; returns the position after it."""
        rv = read_varint
        size, p = rv(data, p)
        body_end = p + size
        if size < 0 or body_end > bend:
            raise InvalidRecordError(f"record size {size} runs past the batch")
        p += 1  # attributes
        _ts_delta, p = rv(data, p)
        _offset_delta, p = rv(data, p)
        klen, p = rv(data, p)
        key = None
        if klen >= 0:
            key, p = data[p:p + klen], p + klen
        vlen, p = rv(data, p)
        value = None
        if vlen >= 0:
            value, p = data[p:p + vlen], p + vlen
        headers, p = rv(data, p)
        if headers < 0 or headers > body_end - p:
            raise InvalidRecordError(f"invalid header count {headers}")
        for _ in range(headers):
            hk, p = rv(data, p)
            p += max(hk, 0)
            hv, p = rv(data, p)
            p += max(hv, 0)
        if p != body_end:
            raise InvalidRecordError(f"record body is {size} bytes but its fields take {size + p - body_end}")
        if key is not None:
            self._put(key, value)
        return p

    def _general(self, batch: RecordBatch) -> int:
        start, min_ts = self.start, self.min_timestamp
        n = 0
        for r in decode_records(batch):
            if r.offset < start:
                continue
            n += 1
            if r.key is not None and (min_ts is None or r.timestamp >= min_ts):
                self._put(r.key, r.value)
        return n

    def _put(self, key: bytes, value: bytes | None) -> None:
        latest = self._latest
        if value is not None:
            latest[key] = value
            return
        if key[:2] == _GROUP_KEY_VERSION:  # barrier: seal what came before it
            if latest or self._creators:
                self._sealed.append(self._creators)
                self._sealed.append(latest)
                self._sealed.append([(key, None)])
                self._latest, self._creators = {}, []
            else:
                self._sealed.append([(key, None)])
            return
        previous = latest.get(key)
        if previous is not None:  # the commit created its group; the tombstone cannot undo that
            self._creators.append((key, previous))
        latest[key] = None

    # --- handing over ------------------------------------------------------------------------

    def take_sealed(self) -> Iterator[Pair]:
        """The (key, value) pairs closed by barriers so far, in replay order."""
        sealed, self._sealed = self._sealed, []
        return _pairs(sealed)

    def take_all(self) -> Iterator[Pair]:
        """Everything not yet taken, in replay order; the fold starts empty again."""
        self._sealed.append(self._creators)
        self._sealed.append(self._latest)
        self._latest, self._creators = {}, []
        return self.take_sealed()

    def __len__(self) -> int:
        """Keys in the current (unsealed) part."""
        return len(self._latest)


def _pairs(parts: list[Iterable[Pair] | dict[bytes, bytes | None]]) -> Iterator[Pair]:
    for part in parts:
        yield from (part.items() if isinstance(part, dict) else part)
